"""What one turn gives back: the Reply record and its stats, the stream that yields its text and returns it, and
the rules a reply's text is read by (what may be shown mid-stream, whether it ends a sentence, the engine's cap).
Shared by the chat, a group scene, eval and the page."""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field

from ..errors import InputError
from ..i18n import _
from ..roles.lorebook import Fired
from ..roles.store import Hit
from .engines import writes
from .memory import Recalled
from .notes import Note
from .prompt import clean_reply

MAX_INPUT_CHARS = 8000


def check_input(text: str) -> str:
    """Refuse what no model should be sent, with a sentence saying why."""
    if text is None or not str(text).strip():
        raise InputError(_("Please type a message first."))
    text = str(text).strip()
    if len(text) > MAX_INPUT_CHARS:
        raise InputError(
            _("That message is {count} characters long; the limit is {limit}. Please send a shorter one.",
              count=format(len(text), ","), limit=format(MAX_INPUT_CHARS, ","))
        )
    return text


@dataclass(frozen=True)
class ReplyStats:
    """How one reply went, for the page: which engine and model, how soon, how fast."""

    engine: str  # the engine's label
    model: str  # which model answered ("" for engines without one)
    first_token_s: float  # from the message to the first visible text (retrieval included)
    total_s: float
    tokens: int  # reply length, counted with the engine's own tokenizer when it has one
    cut_at: int = 0  # the length limit (tokens) the engine reached mid-sentence; the reply ends with "…"

    @property
    def tokens_per_s(self) -> float:
        """Generation speed after the first token (the first one carries the wait, not the pace)."""
        span = self.total_s - self.first_token_s
        return (self.tokens - 1) / span if self.tokens > 1 and span > 0 else 0.0


@dataclass(frozen=True)
class Reply:
    """One answer and how it came about, in one record: the page shows its scenes, lore and speed, the
    chat file keeps its prompt, evaluation reads what the engine said before clean-up."""

    text: str  # the line as shown: `Name:「…」` wrapper removed, names filled in
    raw: str  # what the engine said before clean-up (eval looks there for out-of-character lines)
    messages: list[dict]  # the prompt as sent
    scenes: list[Hit]  # the retrieved classic scenes, most similar first
    packed: int  # how many of `scenes` fitted the scene budget and were sent
    lore: list[Fired]  # the lorebook entries sent, and why they fired
    stats: ReplyStats
    recalled: list[Recalled] = field(default_factory=list)  # earlier exchanges memory brought back
    pinned: int = 0  # how many pinned memories fitted their budget and were sent
    notes: list[Note] = field(default_factory=list)  # dated notes on older stretches that were sent
    window: int = 0  # how many of the last exchanges were in the history window
    indexed: tuple[int, int] = (0, 0)  # (embedded, beyond the window): short of the second, recall used words alone


class Streaming(Iterator[str]):
    """A reply as it streams: iterate for its text as it arrives; `reply` is the whole record once done
    (`yield from` one returns it too). `close()` stops the engine, as a visitor leaving does."""

    def __init__(self, steps: Generator[str, None, Reply]):
        self._steps = steps
        self.reply: Reply | None = None

    def __iter__(self) -> Streaming:
        return self

    def __next__(self) -> str:
        try:
            return next(self._steps)
        except StopIteration as done:
            self.reply = done.value
            raise

    def close(self) -> None:
        self._steps.close()


def visible(raw: str, name: str) -> str:
    """What may be shown mid-stream: clean text minus a tail that may yet become a new speaker."""
    text = clean_reply(raw, name)
    cut = text.rfind("\n")
    if cut >= 0 and len(text) - cut <= 25 and "「" not in text[cut:]:
        text = text[:cut]
    return text.rstrip("」").rstrip()


_SENTENCE_END = re.compile(r"[.!?。！？…~～](?:[」』”’\"')\]）]*)")


def ends_sentence(text: str) -> bool:
    """Whether a reply ends as a sentence does (a full stop, a question or exclamation mark, an ellipsis)."""
    return bool(re.search(_SENTENCE_END.pattern + r"\s*$", text.strip())) or text.rstrip().endswith(("」", "*"))


def reply_cap(engine) -> int:
    """The longest reply the engine writes, in its own tokens (0: no limit, as for the script engine)."""
    own = getattr(engine, "reply_cap", None)
    if callable(own):
        return int(own() or 0)
    if not writes(engine):
        return 0
    options = getattr(engine, "options", None)
    return int(getattr(options, "max_tokens", 0) or 0)
