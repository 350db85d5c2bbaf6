"""A reload keeps the conversation: in Chromium, on the app started as README's command starts it."""

import time

import pytest
from support.browser import ARTIFACTS, LAPTOP, PHONE, open_at, pick, say, user_texts, wait_reply

KEPT_SIZE = "(localStorage.getItem('chatharuhi-chats') || '').length"


def kept_size(page) -> int:
    """How long this browser's kept record is (sealed, so its size is all a test can read of it)."""
    return page.evaluate(f"() => {KEPT_SIZE}")


def wait_kept(page, before: int) -> None:
    """Until the browser has written a record grown past `before` (a reply's chat), then a moment for later writes."""
    page.wait_for_function(f"() => {KEPT_SIZE} > {before} + 40", timeout=30_000)
    time.sleep(1.0)


@pytest.mark.parametrize("name, viewport", [("laptop", LAPTOP), ("phone", PHONE)])
def test_a_reload_brings_each_chat_back(browser, app_server, name, viewport):
    context = browser.new_context(viewport=viewport)
    page = open_at(context, app_server, viewport)
    pick(page, "sherlock", "Sherlock")
    say(page, "What is your method?")
    holmes, _ = wait_reply(page, 2)
    pick(page, "sunwukong", "孙悟空")
    before = kept_size(page)
    say(page, "你是谁？")
    wukong, _ = wait_reply(page, 2)
    wait_kept(page, before)  # the browser writes what it keeps
    page.reload()
    page.wait_for_function("() => (document.querySelector('#about')?.innerText || '').includes('孙悟空')",
                           timeout=30_000)
    page.wait_for_function("() => document.querySelectorAll('#chat .message.user').length == 1", timeout=30_000)
    assert user_texts(page) == ["你是谁？"] and wait_reply(page, 2)[0][-1] == wukong[-1]
    page.screenshot(path=str(ARTIFACTS / f"reloaded-{name}.png"))
    pick(page, "sherlock", "Sherlock")  # the other character's chat came back too
    page.wait_for_function("() => document.querySelectorAll('#chat .message.user').length == 1", timeout=30_000)
    assert user_texts(page) == ["What is your method?"] and wait_reply(page, 2)[0][-1] == holmes[-1]
    say(page, "And what do you see?")  # it goes on from there
    wait_reply(page, 3)
    other = browser.new_context(viewport=viewport)  # another browser keeps nothing of it
    fresh = open_at(other, app_server, viewport)
    assert user_texts(fresh) == []
    other.close()
    context.close()


def test_a_reload_keeps_the_engine_settings_but_not_the_key(browser, app_server, fake_openai):
    from support.browser import use_server
    from support.fake_openai import GOOD_KEY

    context = browser.new_context(viewport=LAPTOP)
    page = open_at(context, app_server, LAPTOP)
    pick(page, "sherlock", "Sherlock")
    field = use_server(page, fake_openai.base_url, GOOD_KEY)
    story = page.locator("#story-tokens input[type=number]")
    story.fill("640")
    story.press("Enter")
    page.locator("#fold input").check()
    before = kept_size(page)
    say(page, "What is your method?")
    texts, _ = wait_reply(page, 2)
    assert texts[-1].startswith("Echo:")
    wait_kept(page, before)  # the browser writes what it keeps
    page.reload()
    page.wait_for_function("() => document.querySelectorAll('#chat .message.user').length == 1", timeout=30_000)
    page.click("#settings button")
    assert page.locator("#engine input").input_value() == "OpenAI-compatible server"
    assert field("model").input_value() == "echo" and field("base-url").input_value() == fake_openai.base_url
    assert story.input_value() == "640" and page.locator("#fold input").is_checked()
    assert field("api-key").input_value() == ""  # the key was this session's only
    page.screenshot(path=str(ARTIFACTS / "reloaded-settings.png"), full_page=True)
    say(page, "And now?")
    texts, _ = wait_reply(page, 3)
    assert "refused the API key" in texts[-1]  # the same server, asked without the key
    context.close()
