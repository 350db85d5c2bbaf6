"""Dated notes: older stretches condensed by an engine that writes, tied to the ids of the exchanges they cover,
dropped and written again when one of those is edited or deleted, searched like exchanges, kept in chat files
(never without their ids) and shown in the page's Memories panel with what the reply used."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.chat.notes import NOTES_HEADER, STRETCH, Note, due, exchange_id, valid_notes
from chatharuhi_core.chat.prompt import Exchange
from chatharuhi_core.chat.transcript import ReplyMeta, Transcript, dump_chat, load_chat
from chatharuhi_core.config import Budgets
from chatharuhi_core.errors import InputError
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.memory import memory_markdown

BUDGETS = Budgets(story_tokens=200, history_tokens=100, recall_tokens=800, recall_k=6, note_tokens=300)


class NoteTaker:
    """An engine object of the caller's own (the library takes any): it answers "Indeed." and, asked for a
    note, lists the first words of what the visitor said in the stretch, so a test can tell which it covered."""

    name = "notetaker"

    def __init__(self) -> None:
        self.asked: list[list[dict]] = []

    def stream(self, request):
        if request.plain:
            self.asked.append(request.messages)
            said = [line.split("「", 1)[1][:24] for line in request.messages[-1]["content"].splitlines()
                    if line.startswith(("Anna", "(")) and "「" in line]
            yield "Anna talked about: " + "; ".join(said) + "."
        else:
            yield "Indeed."


def _history(n: int) -> list[Exchange]:
    topics = ["my bakery on Mercer Street", "my brother Felix in Rotterdam", "the cat Pickle", "pottery class"]
    return [Exchange("Anna", f"Item {i}: about {topics[i % 4]}.", "Indeed.", f"2024-03-{1 + i // 10:02d}")
            for i in range(1, n + 1)]


def _bot(history, engine=None, budgets=BUDGETS):
    bot = ChatHaruhi(role_name="sherlock", engine=engine or NoteTaker(), budgets=budgets, history=history,
                     read_ahead=False)
    bot.clock = lambda: "2024-04-01"
    return bot


def test_a_note_covers_the_oldest_stretch_out_of_the_window_and_records_its_writer(settings):
    bot = _bot(_history(40))
    assert bot.makes_notes
    made = bot.write_notes(limit=2)
    assert len(made) == 2 and bot.memory.notes == made
    first, second = made
    assert first.covers == tuple(exchange_id(ex) for ex in bot.history[:STRETCH])
    assert second.covers == tuple(exchange_id(ex) for ex in bot.history[STRETCH:2 * STRETCH])
    assert first.text.startswith("Anna talked about: Item 1: about") and first.engine == "notetaker"
    assert first.since == "2024-03-01" and first.until == bot.history[STRETCH - 1].at
    assert first.turns(bot.history) == (1, STRETCH)
    assert "[notes on turns 1-12 · 2024-03-01 to 2024-03-02]" == first.heading(bot.history)
    prompt = bot.engine.asked[0]
    assert "Anna" in prompt[0]["content"] and "(2024-03-01) Anna:「Item 1" in prompt[1]["content"]
    older = len(bot.history) - bot.in_window()
    assert len(bot.write_notes(limit=10)) == older // STRETCH - 2
    assert bot.write_notes(limit=10) == []  # every whole stretch out of the window has its note


def test_an_edited_or_deleted_exchange_drops_its_note_and_the_stretch_is_written_again(settings):
    bot = _bot(_history(30))
    (note,) = bot.write_notes()
    bot.history[3] = replace(bot.history[3], reply="Indeed, and the flour was from Kent.")  # an edit
    assert valid_notes(bot.memory.notes, bot.history) == []
    (again,) = bot.write_notes()
    assert bot.memory.notes == [again] and again.covers != note.covers and again.turns(bot.history) == (1, STRETCH)
    del bot.history[5]  # a delete (e.g. a regenerated reply's exchange dropped)
    assert valid_notes(bot.memory.notes, bot.history) == []
    assert due([], bot.history[:STRETCH]) == bot.history[:STRETCH]


def test_notes_are_searched_and_enter_the_prompt_before_the_exchanges_within_their_share(settings):
    bot = _bot(_history(60))
    bot.write_notes(limit=3)
    request = bot.prepare("What did Anna say about Rotterdam?", "Anna")
    assert request.notes and all(n in bot.memory.notes for n in request.notes)
    memory = next(m["content"] for m in request.messages if m["content"].startswith(NOTES_HEADER))
    assert "[notes on turns " in memory and "Earlier in this conversation:" in memory
    assert memory.index(NOTES_HEADER) < memory.index("Earlier in this conversation:")
    notes_part = memory.split("Earlier in this conversation:")[0]
    assert bot.count_tokens(notes_part) <= BUDGETS.note_tokens + 5
    assert bot.count_tokens(memory) <= BUDGETS.recall_tokens + 10
    assert bot.prepare("Hello", "Anna").notes is not None


def test_the_script_engine_and_the_local_budgets_make_no_notes(settings):
    assert not _bot(_history(40), engine="script").makes_notes
    assert _bot(_history(40), engine="script").write_notes() == []
    assert not _bot(_history(40), budgets=replace(BUDGETS, note_tokens=0)).makes_notes


def test_notes_are_written_after_a_reply_in_the_background(settings):
    import time

    bot = ChatHaruhi(role_name="sherlock", engine=NoteTaker(), budgets=BUDGETS, history=_history(30))
    bot.chat("Good evening.", "Anna")
    for _ in range(100):
        if bot.memory.notes:
            break
        time.sleep(0.05)
    assert len(bot.memory.notes) == 1 and bot.memory.notes[0].turns(bot.history) == (1, STRETCH)


def test_a_chat_file_keeps_notes_with_their_ids_and_refuses_one_without(settings):
    bot = _bot(_history(30))
    (note,) = bot.write_notes()
    meta = [ReplyMeta(f"r{i}", []) for i in range(len(bot.history))]
    text = dump_chat(Transcript("sherlock", "Sherlock Holmes", "Anna", bot.history, meta, [], [note]))
    back = load_chat(text)
    assert back.notes == [note] and back.history == bot.history  # times included
    assert back.history[0].at == "2024-03-01"
    broken = text.replace('"covers": [', '"covered": [', 1)
    with pytest.raises(InputError, match="never kept without them"):
        load_chat(broken)
    bad_time = text.replace('"at": "2024-03-01"', '"at": "the first of March"', 1)
    with pytest.raises(InputError, match="'at' that is not a date with its year"):
        load_chat(bad_time)


def test_the_panel_shows_what_the_last_reply_remembered(settings):
    bot = _bot(_history(60))
    bot.write_notes(limit=2)
    bot.remember("Anna's cat is called Pickle.")
    reply = bot.answer("Tell me about Felix in Rotterdam.", "Anna")
    conv = Conversation("sherlock", bot.history, memory=bot.memory, last=reply)
    panel = memory_markdown(conv)
    assert "Anna's cat is called Pickle. · 📥 in the last reply's prompt" in panel and "used by" not in panel
    assert "In the last reply's prompt" in panel and "🪟 history window: exchanges" in panel
    assert "🗒️ notes on turns" in panel and "written by notetaker" in panel
    assert "🔎 turn" in panel and "2024-03-" in panel
    conv.memory.remember("Felix's fiancée is Marit.", made_at=len(conv.history))
    assert "Marit. · ⏳ pinned after the last reply" in memory_markdown(conv)


def test_the_panel_says_used_only_when_the_reply_shows_it():
    from chatharuhi_core.web.memory import uses

    asked, fact = "What is my dog called?", "Watson: My dog is called Gladstone."
    assert uses("Gladstone is asleep by the fire.", fact, asked)
    assert not uses("The dog did nothing in the night-time.", fact, asked)  # the dog of the question, not the fact
    assert uses("小白又在院子里叫了。", "我的狗叫小白。", "我的狗叫什么？") and not uses("你说什么？", "我的狗叫小白。")


def test_the_offline_engine_is_said_to_use_no_memory(settings):
    bot = _bot([Exchange("Anna", "Hello.", "Good evening.", "2024-03-01")], engine="script", budgets=Budgets())
    bot.remember("My dog is called Gladstone.")
    reply = bot.answer("What is my dog called?", "Anna")
    panel = memory_markdown(Conversation("sherlock", bot.history, memory=bot.memory, last=reply))
    assert "📥 in the last reply's prompt" in panel and "cannot use memories" in panel and "uses it" not in panel


def test_the_panel_says_when_the_whole_conversation_is_still_in_the_window(settings):
    bot = _bot([Exchange("Anna", "Hello.", "Good evening.", "2024-03-01")], engine="script",
               budgets=Budgets())
    reply = bot.answer("Do you remember me?", "Anna")
    panel = memory_markdown(Conversation("sherlock", bot.history, memory=bot.memory, last=reply))
    assert "the whole conversation so far (1 exchange) is in its history window" in panel


def test_a_note_of_the_chat_file_without_text_is_a_sentence(settings):
    from chatharuhi_core.chat.notes import note_from

    with pytest.raises(InputError, match="has no 'text'"):
        note_from({"covers": ["x"]}, "Note 1")
    assert note_from({"text": "Anna bakes.", "covers": ["ab"]}, "Note 1") == Note("Anna bakes.", ("ab",))


def test_the_panel_lists_the_notes_and_an_edit_drops_the_one_it_touches(settings):
    from chatharuhi_core.roles.sources import load_role
    from chatharuhi_core.web.drawing import greeting_messages
    from chatharuhi_core.web.feedback import edit_message

    bot = _bot(_history(40))
    first, second = bot.write_notes(limit=2)
    conv = Conversation("sherlock", bot.history, memory=bot.memory)
    panel = memory_markdown(conv)
    assert "Notes on older stretches" in panel and "turns 1-12" in panel and "turns 13-24" in panel
    at = len(greeting_messages(load_role("sherlock"))) + 2 * 4 + 1  # the reply of exchange 5, as the page numbers it
    edited, said = edit_message(conv, at, "Indeed, and the bread was rye.", settings)
    assert "Saved your correction" in said
    panel = memory_markdown(edited)
    assert "turns 1-12" not in panel and "turns 13-24" in panel  # the note on exchange 5 is dropped
    assert valid_notes(edited.memory.notes, edited.history) == [second]


def test_an_engine_that_answers_one_visitor_at_a_time_is_not_asked_for_notes(settings):
    from chatharuhi_core.chat.lanes import LaneSpec

    class OneSlot(NoteTaker):
        def lane(self):
            return LaneSpec("one-slot-notetaker", "a one-slot test server", 1)

    engine = OneSlot()
    bot = _bot(_history(40), engine=engine)
    assert bot.write_notes() == [] and engine.asked == []
