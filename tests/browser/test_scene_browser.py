"""The Group · 群戏 tab in a real browser (Debian's Chromium driven by Playwright)."""

import time

from support.browser import ARTIFACTS, LAPTOP, PHONE, cast_scene, lines, open_at, open_scene, resize, use_server, wait_lines
from support.expect import lines_of
from support.fake_openai import GOOD_KEY, FakeOpenAI


def test_a_three_character_scene_answers_by_name_with_the_right_portrait(browser, app_server):
    context = browser.new_context()
    page = open_scene(context, app_server, ["孙悟空", "诸葛亮", "林黛玉"], "唐僧")
    page.fill("#scene-message textarea", "悟空，前面是不是有妖怪？")
    page.click("#scene-send")
    got = wait_lines(page, 2)
    assert got[0] == (None, "悟空，前面是不是有妖怪？")
    rid, text = got[1]
    assert rid == "sunwukong" and text in lines_of("sunwukong")
    face = page.locator("#scene-chat .message .speaker img").first
    assert "/characters/sunwukong/image" in face.get_attribute("src")
    assert face.evaluate("img => img.naturalWidth > 0 && img.getBoundingClientRect().width <= 40")
    page.locator("#scene-scenes-panel").click()
    page.wait_for_selector("#scene-scenes:has-text('similarity')", timeout=10_000)

    # let them talk for 3 lines, each one its speaker's own words
    before = len(lines(page))
    page.fill("#scene-turns input", "3")
    page.click("#scene-talk-btn")
    got = wait_lines(page, before + 3)
    assert len(got) == before + 3, got
    for rid, text in got[before:]:
        assert text in lines_of(rid)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "scene-zh.png"), full_page=True)

    # a long run, stopped after its first line: it stops, and no half line is left on screen
    page.fill("#scene-turns input", "20")
    page.click("#scene-talk-btn")
    page.wait_for_function(f"document.querySelectorAll('#scene-chat .message').length > {len(got)}",
                           timeout=20_000)
    page.click("#scene-stop")
    page.wait_for_selector("#scene-status:has-text('Stopped')", timeout=10_000)
    stopped = wait_lines(page, len(got))  # the line cut by Stop is dropped; the ones before it stay
    assert stopped[: len(got)] == got and len(stopped) < len(got) + 20
    time.sleep(2)
    assert lines(page) == stopped  # nothing more arrives
    for rid, text in stopped[len(got):]:
        assert text in lines_of(rid)  # whole lines only
    context.close()


def test_two_visitors_scenes_never_see_each_other(browser, app_server):
    ctx_a, ctx_b = browser.new_context(), browser.new_context()
    a = open_scene(ctx_a, app_server, ["Sherlock Holmes", "Elizabeth Bennet", "Count Dracula"], "Watson")
    b = open_scene(ctx_b, app_server, ["孙悟空", "林黛玉"], "唐僧")
    a.fill("#scene-message textarea", "Count Dracula, why are you here?")
    a.click("#scene-send")
    b.fill("#scene-message textarea", "林妹妹，你好。")
    b.click("#scene-send")
    got_a, got_b = wait_lines(a, 2), wait_lines(b, 2)
    assert got_a[1][0] == "dracula" and got_b[1][0] == "lindaiyu"
    assert {rid for rid, _ in got_a if rid} <= {"sherlock", "elizabeth", "dracula"}
    assert {rid for rid, _ in got_b if rid} <= {"sunwukong", "lindaiyu"}
    assert "林妹妹" not in a.locator("#scene-chat").inner_text()
    assert "Dracula" not in b.locator("#scene-chat").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    a.screenshot(path=str(ARTIFACTS / "scene-en.png"), full_page=True)
    b.set_viewport_size({"width": 390, "height": 844})
    b.screenshot(path=str(ARTIFACTS / "scene-zh-phone.png"), full_page=True)
    ctx_a.close()
    ctx_b.close()


def test_a_whisper_to_one_character(browser, app_server):
    """The "to" picker beside the box: the line is marked as a whisper, only that character answers, and its
    answer is marked as heard by the visitor alone; laptop and phone."""
    context = browser.new_context()
    page = open_scene(context, app_server, ["Sherlock Holmes", "Elizabeth Bennet", "Count Dracula"], "Watson")
    page.click("#scene-to input")
    page.locator("ul[role='listbox'] li:has-text('Elizabeth Bennet')").first.click()
    page.wait_for_selector("#scene-message textarea[placeholder*='Whisper to Elizabeth Bennet']", timeout=10_000)
    page.fill("#scene-message textarea", "Do you trust the Count?")
    page.click("#scene-send")
    got = wait_lines(page, 2)
    assert len(got) == 2, got  # nobody else answered
    assert got[0][0] is None and "Whispered to Elizabeth Bennet" in got[0][1]
    assert got[1][0] == "elizabeth" and "Only you heard this" in got[1][1]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "scene-whisper.png"))
    resize(page, PHONE)
    time.sleep(0.5)
    page.locator("#scene-send").scroll_into_view_if_needed()
    box = page.locator("#scene-to").bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390  # the picker fits a phone's width
    page.screenshot(path=str(ARTIFACTS / "scene-whisper-phone.png"))
    context.close()


def test_a_character_muted_while_they_talk_is_not_picked_again(browser, app_server):
    """Let them talk, and mute whoever spoke first while the second line streams: the run wrote back the scene it
    started from at each line (the mute was undone) and kept picking the muted character. Now it takes the mute in
    before its next pick, the chat says so, and the box stays ticked."""
    with FakeOpenAI(token_delay_s=0.15) as slow:
        context = browser.new_context(viewport=LAPTOP)
        page = open_at(context, app_server, LAPTOP)
        use_server(page, slow.base_url, GOOD_KEY)
        page.get_by_role("tab", name="Group").click()
        cast = {"sherlock": "Sherlock Holmes", "elizabeth": "Elizabeth Bennet", "dracula": "Count Dracula"}
        cast_scene(page, list(cast.values()))
        page.click("#scene-talk button, #scene-talk .label-wrap")  # Talkativeness and mute
        page.fill("#scene-turns input", "6")
        page.click("#scene-talk-btn")
        page.wait_for_function("() => document.querySelectorAll('#scene-chat .message .speaker').length >= 2",
                               timeout=60_000)  # the first line done, the second streaming
        first = next(rid for rid, _text in lines(page) if rid)
        k = list(cast).index(first)
        page.locator(f"#scene-mute-{k} input").check()
        got = wait_lines(page, 6, timeout=120)
        after = [i for i, (rid, text) in enumerate(got) if rid is None and "was muted" in text]
        assert after, got  # the mute is in the transcript, where the run took it in
        assert first not in [rid for rid, _text in got[after[0]:]], got
        assert page.locator(f"#scene-mute-{k} input").is_checked()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "scene-muted-mid-run.png"), full_page=True)
        context.close()


def test_a_line_sent_while_the_scene_answers_cuts_in_and_a_draft_stays_in_the_box(browser, app_server):
    """Send a second line while the first one's answers still stream: Gradio's default for a click dropped it (the
    event was still pending), and the first run's end then emptied the box, so the line was lost without a word (a
    full CI run met it as a scene that never said who was muted). Now it cuts in: the answer being written is
    dropped, the whole ones stay, the new line is answered. A line typed, not sent, while a run ends stays put."""
    with FakeOpenAI(token_delay_s=0.15) as slow:
        context = browser.new_context(viewport=LAPTOP)
        page = open_at(context, app_server, LAPTOP)
        use_server(page, slow.base_url, GOOD_KEY)
        page.get_by_role("tab", name="Group").click()
        cast_scene(page, ["Sherlock Holmes", "Elizabeth Bennet", "Count Dracula"])
        page.fill("#scene-message textarea", "Good evening, all of you.")
        page.click("#scene-send")
        page.wait_for_function("() => document.querySelectorAll('#scene-chat .message .speaker').length >= 1",
                               timeout=60_000)  # an answer is streaming
        assert "⏳" in page.locator("#scene-status").inner_text()
        page.fill("#scene-message textarea", "Wait, one question first.")
        page.click("#scene-send")
        page.wait_for_function("() => [...document.querySelectorAll('#scene-chat .message')]"
                               ".some(m => m.innerText.includes('Wait, one question first.'))", timeout=30_000)
        assert page.locator("#scene-message textarea").input_value() == ""
        page.fill("#scene-message textarea", "my next line, not sent yet")  # typed while the answers stream
        got = wait_lines(page, 3, timeout=120)  # one answer at least (who answers is the scene's pick)
        said = [text for rid, text in got if rid is None]
        assert said == ["Good evening, all of you.", "Wait, one question first."], got
        assert got[-1][0] is not None, got  # the new line was answered
        assert page.locator("#scene-message textarea").input_value() == "my next line, not sent yet"
        context.close()
