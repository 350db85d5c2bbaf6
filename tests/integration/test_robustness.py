"""The app keeps serving through abuse and faults: a multi-megabyte message, a model server that
hangs, a visitor who closes the tab mid-reply. (A Chroma store damaged on disk is rebuilt: see
tests/test_store.py::test_damaged_store_is_rebuilt.)"""

from __future__ import annotations

import time
import urllib.request

import pytest
from gradio_client import Client
from support.app import text_of
from support.fake_openai import GOOD_KEY, FakeOpenAI
from support.loopback import gradio_app


@pytest.fixture(scope="module")
def slow_server():
    """The scripted server at 0.15 s per token: a reply takes a few seconds to stream."""
    with FakeOpenAI(token_delay_s=0.15, slow_s=30) as srv:
        yield srv


@pytest.fixture(scope="module")
def strict_app(tmp_path_factory):
    """app.py with a 2-second model timeout."""
    with gradio_app(tmp_path_factory.mktemp("robust-cache"), CHATHARUHI_TIMEOUT="2") as (url, _, _):
        yield url


def still_serving(url: str) -> None:
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
    chat, _, _ = Client(url, verbose=False).predict("hello", "", "script", "", "", "", 1500, 1200, False, 300, 400,
                                                    "", "", 4, api_name="/send")
    assert len(chat) == 3 and text_of(chat[-1])


def test_a_message_of_several_megabytes_is_refused_in_a_sentence(strict_app):
    client = Client(strict_app, verbose=False)
    client.predict("sherlock", api_name="/switch_role")
    huge = "Watson! " * 600_000  # 4.8 MB
    start = time.monotonic()
    chat, box, _ = client.predict(huge, "", "script", "", "", "", 1500, 1200, False, 300, 400, "", "", 4, api_name="/send")
    assert time.monotonic() - start < 30
    assert len(chat) == 1  # the greeting only: nothing was sent to the model or kept
    assert len(box) == len(huge.strip()) or len(box) == len(huge)  # the words stay in the box
    still_serving(strict_app)


def test_a_hanging_model_server_is_cut_by_the_timeout_and_the_visitor_told(strict_app, slow_server):
    client = Client(strict_app, verbose=False)
    client.predict("sherlock", api_name="/switch_role")
    start = time.monotonic()
    chat, box, _ = client.predict("Are you there?", "Watson", "openai", "slow", slow_server.base_url, GOOD_KEY,
                                  1500, 1200, False, 300, 400, "", "", 4, api_name="/send")
    assert time.monotonic() - start < 10
    assert "did not answer within 2 seconds" in text_of(chat[-1]) and box == "Are you there?"
    chat, _, _ = client.predict("And now?", "Watson", "script", "", "", "", 1500, 1200, False, 300, 400, "", "", 4,
                                api_name="/send")
    assert len(chat) == 3  # the failed turn left nothing behind; the next one is answered
    still_serving(strict_app)


def test_a_visitor_who_leaves_mid_reply_does_not_disturb_the_others(strict_app, slow_server):
    leaver, stayer = Client(strict_app, verbose=False), Client(strict_app, verbose=False)
    args = ("Watson", "openai", "echo", slow_server.base_url, GOOD_KEY, 1500, 1200, False, 300, 400, "", "", 4)
    gone = leaver.submit("Tell me a long story about the hound on the moor, please, all of it.", *args,
                         api_name="/send")
    stays = stayer.submit("And what do you make of this walking stick, Holmes?", *args, api_name="/send")
    deadline = time.monotonic() + 20
    while len(gone.outputs()) < 3 and time.monotonic() < deadline:  # mid-reply
        time.sleep(0.05)
    gone.cancel()
    leaver.close()  # the tab is closed
    chat = stays.result()[0]
    assert text_of(chat[-1]) == "Echo: Watson:「And what do you make of this walking stick, Holmes?」"
    still_serving(strict_app)


def _mid_reply(url: str, slow_server):
    """A visitor with Holmes whose long message's reply is streaming: (the client, /send's other inputs, the send)."""
    client = Client(url, verbose=False)
    client.predict("sherlock", api_name="/switch_role")
    args = ("Watson", "openai", "echo", slow_server.base_url, GOOD_KEY, 1500, 1200, False, 300, 400, "", "", 4)
    first = client.submit("Tell me a long story about the hound on the moor, please.", *args, api_name="/send")
    deadline = time.monotonic() + 20
    while len(first.outputs()) < 3 and time.monotonic() < deadline:  # mid-reply
        time.sleep(0.05)
    return client, args, first


def test_a_second_message_while_the_reply_streams_is_refused_and_the_first_kept(strict_app, slow_server):
    """Enter, then Send while the reply streams (or Regenerate meanwhile): the second turn started from the chat
    as it was before the first and wrote it back without the first exchange. Now it is refused with a sentence,
    and the first reply finishes in the chat."""
    client, args, first = _mid_reply(strict_app, slow_server)
    second = client.submit("And what do you make of this walking stick?", *args, api_name="/send")
    second.result()  # refused at once (the page shows a warning; the message stays in the box)
    assert not first.done()
    chat = first.result()[0]
    assert text_of(chat[-1]) == "Echo: Watson:「Tell me a long story about the hound on the moor, please.」"
    chat = client.predict("And the walking stick?", *args, api_name="/send")[0]
    said = [text_of(m) for m in chat if m["role"] == "user"]
    assert said == ["Tell me a long story about the hound on the moor, please.", "And the walking stick?"]
    client.close()


def test_a_fact_remembered_while_the_reply_streams_is_kept_with_the_reply(strict_app, slow_server):
    """A memory added while a reply streams: the reply's last frame wrote the conversation it started from and the
    fact was gone (a thumb, a pin or the Story panel the same); now the last frame writes both."""
    client, args, first = _mid_reply(strict_app, slow_server)
    listed = client.predict("my sister is Anna", api_name="/remember")[0]
    assert "my sister is Anna" in listed and not first.done()
    assert text_of(first.result()[0][-1]) == "Echo: Watson:「Tell me a long story about the hound on the moor, please.」"
    listed = client.predict("my brother is Tom", api_name="/remember")[0]
    assert "my sister is Anna" in listed and "my brother is Tom" in listed
    chat = client.predict("And the walking stick?", *args, api_name="/send")[0]
    said = [text_of(m) for m in chat if m["role"] == "user"]
    assert said == ["Tell me a long story about the hound on the moor, please.", "And the walking stick?"]
    client.close()
