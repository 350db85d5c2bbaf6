"""Importing a part of the package costs what that part uses: the top level loads its names on first use
(PEP 562), so the errors, the config or the CLI's help do not load the embedder, Chroma and numpy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _loaded(statement: str) -> tuple[list[str], bool]:
    """The package's modules loaded by `statement` in a fresh interpreter, and whether numpy came with them."""
    probe = (f"{statement}\nimport sys\n"
             "print(' '.join(m for m in sys.modules if m.startswith('chatharuhi_core')))\n"
             "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=True).stdout.splitlines()
    return out[0].split(), out[1] == "True"


@pytest.mark.parametrize("statement", ["import chatharuhi_core.errors", "import chatharuhi_core.config",
                                       "from chatharuhi_core import InputError"])
def test_a_ground_floor_module_loads_at_most_ten_of_the_package(statement):
    modules, numpy = _loaded(statement)
    assert len(modules) <= 10, modules
    assert not numpy


def test_a_top_level_name_still_loads_on_first_use():
    modules, _ = _loaded("import chatharuhi_core as c\nassert c.ChatHaruhi.__name__ == 'ChatHaruhi'")
    assert "chatharuhi_core.chat.chatbot" in modules
