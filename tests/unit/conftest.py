"""Fixtures several unit modules share (a module's own fixture of the same name wins over these)."""

from __future__ import annotations

import shutil

import pytest

from chatharuhi_core.config import Settings
from chatharuhi_core.roles.sources import BUNDLED_DIR


@pytest.fixture()
def env(tmp_path):
    """Settings over a cache of their own, and an input folder beside it, to prove nothing lands outside the cache
    (the Hub is a closed port, its cache a folder of the test's)."""
    (tmp_path / "in").mkdir()
    settings = Settings.from_env({"CHATHARUHI_CACHE": str(tmp_path / "cache"), "HF_ENDPOINT": "http://127.0.0.1:9",
                                  "HF_HUB_CACHE": str(tmp_path / "hub")})
    return settings, tmp_path / "in"


@pytest.fixture()
def package(tmp_path):
    """A copy of the bundled Sherlock's role package, to edit."""
    dst = tmp_path / "role"
    shutil.copytree(BUNDLED_DIR / "sherlock", dst)
    return dst
