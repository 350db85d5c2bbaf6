"""The house stays in order: imports point down a floor, never up, with no circles; every registry
answers an unknown name with one sentence listing the names it knows; no function runs past 60 lines; each
test lane stands on its own, and README counts its tests as pytest does."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

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


# ------------------------------------------------------------ the lanes stand on their own

TESTS = ROOT / "tests"
LANES = ("unit", "integration", "browser")
MAX_FUNCTION_LINES = 60


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) for every absolute import in the file, those inside functions too."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def test_no_test_module_imports_another_test_module():
    """Helpers come from tests/support (`support.<module>`), never from another test module, a conftest or the
    old top-level names left for bench/: those imports worked only because every lane's folder is on sys.path,
    and tied one lane's tests to another lane's module (a unit test borrowing an integration module's helper)."""
    top_level = {path.stem for path in TESTS.glob("*.py")}  # conftest, and the names kept for bench/
    found = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for path in sorted(TESTS.rglob("*.py")) if path.parent != TESTS
             for line, module in _imports(path)
             if module.split(".")[0].startswith("test_") or module.split(".")[0] in top_level]
    assert not found, "import these from tests/support instead:\n" + "\n".join(found)


# ------------------------------------------------------------ functions that fit on a screen


def _functions(node: ast.AST, outer: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, node) of every function and method under `node`, nested ones too."""
    for child in ast.iter_child_nodes(node):
        name = f"{outer}{getattr(child, 'name', '')}"
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield name, child
            yield from _functions(child, name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, name + ".")
        else:
            yield from _functions(child, outer)


def test_no_function_in_the_app_runs_past_60_lines():
    """A function in chatharuhi_core/, page/ or app.py is at most 60 lines from its `def` to its last line
    (decorators left out): a longer one does several things, and is split where they part."""
    sources = [*sorted((ROOT / "chatharuhi_core").rglob("*.py")), *sorted((ROOT / "page").rglob("*.py")), ROOT / "app.py"]
    too_long = []
    for path in sources:
        for name, func in _functions(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            lines = func.end_lineno - func.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                too_long.append(f"{path.relative_to(ROOT)}:{func.lineno} {name}: {lines} lines")
    assert not too_long, f"longer than {MAX_FUNCTION_LINES} lines:\n" + "\n".join(too_long)


MAX_PARAMETERS = 6
# the functions allowed more, each for a reason a reader can check; at most five
MANY_PARAMETERS = {
    "chatharuhi_core/chat/chatbot.py ChatHaruhi.__init__": "the paper's constructor: every way a conversation was "
                                                          "ever given, turned into the core's role, EngineChoice, "
                                                          "Memory and Seat",
    "chatharuhi_core/chat/engines/base.py register_engine": "a class decorator whose keywords are the registry's "
                                                            "columns, each with a default",
    "chatharuhi_core/chat/engines/local/llama_batch.py Batcher.__init__": "llama.cpp's context parameters, "
                                                                          "one per argument",
}


def _parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Its parameters, self and cls left out; *args counts as one, **kwargs too."""
    a = func.args
    named = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs) if x.arg not in ("self", "cls")]
    return len(named) + bool(a.vararg) + bool(a.kwarg)


def test_no_function_takes_more_than_six_parameters():
    """A function that needs more is given a typed options value (EvalOptions, SceneSetup, Seat, ...): the list
    of what it takes is then written once, with defaults and a docstring, not at every call."""
    assert len(MANY_PARAMETERS) <= 5
    sources = [*sorted((ROOT / "chatharuhi_core").rglob("*.py")), *sorted((ROOT / "page").rglob("*.py")), ROOT / "app.py"]
    found = {}
    for path in sources:
        for name, func in _functions(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if _parameters(func) > MAX_PARAMETERS:
                found[f"{path.relative_to(ROOT)} {name}"] = _parameters(func)
    unexplained = {k: v for k, v in found.items() if k not in MANY_PARAMETERS}
    assert not unexplained, f"more than {MAX_PARAMETERS} parameters: {unexplained}"
    assert set(MANY_PARAMETERS) <= set(found), "an exception no longer needed: take it off the list"


# ------------------------------------------------------------ README counts the tests as pytest does


def _collected_per_lane() -> dict[str, int]:
    """How many tests pytest collects in each lane's folder: one collection run, in a child process (a second
    session inside this one would share its imported modules)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}  # no -m or -k from outside
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          *(f"tests/{lane}" for lane in LANES)], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ids = [line for line in run.stdout.splitlines() if "::" in line]
    return {lane: sum(line.startswith(f"tests/{lane}/") for line in ids) for lane in LANES}


def test_readme_counts_each_lanes_tests_as_pytest_collects_them():
    """README's lane table gives each lane's number of tests, and its word on the suite ("(N tests; ...") their
    sum: both as a collection run finds them, so that a test added or dropped is counted where a reader looks."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = {lane: int(n) for lane, n in re.findall(r"^\| `tests/(\w+)` \|[^|\n]*\| (\d+) \|", readme, re.M)}
    total = re.findall(r"\((\d+) tests;", readme)
    collected = _collected_per_lane()
    assert table == collected, f"README's lane table says {table}; pytest collects {collected}"
    assert total == [str(sum(collected.values()))], f"README's suite total says {total}; the lanes add up to " \
                                                    f"{sum(collected.values())}"
