"""How recall spends its budget: which unit goes in whole and which as one line, and how a question that
gathers is answered from many days instead of the best day's neighbours.

An exchange is two lines. The fact a question asks about is usually in one of them ("I finally read *Middlemarch*
on the train"), and the other ("A long book for a short ride.") costs as many tokens and adds nothing: packing
the matching line alone, with its turn and day, fits about twice as many facts in the same budget. A line goes
alone only when it stands on its own: it matches clearly better than its partner, it says something (not
"Yes, last week." or a bare question), and dropping its partner saves something worth saving.

A question that gathers ("What books has Anna read?", "哪些", "几次") has its answer spread over days; the
fused ranking puts the best day's units first, so packing takes them in an order that lets each day in before
a day already held gets another (spread_days).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Sequence
from datetime import date

import numpy as np

from .lexical import tokens

LINE_MARGIN = 0.03  # a line goes alone when it matches at least this much better than its partner ...
GATHER_MARGIN = 0.0  # ... or, for a question that gathers, when it matches better at all (more, shorter units)
LINE_WORDS = 0.04  # each of the question's words a line holds adds this to its match
MIN_WORDS = 5  # a line with fewer counted words leans on its partner
MIN_PARTNER = 12  # tokens: a partner shorter than this is kept (it costs little and may be needed)
DAY_SHARE = 0.5  # for a question that gathers: each unit already packed from a day halves the next one's claim

_LEANS = re.compile(r"^\W*(?:yes|yeah|yep|no|nope|not|never|indeed|exactly|right|sure|of course|that's|that is|it was|"
                    r"it is|they were|he did|she did|i did|me too|same|so did|是的|是啊|对|没错|不是|没有|当然|嗯)\b",
                    re.IGNORECASE)


def words_in(text: str) -> frozenset[str]:
    """A line's distinct words (lexical.tokens). A conversation's index keeps them (RecallIndex.line_words): the
    same lines are weighed again at every turn of a long chat."""
    return frozenset(tokens(text))


def stands_alone(line: str, words_of: Callable[[str], frozenset[str]] = words_in) -> bool:
    """Whether a line makes sense without the one it answered: it has a few words of its own, is not a bare
    question and does not open by agreeing or denying ("Yes, last week.", "对，就是那家。")."""
    body = line.split("「", 1)[-1].rstrip("」").strip()
    if body.endswith(("?", "？")) or _LEANS.match(body):
        return False
    return len(words_of(body)) >= MIN_WORDS


def line_alone(cosines: np.ndarray | None, words: frozenset[str], parts: Sequence[str], count: Callable[[str], int],
               gather: bool = False, words_of: Callable[[str], frozenset[str]] = words_in) -> int | None:
    """Which of a unit's lines to pack alone (its index in `parts`), or None to pack the unit whole. `cosines`:
    the unit's match by each view (the first the whole unit, then one per part; None while not embedded);
    `words`: the question's words (lexical.tokens)."""
    if len(parts) < 2:
        return None
    held = [len(words.intersection(words_of(p))) for p in parts]
    match = [LINE_WORDS * h for h in held]
    if cosines is not None and len(cosines) == len(parts) + 1 and not np.isnan(cosines).any():
        match = [m + float(c) for m, c in zip(match, cosines[1:])]
    best = max(range(len(parts)), key=lambda j: match[j])
    margin = GATHER_MARGIN if gather else LINE_MARGIN
    others = [j for j in range(len(parts)) if j != best]
    if match[best] - max(match[j] for j in others) <= margin:
        return None
    if not stands_alone(parts[best], words_of) or all(count(parts[j]) < MIN_PARTNER for j in others):
        return None
    return best


def spread_days(order: Sequence[int], scores: Sequence[float], days: Sequence[date | None]) -> list[int]:
    """`order` (unit indices, best first, with their `scores`) re-taken so that each day's units lose claim as
    that day is taken: the n-th unit of a day counts DAY_SHARE**n of its score. Units without a day share one.
    A heap whose entries are brought up to date when they surface: n log n, not n squared."""
    taken: dict[date | None, int] = {}
    heap = [(-score, k, 0) for k, score in enumerate(scores[:len(order)])]
    heapq.heapify(heap)
    out: list[int] = []
    while heap:
        _claim, k, seen = heapq.heappop(heap)
        day = _day(days, order[k])
        now = taken.get(day, 0)
        if now != seen:  # its day was taken since: its claim is less now
            heapq.heappush(heap, (-scores[k] * DAY_SHARE ** now, k, now))
            continue
        out.append(order[k])
        taken[day] = now + 1
    return out


def _day(days: Sequence[date | None], i: int) -> date | None:
    return days[i] if i < len(days) else None
