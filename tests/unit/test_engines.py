"""The engines: the offline script engine and the openai engine against a server on loopback."""

import time

import pytest
from support.expect import lines_of
from support.fake_openai import GOOD_KEY, fault_cases, told_and_kept

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.chat.engines import engine_names
from chatharuhi_core.config import Settings
from chatharuhi_core.errors import EngineError, InputError


def test_registry_has_the_core_engines():
    assert {"script", "openai"} <= set(engine_names())


@pytest.mark.parametrize(
    "role_id, text, expected",
    [
        ("sunwukong", "你的金箍棒有多重？", "一万三千五百斤"),
        ("sunwukong", "前面好像有妖怪，怎么办？", "妖"),  # several scenes answer this; all speak of 妖怪
        ("sherlock", "What is your method?", "Observe"),
        ("sherlock", "Who are you?", "consulting detective"),
        ("sherlock", "hello", "Hello"),
    ],
)
def test_script_engine_quotes_the_right_line(settings, role_id, text, expected):
    bot = ChatHaruhi(role_name=role_id, engine="script", settings=settings)
    reply = bot.chat(text)
    assert expected in reply
    assert reply in lines_of(role_id)  # a quote, not an invention


def test_script_engine_streams_and_varies(settings):
    bot = ChatHaruhi(role_name="sherlock", engine="script", settings=settings)
    pieces = list(bot.stream("What is your method?"))
    assert len(pieces) > 5 and "".join(pieces) == bot.history[-1].reply
    second = bot.chat("What is your method?")
    assert second != bot.history[0].reply  # does not repeat itself word for word


def openai_bot(settings, srv, model="echo", key=GOOD_KEY, timeout=None, **kw):
    s = settings if timeout is None else settings.with_(timeout_s=timeout)
    return ChatHaruhi(role_name="sherlock", engine="openai", model=model, base_url=srv.base_url, api_key=key,
                      settings=s, **kw)


def test_openai_streams_from_a_server(settings, fake_openai):
    bot = openai_bot(settings, fake_openai)
    pieces = list(bot.stream("Who are you?", role="Watson"))
    assert len(pieces) > 2
    assert "".join(pieces) == "Echo: Watson:「Who are you?」"  # the Name:「」 wrapper is stripped
    body = fake_openai.requests[-1]["body"]
    assert body["stream"] is True and body["model"] == "echo"
    roles = [m["role"] for m in body["messages"]]
    assert roles[0] == "system" and roles[-1] == "user"
    assert body["messages"][1]["content"].startswith("Classic scenes for the role are as follows:\n")
    assert fake_openai.requests[-1]["headers"]["authorization"] == f"Bearer {GOOD_KEY}"


@pytest.mark.parametrize("model, key, words", fault_cases("sk-wrong", "refused the API key"))
def test_faults_are_sentences_and_history_survives(settings, fake_openai, model, key, words):
    told_and_kept(lambda **kw: openai_bot(settings, fake_openai, **kw), model, key, words)


def test_timeout_is_cut_and_told(settings):
    from support.fake_openai import FakeOpenAI

    with FakeOpenAI(slow_s=5) as srv:
        bot = openai_bot(settings, srv, model="slow", timeout=1.0)
        start = time.monotonic()
        with pytest.raises(EngineError, match="did not answer within 1 seconds"):
            bot.chat("hello")
        assert time.monotonic() - start < 4
        assert bot.history == []


def test_server_down_is_told_quickly(settings):
    from support.loopback import free_port

    bot = ChatHaruhi(role_name="sherlock", engine="openai", model="echo", api_key=GOOD_KEY,
                     base_url=f"http://127.0.0.1:{free_port()}/v1", settings=settings)
    start = time.monotonic()
    with pytest.raises(EngineError, match="Could not reach the model server"):
        bot.chat("hello")
    assert time.monotonic() - start < 5


def test_no_key_and_no_url_says_what_to_do(settings):
    bot = ChatHaruhi(role_name="sherlock", engine="openai", settings=settings.with_(openai_api_key=None))
    with pytest.raises(EngineError, match="No API key"):
        bot.chat("hello")


def test_operator_key_and_url_come_from_the_environment(cache_dir, fake_openai):
    env = {"CHATHARUHI_CACHE": str(cache_dir), "OPENAI_API_KEY": GOOD_KEY, "OPENAI_BASE_URL": fake_openai.base_url,
           "OPENAI_MODEL": "echo"}
    s = Settings.from_env(env)
    assert s.default_engine == "openai"
    assert GOOD_KEY not in repr(s)  # secrets stay out of logs
    assert ChatHaruhi(role_name="sherlock", engine=s.default_engine, settings=s).chat("hi") == "Echo: Watson:「hi」"
    assert Settings.from_env({"CHATHARUHI_CACHE": str(cache_dir)}).default_engine == "script"


def test_input_limits(settings):
    bot = ChatHaruhi(role_name="sherlock", settings=settings)
    with pytest.raises(InputError, match="limit is 8,000"):
        bot.chat("x" * 3_000_000)
    with pytest.raises(InputError, match="type a message"):
        bot.chat("   ")
    assert bot.history == []
