"""The walk of issue 21 in Chromium, on the app started as README's command starts it (the shared
app_server: no cache setting, the default cache in its own home, outside the system temp folder).
Every test here, like every test on the shared app, fails if the server logged a traceback."""

import time

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from support.browser import (
    ARTIFACTS,
    LAPTOP,
    PHONE,
    cast_scene,
    inside_viewport,
    lines,
    open_at,
    open_page,
    say,
    settled_bot_texts,
    use_server,
    wait_lines,
    wait_reply,
)
from support.expect import lines_of
from support.fake_openai import GOOD_KEY, FakeOpenAI


def played(page, selector: str, old: str | None = None) -> bytes:
    """Wait until the audio player under `selector` has a new source the browser has loaded, fetch it as
    the browser would, and hand back its bytes."""
    page.wait_for_function("([sel, old]) => { const a = document.querySelector(sel + ' audio');"
                           " return a && a.src && a.src !== old && a.readyState >= 1 && a.duration > 0.3; }",
                           arg=[selector, old], timeout=30_000)
    src = page.locator(f"{selector} audio").first.get_attribute("src")
    got = page.request.get(src)
    assert got.status == 200, (src, got.status)
    return got.body()


def test_voice_plays_in_chat_and_scene_from_the_cache_in_the_home(browser, app_server, app_cache):
    page = open_page(browser, app_server)
    page.click("#speak-last")  # the greeting, before any message
    assert played(page, "#voice-audio").startswith(b"RIFF")
    assert "espeak-ng (cmn)" in page.locator("#voice-note").inner_text()
    first = page.locator("#voice-audio audio").first.get_attribute("src")
    page.locator("#speak input").check()  # every reply, read as it is done
    say(page, "你的金箍棒有多重？")
    wait_reply(page, 2)
    assert played(page, "#voice-audio", first).startswith(b"RIFF")
    # the files came from where README's start puts them: ~/.cache/chatharuhi/audio/out
    assert any((app_cache / "audio" / "out").glob("sunwukong-*.wav"))

    page.get_by_role("tab", name="Group").click()
    cast_scene(page, ["Sherlock Holmes", "Elizabeth Bennet"])
    page.locator("#scene-speak input").check()
    page.fill("#scene-message textarea", "Sherlock, what do you see?")
    page.click("#scene-send")
    wait_lines(page, 2)
    assert played(page, "#scene-voice").startswith(b"RIFF")
    assert "espeak-ng (en-gb)" in page.locator("#scene-voice-note").inner_text()
    assert "Error" not in page.locator("#scene-voice").inner_text()
    page.close()


def test_switching_mid_reply_stops_it_and_keeps_each_characters_chat(browser, app_server):
    with FakeOpenAI(token_delay_s=0.25) as slow:
        page = open_page(browser, app_server)
        page.locator("#picker [data-ref=sherlock]").click()
        page.wait_for_function("() => document.querySelector('#about')?.innerText.includes('Sherlock')")
        say(page, "What is your method?")  # one whole exchange with the script engine
        texts, _ = wait_reply(page, 2)
        kept = texts[-1]
        use_server(page, slow.base_url, GOOD_KEY)
        long = "Tell me the whole story of the hound of the Baskervilles and the moor at night"
        say(page, long)
        page.wait_for_function("() => [...document.querySelectorAll('#chat .message.bot')].pop()"
                               "?.innerText.includes('Echo')", timeout=20_000)  # the reply is streaming
        page.locator("#picker [data-ref=sunwukong]").click()
        page.wait_for_function("() => document.querySelector('#about')?.innerText.includes('孙悟空')")
        time.sleep(3)  # the old reply would have gone on streaming here
        shown = settled_bot_texts(page)
        assert shown[0][:10] == "师父！俺老孙刚从南山" and "Echo" not in " ".join(shown)  # nothing of Holmes's reply
        assert "Sherlock Holmes's reply was stopped when you switched" in shown[-1]  # said in the chat
        assert page.input_value("#message textarea") == ""  # Holmes's question is not left under 孙悟空
        page.fill("#message textarea", "你是谁？")
        page.click("#send")
        texts, _ = wait_reply(page, 2)
        assert texts[-1] == "Echo: 唐僧:「你是谁？」"
        system = slow.requests[-1]["body"]["messages"][0]["content"]
        assert "孙悟空" in system and "Sherlock" not in system  # answered as the character on screen
        assert "stopped" not in " ".join(settled_bot_texts(page))  # the notice went with the next reply
        page.locator("#picker [data-ref=sherlock]").click()  # back: Holmes's chat, whole exchanges only
        page.wait_for_function("() => document.querySelector('#about')?.innerText.includes('Sherlock')")
        assert settled_bot_texts(page)[1:] == [kept]
        assert page.input_value("#message textarea") == long  # and his question waits in his box
        page.close()


def test_the_name_in_the_story_stays_the_visitors(browser, app_server):
    context = browser.new_context(viewport=LAPTOP)
    page = open_at(context, app_server, LAPTOP)
    name = page.locator("#user-role textarea")
    assert name.input_value() == "唐僧"  # before a name is given: the character's usual partner
    name.fill("Sam")  # a fill, like a paste or the browser's autofill: no key is pressed
    page.wait_for_timeout(1500)
    page.locator("#picker [data-ref=sherlock]").click()
    page.wait_for_function("() => document.querySelector('#about')?.innerText.includes('Sherlock')")
    page.wait_for_timeout(800)
    assert name.input_value() == "Sam"
    page.get_by_role("tab", name="Group").click()
    assert page.locator("#scene-user textarea").input_value() == "Sam"
    page.reload()
    page.wait_for_selector("#engine-note strong", timeout=60_000)
    page.wait_for_timeout(1000)
    assert page.locator("#user-role textarea").input_value() == "Sam"  # this browser remembers it
    other = open_at(browser, app_server, LAPTOP)  # another visitor is not Sam
    assert other.locator("#user-role textarea").input_value() != "Sam"
    other.close()
    context.close()


WATCH_FIELD = """(sel) => { window.seen = []; const t = document.querySelector(sel);
  setInterval(() => { if (window.seen[window.seen.length - 1] !== t.value) window.seen.push(t.value); }, 10); }"""


def test_a_name_typed_key_by_key_keeps_every_letter(browser, app_server):
    """Each key changes the name, and the name mirrors into the group scene's field: that field wrote back an
    older name while the visitor typed on, and a typed 'Samantha' ended as 'Saman' (and flickered on the way)."""
    page = open_page(browser, app_server)
    name = page.locator("#user-role textarea")
    name.fill("")
    page.evaluate(WATCH_FIELD, "#user-role textarea")
    name.press_sequentially("Samantha", delay=40)
    page.wait_for_timeout(4000)  # every key's events have run
    seen = page.evaluate("() => window.seen")
    assert name.input_value() == "Samantha", seen
    assert all(len(a) <= len(b) for a, b in zip(seen, seen[1:])), seen  # never a letter taken back
    page.get_by_role("tab", name="Group").click()
    scene = page.locator("#scene-user textarea")
    assert scene.input_value() == "Samantha"
    scene.click()
    scene.press("Control+a")
    scene.press_sequentially("Sam Vimes", delay=40)
    page.wait_for_timeout(3000)
    assert scene.input_value() == "Sam Vimes"
    page.get_by_role("tab", name="Chat").click()  # leaving the field: the chat's name follows
    page.wait_for_function("() => document.querySelector('#user-role textarea')?.value === 'Sam Vimes'")
    page.close()


@pytest.mark.parametrize("cast, said, first", [
    (["Elizabeth Bennet", "Count Dracula", "Sherlock Holmes"], "Sherlock,", "sherlock"),
    (["孙悟空", "诸葛亮", "林黛玉"], "Lin Daiyu, what do you think?", "lindaiyu"),
])
def test_scenes_hear_the_names_visitors_use_and_say_who_will_not_answer(browser, app_server, cast, said, first):
    page = open_page(browser, app_server)
    page.get_by_role("tab", name="Group").click()
    cast_scene(page, cast)
    page.fill("#scene-message textarea", said)
    page.click("#scene-send")
    got = wait_lines(page, 2)
    asked = [text for _, text in got].index(said)  # after any note of the casting
    got = wait_lines(page, asked + 2)
    assert got[asked + 1][0] == first, got  # the named one answers first
    page.click("#scene-talk button")  # the talkativeness and mute panel
    page.locator("#scene-mute-0 input").check()  # mute the first cast member
    muted = cast[0]
    page.wait_for_function("(n) => [...document.querySelectorAll('#scene-chat .scene-note')]"
                           ".some(e => e.innerText.includes(n + ' was muted'))", arg=muted, timeout=10_000)
    page.fill("#scene-message textarea", f"{muted}, and 鲁智深, come here")
    page.click("#scene-send")
    try:
        page.wait_for_function("(n) => document.querySelector('#scene-status')?.innerText.includes(n + ' is muted')",
                               arg=muted, timeout=30_000)
    except PlaywrightTimeout as exc:
        raise AssertionError(f"status: {page.locator('#scene-status').inner_text()!r}; box: "
                             f"{page.locator('#scene-message textarea').input_value()!r}; lines: {lines(page)}") from exc
    assert "鲁智深 is not in this scene" in page.locator("#scene-status").inner_text()
    notes = page.locator("#scene-chat .scene-note").all_inner_texts()
    assert any(f"{muted} was muted" in n for n in notes)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"scene-names-{first}.png"), full_page=True)
    page.close()


def test_regenerate_moves_on_and_try_asking_hides_when_empty(browser, app_server, tmp_path):
    page = open_page(browser, app_server)
    say(page, "你的金箍棒有多重？")
    texts, _ = wait_reply(page, 2)
    seen = [texts[-1]]
    for _ in range(3):
        page.click("#regenerate")
        texts, _ = wait_reply(page, 2, changed_from=seen[-1])
        seen.append(texts[-1])
    assert len(set(seen)) == 4 and all(t in lines_of("sunwukong") for t in seen), seen
    assert page.locator("#examples").is_visible()
    page.close()


@pytest.mark.parametrize("size, viewport", [("phone", PHONE), ("laptop", LAPTOP)])
def test_every_tab_and_the_settings_are_in_reach(browser, app_server, size, viewport):
    page = open_at(browser, app_server, viewport)
    for tab in ("Chat", "Group", "Add a character"):
        assert page.get_by_role("tab", name=tab).is_visible(), f"{tab} is hidden on a {size}"
    if size == "phone":
        names = page.locator("#picker .thumbnail-item .caption-label")
        assert names.first.is_visible() and names.first.inner_text() == "孙悟空"  # faces have names
    else:
        assert inside_viewport(page, "#settings"), "Settings are below the first laptop screen"
    page.screenshot(path=str(ARTIFACTS / f"reach-{size}.png"))
    page.close()


def test_an_offline_hub_pick_is_one_sentence_and_the_search_box_goes_back(browser, app_server):
    from support.browser import search

    page = open_page(browser, app_server)
    options = search(page, "Jack Sparrow")
    page.get_by_role("option", name=options[0]).click()  # a Hub role nobody fetched, and no network
    page.wait_for_selector("#role-status :text('not in the local cache')", timeout=20_000)
    time.sleep(1)
    assert page.locator(".toast-body").count() == 0  # said once, in the page, not again in toasts
    assert "孙悟空" in page.locator("#role-choice input").input_value()  # the character still on screen
    assert "孙悟空" in page.locator("#about").inner_text()
    page.close()


QUICK_PAIR = """([first, second]) => { const tile = (ref) => document.querySelector(`#picker [data-ref=${ref}]`);
  tile(first).click(); setTimeout(() => tile(second).click(), 60); }"""


def test_the_last_of_two_tiles_clicked_in_quick_succession_is_the_one_on_screen(browser, app_server):
    """A second tile clicked 60 ms after the first, while the first switch still ran, was dropped (2 of 4 pairs):
    the page stayed on the first character, as if the click had missed. The last tile clicked wins."""
    page = open_at(browser, app_server, LAPTOP)
    names = {"sherlock": "Sherlock", "alice": "Alice", "dracula": "Dracula", "elizabeth": "Elizabeth"}
    for first, second in (("sherlock", "alice"), ("dracula", "elizabeth"), ("alice", "sherlock"),
                          ("elizabeth", "dracula")):
        page.evaluate(QUICK_PAIR, [first, second])
        page.wait_for_function("(name) => document.querySelector('#about')?.innerText.includes(name)",
                               arg=names[second], timeout=30_000)
        time.sleep(2)  # nothing comes after it: the first pick does not land late
        assert names[second] in page.inner_text("#about"), (first, second, page.inner_text("#about"))
        assert page.evaluate("document.querySelector('#picker').dataset.busy") == ""
    say(page, "Who are you?")  # and the chat is the character's, answered as ever
    wait_reply(page, 2)
    page.close()
