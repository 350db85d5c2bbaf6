"""What a character remembers of one conversation beyond its history window.

A character's history budget holds a few exchanges; anything older was simply gone. Two kinds of memory
keep it, both owned by one conversation (never module state, so two visitors' memories never meet):

- **pinned**: facts the visitor pinned from a message or wrote ("my sister is Anna"). Always in the prompt,
  in their own budget, under a heading the character reads as its own memory; pins that do not fit are
  counted, so the visitor sees which ones the character could not hold.
- **recalled**: exchanges that have left the history window, embedded with the role's embedder as they
  leave and retrieved for each message by cosine similarity, like the role's own scenes. They enter the
  prompt with their turn numbers, within a budget, and never one the history already holds. A scene with
  several characters recalls the same way from the lines each character witnessed (scene/scene.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..embedding import Embedder
from ..errors import InputError
from ..roles.lines import format_query, format_reply
from .prompt import Exchange

log = logging.getLogger(__name__)
PINNED_HEADER = "What {name} remembers from this conversation:\n"
RECALL_HEADER = "Earlier in this conversation:\n"
MAX_PIN_CHARS = 500  # a fact, not a document: a pin is always in the prompt
MAX_PINS = 200

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
    """An earlier exchange brought back for this message: its turn (1-based), how close it is, its lines.
    In a scene, a line the character witnessed, numbered as the transcript's line."""

    turn: int
    similarity: float
    text: str


def exchange_text(ex: Exchange, character: str) -> str:
    """An exchange as it is embedded and as it enters the prompt: the two script lines."""
    return format_query(ex.user_role, ex.text) + "\n" + format_reply(character, ex.reply)


def check_pin(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise InputError("Write what the character should remember, e.g. “my sister is Anna”.")
    if len(text) > MAX_PIN_CHARS:
        raise InputError(f"A memory is at most {MAX_PIN_CHARS} characters; this one has {len(text)}. "
                         "Pin the fact itself, or several shorter ones.")
    return text


def exchange_views(ex: Exchange, character: str) -> tuple[str, str, str]:
    """What an exchange is indexed by: both lines together, the visitor's alone and the character's alone. A
    fact the visitor stated is found by its own line far better than with the reply beside it (measured on
    bench/recall.py's Chinese conversations: the planted exchange first for 87-90% of questions by the pair,
    100% by the better of the pair and the visitor's line)."""
    return exchange_text(ex, character), ex.text, ex.reply


class RecallIndex:
    """The vectors of a conversation's exchanges that left the history window, in numpy matrices (one per
    view, see exchange_views) searched with matrix-vector products: 1,000 exchanges are 6 MB and well under a
    millisecond. Each exchange is embedded once, when it first leaves the window (ChatHaruhi does it after a
    reply, while the visitor types); a history rewritten (an edit, a regenerated reply) is noticed by its text
    and re-embedded from there. Safe to share between threads (the page's read-ahead and the next turn)."""

    def __init__(self) -> None:
        self._keys: list[tuple[str, ...]] = []
        self._vectors = np.zeros((0, 0, 0), dtype=np.float32)  # exchange, view, dimension
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._keys)

    def sync(self, keys: Sequence[tuple[str, ...]], embedder: Embedder) -> None:
        """Make the index begin with exactly `keys` (each unit's views, oldest first), embedding only what is
        new. Units after them stay when `keys` is a prefix of what is held (indexed ahead, see Scene.index_ahead);
        a unit that differs is dropped with all after it."""
        with self._lock:
            same = 0
            for mine, theirs in zip(self._keys, keys):
                if mine != theirs:
                    break
                same += 1
            if same == len(keys):
                return
            new = list(keys[same:])
            flat = np.asarray(embedder.embed([text or " " for key in new for text in key]), dtype=np.float32)
            flat /= np.maximum(np.linalg.norm(flat, axis=1, keepdims=True), 1e-12)
            fresh = flat.reshape(len(new), len(new[0]), -1)
            vectors = fresh if not same else np.concatenate([self._vectors[:same], fresh])
            self._keys, self._vectors = list(keys), vectors

    def search(self, vector: np.ndarray, k: int, limit: int | None = None) -> list[tuple[int, float]]:
        """(index, cosine) of the k nearest by their closest view, nearest first, among the first `limit`.
        `vector` may be several queries (rows, the first foremost): their nearest then take turns, so that
        one query's near-duplicates cannot crowd out another's (a scene asks with the line addressed to a
        character and the newest line it heard)."""
        with self._lock:
            n = len(self._keys) if limit is None else min(limit, len(self._keys))
            if not n or k <= 0:
                return []
            query = np.atleast_2d(np.asarray(vector, dtype=np.float32))
            query = query / np.maximum(np.linalg.norm(query, axis=1, keepdims=True), 1e-12)
            sims = (self._vectors[:n] @ query.T).max(axis=1)  # unit x query, by the closest view
        k = min(k, n)
        ranked = [np.argsort(-sims[:, q], kind="stable")[:k] for q in range(sims.shape[1])]
        picked: dict[int, float] = {}
        for rank in range(k):
            for order in ranked:
                i = int(order[rank])
                if len(picked) < k and i not in picked:
                    picked[i] = float(sims[i].max())
        return list(picked.items())


@dataclass
class Memory:
    """One conversation's memory: its pins and the index of its earlier exchanges."""

    pins: list[Pin] = field(default_factory=list)
    index: RecallIndex = field(default_factory=RecallIndex, repr=False, compare=False)

    def remember(self, text: str, turn: int | None = None, made_at: int = 0) -> Pin:
        if len(self.pins) >= MAX_PINS:
            raise InputError(f"This conversation already keeps {MAX_PINS} memories; forget some first.")
        pin = Pin(check_pin(text), turn, made_at)
        self.pins.append(pin)
        return pin

    def forget(self, number: int) -> Pin:
        """Drop memory `number` (1-based, as listed)."""
        if not 1 <= number <= len(self.pins):
            raise InputError(f"There is no memory {number}; " + (f"they are numbered 1 to {len(self.pins)}."
                                                                 if self.pins else "none is kept yet."))
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

    def index_older(self, older: Sequence[Exchange], character: str, embedder: Embedder) -> None:
        """Bring the index up to `older`, the exchanges out of the history window."""
        self.index.sync([exchange_views(ex, character) for ex in older], embedder)

    def recall(self, history: Sequence[Exchange], in_window: int, character: str, vector: np.ndarray | None,
               embedder: Embedder, budget: int, k: int, count: Counter) -> list[Recalled]:
        """The earlier exchanges nearest the message (`vector`), among those the history window does not
        hold (all but its last `in_window`), packed by similarity while they fit, then in turn order."""
        older = history[:len(history) - in_window] if in_window else history
        return self.recall_among([exchange_views(ex, character) for ex in older],
                                 [exchange_text(ex, character) for ex in older], range(1, len(older) + 1),
                                 vector, embedder, budget, k, count)

    def recall_among(self, keys: Sequence[tuple[str, ...]], texts: Sequence[str], numbers: Sequence[int],
                     vector: np.ndarray | None, embedder: Embedder, budget: int, k: int, count: Counter,
                     header: str = RECALL_HEADER, label: str = "turn") -> list[Recalled]:
        """The core of recall for any unit (an exchange here, a witnessed line in a scene): the index is
        brought up to `keys` (each unit's views, oldest first), then the k nearest `vector` are packed by
        similarity while their `texts` fit the budget, and returned in order, each with its `numbers` entry."""
        if vector is None or budget <= 0 or k <= 0 or not keys:
            return []
        self.index.sync(list(keys), embedder)
        picked, used = [], count(header)
        for i, sim in self.index.search(vector, k, limit=len(keys)):
            n = count(recall_line(numbers[i], texts[i], label))
            if used + n > budget:
                break
            picked.append(Recalled(numbers[i], sim, texts[i]))
            used += n
        return sorted(picked, key=lambda r: r.turn)


def recall_line(turn: int, text: str, label: str = "turn") -> str:
    return f"[{label} {turn}]\n{text}\n"


def pinned_block(name: str, pins: Sequence[Pin]) -> str:
    """The heading and the pins, as they close the system prompt."""
    return PINNED_HEADER.format(name=name) + "".join(f"- {p.text}\n" for p in pins).rstrip("\n") if pins else ""


def recall_block(recalled: Sequence[Recalled], header: str = RECALL_HEADER, label: str = "turn") -> str:
    return (header + "".join(recall_line(r.turn, r.text, label) for r in recalled)).rstrip("\n") if recalled else ""


def in_background(work: Callable[[], None], what: str) -> None:
    """Run `work` (indexing ahead, after a reply) in a daemon thread; a failure only loses the time it would
    have saved, so it is logged, never raised."""
    def run() -> None:
        try:
            work()
        except Exception as exc:
            log.info("%s ahead failed: %r", what, exc)

    threading.Thread(target=run, name="memory-index", daemon=True).start()
