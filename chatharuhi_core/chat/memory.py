"""What a character remembers of one conversation beyond its history window.

A character's history budget holds a few exchanges; anything older was simply gone. Three kinds of memory
keep it, all owned by one conversation (never module state, so two visitors' memories never meet):

- **pinned**: facts the visitor pinned from a message or wrote ("my sister is Anna"). Always in the prompt,
  in their own budget, under a heading the character reads as its own memory; pins that do not fit are
  counted, so the visitor sees which ones the character could not hold.
- **recalled**: exchanges that have left the history window, indexed by their words (BM25, lexical.py) at
  once and by their meaning (the role's embedder, in the background) as they leave. For each message the two
  rankings are fused with the days it names (when.py) and the neighbours of the strongest matches
  (RecallIndex.rank; a line that is a question matches less), and the best are packed within a budget with
  their turn and day, each whole or as its one matching line, never one the history already holds; a question
  that gathers is answered from many days (packing.py). A scene with several characters recalls the same way
  from the lines each character witnessed (scene/scene.py).
- **notes**: dated notes condensing older stretches, written by an engine that writes and tied to the ids
  of what they cover (notes.py); searched like exchanges, first in the recall budget, within their share.

The fusion's constants were chosen on the tuning split of bench/memory_public.py (MemoryBank people 0-7, and
the gathering set written for tuning); its held-out splits are reported beside it in bench/RESULTS.md.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from ..embedding import Embedder, embed_queries, normalise
from ..errors import InputError
from ..i18n import _
from ..roles.lines import format_query, format_reply
from .asking import gathers, is_question
from .lexical import CJK_RUN, LexicalIndex, tokens
from .notes import NOTES_HEADER, Note, exchange_ids, note_line, valid_notes
from .packing import line_alone, spread_days, words_in
from .prompt import Exchange
from .when import Day, day_of, days_mentioned, on_day, shown

log = logging.getLogger(__name__)
PINNED_HEADER = "What {name} remembers from this conversation:\n"
RECALL_HEADER = "Earlier in this conversation:\n"
MAX_PIN_CHARS = 500  # a fact, not a document: a pin is always in the prompt
MAX_PINS = 200
WAIT_S = 1.0  # the longest a message waits for a long chat's embedding; the rest is searched by words meanwhile
SCAN = 4  # packing looks this many times k down the ranking for units that fit
MIN_LINE = 24  # tokens: less than this left in the budget holds no exchange

Counter = Callable[[str], int]


@dataclass(frozen=True)
class Pin:
    """A fact the character keeps: written by the visitor, or pinned from exchange `turn` (1-based).
    `made_at`: how many exchanges the conversation had when it was made (whether a reply could have used it)."""

    text: str
    turn: int | None = None
    made_at: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Recalled:
    """An earlier exchange brought back for this message: its turn (1-based), how close it is in meaning, its
    lines, when it was said (`at`, ISO 8601, "" when unknown) and why it came back (`why`, for the panel). In a
    scene, a line the character witnessed, numbered as the transcript's line."""

    turn: int
    similarity: float
    text: str
    at: str = ""
    why: str = ""


def exchange_text(ex: Exchange, character: str) -> str:
    """An exchange as it is embedded and as it enters the prompt: the two script lines."""
    return format_query(ex.user_role, ex.text) + "\n" + format_reply(character, ex.reply)


def check_pin(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise InputError(_("Write what the character should remember, e.g. “my sister is Anna”."))
    if len(text) > MAX_PIN_CHARS:
        raise InputError(_("A memory is at most {limit} characters; this one has {count}. Pin the fact itself, or "
                           "several shorter ones.", limit=MAX_PIN_CHARS, count=len(text)))
    return text


def exchange_views(ex: Exchange, character: str) -> tuple[str, str, str]:
    """What an exchange is indexed by: both lines together, the visitor's alone and the character's alone. A
    fact the visitor stated is found by its own line far better than with the reply beside it (measured on
    bench/recall.py's Chinese conversations: the planted exchange first for 87-90% of questions by the pair,
    100% by the better of the pair and the visitor's line)."""
    return views_of(exchange_text(ex, character), ex)


def views_of(text: str, ex: Exchange) -> tuple[str, str, str]:
    """exchange_views for an exchange whose `text` (exchange_text) is already written."""
    return text, ex.text, ex.reply


@dataclass(frozen=True)
class RecallQuery:
    """What one message asks memory with: its embedded forms (rows, the first foremost: the message, the
    message with the visitor's name as "I", the newest line), its words for BM25, the days it names, whether
    it gathers (asks for several things said at different times: answered from many days, line by line), and
    the message by the memory embedder (`deep`, embedding.memory_embedder)."""

    vectors: np.ndarray | None
    words: tuple[str, ...] = ()
    days: frozenset[Day] = frozenset()
    gather: bool = False
    deep: np.ndarray | None = None  # the message by the memory embedder (a row), when there is one


@dataclass(frozen=True)
class RecallCandidate:
    """A unit as fusion ranks it: its index, fused score, cosine (NaN while not embedded) and why."""

    index: int
    score: float
    cosine: float
    reasons: tuple[str, ...]


# Fusion (reciprocal ranks, weighted): measured on bench/memory_public.py's tuning split, never the held-out one.
FUSE_K = 5  # rank offset: small, so a unit first by words or by meaning stands out
W_DENSE, W_WORDS, W_DAY = 1.0, 1.0, 2.0  # a unit on the day the message names comes before others
W_DEEP = 1.0  # the memory embedder's list (a unit's first view, both lines), beside the role embedder's
NEIGHBOURS = 0.7  # the exchanges just before and after a strong one, at this share of its score
NEIGHBOUR_OF = 4  # ... of the top few
DEPTH = 64  # how far down each list (meaning, words) counts (32 and 128 found the same on the tuning split)
FEEDBACK, FEEDBACK_FROM, FEEDBACK_WORDS = 0.5, 5, 8  # a third list: the words the best few share (weight, how
# many units, how many words)
ASKED = 0.2  # a view that is a question matches this much less: a question holds no answer, yet the embedder
# finds a question most like another question ("What has gone wrong in my flat?" ~ "Why did you not tell me?")
PAIR_ASKED = 0.5  # ... and an exchange that a question of the visitor's opens, this share of it


class RecallIndex:
    """A conversation's units (exchanges beyond the history window, or a scene's witnessed lines), searched two
    ways and fused: by meaning (their views' vectors in numpy matrices, one matrix-vector product) and by words
    (BM25, lexical.py). Words are indexed at once; vectors are embedded by a background worker, a few units at a
    time so other visitors' messages are embedded in between, and a search uses those embedded so far: a long
    chat just imported is searched by words at once and by meaning as it catches up (`progress`). A history
    rewritten (an edit, a regenerated reply) is noticed by its text and indexed again from there. Safe to share
    between threads (the page's read-ahead and the next turn)."""

    BATCH = 16  # units per embedding call
    DEEP_BATCH = 4  # ... by the memory embedder

    def __init__(self) -> None:
        self._keys: list[tuple[str, ...]] = []
        self._asks = np.zeros((0, 0), dtype=np.float32)  # unit, view: 1 where the view is a question
        self._line_words: dict[str, frozenset[str]] = {}  # a line's words, for packing (line_words)
        self._vectors = np.zeros((0, 0, 0), dtype=np.float32)  # embedded unit, view, dimension
        self._deep = np.zeros((0, 0), dtype=np.float32)  # embedded unit, dimension: the memory embedder's
        self._deep_embedder: Embedder | None = None  # fixed by the first sync that names one
        self._words = LexicalIndex()
        self._cond = threading.Condition()
        self._embedder: Embedder | None = None
        self._working = False
        self._error: BaseException | None = None

    def __len__(self) -> int:
        return len(self._keys)

    def progress(self) -> tuple[int, int]:
        """(units embedded, units held)."""
        with self._cond:
            return len(self._vectors), len(self._keys)

    def sync(self, keys: Sequence[tuple[str, ...]], embedder: Embedder, wait: float | None = None,
             deep: Embedder | None = None) -> bool:
        """Make the index begin with exactly `keys` (each unit's views, oldest first), indexing only what is new.
        Units after them stay when `keys` is a prefix of what is held (indexed ahead, see Scene.index_ahead); a
        unit that differs is dropped with all after it. Waits for the embedding up to `wait` seconds (None: until
        done, raising what the embedder raised); True when every unit is embedded. `deep`: the memory embedder,
        which embeds each unit's first view too (kept from the first sync that names one, while none is embedded),
        after the role embedder's views: a message waits `wait` for those alone, and meets the memory embedder's
        vectors as far as they have come (a wait of None waits for both)."""
        with self._cond:
            if deep is not None and self._deep_embedder is None and not len(self._vectors):
                self._deep_embedder = deep
            same = 0
            for mine, theirs in zip(self._keys, keys):
                if mine != theirs:
                    break
                same += 1
            if same < len(keys):
                self._keys = self._keys[:same] + [tuple(k) for k in keys[same:]]
                self._asks = np.concatenate([self._asks[:same], _questions(keys[same:], self._asks.shape[1])]) \
                    if same else _questions(keys)
                self._vectors = self._vectors[:min(same, len(self._vectors))]
                self._deep = self._deep[:min(same, len(self._deep))]
                self._words.truncate(same)
                self._words.add(key[0] for key in keys[same:])
                self._embedder, self._error = embedder, None
            if not self._complete() and not self._working:
                self._working = True
                self._embedder = self._embedder or embedder
                threading.Thread(target=self._embed_all, name="memory-embed", daemon=True).start()
            target = len(keys)
            done = self._cond.wait_for(lambda: not self._working or len(self._vectors) >= target and (
                wait is not None or self._complete()), wait)
            if wait is None and self._error is not None and len(self._vectors) < target:
                raise self._error
            return done and len(self._vectors) >= target

    def _complete(self) -> bool:
        """Whether every unit is embedded by both embedders. Under the lock."""
        return len(self._vectors) >= len(self._keys) and (self._deep_embedder is None or
                                                            len(self._deep) >= len(self._keys))

    def _embed_all(self) -> None:
        """The worker: embeds the units not embedded yet, a batch at a time, until none is left: by the role's
        embedder first (every view), then by the memory embedder (a few times slower; first views alone)."""
        while True:
            with self._cond:
                views = len(self._vectors) < len(self._keys)
                start = len(self._vectors) if views else len(self._deep)
                if not views and (self._deep_embedder is None or start >= len(self._keys)):
                    self._working = False
                    self._cond.notify_all()
                    return
                # the memory embedder a few at a time: a message's own query waits for the batch running (~30 ms each)
                size = self.BATCH if views else self.DEEP_BATCH
                batch, embedder, deep = self._keys[start:start + size], self._embedder, self._deep_embedder
            try:
                assert embedder is not None and (views or deep is not None)
                if not views:
                    deeper = normalise(deep.embed([key[0] or " " for key in batch]))
                    with self._cond:
                        if len(self._deep) == start and self._keys[start:start + len(batch)] == batch:
                            self._deep = deeper if not start else np.concatenate([self._deep, deeper])
                        self._cond.notify_all()
                    continue
                flat = np.asarray(embedder.embed([t or " " for key in batch for t in key]), dtype=np.float32)
            except Exception as exc:  # the caller that waits raises it; a search meanwhile uses words only
                log.info("embedding the conversation for recall failed: %r", exc)
                with self._cond:
                    self._error, self._working = exc, False
                    self._cond.notify_all()
                return
            flat = normalise(flat)
            fresh = flat.reshape(len(batch), len(batch[0]), -1)
            with self._cond:  # kept only if the history was not rewritten under it meanwhile
                if len(self._vectors) == start and self._keys[start:start + len(batch)] == batch:
                    self._vectors = fresh if not start else np.concatenate([self._vectors, fresh])
                self._cond.notify_all()

    def _cosines(self, vectors: np.ndarray | None, n: int) -> np.ndarray:
        """(units embedded among the first n, queries): each unit's cosine by its closest view. Under the lock."""
        m = min(n, len(self._vectors))
        if vectors is None or not m:
            return np.zeros((m, 0), dtype=np.float32)
        return self._matches(slice(0, m), vectors).max(axis=1)

    def _deep_cosines(self, rows: np.ndarray | None, n: int) -> np.ndarray:
        """(units embedded among the first n, queries) by the memory embedder, a question ASKED less."""
        with self._cond:
            m = min(n, len(self._deep))
            if rows is None or not m or self._deep_embedder is None:
                return np.zeros((m, 0), dtype=np.float32)
            return self._deep[:m] @ normalise(np.atleast_2d(rows)).T - ASKED * self._asks[:m, :1]

    def _matches(self, units: slice | list[int], vectors: np.ndarray) -> np.ndarray:
        """(unit, view, query): each embedded unit's views against the query's rows, a question ASKED less.
        Under the lock."""
        return self._vectors[units] @ normalise(np.atleast_2d(vectors)).T - ASKED * self._asks[units][:, :, None]

    def search(self, vector: np.ndarray, k: int, limit: int | None = None) -> list[tuple[int, float]]:
        """(index, cosine) of the k nearest in meaning by their closest view, nearest first, among the first
        `limit` embedded. `vector` may be several queries (rows, the first foremost): their nearest then take
        turns (_taking_turns), so that one query's near-duplicates cannot crowd out another's."""
        if k <= 0:
            return []
        with self._cond:
            n = len(self._keys) if limit is None else min(limit, len(self._keys))
            sims = self._cosines(vector, n)
        return [(i, float(sims[i].max())) for i in _taking_turns(sims, k)]

    def line_words(self, text: str) -> frozenset[str]:
        """A line's distinct words, kept with this conversation's index (packing weighs the same lines at every
        turn); forgotten all at once when they outnumber the units four to one."""
        words = self._line_words.get(text)
        if words is None:
            if len(self._line_words) > 4 * len(self._keys) + 64:
                self._line_words = {}
            words = self._line_words[text] = words_in(text)
        return words

    def view_cosines(self, vectors: np.ndarray | None, indices: Sequence[int]) -> dict[int, np.ndarray]:
        """Each embedded unit's match by each of its views (the best of the query's rows), for the units asked."""
        if vectors is None:
            return {}
        with self._cond:
            held = [i for i in indices if i < len(self._vectors)]
            if not held:
                return {}
            rows = self._matches(held, vectors)
        return dict(zip(held, rows.max(axis=2)))

    def rank(self, query: RecallQuery, limit: int, days: Sequence[date | None] = ()) -> list[RecallCandidate]:
        """The first `limit` units that meaning, words or the day asked about bring up, best first: reciprocal
        ranks of the meaning list (every query form, its best) and the BM25 list, plus units on a day the
        message names, ranked among themselves; then the neighbours of the strongest few."""
        with self._cond:
            n = min(limit, len(self._keys))
            sims = self._cosines(query.vectors, n)
            lexical = self._words.scores(query.words, n) if query.words else {}
        score: dict[int, float] = {}
        reasons: dict[int, list[str]] = {}
        cosine = sims.max(axis=1) if sims.shape[1] else np.zeros(0, dtype=np.float32)
        for rank, i in enumerate(_taking_turns(sims, DEPTH)):
            score[i] = W_DENSE / (FUSE_K + rank)
        for rank, i in enumerate(_taking_turns(self._deep_cosines(query.deep, n), DEPTH) if W_DEEP else ()):
            score[i] = score.get(i, 0.0) + W_DEEP / (FUSE_K + rank)
        for rank, (i, _score) in enumerate(sorted(lexical.items(), key=lambda kv: -kv[1])[:DEPTH]):
            score[i] = score.get(i, 0.0) + W_WORDS / (FUSE_K + rank)
            reasons.setdefault(i, []).append("words")
        if FEEDBACK and lexical and query.gather:
            with self._cond:
                more = self._words.expansion(sorted(score, key=lambda i: -score[i])[:FEEDBACK_FROM], query.words,
                                             FEEDBACK_WORDS, n)
                fed = self._words.scores(more, n) if more else {}
            for rank, (i, _score) in enumerate(sorted(fed.items(), key=lambda kv: -kv[1])[:DEPTH]):
                score[i] = score.get(i, 0.0) + FEEDBACK / (FUSE_K + rank)
        if query.days and days:
            dated = [i for i in range(n) if i < len(days) and on_day(days[i], set(query.days))]
            dated.sort(key=lambda i: (-score.get(i, 0.0), -lexical.get(i, 0.0)))
            for rank, i in enumerate(dated):
                score[i] = score.get(i, 0.0) + W_DAY / (FUSE_K + rank)
                reasons.setdefault(i, []).append("day")
        best = sorted(score, key=lambda i: -score[i])
        for i in best[:0 if query.gather else NEIGHBOUR_OF]:  # a question that gathers wants other days
            for j in (i - 1, i + 1):
                if 0 <= j < n and score.get(j, 0.0) < NEIGHBOURS * score[i]:
                    score[j] = NEIGHBOURS * score[i]
                    reasons.setdefault(j, []).append(f"next to {i}")
        out = []
        for i in sorted(score, key=lambda i: -score[i]):
            cos = float(cosine[i]) if i < len(cosine) else float("nan")
            out.append(RecallCandidate(i, score[i], cos, tuple(reasons.get(i, ()))))
        return out


@dataclass(frozen=True)
class Ask:
    """How memory is asked for one message: the query (a RecallQuery, or a bare vector), the embedder that keeps
    the index, the budget in tokens counted by `count`, at most `k` units, and how long to wait for the
    embedding (`wait`, seconds; None: as long as it takes)."""

    query: RecallQuery | np.ndarray | None
    embedder: Embedder
    budget: int
    k: int
    count: Counter
    wait: float | None = WAIT_S
    deep: Embedder | None = None  # the memory embedder (embedding.memory_embedder), if any


@dataclass(frozen=True)
class Units:
    """What recall chooses among, oldest first: each unit's views (the index's keys), its text as the prompt
    writes it, its number (a turn, a line of the transcript), its time ("" where unknown) and its lines as the
    prompt writes one alone (`parts`, one per view after the first; empty: a unit is packed whole)."""

    keys: Sequence[tuple[str, ...]]
    texts: Sequence[str]
    numbers: Sequence[int]
    times: Sequence[str] = ()
    parts: Sequence[tuple[str, ...]] = ()


@dataclass
class Memory:
    """One conversation's memory: its pins, the index of its earlier exchanges, and dated notes on older
    stretches (notes.py) with their own small index."""

    pins: list[Pin] = field(default_factory=list)
    index: RecallIndex = field(default_factory=RecallIndex, repr=False, compare=False)
    notes: list[Note] = field(default_factory=list)
    note_index: RecallIndex = field(default_factory=RecallIndex, repr=False, compare=False)

    def copy(self) -> Memory:
        """Another conversation state's memory: its own pins and notes; the indexes are derived from text and
        shared (each search brings them up to the state that asks)."""
        return Memory(list(self.pins), self.index, list(self.notes), self.note_index)

    def branched(self, history: Sequence[Exchange]) -> Memory:
        """The memory of a branch that keeps `history`, the first exchanges of this conversation: the pins made
        or pinned from within them and the notes on them; what came later belongs to the line it came in."""
        at = len(history)
        pins = [p for p in self.pins if (p.turn if p.turn is not None else p.made_at) <= at]
        return Memory(pins, self.index, valid_notes(self.notes, history), self.note_index)

    def recall_notes(self, history: Sequence[Exchange], query: RecallQuery | None, embedder: Embedder,
                     budget: int, count: Counter, wait: float | None = WAIT_S) -> list[Note]:
        """The valid notes (every exchange they cover still as it was) the message brings up, best first while
        they fit the budget, returned in the order of the conversation."""
        if query is None or budget <= 0 or not self.notes:
            return []
        ids = exchange_ids(history)  # once: every note below is matched against them
        notes = valid_notes(self.notes, history, ids)
        if not notes:
            return []
        self.note_index.sync([(n.text,) for n in notes], embedder, wait)
        picked, used = [], count(NOTES_HEADER)
        for c in self.note_index.rank(query, len(notes)):
            n = count(note_line(notes[c.index], history, ids))
            if used + n <= budget:
                picked.append(c.index)
                used += n
        return [notes[i] for i in sorted(picked)]

    def remember(self, text: str, turn: int | None = None, made_at: int = 0) -> Pin:
        if len(self.pins) >= MAX_PINS:
            raise InputError(_("This conversation already keeps {limit} memories; forget some first.", limit=MAX_PINS))
        pin = Pin(check_pin(text), turn, made_at)
        self.pins.append(pin)
        return pin

    def forget(self, number: int) -> Pin:
        """Drop memory `number` (1-based, as listed)."""
        if not 1 <= number <= len(self.pins):
            raise InputError(_("There is no memory {number}; they are numbered 1 to {count}.", number=number,
                                 count=len(self.pins)) if self.pins else
                             _("There is no memory {number}; none is kept yet.", number=number))
        return self.pins.pop(number - 1)

    def edit(self, number: int, text: str) -> Pin:
        old = self.forget(number)
        pin = Pin(check_pin(text), old.turn, old.made_at)
        self.pins.insert(number - 1, pin)
        return pin

    def pinned(self, budget: int, count: Counter) -> list[Pin]:
        """The pins that fit the budget, in the order they were made; the first that does not fit ends it
        (as the scenes and history are packed), so the visitor can tell which ones are left out."""
        kept, used = [], 0
        for pin in self.pins:
            n = count("- " + pin.text + "\n")
            if used + n > budget:
                break
            kept.append(pin)
            used += n
        return kept

    def index_older(self, older: Sequence[Exchange], character: str, embedder: Embedder,
                    deep: Embedder | None = None) -> None:
        """Bring the index up to `older`, the exchanges out of the history window (waits for the embedding)."""
        self.index.sync([exchange_views(ex, character) for ex in older], embedder, None, deep)

    def recall(self, history: Sequence[Exchange], in_window: int, character: str, ask: Ask) -> list[Recalled]:
        """The earlier exchanges the message brings up (`ask`), among those the history window does not hold
        (all but its last `in_window`), packed best first while they fit, then in turn order."""
        older = history[:len(history) - in_window] if in_window else history
        lines = [(format_query(ex.user_role, ex.text), format_reply(character, ex.reply)) for ex in older]
        texts = [said + "\n" + reply for said, reply in lines]  # exchange_text, each line formatted once
        units = Units([views_of(t, ex) for t, ex in zip(texts, older)], texts, range(1, len(older) + 1),
                      [ex.at for ex in older], lines)
        return self.recall_among(units, ask)

    def recall_among(self, units: Units, ask: Ask, header: str = RECALL_HEADER, label: str = "turn") -> list[Recalled]:
        """The core of recall for any unit (an exchange here, a witnessed line in a scene): the index is brought
        up to the units' keys (each unit's views, oldest first; the embedding is waited for at most `ask.wait`
        seconds), the units are ranked by meaning, words and day (RecallIndex.rank; a question that gathers takes
        them day by day, packing.spread_days), and the best are packed while their texts fit the budget (one
        that does not fit is skipped, not the end): whole, or as the one line that matches (packing.line_alone;
        a line counts half of `ask.k`), returned in order, each with its number and its time."""
        keys = units.keys
        query = ask.query
        if query is None or ask.budget <= 0 or ask.k <= 0 or not keys:
            return []
        if not isinstance(query, RecallQuery):
            query = RecallQuery(np.asarray(query))
        self.index.sync(list(keys), ask.embedder, ask.wait, ask.deep)
        days = [day_of(t) for t in units.times] if query.days or query.gather else []
        ranked = self.index.rank(query, len(keys), days)[:SCAN * ask.k * (2 if query.gather else 1)]
        if query.gather:
            by = {c.index: c for c in ranked}
            ranked = [by[i] for i in spread_days([c.index for c in ranked], [c.score for c in ranked], days)]
        return self._pack(units, ranked, query, ask, header, label)

    def _pack(self, units: Units, ranked: Sequence[RecallCandidate], query: RecallQuery, ask: Ask, header: str,
              label: str) -> list[Recalled]:
        """The ranked units packed best first while they fit, each whole or as its one matching line."""
        texts, numbers, count = units.texts, units.numbers, ask.count
        times = list(units.times) + [""] * (len(texts) - len(units.times))
        views = self.index.view_cosines(query.vectors, [c.index for c in ranked]) if units.parts else {}
        words = frozenset(query.words)
        picked: list[Recalled] = []
        cost, seen, held = BlockCost(count, header), set(), 0.0
        for c in ranked:
            text = texts[c.index]
            if units.parts:
                alone = line_alone(views.get(c.index), words, units.parts[c.index], count, query.gather,
                                   self.index.line_words)
                text = text if alone is None else units.parts[c.index][alone]
            if text in seen:  # the same words said twice (a greeting, a question asked again): once
                continue
            n = cost.of(numbers[c.index], text, label, times[c.index])
            if cost.used + n > ask.budget:
                continue
            seen.add(text)
            picked.append(Recalled(numbers[c.index], c.cosine, text, times[c.index], _why(c, numbers, label)))
            cost.add(n, times[c.index])
            held += 1.0 if text == texts[c.index] else 0.5
            if held >= ask.k or ask.budget - cost.used < MIN_LINE:
                break
        while picked and count(recall_block(picked, header, label)) > ask.budget:  # the few tokens BlockCost missed
            picked.pop()  # the last packed: the least ranked
        return sorted(picked, key=lambda r: r.turn)


def _questions(keys: Sequence[tuple[str, ...]], width: int | None = None) -> np.ndarray:
    """(unit, view): 1.0 where the view is a question (asking.is_question)."""
    width = max((len(k) for k in keys), default=0) if width is None else width
    out = np.zeros((len(keys), width), dtype=np.float32)
    for i, key in enumerate(keys):
        out[i, :len(key)] = [is_question(v) for v in key]
        if len(key) == 3:  # an exchange: both lines together lose a share when the visitor's line is a question
            out[i, 0] = PAIR_ASKED * out[i, 1]
    return out


def _taking_turns(sims: np.ndarray, depth: int) -> list[int]:
    """The units in meaning order when there are several queries (columns, the first foremost): their nearest
    take turns, so one query's near-duplicates cannot crowd out another's (a scene asks with the line addressed
    to the character and with the newest line it heard)."""
    if not sims.shape[0] or not sims.shape[1]:
        return []
    orders = [np.argsort(-sims[:, q], kind="stable")[:depth] for q in range(sims.shape[1])]
    out: dict[int, None] = {}
    for rank in range(min(depth, sims.shape[0])):
        for order in orders:
            out.setdefault(int(order[rank]))
    return list(out)[:depth]


def _why(c: RecallCandidate, numbers: Sequence[int], label: str) -> str:
    """Why a unit came back, as the panel says it."""
    why = [] if c.cosine != c.cosine else [f"meaning {c.cosine:.2f}"]
    for reason in c.reasons:
        if reason == "words":
            why.append("same words")
        elif reason == "day":
            why.append("the day asked about")
        elif reason.startswith("next to "):
            why.append(f"next to {label} {numbers[int(reason[8:])]}")
    return " · ".join(why)


def first_person(text: str, visitor: Sequence[str], character: str) -> str | None:
    """The message as the visitor's own words would say it: the visitor named in the third person becomes "I"
    ("When did Anna go to the group?" -> "When did I go to the group?"; "安娜" -> "我") and the character
    named becomes "you", so it meets the exchanges where the visitor said "I". None when it names neither."""
    out = text
    for name, me, my in [*((v, "I", "my") for v in visitor), (character, "you", "your")]:
        name = (name or "").strip()
        if len(name) < 2 or name not in out:
            continue
        if CJK_RUN.search(name):
            out = out.replace(name, "我" if me == "I" else "你")
        else:
            out = re.sub(rf"\b{re.escape(name)}(?:'s|’s)\b", my, out)
            out = re.sub(rf"\b{re.escape(name)}\b", me, out)
    return out if out != text else None


def query_forms(text: str, visitor: Sequence[str] = (), character: str = "", also: Sequence[str] = ()) -> list[str]:
    """The other forms memory is asked with besides the message itself: the message in the visitor's own person
    (first_person) and the `also` texts (e.g. the newest line), without repeats."""
    return [t for t in dict.fromkeys((first_person(text, visitor, character), *also)) if t and t != text]


def recall_query(text: str, vectors: np.ndarray | None, embedder: Embedder, visitor: Sequence[str] = (),
                 character: str = "", today: date | None = None) -> RecallQuery:
    """How memory is asked for one message: its vectors (rows: the message, then its query_forms; a caller that
    embedded only the message gets the forms embedded here), its words, the days it names. The message by the
    memory embedder is added by the caller (ask_deep, `deep` of the result)."""
    forms = query_forms(text, visitor, character)
    rows = None if vectors is None else np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    if rows is not None and forms and len(rows) < 1 + len(forms):
        rows = np.concatenate([rows[:1], np.asarray(embedder.embed(forms), dtype=np.float32)])
    days = frozenset(days_mentioned(text, today))
    return RecallQuery(rows, tuple(tokens(text)), days, gathers(text) and not days)  # a day named: that day


def ask_deep(embedder: Embedder | None, text: str) -> Callable[[], np.ndarray | None] | None:
    """Start embedding the message by the memory embedder in a thread (it takes ~20 ms, while the role's
    embedder and the scene store take their turn on the other core); the function returned waits for it. A
    failure only leaves that ranking out (logged). The message alone: its other forms (query_forms) found 1 more
    of 278 tuning questions, for as many more of those 20 ms each."""
    if embedder is None:
        return None
    box: list[np.ndarray | None] = [None]

    def run() -> None:
        try:
            box[0] = np.asarray(embed_queries(embedder, [text]), dtype=np.float32)
        except Exception as exc:
            log.info("the memory embedder could not read the message: %r", exc)

    thread = threading.Thread(target=run, name="memory-query", daemon=True)
    thread.start()

    def result() -> np.ndarray | None:
        thread.join()
        return box[0]
    return result


def recall_line(turn: int, text: str, label: str = "turn", clock: str = "") -> str:
    """One unit as the recall block writes it, under its day's line: "[turn 12] Anna:「…」" (with its time,
    "[turn 12 · 21:05]", when it differs from the time on its day's line)."""
    return f"[{label} {turn}{' · ' + clock if clock else ''}] {text}\n"


DAY_LINES = True  # False: each unit carries its own day and time, as before issue 53's second step (bench ablation)


def day_line(at: str) -> str:
    """The line that opens a day's units in the recall block: "[2025-09-02 19:30]" (the day's first unit's time)."""
    return f"[{shown(at)}]\n"


def _own_line(turn: int, text: str, label: str, at: str) -> str:
    when = shown(at)
    return f"[{label} {turn}{' · ' + when if when else ''}]\n{text}\n"


def _clock(at: str) -> str:
    return shown(at)[11:]


class BlockCost:
    """The tokens a recall block grows by with each unit packed: its line, plus its day's line when it is the
    first of that day, plus its time when it differs from the one on that day's line. Units are packed best first,
    not in turn order, so the day's line may end up over another of its units: the sum can be off by a few tokens,
    and the packed block is counted whole once more at the end (Memory._pack)."""

    def __init__(self, count: Counter, header: str) -> None:
        self.count, self.used, self._days = count, count(header), {}

    def of(self, number: int, text: str, label: str, at: str) -> int:
        day = day_of(at)
        if not DAY_LINES:
            return self.count(_own_line(number, text, label, at))
        if day is None:
            return self.count(recall_line(number, text, label))
        clock = self._days.get(day)
        if clock is None:
            return self.count(day_line(at)) + self.count(recall_line(number, text, label))
        return self.count(recall_line(number, text, label, "" if _clock(at) == clock else _clock(at)))

    def add(self, n: int, at: str) -> None:
        self.used += n
        day = day_of(at)
        if day is not None:
            self._days.setdefault(day, _clock(at))


def pinned_block(name: str, pins: Sequence[Pin]) -> str:
    """The heading and the pins, as they close the system prompt."""
    return PINNED_HEADER.format(name=name) + "".join(f"- {p.text}\n" for p in pins).rstrip("\n") if pins else ""


def recall_block(recalled: Sequence[Recalled], header: str = RECALL_HEADER, label: str = "turn") -> str:
    """The recalled units in turn order under the lines of their days: a day's date and time are written once
    (17 tokens a unit when each unit carried its own, a fifth of a 1,200-token budget)."""
    if not recalled:
        return ""
    if not DAY_LINES:
        return (header + "".join(_own_line(r.turn, r.text, label, r.at) for r in recalled)).rstrip("\n")
    out, day, clock = [header], None, ""
    for r in sorted(recalled, key=lambda r: r.turn):
        this = day_of(r.at)
        if this is not None and this != day:
            out.append(day_line(r.at))
            clock = _clock(r.at)
        day = this
        out.append(recall_line(r.turn, r.text, label, "" if this is None or _clock(r.at) == clock else _clock(r.at)))
    return "".join(out).rstrip("\n")


def in_background(work: Callable[[], None], what: str) -> None:
    """Run `work` (indexing ahead, after a reply) in a daemon thread; a failure only loses the time it would
    have saved, so it is logged, never raised."""
    def run() -> None:
        try:
            work()
        except Exception as exc:
            log.info("%s ahead failed: %r", what, exc)

    threading.Thread(target=run, name="memory-index", daemon=True).start()
