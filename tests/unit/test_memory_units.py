"""Memory's second step (issue 53): lines as units, questions that gather, coverage over days, questions that
match less, words the best hits share. Behaviour, not figures: bench/memory_public.py measures."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest
from support.make_inputs import long_chat

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.chat.asking import gathers
from chatharuhi_core.chat.lexical import LexicalIndex, tokens
from chatharuhi_core.chat.memory import RecallIndex, RecallQuery, recall_query
from chatharuhi_core.chat.packing import line_alone, spread_days, stands_alone
from chatharuhi_core.config import Budgets


@pytest.mark.parametrize("question", [
    "What books has Anna read?", "Which cities has Lena visited since March?", "What do Anna and Holmes both dislike?",
    "How many times did she go swimming?", "Which of her friends has Anna mentioned?",
    "What has Mei cooked for her family?", "小梅读过哪些书？", "小梅和孙悟空都喜欢什么？", "小梅一共去了几次游泳？"])
def test_a_question_that_asks_for_several_things_gathers(question):
    assert gathers(question)


@pytest.mark.parametrize("question", [
    "Where did Anna work?", "What is the name of her cat?", "Which movie did you recommend to me?",
    "What type of music do I like?", "小梅的奶奶住在哪里？", "你是谁？"])
def test_a_question_about_one_thing_does_not(question):
    assert not gathers(question)


def test_a_question_that_names_a_day_asks_about_that_day_not_many(embedder):
    query = recall_query("Which books did I mention on 5 March?", None, embedder, today=date(2024, 4, 1))
    assert query.days and not query.gather
    assert recall_query("Which books have I mentioned?", None, embedder).gather


def test_a_line_stands_alone_when_it_says_something_of_its_own():
    assert stands_alone("Anna:「I finally finished Middlemarch on the train home last night.」")
    assert not stands_alone("Holmes:「Yes, last week, as I said.」")
    assert not stands_alone("Anna:「Have you ever read Middlemarch on a long train?」")
    assert not stands_alone("Anna:「Fine.」")


def test_the_matching_line_goes_alone_only_when_it_clearly_matches_better():
    count = lambda text: len(text.split())  # noqa: E731
    fact = "Anna:「I finally finished Middlemarch on the train home last night, all eight hundred pages.」"
    reply = "Holmes:「A long book for a short ride; the railway companies should be grateful for novelists.」"
    words = frozenset(tokens("Which books has Anna finished?"))
    assert line_alone(np.array([0.5, 0.6, 0.2]), words, (fact, reply), count) == 0
    assert line_alone(np.array([0.5, 0.41, 0.40]), frozenset(), (fact, reply), count) is None  # too close to call
    assert line_alone(None, words, (fact, reply), count) == 0  # not embedded yet: by its words
    short = "Holmes:「Indeed.」"
    assert line_alone(np.array([0.5, 0.6, 0.2]), words, (fact, short), count) is None  # dropping it saves little


def test_units_of_a_day_already_taken_give_way_to_other_days():
    days = [date(2024, 3, 1)] * 3 + [date(2024, 3, 5), date(2024, 3, 9)]
    order = spread_days([0, 1, 2, 3, 4], [1.0, 0.95, 0.9, 0.6, 0.55], days)
    assert order[:3] == [0, 3, 4]  # one from each day before a day's second
    assert sorted(order) == [0, 1, 2, 3, 4]


def test_a_view_that_is_a_question_matches_less(embedder, monkeypatch):
    """The embedder finds a question most like another question; a question holds no answer, so its line (and
    the exchange it opens, by half) matches ASKED less."""
    from chatharuhi_core.chat import memory

    keys = [("Anna:「Which books have you read this spring?」\nHolmes:「Very few.」",
             "Which books have you read this spring?", "Very few.")]
    vector = np.asarray(embedder.embed(["Which books has Anna read this spring?"]))
    index = RecallIndex()
    index.sync(keys, embedder)
    with_discount = index.rank(RecallQuery(vector), 1)[0].cosine
    monkeypatch.setattr(memory, "ASKED", 0.0)
    without = index.rank(RecallQuery(vector), 1)[0].cosine
    assert without - 0.2 - 1e-4 <= with_discount <= without - 0.1 + 1e-4


def test_the_words_the_best_hits_share_are_offered_to_the_query():
    words = LexicalIndex()
    words.add(["I read Rebecca on the bus, a gothic novel.", "Another gothic novel: Dracula, read in one night.",
               "The boiler broke again.", "Lunch was soup."])
    more = words.expansion([0, 1], tokens("Which books has Anna read?"), 5)
    assert "gothic" in more and "novel" in more and "read" not in more
    assert words.expansion([2, 3], (), 5) == []  # nothing shared


def _bot(settings, history, **budgets):
    b = Budgets(story_tokens=200, history_tokens=120, recall_tokens=budgets.pop("recall_tokens", 400),
                recall_k=budgets.pop("recall_k", 6), **budgets)
    bot = ChatHaruhi(role_name="sherlock", settings=settings, budgets=b, history=history, read_ahead=False)
    bot.clock = lambda: "2024-04-01T12:00:00"
    bot.index_ahead()
    return bot


FILLER = [("How are you this morning?", "Tolerably well. The fog is thick."),
          ("The fog has not lifted all day.", "London wears it like a coat."),
          ("What are you reading?", "A monograph on the ash of 140 tobaccos."),
          ("Mrs. Hudson sends her regards.", "And, no doubt, her bill."),
          ("I walked along the river before coming here.", "The river keeps better secrets than the city.")]


def _chat(planted: dict[int, tuple[str, str]], total: int) -> list:
    """A chat of plain filler, one day per ten exchanges, the way people repeat themselves (no numbering)."""
    from chatharuhi_core.chat.prompt import Exchange

    start = date(2024, 3, 1).toordinal()
    return [Exchange("Anna", *(planted.get(t) or FILLER[t % len(FILLER)]),
                     date.fromordinal(start + (t - 1) // 10).isoformat()) for t in range(1, total + 1)]


LONG_REPLY = ("Then you will have noticed how the author hides the plot in the second volume, where no reader "
              "expects it; a habit of the age, and a poor one.")


def test_a_recalled_exchange_can_come_back_as_its_one_line(settings):
    """The fact is the visitor's line; the reply says nothing of it and costs as much: the line comes back alone,
    with its turn and day, in the prompt and in the turn's record."""
    planted = {15: ("I finished reading Middlemarch on the night train to Edinburgh, all eight hundred pages.",
                    LONG_REPLY)}
    bot = _bot(settings, long_chat("Anna", planted, 100))
    request = bot.prepare("Which long novel did I finish on a train?", "Anna")
    hit = next(r for r in request.recalled if r.turn == 15)
    assert "Middlemarch" in hit.text and "second volume" not in hit.text and "\n" not in hit.text
    block = next(m["content"] for m in request.messages if m["content"].startswith("Earlier in this"))
    assert "[turn 15] Anna:「I finished reading Middlemarch" in block
    assert block.index("[2024-03-02]\n") < block.index("[turn 15] ")


def test_a_question_that_gathers_is_answered_from_many_days(settings):
    """Four books on four days, and one day that talks of books at length: a question that gathers brings every
    day's book within a budget the long day alone would fill."""
    planted = {5: ("I read Rebecca on the bus this week; the housekeeper terrified me.", "A formidable woman."),
               6: ("Rebecca's ending, though! I read the last chapter twice.", "Endings reward a second look."),
               7: ("I might reread Rebecca in the summer, I loved reading it so much.", "Books improve on rereading."),
               8: ("My book club argued about Rebecca all evening.", "Clubs exist to argue."),
               35: ("On the train I read The Moonstone to the last page.", "Sergeant Cuff is a sensible man."),
               62: ("Finished a small book about beekeeping last night, in one go.", "Bees keep better order than men."),
               88: ("I read The Remains of the Day through on my lunch break.", "A butler's restraint, I gather.")}
    bot = _bot(settings, _chat(planted, 110), recall_k=4, recall_tokens=220)
    turns = {r.turn for r in bot.prepare("Which books have I read?", "Anna").recalled}
    assert {35, 62, 88} <= turns and turns & {5, 6, 7, 8}
