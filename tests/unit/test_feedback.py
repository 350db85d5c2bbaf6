"""Feedback (likes, dislikes, corrections) and chat files: crash-safe writing, fine-tuning data,
exact round trips, and the page's functions behind them."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from support.app import page_turn

from chatharuhi_core.chat.transcript import load_chat
from chatharuhi_core.cli import main
from chatharuhi_core.data.feedback import FeedbackRecord, build_training_data, feedback_record
from chatharuhi_core.data.training_data import openai_problems, sharegpt_problems
from chatharuhi_core.errors import InputError
from chatharuhi_core.jsonl import append_record, read_records
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.chat_files import export_chat, import_chat
from chatharuhi_core.web.drawing import chat_messages
from chatharuhi_core.web.feedback import edit_message, rate_reply
from chatharuhi_core.web.said import rating_of

# ------------------------------------------------------------ crash-safe JSON Lines


def test_a_torn_last_line_is_skipped_and_the_next_record_starts_fresh(tmp_path):
    path = tmp_path / "f.jsonl"
    append_record(path, {"n": 1})
    with path.open("ab") as f:  # a writer killed half-way through its line
        f.write(b'{"n": 2, "text": "half a rec')
    append_record(path, {"n": 3, "text": "中文也行"})
    got = read_records(path)
    assert [r["n"] for r in got.records] == [1, 3] and got.skipped == 1
    assert got.records[1]["text"] == "中文也行"


def test_killing_a_writer_mid_stream_loses_no_complete_record(tmp_path):
    path = tmp_path / "f.jsonl"
    writer = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(os.getcwd())!r})
        from pathlib import Path
        from chatharuhi_core.jsonl import append_record
        n = 0
        while True:
            append_record(Path({str(path)!r}), {{"n": n, "pad": "x" * 200_000}}, sync=False)
            n += 1
    """)
    proc = subprocess.Popen([sys.executable, "-c", writer])
    deadline = time.time() + 30
    while time.time() < deadline and (not path.exists() or path.stat().st_size < 3_000_000):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    got = read_records(path)
    assert len(got.records) >= 10 and got.skipped <= 1
    assert [r["n"] for r in got.records] == list(range(len(got.records)))  # in order, none merged or lost
    append_record(path, {"n": "after"})
    assert read_records(path).records[-1] == {"n": "after"}


# ------------------------------------------------------------ feedback to fine-tuning data


@pytest.fixture()
def fb_settings(settings, tmp_path):
    return settings.with_(feedback_file=tmp_path / "feedback.jsonl")


def test_rate_and_edit_in_the_page_functions(fb_settings):
    conv = page_turn(fb_settings, Conversation("sherlock"), "What is your method?")
    conv = page_turn(fb_settings, conv, "Who are you?")
    # chat: 0 greeting, 1 user, 2 reply, 3 user, 4 reply
    assert rate_reply(conv, 0, True, fb_settings)[1].startswith("Only the character's replies")
    # a thumb on the reply being written after them (5: the next message, 6: its reply)
    assert rate_reply(conv, 6, True, fb_settings, streaming=True)[1] == "Rate this reply once it is complete."
    assert rate_reply(conv, 0, True, fb_settings, streaming=True)[1].startswith("Only the character's replies")
    assert edit_message(conv, 0, "something else", fb_settings)[1].startswith("The greeting cannot be edited")
    edited, note = edit_message(conv, 1, "What is your method, Holmes?", fb_settings)  # the visitor's own words
    assert edited.history[0].text == "What is your method, Holmes?" and "stay as they were" in note
    assert edited.history[0].reply == conv.history[0].reply  # an earlier message: its reply is not redone
    conv, note = rate_reply(conv, 2, "Like", fb_settings)
    assert note.startswith("Thanks") and conv.meta[0].rating == "like"
    conv, note = rate_reply(conv, 4, False, fb_settings)
    original = conv.history[1].reply
    conv, note = edit_message(conv, 4, {"text": "I am Sherlock Holmes. It is my business to know."}, fb_settings)
    assert note.startswith("Saved your correction")
    assert conv.history[1].reply == "I am Sherlock Holmes. It is my business to know." and conv.meta[1].original == original
    assert edit_message(conv, 4, "   ", fb_settings)[1] == "A reply cannot be empty; the edit was undone."

    recs = read_records(fb_settings.feedback_path).records
    assert [(r["event"], r["rating"]) for r in recs] == [("rating", "like"), ("rating", "dislike"), ("edit", "dislike")]
    assert recs[-1]["original"] == original and recs[-1]["corrected"].startswith("I am Sherlock Holmes.")
    assert recs[-1]["messages"][-1]["content"] == "Watson:「Who are you?」"
    assert recs[0]["reply_id"] != recs[1]["reply_id"] == recs[2]["reply_id"]

    # the correction is what the next prompt carries in its history
    conv = page_turn(fb_settings, conv, "Tell me about Moriarty.")
    sent = conv.meta[-1].messages
    assert "Sherlock Holmes:「I am Sherlock Holmes. It is my business to know.」" in [m["content"] for m in sent]


def test_feedback_off_writes_nothing(settings, tmp_path):
    off = settings.with_(feedback_off=True)
    conv = page_turn(off, Conversation("alice"), "Who are you?")
    assert rate_reply(conv, 2, True, off)[1].startswith("Thanks")
    assert off.feedback_path is None and not list(tmp_path.iterdir())


def test_feedback_becomes_sft_rows_and_preference_pairs(tmp_path, capsys):
    prompt = [{"role": "system", "content": "You are Alice."},
              {"role": "user", "content": "Classic scenes for the role are as follows:\nscene"},
              {"role": "user", "content": "Hatter:「Why is a raven like a writing-desk?」"}]

    def rec(rid, original, corrected=None, rating=None, messages=prompt):
        return feedback_record(FeedbackRecord(reply_id=rid, role_id="alice", role_name="Alice", user_role="Hatter",
                                              text="Why?", messages=messages, original=original, corrected=corrected,
                                              rating=rating))

    path = tmp_path / "feedback.jsonl"
    for r in [rec("a", "I give it up.", rating="like"),
              rec("b", "Because.", rating="dislike"),
              rec("b", "Because.", corrected="I haven't the slightest idea. What's the answer?", rating="dislike"),
              rec("c", "No idea.", rating="dislike"),
              rec("d", "Hmm.", rating="like", messages=[]),
              rec("e", "Maybe.", rating="like"), rec("e", "Maybe.", rating=None)]:  # liked, then un-liked
        append_record(path, r)
    data = build_training_data(path)
    assert (data.replies, data.corrected, data.liked, data.disliked_uncorrected, data.unusable) == (5, 1, 1, 1, 1)
    assert [m[-1]["content"] for m in data.sft] == ["Alice:「I give it up.」",
                                                   "Alice:「I haven't the slightest idea. What's the answer?」"]
    pair = data.preference[0]
    assert [m["role"] for m in pair["prompt"]] == ["system", "user"]  # the two user messages folded into one
    assert pair["chosen"][0]["content"] != pair["rejected"][0]["content"] == "Alice:「Because.」"

    assert main(["feedback", "export", "--in", str(path), "--out", str(tmp_path / "out")]) == 0
    assert "1 corrected, 1 liked" in capsys.readouterr().out
    for name, check in (("sft-openai.jsonl", openai_problems), ("sft-sharegpt.jsonl", sharegpt_problems)):
        rows = [json.loads(x) for x in (tmp_path / "out" / name).read_text(encoding="utf-8").splitlines()]
        assert len(rows) == 2 and all(check(r) == [] for r in rows)
    assert main(["feedback", "export", "--in", str(tmp_path / "none.jsonl")]) == 1
    assert "No feedback file" in capsys.readouterr().err


def test_rating_values_from_gradio():
    assert [rating_of(v) for v in (True, "Like", False, "Dislike", None, "")] == [
        "like", "like", "dislike", "dislike", None, None]


# ------------------------------------------------------------ chat export and import


def test_an_exported_chat_imports_exactly(settings, tmp_path):
    conv = Conversation("lindaiyu")
    for q in ["妹妹今天可好？", "你为什么哭？"]:
        conv = page_turn(settings, conv, q, "宝玉")
    conv, _ = rate_reply(conv, 2, True, settings.with_(feedback_off=True))
    path = export_chat(conv, "宝玉", tmp_path)
    back, user = import_chat(path)
    assert user == "宝玉" and back.role_id == "lindaiyu"
    assert back.history == conv.history and back.meta == conv.meta
    role = load_role("lindaiyu")
    assert chat_messages(back, role) == chat_messages(conv, role)


@pytest.mark.parametrize("content, sentence", [
    (b"", "not a chat exported from ChatHaruhi"),
    (b'{"messages": []}\n', "not a chat exported from ChatHaruhi"),
    (b'{"format": "chatharuhi-chat", "version": 1, "role": "alice"}\n{"text": "hi", "reply": "he', "Line 2"),
    (b'{"format": "chatharuhi-chat", "version": 9, "role": "alice"}\n', "newer ChatHaruhi"),
    (b'{"format": "chatharuhi-chat", "version": 1, "role": "alice"}\n{"text": "hi"}\n',
     "Line 2 of the chat file has no 'reply'"),
    ("\ufeff不是".encode("gbk", "replace") + b"\xff", "not UTF-8"),
])
def test_broken_chat_files_are_one_sentence(content, sentence):
    with pytest.raises(InputError, match=sentence):
        load_chat(content)


def test_a_chat_with_an_unknown_character_says_what_to_do(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"format": "chatharuhi-chat", "version": 1, "role": "nobody-x", "name": "Nobody"}\n')
    with pytest.raises(InputError, match="Nobody.*Add a character"):
        import_chat(path)


