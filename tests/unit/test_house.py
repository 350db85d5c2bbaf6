"""The house stays in order: imports point down a floor, never up, with no circles; every registry
answers an unknown name with one sentence listing the names it knows."""

import subprocess
import sys

import pytest
from support.loopback import ROOT

from chatharuhi_core.chat.engines import engine_info
from chatharuhi_core.embedding import get_embedder
from chatharuhi_core.errors import ChatHaruhiError, UnknownNameError
from chatharuhi_core.scene.order import get_order


def test_every_import_points_down_and_none_closes_a_circle():
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "import_graph.py")], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 arrows pointing up" in run.stdout and "0 circles" in run.stdout


def test_the_page_functions_import_no_gradio():
    for path in (ROOT / "chatharuhi_core").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "import gradio" not in text and "from gradio" not in text, path


@pytest.mark.parametrize("look_up, kind, known", [
    (engine_info, "engine", "script, local, openai, hf"),
    (get_order, "order", "natural, list, pooled, manual, director"),
    (get_embedder, "embedder", "use-multilingual-v3"),
])
def test_an_unknown_name_is_one_sentence_with_the_known_ones(look_up, kind, known):
    with pytest.raises(UnknownNameError) as caught:
        look_up("nonesuch")
    assert isinstance(caught.value, ChatHaruhiError)
    sentence = str(caught.value)
    head = f"Unknown {kind} 'nonesuch'. Known {kind}s: "
    assert sentence.startswith(head) and sentence.endswith(".")
    listed = sentence[len(head):-1].split(", ")  # other tests may register more (a test embedder)
    assert listed[: len(known.split(", "))] == known.split(", ")
