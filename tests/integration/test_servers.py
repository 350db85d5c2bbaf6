"""The hf engine and the fold option against the scripted server, and the openai and hf engines
streaming from a real model server: llama-cpp-python serving SmolLM2 on loopback."""

from __future__ import annotations

import time

import pytest
from support.fake_openai import GOOD_KEY, FakeOpenAI, fault_cases, told_and_kept

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.chat.prompt import fold_messages
from chatharuhi_core.errors import EngineError


@pytest.fixture(autouse=True)
def hub_online(monkeypatch):
    """scripts/test.sh sets HF_HUB_OFFLINE=1, and huggingface_hub then refuses even loopback URLs;
    these tests talk only to servers on 127.0.0.1, so lift it for them (and see it refused below)."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


def _root(base_url: str) -> str:
    return base_url.removesuffix("/v1")


def hf_bot(settings, srv, model="echo", key=GOOD_KEY, timeout=None, **kw):
    s = settings if timeout is None else settings.with_(timeout_s=timeout)
    return ChatHaruhi(role_name="sherlock", engine="hf", model=model, base_url=_root(srv.base_url), api_key=key,
                      settings=s, **kw)


def test_hf_streams_through_inference_client(settings, fake_openai):
    bot = hf_bot(settings, fake_openai)
    streaming = bot.stream("Who are you?", role="Watson")
    pieces = list(streaming)
    assert len(pieces) > 2 and "".join(pieces) == "Echo: Watson:「Who are you?」"
    req = fake_openai.requests[-1]
    assert req["path"] == "/v1/chat/completions" and req["body"]["stream"] is True
    assert req["body"]["model"] == "echo" and req["headers"]["authorization"] == f"Bearer {GOOD_KEY}"
    stats = streaming.reply.stats
    assert stats.engine == "Hugging Face Inference" and stats.model == "echo"


@pytest.mark.parametrize("model, key, words", fault_cases("hf_wrong", "refused the token"))
def test_hf_faults_are_the_same_sentences(settings, fake_openai, model, key, words):
    told_and_kept(lambda **kw: hf_bot(settings, fake_openai, **kw), model, key, words)


def test_hf_timeout_down_and_no_token(settings):
    from support.loopback import free_port

    with FakeOpenAI(slow_s=5) as srv:
        start = time.monotonic()
        with pytest.raises(EngineError, match="did not answer within 1 seconds"):
            hf_bot(settings, srv, model="slow", timeout=1.0).chat("hello")
        assert time.monotonic() - start < 4
    down = ChatHaruhi(role_name="sherlock", engine="hf", model="echo", api_key=GOOD_KEY, settings=settings,
                      base_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(EngineError, match="Could not reach"):
        down.chat("hello")
    with pytest.raises(EngineError, match="No HF token"):
        ChatHaruhi(role_name="sherlock", engine="hf", settings=settings.with_(hf_token=None)).chat("hello")


def test_hf_under_hub_offline_mode_says_what_to_use(settings, fake_openai, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(EngineError, match="HF_HUB_OFFLINE is set.*choose the OpenAI-compatible engine"):
        hf_bot(settings, fake_openai).chat("hello")


def test_fold_messages_alternates_and_keeps_every_word():
    messages = [
        {"role": "system", "content": "S"}, {"role": "user", "content": "scenes"},
        {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
    ]
    folded = fold_messages(messages)
    assert [m["role"] for m in folded] == ["user", "assistant", "user"]
    assert folded[0]["content"] == "S\n\nscenes\n\nq1" and folded[-1]["content"] == "q2"
    assert fold_messages([{"role": "system", "content": "S"}, {"role": "assistant", "content": "hi"}]) == [
        {"role": "user", "content": "S"}, {"role": "assistant", "content": "hi"}]
    assert fold_messages([{"role": "system", "content": "S"}]) == [{"role": "user", "content": "S"}]


@pytest.mark.parametrize("llm", ["openai", "hf"])
def test_a_strict_server_needs_the_fold_and_says_so(settings, fake_openai, llm):
    base = fake_openai.base_url if llm == "openai" else _root(fake_openai.base_url)
    strict = ChatHaruhi(role_name="sherlock", engine=llm, model="strict", base_url=base, api_key=GOOD_KEY,
                        settings=settings)
    with pytest.raises(EngineError, match=r"rejected the prompt's layout \(400\).*System role not supported.*"
                                           r"Fold the prompt"):
        strict.chat("Who are you?")
    folded = ChatHaruhi(role_name="sherlock", engine=llm, model="strict", base_url=base, api_key=GOOD_KEY,
                        settings=settings, fold_prompt=True)
    assert folded.chat("Who are you?").startswith("Echo: I want you to act like Sherlock Holmes")
    sent = fake_openai.requests[-1]["body"]["messages"]
    assert [m["role"] for m in sent] == ["user"] and sent[0]["content"].endswith("Watson:「Who are you?」")
    assert folded.chat("And your method?").startswith("Echo:")  # with history too
    sent = fake_openai.requests[-1]["body"]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[-1]["content"] == "Watson:「And your method?」"


def test_the_fold_option_comes_from_the_environment(cache_dir):
    from chatharuhi_core.config import Settings

    assert Settings.from_env({"CHATHARUHI_CACHE": str(cache_dir), "CHATHARUHI_FOLD_PROMPT": "1"}).fold_prompt
    assert not Settings.from_env({"CHATHARUHI_CACHE": str(cache_dir)}).fold_prompt


# ------------------------------------------------------------ a real model server

@pytest.mark.parametrize("llm", ["openai", "hf"])
def test_engines_stream_from_llama_cpp_server(settings, llama_server, llm):
    base = llama_server if llm == "openai" else _root(llama_server)
    bot = ChatHaruhi(role_name="sherlock", engine=llm, model="smollm2", base_url=base, settings=settings)
    streaming = bot.stream("Who are you?")
    pieces = list(streaming)
    assert len(pieces) > 3 and "".join(pieces) == bot.history[-1].reply
    letters = [c for c in bot.history[-1].reply if c.isalpha()]
    assert sum(c.isascii() for c in letters) / len(letters) > 0.95
    stats = streaming.reply.stats
    assert stats.tokens_per_s > 0 and stats.model == "smollm2"
    bot.chat("And what is your method?")  # a second turn, with history
    assert len(bot.history) == 2


def test_llama_cpp_server_wrong_model_and_folded_prompt(settings, llama_server):
    bot = ChatHaruhi(role_name="sherlock", engine="openai", model="smollm2", base_url=llama_server, settings=settings,
                     fold_prompt=True)
    said = bot.answer("Who are you?")
    assert said.text
    assert [m["role"] for m in said.messages] == ["user"]
