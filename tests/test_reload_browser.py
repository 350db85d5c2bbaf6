"""A reload keeps the conversation: in Chromium, on the app started as README's command starts it."""

import time

import pytest
from conftest import ARTIFACTS
from test_browser import browser, say, wait_reply  # noqa: F401  (the module's browser fixture)
from test_layout_browser import LAPTOP, PHONE, open_at

pytestmark = [pytest.mark.browser, pytest.mark.server]


def user_texts(page) -> list[str]:
    return [t.strip() for t in page.locator("#chat .message.user").all_inner_texts()]


def pick(page, ref: str, name: str) -> None:
    page.locator(f"#picker [data-ref={ref}]").click()
    page.wait_for_function(f"() => document.querySelector('#about')?.innerText.includes('{name}')")


@pytest.mark.parametrize("name, viewport", [("laptop", LAPTOP), ("phone", PHONE)])
def test_a_reload_brings_each_chat_back(browser, app_server, name, viewport):  # noqa: F811
    context = browser.new_context(viewport=viewport)
    page = open_at(context, app_server, viewport)
    pick(page, "sherlock", "Sherlock")
    say(page, "What is your method?")
    holmes, _ = wait_reply(page, 2)
    pick(page, "sunwukong", "孙悟空")
    say(page, "你是谁？")
    wukong, _ = wait_reply(page, 2)
    time.sleep(1.5)  # the browser writes what it keeps
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
