"""Accessibility in Chromium: axe-core (bundled by axe-playwright-python) on the chat, the scene view and
the add-a-character tab, at a laptop's and a phone's size; and the keyboard path through a chat."""

import time

import pytest
from support.axe import OPAQUE, blocking_violations, open_every_panel
from support.browser import ARTIFACTS, LAPTOP, cast_scene, open_at, say, settled_bot_texts, use_server, wait_reply
from support.fake_openai import GOOD_KEY, FakeOpenAI


@pytest.mark.parametrize("viewport", [{"width": 1366, "height": 850}, {"width": 390, "height": 844}])
def test_no_critical_or_serious_violations_on_chat_scene_and_add(browser, app_server, viewport):
    page = browser.new_page(viewport=viewport)
    page.goto(app_server)
    page.wait_for_selector("#chat .message.bot", timeout=60_000)
    page.wait_for_selector("#engine-note strong", timeout=60_000)  # the session has loaded
    time.sleep(1)
    assert page.evaluate("document.documentElement.lang")  # the page says its language
    assert page.locator("#about [lang=zh]").count() == 1  # 孙悟空's name and line are marked Chinese
    problems = {"chat": blocking_violations(page)}
    assert open_every_panel(page) >= 3
    problems["chat, every panel open"] = blocking_violations(page)
    page.get_by_role("tab", name="Group").click()
    page.wait_for_timeout(800)
    # the empty cast line is an HTML block that an update fades back in (Gradio's .pending at 20% opacity, then
    # a transition to 1); axe run during the fade sees its text at a fraction of its contrast (CI did, twice)
    page.wait_for_function(OPAQUE, arg=".scene-cast-empty", timeout=15_000)
    problems["scene, empty"] = blocking_violations(page)
    cast_scene(page, ("孙悟空", "诸葛亮"))
    problems["scene"] = blocking_violations(page)
    open_every_panel(page)
    problems["scene, every panel open"] = blocking_violations(page)
    add_tab = page.get_by_role("tab", name="Add a character")
    if add_tab.count() and add_tab.is_visible():
        add_tab.click()
    else:  # on a phone the third tab sits under Gradio's "More tabs" button
        page.get_by_role("button", name="More tabs").click()
        page.locator(".overflow-dropdown button", has_text="Add a character").click()
    page.wait_for_selector("#add-role", state="visible")
    time.sleep(0.5)
    problems["add"] = blocking_violations(page)
    open_every_panel(page)
    problems["add, every panel open"] = blocking_violations(page)
    page.close()
    assert problems == {key: [] for key in problems}


def test_the_keyboard_path_enter_sends_and_focus_comes_back_to_the_box(browser, app_server):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(app_server)
    page.wait_for_selector("#chat .message.bot", timeout=60_000)
    page.wait_for_selector("#engine-note strong", timeout=60_000)
    box = page.locator("#message textarea")
    box.focus()
    page.keyboard.type("你的金箍棒有多重？")
    page.keyboard.press("Enter")  # Enter sends
    wait_reply(page, 2)
    page.wait_for_function("() => document.activeElement === document.querySelector('#message textarea')",
                           timeout=10_000)
    page.keyboard.press("Tab")  # the next stop after the box is the microphone beside it, named for a reader
    focused = page.evaluate("[document.activeElement.closest('#mic') !== null, document.activeElement.textContent]")
    assert focused[0] and focused[1].strip() in ("Record", "录音"), focused
    page.keyboard.press("Tab")  # then the box's Send button
    assert page.evaluate("document.activeElement.id") == "send"
    assert "Portrait of 孙悟空" in page.locator("#portrait img").get_attribute("alt")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "keyboard.png"))
    page.close()


def test_a_field_the_visitor_went_to_while_the_reply_ran_keeps_the_focus(browser, app_server):
    """The box takes the focus back when a reply ends, so the next line can be typed at once; but not from a field
    the visitor moved to meanwhile: the page took it back from the memory box they were typing in (the rest of
    their sentence went into the message box) and closed the engine list they had opened."""
    with FakeOpenAI(token_delay_s=0.2) as slow:
        page = open_at(browser, app_server, LAPTOP)
        use_server(page, slow.base_url, GOOD_KEY)
        page.click("#memory-panel button")
        say(page, "Tell me the whole story of the hound of the Baskervilles and the moor at night")
        page.wait_for_function("() => [...document.querySelectorAll('#chat .message.bot')].pop()"
                               "?.innerText.includes('Echo')", timeout=20_000)
        memory = page.locator("#memory-text textarea")
        memory.click()
        page.keyboard.type("My sister ")
        wait_reply(page, 2, timeout=60)
        settled_bot_texts(page)
        time.sleep(1.5)  # the reply's follow-ups have run: the box would have taken the focus by now
        page.keyboard.type("is called Anna.")
        assert memory.input_value() == "My sister is called Anna."
        assert page.locator("#message textarea").input_value() == ""
        say(page, "And then?")  # the box itself keeps it, as before
        wait_reply(page, 3, timeout=60)
        page.wait_for_function("() => document.activeElement === document.querySelector('#message textarea')",
                               timeout=15_000)
        page.close()
