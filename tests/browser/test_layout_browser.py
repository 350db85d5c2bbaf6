"""The first minute on a phone and a laptop, in Chromium: what is on the first screen, the picker at
150 characters, and a picked character remembered across reloads."""

import time

import pytest
from support.browser import ARTIFACTS, LAPTOP, PHONE, cast_scene, inside_viewport, open_at, search, wait_reply


@pytest.mark.parametrize("name, viewport", [("phone", PHONE), ("laptop", LAPTOP)])
def test_the_message_box_and_the_greeting_are_on_the_first_screen(browser, app_server, name, viewport):
    page = open_at(browser, app_server, viewport)
    assert inside_viewport(page, "#message textarea"), "the message box is below the first screen"
    assert inside_viewport(page, "#chat .message.bot"), "the greeting is below the first screen"
    assert inside_viewport(page, "#about h2"), "the character's name is below the first screen"
    assert inside_viewport(page, "#examples"), "the questions to try are below the first screen"
    assert inside_viewport(page, "#scene-image img"), "the scene picture is below the first screen"
    tiles = page.evaluate("""() => { const box = document.querySelector('#picker .tiles').getBoundingClientRect();
        return [...document.querySelectorAll('#picker .thumbnail-item')].map(t => { const r = t.getBoundingClientRect();
          return {ref: t.dataset.ref, seen: r.left < box.right && r.right > box.left,
                  whole: r.top >= box.top - 1 && r.bottom <= box.bottom + 1 && r.left >= box.left - 1
                         && r.right <= box.right + 1 && r.bottom <= innerHeight}; });
        }""")
    if name == "laptop":  # every bundled character in sight, none cut off between rows
        assert len(tiles) == 8 and all(t["whole"] for t in tiles), tiles
    else:  # one strip of faces: the next one peeks at the edge, so the strip is clearly scrollable
        assert any(t["seen"] and not t["whole"] for t in tiles), tiles
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"first-screen-{name}.png"))
    # the README's pictures: 林黛玉 answering, as a visitor sees it at this size
    page.locator("#picker .thumbnail-item").nth(2).click()
    page.wait_for_function("() => (document.querySelector('#about')?.innerText || '').includes('林黛玉')")
    time.sleep(0.5)
    page.fill("#message textarea", "妹妹今天又哭了？")
    page.click("#send")
    wait_reply(page, 2)
    time.sleep(1)
    assert inside_viewport(page, "#message textarea")  # still there after a reply
    page.screenshot(path=str(ARTIFACTS / f"readme-{name}.png"))
    page.close()


def test_the_page_works_at_320_px_and_switching_keeps_the_chat_in_view(browser, app_server):
    page = open_at(browser, app_server, {"width": 320, "height": 640})
    assert page.evaluate("document.documentElement.scrollWidth") <= 322  # no sideways scrolling
    assert inside_viewport(page, "#message textarea")
    page.locator("#picker .thumbnail-item").nth(1).click()  # Sherlock, from the strip
    page.wait_for_function("() => (document.querySelector('#about')?.innerText || '').includes('Sherlock')")
    time.sleep(0.5)
    assert inside_viewport(page, "#message textarea") and inside_viewport(page, "#chat .message.bot")
    page.screenshot(path=str(ARTIFACTS / "first-screen-320.png"))
    page.close()


def test_a_picked_character_survives_a_reload(browser, app_server):
    context = browser.new_context(viewport=LAPTOP)
    page = open_at(context, app_server, LAPTOP)
    page.locator("#picker .thumbnail-item").nth(2).click()  # 林黛玉
    page.wait_for_function("() => (document.querySelector('#about')?.innerText || '').includes('林黛玉')")
    time.sleep(1)
    page.reload()
    page.wait_for_function("() => (document.querySelector('#about')?.innerText || '').includes('林黛玉')",
                           timeout=30_000)
    other = browser.new_context(viewport=LAPTOP).new_page()  # another browser: nothing remembered there
    other.goto(app_server)
    other.wait_for_selector("#chat .message.bot", timeout=60_000)
    assert "林黛玉" not in other.locator("#about").inner_text()
    context.close()
    other.context.close()


def test_search_finds_a_hub_role_by_name_and_by_work_and_the_hub_is_grouped(browser, app_server):
    page = open_at(browser, app_server, LAPTOP)  # an English page: names and works in English, names as written
    assert any("Jack Sparrow" in o for o in search(page, "Pirates of the Caribbean"))
    assert any("令狐冲" in o for o in search(page, "Linghu Chong"))
    assert any("令狐冲" in o for o in search(page, "Smiling, Proud Wanderer"))
    assert any("令狐冲" in o for o in search(page, "令狐冲"))
    page.keyboard.press("Escape")
    tiles = page.locator("#picker .thumbnail-item").count()
    assert tiles < 20  # the Hub's 142 are not tiles: they are folded in their own list
    page.get_by_text("ChatHaruhi on the Hub").first.click()
    page.wait_for_selector("#hub-list :text('ChatHaruhi-54K')")
    assert page.locator("#hub-list").get_by_text("凉宫春日").count() >= 1
    assert page.locator("#hub-list tbody tr").count() <= 12  # paged
    page.screenshot(path=str(ARTIFACTS / "hub-list.png"), full_page=True)
    page.close()


def test_the_scene_on_a_phone_shows_cast_scene_and_box_first(browser, app_server):
    page = open_at(browser, app_server, PHONE)
    page.get_by_role("tab", name="Group").click()
    box = page.locator("#scene-cast input")
    box.click()
    box.fill("Sparrow")
    box.press("Shift")
    page.wait_for_selector("[role=option]:has-text('Jack Sparrow')", timeout=10_000)  # the Hub's roles, once opened
    box.fill("")
    page.keyboard.press("Escape")
    cast_scene(page, ("孙悟空", "诸葛亮"))
    page.evaluate("window.scrollTo(0, 0)")
    time.sleep(0.3)
    page.screenshot(path=str(ARTIFACTS / "first-screen-scene-phone.png"))
    for selector in ("#scene-cast", "#scene-present", "#scene-chat", "#scene-message textarea"):
        assert inside_viewport(page, selector), selector
    page.close()
