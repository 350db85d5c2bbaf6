"""ZeroGPU: where the `spaces` package is installed, the local engine generates inside `spaces.GPU`, asking for
a duration sized to the request. `spaces` here is a stand-in (tests/fake_spaces) that records each call."""

from __future__ import annotations

import importlib
import json
import sys

import pytest
from gradio_client import Client
from support.app import text_of
from support.loopback import ROOT, gradio_app

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.chat.engines.local import model as local_model
from chatharuhi_core.chat.engines.local import zerogpu
from chatharuhi_core.config import Settings

FAKE = ROOT / "tests" / "fake_spaces"


@pytest.fixture()
def fake_spaces(monkeypatch):
    monkeypatch.syspath_prepend(str(FAKE))
    monkeypatch.setattr(zerogpu, "_WRAPPED", {})
    sys.modules.pop("spaces", None)
    spaces = importlib.import_module("spaces")
    yield spaces
    sys.modules.pop("spaces", None)


def test_the_duration_follows_the_request():
    assert zerogpu.reply_seconds(0, 0) == zerogpu.MIN_SECONDS
    assert zerogpu.reply_seconds(160, 3000) == 24  # 15 + 160/20 + 3000/3/2000, rounded up
    assert zerogpu.reply_seconds(10_000, 10**6) == zerogpu.MAX_SECONDS
    assert zerogpu.reply_seconds(300, 0) > zerogpu.reply_seconds(100, 0)


def test_without_spaces_nothing_changes(monkeypatch):
    monkeypatch.setattr(zerogpu, "present", lambda: False)
    assert local_model.on_gpu() is None


def test_a_zerogpu_space_settings(cache_dir):
    base = {"CHATHARUHI_CACHE": str(cache_dir)}
    assert Settings.from_env(base).gpu_model is None  # the CPU default stays the bundled SmolLM2
    zero = Settings.from_env({**base, "SPACES_ZERO_GPU": "true"})
    assert zero.zero_gpu and zero.gpu_model == "Qwen/Qwen2.5-7B-Instruct"
    assert Settings.from_env({**base, "SPACES_ZERO_GPU": "true", "CHATHARUHI_GPU_MODEL": "a/b"}).gpu_model == "a/b"
    bot = ChatHaruhi(role_name="sunwukong", engine="local", settings=zero)
    assert bot.engine.spec.source == "Qwen/Qwen2.5-7B-Instruct" and bot.engine.spec.on_hub
    assert bot.engine.languages() == frozenset({"zh", "en"})  # no warning for 孙悟空 on that Space


def test_the_local_engine_generates_inside_spaces_gpu(settings, fake_spaces):
    bot = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings)
    streaming = bot.stream("Who are you?")
    reply = "".join(streaming)
    assert reply.strip()
    assert fake_spaces.DECORATED == ["reply_pieces"]
    (call,) = fake_spaces.CALLS
    prompt_chars = sum(len(m["content"]) for m in streaming.reply.messages)
    assert call["function"] == "reply_pieces" and call["pieces"] > 1
    assert call["duration"] == zerogpu.reply_seconds(160, prompt_chars)
    bot.chat("And your method?")
    assert len(fake_spaces.CALLS) == 2 and fake_spaces.DECORATED == ["reply_pieces"]  # decorated once


def test_the_app_answers_through_spaces_gpu(tmp_path):
    log = tmp_path / "spaces.jsonl"
    env = {"PYTHONPATH": str(FAKE), "FAKE_SPACES_LOG": str(log)}
    with gradio_app(tmp_path / "cache", log=tmp_path / "app.log", **env) as (url, _, _):
        client = Client(url, verbose=False)
        client.predict("sherlock", api_name="/switch_role")
        job = client.submit("Who are you?", "", "local", "smollm2", "", "", 256, 192, False, 300, 400, "", "", 4,
                            api_name="/send")
        list(job)
        chat = job.result()[0]
    assert text_of(chat[-1]).strip() and "⚠" not in text_of(chat[-1])
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["function"] for c in calls] == ["reply_pieces"] and calls[0]["pieces"] > 1
    assert zerogpu.MIN_SECONDS <= calls[0]["duration"] <= zerogpu.MAX_SECONDS
    assert "Traceback" not in (tmp_path / "app.log").read_text()


def test_a_zerogpu_space_with_the_runtime_answers_everyone_with_the_gpu_model(cache_dir, monkeypatch):
    from chatharuhi_core import config

    base = {"CHATHARUHI_CACHE": str(cache_dir), "SPACES_ZERO_GPU": "true"}
    monkeypatch.setattr(config, "gpu_runtime", lambda: True)
    ready = Settings.from_env(base)
    assert ready.default_engine == "local" and ready.engine_chosen  # signed in or not: the free GPU model
    assert Settings.from_env({**base, "CHATHARUHI_ENGINE": "script"}).default_engine == "script"
    assert Settings.from_env({**base, "OPENAI_API_KEY": "sk-test"}).default_engine == "openai"
    monkeypatch.setattr(config, "gpu_runtime", lambda: False)
    bare = Settings.from_env(base)  # requirements without torch: the offline engine first, sign-in still offered
    assert bare.default_engine == "script" and not bare.engine_chosen
    assert Settings.from_env({"CHATHARUHI_CACHE": str(cache_dir)}).default_engine == "script"  # a CPU Space


def test_the_space_metadata_asks_for_zerogpu_and_preloads_its_model():
    """README's front matter is the Space's configuration: a duplicate asks for the hardware and has the model."""
    import yaml

    from chatharuhi_core.config import DEFAULT_GPU_MODEL

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(readme.split("---")[1])
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert meta["suggested_hardware"] == "zero-a10g"
    assert DEFAULT_GPU_MODEL in meta["preload_from_hub"]
    assert meta["hf_oauth"] is True and "inference-api" in meta["hf_oauth_scopes"]


def test_a_space_installs_the_gpu_runtime_with_no_edit_and_set_up_leaves_it_out():
    """A Space runs `pip install -r requirements.txt` on that one file (no other file is there yet): a ZeroGPU
    duplicate must find torch and transformers in it; scripts/setup.sh installs the lines above the runtime, so a
    laptop and CI get no CUDA torch."""
    text = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    app, marker, runtime = text.partition("\n# ZeroGPU runtime")
    assert marker and not any(line.strip().startswith(("-r", "-c")) for line in text.splitlines())
    names = lambda part: {line.split("#")[0].strip().split("[")[0].split("=")[0].split(">")[0].split("<")[0]  # noqa: E731
                          for line in part.splitlines() if line.split("#")[0].strip()}
    assert {"torch", "transformers", "accelerate"} <= names(runtime) and "torch" not in names(app)
    assert "gradio" in names(app) and "spaces" not in names(text)  # ZeroGPU brings its own `spaces`
    assert "sed '/^# ZeroGPU runtime/,$d' requirements.txt" in (ROOT / "scripts" / "setup.sh").read_text()
    assert "-r requirements.txt" not in (ROOT / "requirements-local.txt").read_text()  # it would pull CUDA torch
