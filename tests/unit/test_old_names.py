"""The old names (0.1's) keep working for one release and say once what replaced them: `--llm`,
`ChatHaruhi(llm=...)`, `Scene(llm=...)`, `CHATHARUHI_BACKEND` (README, "Words")."""

from __future__ import annotations

import subprocess
import sys

import pytest

from chatharuhi_core import deprecated
from chatharuhi_core.chat.chatbot import ChatHaruhi
from chatharuhi_core.config import Settings
from chatharuhi_core.scene import Scene, SceneSetup


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(deprecated, "_WARNED", set())


def test_llm_keyword_still_names_the_engine_and_warns_once(settings, embedder):
    with pytest.warns(FutureWarning, match=r"ChatHaruhi\(llm=\.\.\.\) is now ChatHaruhi\(engine=\.\.\.\)"):
        bot = ChatHaruhi(role_name="sherlock", llm="script", settings=settings, embedder=embedder)
    assert bot.engine.name == "script"
    with pytest.warns(FutureWarning, match="Scene"):
        scene = Scene(["sherlock", "elizabeth"], llm="script", settings=settings,
                      setup=SceneSetup(embedder=embedder))
    assert scene.engine.name == "script"


def test_the_old_environment_variable_still_chooses_the_engine():
    with pytest.warns(FutureWarning, match="CHATHARUHI_BACKEND is now CHATHARUHI_ENGINE"):
        assert Settings.from_env({"CHATHARUHI_BACKEND": "local"}).default_engine == "local"
    both = Settings.from_env({"CHATHARUHI_ENGINE": "script", "CHATHARUHI_BACKEND": "local"})
    assert both.default_engine == "script" and both.engine_chosen  # the new name wins


def test_the_old_flag_still_works_and_says_its_new_name(tmp_path):
    env = {"CHATHARUHI_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "chatharuhi_core", "chat", "--role", "sherlock", "--llm", "script",
                          "hello"], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()
    assert "--llm is now --engine" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_scene_line_has_its_own_name_and_the_old_one_warns_once():
    from chatharuhi_core.scene import SceneLine

    with pytest.warns(FutureWarning, match=r"chatharuhi_core\.scene\.Line is now chatharuhi_core\.scene\.SceneLine"):
        from chatharuhi_core.scene import Line
    assert Line is SceneLine


def test_no_class_name_is_defined_twice():
    """One name for one thing (README, Words): a chat line, a scene line and a script line were all `Line`, and six
    other class names were defined twice, so a reader could not tell from the name which one a module meant."""
    import ast
    from collections import defaultdict
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    where: dict[str, list[str]] = defaultdict(list)
    for path in [root / "app.py", *root.glob("page/*.py"), *root.glob("tools/*.py"), *root.glob("bench/*.py"),
                 *(root / "chatharuhi_core").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{path.relative_to(root)}:{node.lineno}")
    assert {name: places for name, places in where.items() if len(places) > 1} == {}


def test_impersonate_is_now_my_line_and_warns_once(settings, embedder):
    """✍ My line is `my_line` in the library and `/myline` in `chat`'s loop (README, Words); SillyTavern's word
    still works for a release."""
    from chatharuhi_core.chat.prompt import Exchange
    from chatharuhi_core.cli_story import story_command

    bot = ChatHaruhi(role_name="sherlock", engine="script", settings=settings, embedder=embedder,
                     history=[Exchange("Watson", "Holmes, a client.", "Show him in, Watson.")])
    with pytest.warns(FutureWarning, match=r"ChatHaruhi\.impersonate\(\) is now ChatHaruhi\.my_line\(\)"):
        old = "".join(bot.impersonate())
    assert old.strip() and "".join(bot.my_line()).strip()

    class Tree:
        pass

    tree, offered = Tree(), []
    tree.bot = bot
    with pytest.warns(FutureWarning, match="/impersonate is now /myline"):
        assert story_command(tree, "/impersonate", lambda reply: None, offered.append)
    assert offered and offered[0].strip()


def test_the_visitors_name_has_one_parameter_name():
    """README, Words: the visitor's name is `user_role`. It was also `user`, `user_name` and `visitor` in the page's
    and the library's functions. Left as they are: the MCP tools' documented `user_name`, and memory's `visitor`,
    which is a list of the names the visitor goes by."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    kept = {("chatharuhi_core/web/tools.py", "user_name"), ("page/api.py", "user_name"),  # the tools as served
            ("chatharuhi_core/chat/memory.py", "visitor")}
    found = []
    for path in [root / "app.py", *root.glob("page/*.py"), *(root / "chatharuhi_core").rglob("*.py")]:
        rel = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                found += [f"{rel}:{node.lineno} {node.name}({a.arg})" for a in args
                          if a.arg in {"user", "user_name", "visitor"} and (rel, a.arg) not in kept]
    assert found == []


def test_backend_error_still_imports_and_says_its_new_name():
    from chatharuhi_core.errors import EngineError

    with pytest.warns(FutureWarning, match="BackendError is now EngineError"):
        from chatharuhi_core.errors import BackendError
    assert BackendError is EngineError
