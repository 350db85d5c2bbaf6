"""Feedback and chat files in a real browser: correct a reply, find it in the feedback file;
export a chat, import it in a fresh session and see the same conversation."""

import json
import time

from support.browser import ARTIFACTS, bot_texts, open_page, say, settled_bot_texts, wait_reply

from chatharuhi_core.jsonl import read_records

CORRECTION = "Elementary, my dear Watson: I watch, I reason, and I am seldom wrong."


def all_texts(page) -> list[str]:
    texts = [t.strip() for t in page.locator("#chat .message").all_inner_texts()]
    return [t for t in texts if t and t != "Loading content"]  # "Loading content": a bubble still rendering


def pick(page, name: str):
    page.locator("#role-choice input").fill(name)
    time.sleep(0.3)
    page.keyboard.press("Enter")  # the first match: the bundled role (a Hub role of the same name comes later)
    page.wait_for_function("([s, n]) => document.querySelector(s)?.innerText.includes(n)", arg=["#about", name])


def wait_note(page, text: str, timeout=20):
    page.wait_for_function("([s, t]) => document.querySelector(s)?.innerText.includes(t)",
                           arg=["#feedback-note", text], timeout=timeout * 1000)


def upload(page, path):
    """Click 'Import chat' and choose the file, as a visitor does."""
    with page.expect_file_chooser() as chooser:
        page.click("#import-chat")
    chooser.value.set_files(str(path))


def feedback_for(path, reply_id=None, timeout=10) -> list[dict]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        recs = read_records(path).records
        if recs:
            return recs
        time.sleep(0.2)
    return []


def test_dislike_and_correct_a_reply_lands_in_the_feedback_file(browser, app_server, app_feedback_file):
    page = open_page(browser, app_server)
    pick(page, "Sherlock Holmes")
    say(page, "What is your method?")
    texts, _ = wait_reply(page, 2)
    original = texts[-1]
    page.locator("#chat button[aria-label='Dislike']").last.click()
    wait_note(page, "Noted")
    page.locator("#chat button[aria-label='Edit']").last.click()
    box = page.locator("#chat textarea.edit-textarea")
    box.fill(CORRECTION)
    page.locator("#chat button[aria-label='Submit']").click()
    wait_note(page, "Saved your correction")
    page.screenshot(path=str(ARTIFACTS / "feedback-corrected.png"), full_page=True)
    # the edit's follow-up (answer it again? not for a reply's edit) shows a pending bubble while it is queued
    assert settled_bot_texts(page)[-1] == CORRECTION

    recs = [r for r in feedback_for(app_feedback_file) if r["role"] == "sherlock" and r["text"] == "What is your method?"]
    assert [r["event"] for r in recs][-2:] == ["rating", "edit"]
    last = recs[-1]
    assert last["original"] == original and last["corrected"] == CORRECTION and last["rating"] == "dislike"
    assert last["messages"][0]["role"] == "system" and "Sherlock Holmes" in last["messages"][0]["content"]
    assert last["messages"][-1]["content"] == "Watson:「What is your method?」"
    assert recs[-2]["reply_id"] == last["reply_id"]

    # the conversation goes on from the correction: it is in the next prompt's history
    say(page, "And what of Moriarty?")
    wait_reply(page, 3)
    assert bot_texts(page)[1] == CORRECTION


def test_export_then_import_in_a_fresh_session_restores_the_chat(browser, app_server, tmp_path):
    page = open_page(browser, app_server)
    pick(page, "林黛玉")
    page.fill("#user-role textarea", "宝玉")
    for n, q in enumerate(["妹妹今天可好？", "你为什么哭？", "我们去看花吧。"], start=2):
        say(page, q)
        wait_reply(page, n)
    before = all_texts(page)
    page.wait_for_selector("#export-chat:not([disabled])")
    time.sleep(1)  # the export file follows the conversation
    with page.expect_download() as dl:
        page.click("#export-chat")
    saved = tmp_path / dl.value.suggested_filename
    dl.value.save_as(saved)
    lines = [json.loads(x) for x in saved.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["format"] == "chatharuhi-chat" and lines[0]["role"] == "lindaiyu" and lines[0]["user_role"] == "宝玉"
    assert [x["text"] for x in lines[1:]] == ["妹妹今天可好？", "你为什么哭？", "我们去看花吧。"]

    fresh = open_page(browser, app_server)  # a new visitor: Sun Wukong's greeting, no history
    assert "林黛玉" not in fresh.locator("#about").inner_text()
    upload(fresh, saved)
    wait_note(fresh, "Imported a chat of 3 exchanges")
    fresh.wait_for_function("n => document.querySelectorAll('#chat .message.bot').length >= n", arg=4)
    assert all_texts(fresh) == before
    assert "林黛玉" in fresh.locator("#about").inner_text()
    assert fresh.locator("#user-role textarea").input_value() == "宝玉"
    fresh.screenshot(path=str(ARTIFACTS / "chat-imported.png"), full_page=True)

    # and it goes on: the next reply is the fourth, with the imported history behind it
    say(fresh, "你喜欢什么花？")
    wait_reply(fresh, 5)


def test_a_file_that_is_not_a_chat_is_refused_in_a_sentence(browser, app_server, tmp_path):
    page = open_page(browser, app_server)
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"hello": "world"}\n', encoding="utf-8")
    before = all_texts(page)
    upload(page, bad)
    wait_note(page, "not a chat exported from ChatHaruhi")
    assert all_texts(page) == before
    say(page, "你是谁？")
    wait_reply(page, 2)
