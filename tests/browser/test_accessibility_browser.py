"""Accessibility in Chromium: axe-core (bundled by axe-playwright-python) on the chat, the scene view and
the add-a-character tab, at a laptop's and a phone's size; and the keyboard path through a chat."""

import time

import pytest
from support.axe import OPAQUE, blocking_violations, open_every_panel
from support.browser import ARTIFACTS, cast_scene, wait_reply


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
