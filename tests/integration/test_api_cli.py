"""The Python API of the paper's appendix and the command line."""

import json
import os
import subprocess
import sys

import pytest
from support.app import run_cli
from support.loopback import ROOT

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.roles.sources import BUNDLED_DIR


def test_role_name_form(settings):
    bot = ChatHaruhi(role_name="sherlock", engine="script", settings=settings)
    said = bot.answer(text="Can you introduce yourself?", role="Watson")
    assert isinstance(said.text, str) and said.text
    assert bot.history[-1].user_role == "Watson"
    assert said.messages[-1]["content"] == "Watson:「Can you introduce yourself?」"


def test_system_prompt_and_story_db_forms(settings, tmp_path):
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "1.txt").write_text("阿强:「你最喜欢什么？」\n小美:「我最喜欢下雨天，可以在窗边看书。」", encoding="utf-8")
    (texts / "2.txt").write_text("阿强:「明天去爬山吗？」\n小美:「好呀，不过要早点出发。」", encoding="utf-8")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("I want you to act like 小美 from 我的故事.", encoding="utf-8")
    bot = ChatHaruhi(system_prompt=str(prompt), story_db=str(texts), engine="script", settings=settings)
    assert bot.role.name == "小美"  # the main speaker of the scenes
    assert "下雨天" in bot.chat(text="你喜欢什么天气？", role="阿强")

    jsonl = tmp_path / "stories.jsonl"
    jsonl.write_text("\n".join(json.dumps({"id": i, "text": (texts / f"{i}.txt").read_text()}) for i in (1, 2)))
    bot = ChatHaruhi(system_prompt="act like 小美", story_db=jsonl, engine="script", settings=settings)
    assert "早点出发" in bot.chat("明天爬山吗？")
    package = ChatHaruhi(system_prompt="ignored", story_db=BUNDLED_DIR / "sherlock", settings=settings)
    assert package.role.id == "sherlock"


def test_one_object_is_one_conversation(settings):
    a = ChatHaruhi(role_name="sunwukong", settings=settings)
    b = ChatHaruhi(role_name="sunwukong", settings=settings)
    a.chat("你好")
    assert len(a.history) == 1 and b.history == []
    assert a.store is b.store  # the story store is shared, read-only


def test_regenerate_replaces_the_last_reply(settings):
    bot = ChatHaruhi(role_name="sherlock", settings=settings)
    first = bot.chat("What is your method?")
    again = "".join(bot.regenerate())
    assert len(bot.history) == 1 and bot.history[0].reply == again and again != first


def test_cli_one_message_in_character(cache_dir):
    out = run_cli("chat", "--role", "sherlock", "--engine", "script", "hello", cache=cache_dir)
    assert out.returncode == 0, out.stderr
    assert "Hello" in out.stdout and "Traceback" not in out.stderr
    out = run_cli("chat", "--role", "sunwukong", "--engine", "script", "你的金箍棒有多重？", cache=cache_dir)
    assert "一万三千五百斤" in out.stdout


def test_cli_engines_stats_and_fold(cache_dir, fake_openai, smollm2_gguf):
    from support.fake_openai import GOOD_KEY

    out = run_cli("engines", cache=cache_dir)
    assert [line.split()[0] for line in out.stdout.splitlines()] == ["script", "local", "openai", "hf"]
    out = run_cli("engines", "--gguf", cache=cache_dir)
    assert out.stdout.strip() == str(smollm2_gguf)
    out = run_cli("chat", "--role", "sherlock", "--engine", "script", "--stats", "hello", cache=cache_dir)
    assert "[Offline: quote the script: first token" in out.stderr and "tokens/s" in out.stderr
    strict = ("chat", "--role", "sherlock", "--engine", "openai", "--model", "strict", "--base-url",
              fake_openai.base_url, "--api-key", GOOD_KEY, "hello")
    out = run_cli(*strict, cache=cache_dir)
    assert out.returncode == 1 and "Fold the prompt" in out.stderr
    out = run_cli(*strict[:-1], "--fold-prompt", "hello", cache=cache_dir)
    assert out.returncode == 0 and out.stdout.startswith("Echo:"), out.stderr


def test_cli_interactive_loop(cache_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHATHARUHI_"))}
    env["CHATHARUHI_CACHE"] = str(cache_dir)
    out = subprocess.run([sys.executable, "-m", "chatharuhi_core", "chat", "--role", "sunwukong"], cwd=ROOT,
                         env=env, input="你好\n/quit\n", capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    assert "俺老孙刚从南山摘桃回来" in out.stdout  # the greeting
    assert out.stdout.count("孙悟空:") >= 2


def test_cli_session_file_goes_on_where_it_stopped(cache_dir, tmp_path):
    """`chat --session` saves in the page's chat format and continues from it."""
    from chatharuhi_core.chat.transcript import load_chat

    path = tmp_path / "holmes.jsonl"
    out = run_cli("chat", "--role", "sherlock", "--session", str(path), "What is your method?", cache=cache_dir)
    assert out.returncode == 0, out.stderr
    first = load_chat(path.read_bytes())
    assert [ex.text for ex in first.history] == ["What is your method?"] and first.meta[0].messages
    out = run_cli("chat", "--role", "sherlock", "--session", str(path), "Who are you?", cache=cache_dir)
    second = load_chat(path.read_bytes())
    assert [ex.text for ex in second.history] == ["What is your method?", "Who are you?"]
    assert second.history[0] == first.history[0] and second.meta[0] == first.meta[0]
    # the saved exchange was in the prompt of the next one
    assert "Sherlock Holmes:「" + first.history[0].reply + "」" in [m["content"] for m in second.meta[1].messages]
    out = run_cli("chat", "--role", "alice", "--session", str(path), "hi", cache=cache_dir)
    assert out.returncode == 1 and "is a chat with 'Sherlock Holmes'" in out.stderr


@pytest.mark.parametrize("args", [(), ("chat",), ("roles",), ("engines",), ("validate",), ("role",),
                                  ("role", "build"), ("role", "import"), ("role", "export"), ("role", "push"),
                                  ("role", "validate"), ("eval",), ("synthesize",), ("finetune",), ("feedback",),
                                  ("feedback", "export")])
def test_cli_help_everywhere(cache_dir, args):
    out = run_cli(*args, "--help", cache=cache_dir)
    assert out.returncode == 0 and "usage:" in out.stdout


def test_cli_lists_the_hub_catalogue_by_source(cache_dir):
    out = run_cli("roles", "--hub", cache=cache_dir)
    assert out.returncode == 0 and "142 roles" in out.stdout
    for line in ("ChatHaruhi-54K (32 roles)", "ChatHaruhi community (15 roles)", "RoleLLM, English (95 roles)",
                 "silk-road/ChatHaruhi-from-RoleLLM/Jack Sparrow", "chengli-thu/linghuchong"):
        assert line in out.stdout, line


def test_cli_errors_are_sentences(cache_dir, tmp_path):
    out = run_cli("chat", "--role", "nobody", "hi", cache=cache_dir)
    assert out.returncode == 1 and "No character called 'nobody'" in out.stderr and "Traceback" not in out.stderr
    (tmp_path / "role.json").write_text("{}", encoding="utf-8")
    out = run_cli("validate", str(tmp_path), cache=cache_dir)
    assert out.returncode == 1 and "role.json, field 'id'" in out.stderr
    out = run_cli("validate", str(BUNDLED_DIR / "sherlock"), cache=cache_dir)
    assert out.returncode == 0 and "OK: sherlock" in out.stdout
    out = run_cli("chat", "--role", "sherlock", "--engine", "openai", "--base-url", "http://127.0.0.1:9/v1", "hi",
                  cache=cache_dir)
    assert out.returncode == 1 and "Could not reach the model server" in out.stderr


def test_cli_role_build_import_export_push(cache_dir, tmp_path):
    from support.make_inputs import SCREENPLAY

    (tmp_path / "storm.txt").write_text(SCREENPLAY, encoding="utf-8")
    out = run_cli("role", "build", str(tmp_path / "storm.txt"), "--name", "Mira", "--out", str(tmp_path / "mira"),
                  cache=cache_dir)
    assert out.returncode == 0, out.stderr
    assert "Built Mira: 2 scenes" in out.stdout and "embedding scenes" in out.stderr  # the progress bar
    assert (tmp_path / "mira" / "store" / "manifest.json").is_file()
    out = run_cli("role", "export", "sherlock", "--to", str(tmp_path / "holmes.png"), cache=cache_dir)
    assert out.returncode == 0, out.stderr
    out = run_cli("role", "import", str(tmp_path / "holmes.png"), cache=cache_dir)
    assert out.returncode == 0 and "Imported Sherlock Holmes as 'sherlock-holmes-" in out.stdout, out.stderr
    new_id = out.stdout.split("'")[1]
    out = run_cli("chat", "--role", new_id, "--engine", "script", "What is your method?", cache=cache_dir)
    assert out.returncode == 0 and out.stdout.strip(), out.stderr
    out = run_cli("role", "validate", str(tmp_path / "mira"), cache=cache_dir)
    assert out.returncode == 0 and "2 scenes" in out.stdout
    out = run_cli("role", "push", new_id, "--repo", "someone/holmes", "--dry-run", cache=cache_dir)
    assert out.returncode == 0 and "Would upload" in out.stdout and "stories.jsonl" in out.stdout
    out = run_cli("role", "push", new_id, "--repo", "someone/holmes", cache=cache_dir, env_extra={"HF_TOKEN": ""})
    assert out.returncode == 1 and "set HF_TOKEN" in out.stderr
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    out = run_cli("role", "validate", str(tmp_path / "bad.zip"), cache=cache_dir)
    assert out.returncode == 1 and "bad.zip is not a readable zip file" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("role", "import", "silk-road/ChatHaruhi-RolePlaying/Snape", cache=cache_dir,
                  env_extra={"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_CACHE": str(tmp_path / "hub")})
    assert out.returncode == 1 and "cannot be reached" in out.stderr
