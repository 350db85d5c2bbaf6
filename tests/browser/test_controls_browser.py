"""A player's session in Chromium (issue 44): alternatives browsed and one kept, continue, a line written for the
player, a persona and an author's note in the prompt, a branch from an early message and back, and the tree
through an export and an import; then the controls on a phone."""

import json
import time
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from support.browser import ARTIFACTS, open_page, say, settled_bot_texts, use_server, wait_reply
from support.fake_openai import GOOD_KEY, FakeOpenAI

from chatharuhi_core.roles.sources import load_role

VIOLIN = "Why do you play the violin at three in the morning?"
NEIGHBOURS = "The neighbours are not trying to catch a murderer."


def _sherlock(page):
    page.locator("#picker [data-ref=sherlock]").click()
    page.wait_for_function("() => document.querySelector('#about')?.innerText.includes('Sherlock')")


def _count(page) -> str:
    return page.locator("#swipe-count").inner_text().strip()


def _wait_count(page, text: str):
    page.wait_for_function("(t) => document.querySelector('#swipe-count')?.innerText.includes(t)", arg=text,
                           timeout=30_000)


def _line_options(page, least: int = 1) -> list[str]:
    """The lines of the story the picker offers, once it offers at least `least` (the list follows the
    conversation a moment after it changes)."""
    options: list[str] = []
    for _ in range(20):
        page.locator("#story-line input").click()
        try:
            page.get_by_role("option").first.wait_for(timeout=5_000)
        except PlaywrightTimeout:  # the list was redrawn as it opened (the page still filling in): open it again
            page.keyboard.press("Escape")
            continue
        options = [o.strip() for o in page.get_by_role("option").all_inner_texts()]
        page.keyboard.press("Escape")
        page.get_by_role("option").first.wait_for(state="hidden", timeout=5_000)
        if len(options) >= least:
            break
        page.wait_for_timeout(500)
    return options


def _export(page, tmp_path: Path, until=lambda lines: True, timeout_s: float = 30.0) -> Path:
    """The chat's file as the page exports it; with `until`, exported again until its lines show what the page
    shows (the file follows the conversation once the turn's last event has run: a moment later on a busy machine)."""
    page.wait_for_function("() => !document.querySelector('#export-chat')?.disabled")
    deadline = time.time() + timeout_s
    while True:
        page.wait_for_timeout(1500)  # the file follows the conversation
        with page.expect_download() as dl:
            page.click("#export-chat")
        path = tmp_path / "chat.jsonl"
        dl.value.save_as(path)
        if until(path.read_text().splitlines()) or time.time() > deadline:
            return path


def test_a_players_session_alternatives_continue_my_line_persona_note_and_branches(browser, app_server, tmp_path):
    page = open_page(browser, app_server)
    _sherlock(page)
    say(page, "What is your method?")
    first, _ = wait_reply(page, 2)
    first = first[-1]
    # three alternatives: Regenerate adds one, and so does ▶ on the last (as a swipe past the end in
    # SillyTavern); the newest is shown
    seen = [first]
    for n, button in ((2, "#regenerate"), (3, "#swipe-next")):
        page.click(button)
        _wait_count(page, f"{n} / {n}")
        seen.append(settled_bot_texts(page)[-1])
    assert len(set(seen)) == 3, seen
    # browsed back to the first and kept (▶ short of the last flips): the chat shows it, and the conversation
    # goes on from it
    page.click("#swipe-prev")
    _wait_count(page, "2 / 3")
    page.click("#swipe-prev")
    _wait_count(page, "1 / 3")
    page.click("#swipe-next")
    _wait_count(page, "2 / 3")
    page.click("#swipe-prev")
    _wait_count(page, "1 / 3")
    assert settled_bot_texts(page)[-1] == first
    # continue: the offline engine quotes the next line of the same scene
    say(page, VIOLIN)
    texts, _ = wait_reply(page, 3, changed_from=first)
    assert texts[-1].startswith("Music untangles")
    page.click("#continue")
    page.wait_for_function("(t) => { const b = document.querySelectorAll('#chat .message.bot');"
                           " return b[b.length - 1].innerText.includes(t); }", arg=NEIGHBOURS, timeout=30_000)
    assert len(settled_bot_texts(page)) == 3  # the same reply went on: no new message
    # write my line: a line of Watson's in the box, never sent by itself
    page.click("#impersonate")
    page.wait_for_function("() => document.querySelector('#message textarea').value.length > 5", timeout=30_000)
    assert len(settled_bot_texts(page)) == 3
    page.fill("#message textarea", "")
    # a persona and an author's note at depth 2
    page.click("#story-panel button, #story-panel .label-wrap")
    page.fill("#persona textarea", "A retired army doctor, back from Afghanistan, who keeps a journal.")
    # no waiting for "Saved whom you play": the portrait's upload and the turn run beside the persona's own save,
    # as they do for a visitor who types a persona and goes on at once, and the prompt still has it
    page.locator("#persona textarea").blur()
    face = load_role("alice").image_path  # any portrait will do
    page.locator("#persona-face input[type=file]").set_input_files(str(face))
    page.wait_for_function("() => [...document.querySelectorAll('#chat img')].some(i => i.closest('.user-row, "
                           ".message-row.user-row, [class*=user]') && i.src.includes('/file'))", timeout=20_000)
    page.fill("#author-note textarea", "Answer in one sentence.")
    depth = page.locator("#note-depth input[type=number]")
    depth.fill("2")
    depth.press("Enter")
    page.locator("#author-note textarea").blur()
    page.wait_for_function("() => document.querySelector('#story-state')?.innerText.includes('depth 2')",
                           timeout=30_000)
    say(page, "Who are you?")
    wait_reply(page, 4)
    asked = lambda lines: (json.loads(lines[-1]).get("prompt") or [{}])[-1].get("content") == "Watson:「Who are you?」"  # noqa: E731
    prompt = json.loads(_export(page, tmp_path, asked).read_text().splitlines()[-1])["prompt"]
    assert "retired army doctor" in prompt[0]["content"]  # the persona, in the system message
    note_at = next(i for i, m in enumerate(prompt) if m["content"] == "Answer in one sentence.")
    assert prompt[note_at]["role"] == "system"
    assert prompt[note_at + 1]["content"].startswith("Sherlock Holmes:")  # two messages from the end: the last
    assert prompt[note_at + 2]["content"] == "Watson:「Who are you?」"  # reply, then the message
    # a branch from the first reply, and back to the parent
    page.locator("#chat .message.bot").nth(1).click()
    _wait_count(page, "1 / 3")
    page.click("#branch-here")
    page.wait_for_function("() => document.querySelectorAll('#chat .message.bot').length === 2", timeout=30_000)
    assert settled_bot_texts(page)[-1] == first
    options = _line_options(page, 2)
    assert len(options) == 2 and any("Branch 2" in o and "after 1" in o for o in options), options
    say(page, "Where shall we dine tonight?")
    wait_reply(page, 3)
    page.click("#line-parent")
    # (a pending bubble counts as a bot message: wait for the parent's own words, then for the chat to settle)
    page.wait_for_function("(t) => { const b = document.querySelectorAll('#chat .message.bot:not(.pending)');"
                           " return b.length === 4 && b[2].innerText.includes(t); }", arg=NEIGHBOURS, timeout=30_000)
    assert NEIGHBOURS in settled_bot_texts(page)[2]
    # the tree goes out in the file and comes back in
    path = _export(page, tmp_path)
    header = json.loads(path.read_text().splitlines()[0])
    assert header["version"] == 3 and len(header["branches"]) == 1
    fresh = open_page(browser, app_server)
    with fresh.expect_file_chooser() as chooser:
        fresh.click("#import-chat")
    chooser.value.set_files(str(path))
    fresh.wait_for_function("() => document.querySelectorAll('#chat .message.bot').length === 4", timeout=30_000)
    fresh.click("#story-panel button, #story-panel .label-wrap")
    assert len(_line_options(fresh, 2)) == 2
    fresh.locator("#chat .message.bot").nth(1).click()
    _wait_count(fresh, "1 / 3")  # the alternatives came back too
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "story-laptop.png"), full_page=True)
    fresh.close()
    page.close()


def test_the_story_controls_fit_a_phone_without_hiding_the_box(browser, app_server):
    from support.browser import PHONE, open_at

    page = open_at(browser.new_context(viewport=PHONE), app_server, PHONE)
    _sherlock(page)
    say(page, "What is your method?")
    wait_reply(page, 2)
    page.click("#regenerate")
    _wait_count(page, "2 / 2")
    for elem in ("#swipe-prev", "#swipe-next", "#branch-here", "#continue", "#impersonate", "#message textarea"):
        box = page.locator(elem).bounding_box()
        assert box and box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 1, elem
    page.screenshot(path=str(ARTIFACTS / "story-phone.png"), full_page=True)
    page.close()


def test_a_group_scene_line_has_alternatives_to_browse(browser, app_server):
    from support.browser import lines, open_scene, wait_lines

    context = browser.new_context()
    page = open_scene(context, app_server, ["Sherlock", "Elizabeth"], "Watson")
    page.fill("#scene-message textarea", "Holmes, what is your method?")
    page.click("#scene-send")
    first = wait_lines(page, 2)[-1][1]
    seen = [first]
    for n, button in ((2, "#scene-regenerate"), (3, "#scene-swipe-next")):  # ▶ on the last text writes one
        page.click(button)
        page.wait_for_function("(t) => document.querySelector('#scene-swipe-count')?.innerText.includes(t)",
                               arg=f"{n} / {n}", timeout=30_000)
        seen.append(wait_lines(page, 2)[-1][1])
    assert len(set(seen)) == 3, seen
    for button, at in (("#scene-swipe-prev", "2 / 3"), ("#scene-swipe-prev", "1 / 3"), ("#scene-swipe-next", "2 / 3"),
                       ("#scene-swipe-prev", "1 / 3")):  # short of the last, ▶ flips
        page.click(button)
        page.wait_for_function("(t) => document.querySelector('#scene-swipe-count')?.innerText.includes(t)",
                               arg=at, timeout=30_000)
    assert lines(page)[-1][1] == first
    page.screenshot(path=str(ARTIFACTS / "story-group.png"), full_page=True)
    context.close()


def test_continue_and_my_line_with_the_local_model(browser, app_server):
    """Continue lengthens the local model's reply in the page. SmolLM2 sometimes finds its reply whole and, asked to
    go on, stops at once, twice (1 in 8 tries of the library's continue_reply): the page then says the character has
    nothing to add and keeps the reply as it was, and a visitor regenerates and tries again, as this test does (that
    was the xfail that failed about one full run in three)."""
    from support.browser import choose_engine

    page = open_page(browser, app_server)
    _sherlock(page)
    choose_engine(page, "Local model")
    model = page.locator("#model").locator("input").first
    model.fill("smollm2")  # the small model: a long continuation stays quick on a busy machine
    model.press("Enter")
    say(page, "What is your method?")
    stats = "() => document.querySelector('#reply-stats')?.innerText.includes('tokens/s')"
    page.wait_for_function(stats, timeout=180_000)
    tries, before, after = 0, "", ""
    while tries < 3:
        tries += 1
        before = settled_bot_texts(page, timeout_ms=240_000)[-1]
        page.click("#continue")
        page.wait_for_function("(n) => { const b = document.querySelectorAll('#chat .message.bot');"
                               " const longer = b.length === 2 && !document.querySelector('#chat .pending')"
                               " && b[1].innerText.trim().length > n;"
                               " return longer || document.body.innerText.includes('has nothing to add'); }",
                               arg=len(before), timeout=120_000)  # a cut reply's "…" is shown, then replaced
        after = settled_bot_texts(page, timeout_ms=240_000)[-1]  # it goes on streaming: up to 300 tokens
        if len(after) > len(before.rstrip("…")):
            break
        assert after == before, (before, after)  # nothing to add: the reply as it was, and the page said so
        page.click("#regenerate")  # as a visitor would: another reply, then Continue again
        page.wait_for_function("(old) => { const b = [...document.querySelectorAll('#chat .message.bot')].pop();"
                               " return b && !document.querySelector('#chat .pending') && b.innerText.trim() !== old"
                               " && document.querySelector('#reply-stats')?.innerText.includes('tokens/s'); }",
                               arg=before.strip(), timeout=240_000)
    assert after.startswith(before.rstrip("…").rstrip()) and len(after) > len(before.rstrip("…")), (tries, after)
    page.click("#impersonate")
    page.wait_for_function("() => document.querySelector('#message textarea').value.trim().length > 3",
                           timeout=120_000)
    page.wait_for_selector("#feedback-note >> text=Your next line is in the box", timeout=60_000)
    assert len(settled_bot_texts(page)) == 2  # written into the box, not sent
    page.close()


def test_a_note_and_persona_written_and_sent_at_once_are_kept(browser, app_server):
    """The boxes' own saves run beside the turn the same click started; the turn wrote the conversation back
    without the note (1 try in 5 on a busy machine): the Story panel's line must still say both afterwards."""
    page = open_page(browser, app_server)
    _sherlock(page)
    page.click("#story-panel button, #story-panel .label-wrap")
    for n in (1, 2):
        page.fill("#persona textarea", f"A doctor, try {n}.")
        page.fill("#author-note textarea", f"Answer in one sentence, try {n}.")
        say(page, "What is your method?")  # the click leaves the note's box: its save and the turn start together
        wait_reply(page, 1 + n)
        settled_bot_texts(page)
        page.wait_for_function("(n) => { const s = document.querySelector('#story-state')?.innerText || '';"
                               " return s.includes(`A doctor, try ${n}.`) && s.includes(`one sentence, try ${n}.`); }",
                               arg=n, timeout=30_000)
    page.close()


def test_a_default_persona_follows_the_visitor_to_a_new_chat(browser, app_server):
    page = open_page(browser, app_server)
    page.click("#story-panel button, #story-panel .label-wrap")
    page.fill("#persona textarea", "A wandering scholar who collects riddles.")
    page.locator("#persona-default input").check()
    page.wait_for_selector("#feedback-note >> text=Saved whom you play", timeout=30_000)
    _sherlock(page)  # a new chat with someone else: whom you play comes along
    page.wait_for_function("() => document.querySelector('#persona textarea')?.value.includes('riddles')",
                           timeout=30_000)
    page.wait_for_function("() => document.querySelector('#story-state')?.innerText.includes('riddles')",
                           timeout=30_000)
    say(page, "Who are you?")
    wait_reply(page, 2)
    page.reload()  # and after a reload, this browser still has it
    page.wait_for_selector("#engine-note strong", timeout=60_000)
    page.click("#story-panel button, #story-panel .label-wrap")
    page.wait_for_function("() => document.querySelector('#persona textarea')?.value.includes('riddles')",
                           timeout=30_000)
    page.close()


def test_my_line_stops_when_the_visitor_types_or_sends(browser, app_server):
    """✍ My line streamed into the box to its end: a key typed meanwhile was overwritten by its next words, and a
    message sent meanwhile left a box that the line filled again. It stops once the visitor goes into the box."""
    with FakeOpenAI(token_delay_s=0.6) as slow:
        page = open_page(browser, app_server)
        _sherlock(page)
        say(page, "What do you make of the mud on my boots, Holmes?")
        wait_reply(page, 2)
        use_server(page, slow.base_url, GOOD_KEY)
        box = page.locator("#message textarea")
        page.click("#impersonate")
        page.wait_for_function("() => document.querySelector('#message textarea').value.length > 8", timeout=30_000)
        box.press("End")
        box.type(" and my own words", delay=30)
        page.wait_for_timeout(3000)  # the line would have gone on here
        mine = box.input_value()
        assert mine.endswith(" and my own words"), mine
        box.fill("")
        page.click("#impersonate")  # again, and sent at once
        page.wait_for_function("() => document.querySelector('#message textarea').value.length > 8", timeout=30_000)
        page.click("#send")
        wait_reply(page, 3, timeout=60)
        page.wait_for_timeout(2000)
        assert box.input_value() == ""  # the box the message left stays empty
        page.close()


def test_while_a_reply_streams_the_buttons_wait_and_stop_keeps_what_it_wrote(browser, app_server):
    """Issue 66: while a reply streams, Send, Regenerate, Continue and ▶ are unavailable and ■ Stop is offered (as
    in Gradio's ChatInterface); Stop ends the reply with what it has written, kept and marked cut, and the buttons
    come back. Issue 67: Send mid-reply said nothing for 120 s; now it cannot be pressed, and says why when it is."""
    from support.browser import use_server
    from support.fake_openai import GOOD_KEY, FakeOpenAI

    with FakeOpenAI(token_delay_s=0.25) as slow:
        page = open_page(browser, app_server)
        _sherlock(page)
        use_server(page, slow.base_url, GOOD_KEY)
        say(page, "Tell me the whole story of the hound of the Baskervilles, the moor, the night and the fog")
        page.wait_for_function("() => [...document.querySelectorAll('#chat .message.bot')].pop()"
                               "?.innerText.includes('Echo')", timeout=20_000)  # the reply is streaming
        page.wait_for_selector("#stop", state="visible", timeout=10_000)
        for button in ("#send", "#regenerate", "#continue", "#swipe-next"):
            assert page.locator(button).is_disabled(), button
        page.click("#stop")
        page.wait_for_selector("#stop", state="hidden", timeout=20_000)
        page.wait_for_function("() => !document.querySelector('#send').disabled", timeout=20_000)
        texts = settled_bot_texts(page)
        kept = texts[-1]
        assert kept.startswith("Echo") and kept.endswith("…") and "fog" not in kept, kept  # cut, not the whole
        page.click("#regenerate")  # the buttons work again, on the kept reply
        _wait_count(page, "2 / 2")
        page.close()


def test_enter_pressed_again_while_its_reply_streams_is_refused_with_the_sentence(browser, app_server):
    """Issue 67's Send mid-reply, by the keyboard: a message sent with Enter, then another line typed and Enter
    pressed while the first reply streams. Gradio's default for a trigger dropped the second Enter in the browser (the
    first was still pending): the line stayed in the box and nothing said why. Now it is refused with the sentence,
    and the line stays in the box, unsent."""
    from support.browser import use_server
    from support.fake_openai import GOOD_KEY, FakeOpenAI

    with FakeOpenAI(token_delay_s=0.3) as slow:
        page = open_page(browser, app_server)
        _sherlock(page)
        use_server(page, slow.base_url, GOOD_KEY)
        box = page.locator("#message textarea")
        box.fill("Tell me the whole story of the hound of the Baskervilles, the moor, the night and the fog")
        box.press("Enter")
        page.wait_for_function("() => [...document.querySelectorAll('#chat .message.bot')].pop()"
                               "?.innerText.includes('Echo')", timeout=20_000)  # the reply is streaming
        box.fill("And the convict on the tor?")
        box.press("Enter")
        page.wait_for_selector(".toast-body:has-text('is still answering')", timeout=10_000)
        assert page.locator("#stop").is_visible()  # said while the reply still streamed
        settled_bot_texts(page, timeout_ms=90_000)
        assert box.input_value() == "And the convict on the tor?"
        assert page.locator("#chat .message.user").count() == 1
        page.close()


def test_a_reload_mid_reply_gives_the_message_back_and_says_the_reply_was_cut(browser, app_server):
    """Issue 67: reloading while a reply streamed lost the visitor's message from the chat and the box, with no
    note. The message is kept in this browser while its reply streams: after the reload it is back in the box, and
    the chat says the reply was cut off."""
    from support.browser import use_server
    from support.fake_openai import GOOD_KEY, FakeOpenAI

    asked = "Tell me the whole story of the hound of the Baskervilles, the moor, the night and the fog"
    with FakeOpenAI(token_delay_s=0.3) as slow:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(app_server)
        page.wait_for_selector("#engine-note strong", timeout=60_000)
        _sherlock(page)
        use_server(page, slow.base_url, GOOD_KEY)
        kept = page.evaluate("() => localStorage.getItem('chatharuhi-pending')")
        say(page, asked)
        page.wait_for_function("() => [...document.querySelectorAll('#chat .message.bot')].pop()"
                               "?.innerText.includes('Echo')", timeout=20_000)  # the reply is streaming
        page.wait_for_function("(kept) => localStorage.getItem('chatharuhi-pending') !== kept", arg=kept,
                               timeout=20_000)  # this browser has kept the message in flight
        page.reload()
        page.wait_for_function("(asked) => document.querySelector('#message textarea')?.value === asked",
                               arg=asked, timeout=60_000)
        assert "cut off when the page reloaded" in settled_bot_texts(page)[-1]
        context.close()
