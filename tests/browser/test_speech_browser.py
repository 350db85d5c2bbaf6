"""Speaking instead of typing (issue 68), in Chromium with a recording as its microphone: the round microphone
button beside the box at laptop and phone sizes, in English and in Chinese; the words land in the box to be edited
or sent; speech in another language than the page's is named, and the box is left alone."""

from __future__ import annotations

import re
import time

import pytest
from support.browser import ARTIFACTS, LAPTOP, PHONE, bot_texts, chromium, inside_viewport, open_at, wait_reply
from support.speech import PERSON_EN, SYNTHETIC_ZH

HEARD = {"en-US": "edit the words or send them", "zh-CN": "可以修改文字"}


def speak(page, seconds: float) -> str:
    """Record `seconds` of the microphone, stop, and wait for the note under the box (what was heard, or why
    nothing was): its text."""
    page.click("#mic .record-button")
    time.sleep(seconds)
    page.click("#mic .stop-button")
    page.wait_for_function("() => /[.。!！]$/.test(document.querySelector('#speech-note').innerText.trim())",
                           timeout=60_000)
    return page.locator("#speech-note").inner_text()


@pytest.mark.parametrize("size, viewport, locale, clip, seconds, words", [
    ("laptop", LAPTOP, "en-US", PERSON_EN, 3.4, r"ill.disposed young man"),
    ("phone", PHONE, "zh-CN", SYNTHETIC_ZH, 7.4, r"你好.*天气"),
])
def test_a_visitor_speaks_and_the_words_land_in_the_box(app_server, size, viewport, locale, clip, seconds, words):
    with chromium(microphone=clip) as browser:
        page = open_at(browser.new_context(locale=locale, viewport=viewport), app_server, viewport)
        assert inside_viewport(page, "#mic .record-button"), f"the microphone is out of sight on a {size}"
        box = page.locator("#message textarea")
        assert box.bounding_box()["width"] > 140  # the box keeps room to read what was heard
        said = speak(page, seconds)
        heard = box.input_value()
        assert re.search(words, heard), (heard, said)
        assert HEARD[locale] in said
        if locale == "zh-CN":
            assert not set("們氣還") & set(heard)  # simplified
            call = page.locator("#call")  # and the call's button, in the visitor's language
            assert call.is_visible() and call.inner_text().strip() == "开始通话"
        page.screenshot(path=str(ARTIFACTS / f"speech-{size}-{locale}.png"))
        before = len(bot_texts(page))
        page.click("#send")
        wait_reply(page, before + 1)
        assert page.locator("#chat .message.user").last.inner_text().strip() == heard.strip()
        assert box.input_value() == ""


def test_speech_in_another_language_than_the_pages_is_named_and_the_box_kept(app_server):
    with chromium(microphone=PERSON_EN) as browser:
        page = open_at(browser.new_context(locale="zh-CN", viewport=LAPTOP), app_server, LAPTOP)
        page.fill("#message textarea", "我想说")
        said = speak(page, 3.4)
        assert "英语" in said and "中文" in said, said
        assert page.locator("#message textarea").input_value() == "我想说"
        page.screenshot(path=str(ARTIFACTS / "speech-other-language.png"))


CALL_STATE = """() => { const c = window.chCall;
  return c && {on: c.on, listening: c.listening, turn: c.turn, playing: c.playing, queued: c.queue.length,
               timings: c.timings}; }"""


def test_a_call_of_two_turns_ends_when_the_visitor_picks_another_character(app_server, tmp_path):
    """The offline engine on a laptop: each turn ends at the visitor's pause, is sent, is answered aloud sentence by
    sentence, and the character listens again; a click on another character ends the call."""
    import numpy as np
    from faster_whisper.audio import decode_audio
    from support.speech import write_wav

    speech = decode_audio(str(PERSON_EN), sampling_rate=16_000)
    turn = write_wav(tmp_path / "turn.wav", np.concatenate([np.zeros(8000), speech, np.zeros(16_000 * 3)]))
    with chromium(microphone=turn) as browser:
        page = open_at(browser.new_context(locale="en-US", viewport=LAPTOP), app_server, LAPTOP)
        page.click("#call")
        page.wait_for_function("() => window.chCall?.turn >= 2 && window.chCall.listening && !window.chCall.playing"
                               " && !window.chCall.queue.length", timeout=120_000, polling=250)
        state = page.evaluate(CALL_STATE)
        said = [t.strip() for t in page.locator("#chat .message.user").all_inner_texts()]
        # the fake microphone loops the clip from wherever it is when the call listens: a turn may start late
        assert len(said) == 2 and all(re.search(r"(was not|not an|young man)", t) for t in said), said
        assert all(t.get("firstSound") is not None for t in state["timings"]), state  # each reply was heard
        voiced = page.input_value("#call-voice textarea")
        assert '"done": 2' in voiced and ".wav" in voiced
        assert page.locator("#call").inner_text() == "End the call"
        page.screenshot(path=str(ARTIFACTS / "call-laptop.png"))
        page.locator("#picker button[data-ref='sherlock']").click()
        page.wait_for_function("() => !window.chCall.on && !window.chCall.listening", timeout=10_000)
        page.wait_for_function("() => document.querySelector('#call').innerText.trim() === 'Start a call'",
                               timeout=10_000)


def test_a_refused_microphone_is_one_sentence_and_a_call_waiting_on_it_ends(app_server):
    with chromium(refuse_microphone=True) as browser:
        page = open_at(browser.new_context(locale="zh-CN", viewport=LAPTOP), app_server, LAPTOP)
        page.click("#mic .record-button")
        page.wait_for_function("() => document.querySelector('#speech-note').innerText.includes('浏览器拒绝了麦克风')",
                               timeout=10_000)
        page.click("#call")
        page.wait_for_function("() => !window.chCall.on && document.querySelector('#call').innerText.trim() === "
                               "'开始通话'", timeout=15_000)
        assert page.locator("#message textarea").is_enabled()  # the chat goes on typed
