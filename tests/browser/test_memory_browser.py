"""The memory panel in a real browser, on a laptop and a phone: a fact written and one pinned from the
visitor's message are listed, and the scenes panel shows what the reply drew on."""

from __future__ import annotations

import pytest
from support.browser import ARTIFACTS, open_page, say, wait_reply


@pytest.mark.parametrize("size, viewport", [("laptop", {"width": 1366, "height": 768}),
                                            ("phone", {"width": 390, "height": 844})])
def test_write_pin_and_forget_a_memory(browser, app_server, size, viewport):
    page = open_page(browser, app_server)
    page.set_viewport_size(viewport)
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
