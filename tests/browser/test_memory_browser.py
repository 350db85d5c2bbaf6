"""The memory panel in a real browser, on a laptop and a phone: a fact written and one pinned from the
visitor's message are listed, and the scenes panel shows what the reply drew on."""

from __future__ import annotations

import pytest
from support.browser import ARTIFACTS, bot_texts, open_at, say, settled_bot_texts, use_server, wait_reply
from support.fake_openai import GOOD_KEY, FakeOpenAI


@pytest.mark.parametrize("size, viewport", [("laptop", {"width": 1366, "height": 768}),
                                            ("phone", {"width": 390, "height": 844})])
def test_write_pin_and_forget_a_memory(browser, app_server, size, viewport):
    page = open_at(browser, app_server, viewport)  # drawn at its size: not resized after it loaded
    page.click("#memory-panel button")  # open the panel
    page.wait_for_selector("#memory-text textarea")
    assert "No memories yet" in page.inner_text("#memories")
    page.fill("#memory-text textarea", "My sister is called Anna.")
    page.click("#remember")
    page.wait_for_function("() => document.querySelector('#memories').innerText.includes('Anna')")
    page.wait_for_function("() => document.querySelector('#memory-text textarea').value === ''")  # emptied
    say(page, "Where is my sister?")
    wait_reply(page, 2)
    # the next reply's prompt held the fact: the panel says so, with what else that reply remembered
    page.wait_for_function("() => document.querySelector('#memories').innerText.includes('in the last reply')")
    shown = page.inner_text("#memories")
    # the offline engine quotes lines: the fact was in the prompt, and the panel never claims the reply used it
    assert "In the last reply's prompt" in shown and "cannot use memories" in shown and "uses it" not in shown
    page.click("#pin-last")
    page.wait_for_function("() => document.querySelector('#memories').innerText.includes('from exchange 1')")
    listed = page.inner_text("#memories")
    assert "My sister is called Anna." in listed and "Where is my sister?" in listed and "over the" not in listed
    assert "Anna. · 📥 in the last reply's prompt" in listed and "pinned after the last reply" in listed
    assert "Pinned:" in page.inner_text("#memory-note")
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#memory-panel").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"memory-{size}.png"), full_page=True)
    page.close()


STREAMING = "() => [...document.querySelectorAll('#chat .message.bot')].pop()?.innerText.includes('Echo')"


@pytest.mark.parametrize("size, viewport", [("laptop", {"width": 1366, "height": 768}),
                                            ("phone", {"width": 390, "height": 844})])
def test_a_fact_and_a_thumb_given_while_the_reply_streams_stay(browser, app_server, size, viewport):
    """The reply's last frame wrote back the conversation it started from: a fact remembered or a reply rated
    while it streamed was gone (from the panel, and from what a reload brings back); and a thumb showed unrated once
    the next reply was done."""
    with FakeOpenAI(token_delay_s=0.25) as slow:
        page = open_at(browser, app_server, viewport)
        page.locator("#picker [data-ref=sherlock]").click()
        page.wait_for_function("() => document.querySelector('#about')?.innerText.includes('Sherlock')")
        say(page, "What is your method?")  # one whole exchange with the script engine
        wait_reply(page, 2)
        use_server(page, slow.base_url, GOOD_KEY)
        page.click("#memory-panel button")
        page.fill("#memory-text textarea", "My sister is called Anna.")
        say(page, "Tell me the whole story of the hound of the Baskervilles and the moor at night")
        page.wait_for_function(STREAMING, timeout=20_000)
        page.click("#remember")
        page.wait_for_function("() => document.querySelector('#memories').innerText.includes('Anna')")
        page.locator("#chat button[aria-label='Like']").nth(1).click()  # the first reply (0: the greeting's), mid-reply
        page.wait_for_function("() => document.querySelectorAll(\"#chat button[aria-label='Liked']\").length === 1")
        page.locator("#chat button[aria-label='Like']").last.click()  # the reply being written: not yet
        page.wait_for_function("() => document.querySelector('#feedback-note')?.innerText.includes('once it is')")
        assert page.evaluate(STREAMING) and "moor at night」" not in bot_texts(page)[-1]  # still streaming
        texts, _ = wait_reply(page, 3, timeout=60)
        assert texts[-1].endswith("moor at night」")
        settled_bot_texts(page)
        assert "My sister is called Anna." in page.inner_text("#memories")  # still there after the last frame
        assert page.locator("#chat button[aria-label='Liked']").count() == 1  # drawn from the conversation
        say(page, "And then?")  # a thumb given before a reply is still shown after it
        wait_reply(page, 4, timeout=60)
        settled_bot_texts(page)
        assert page.locator("#chat button[aria-label='Liked']").count() == 1
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"kept-mid-reply-{size}.png"), full_page=True)
        page.reload()  # what the browser keeps is the conversation with both
        page.wait_for_function("() => document.querySelector('#about')?.innerText.includes('Sherlock')")
        assert len(settled_bot_texts(page)) == 4
        page.click("#memory-panel button")
        page.wait_for_function("() => document.querySelector('#memories')?.innerText.includes('Anna')")
        page.close()
