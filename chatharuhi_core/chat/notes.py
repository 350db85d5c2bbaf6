"""Dated notes: older stretches of a conversation condensed by the engine, each tied to what it covers.

Recall brings back exchanges one at a time; a question about a whole stretch ("what happened with the bakery?")
is answered better by a note that condenses it. Once a stretch of STRETCH exchanges has left the history window,
an engine that writes (never the script engine, which only quotes) writes a note about it in the background,
after a reply, never inside a visitor's turn. Each note records:

- the ids of the exchanges it covers (`exchange_id`: a hash of who said what and the reply), so an exchange
  edited or deleted afterwards no longer matches, the note is dropped (`valid_notes`) and the stretch is
  written again later;
- the days it spans and which engine and model wrote it.

Notes are searched like exchanges (memory.py) and shown in the panel with what they cover.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..errors import InputError
from ..i18n import _
from ..roles.lines import format_query, format_reply
from .prompt import Exchange
from .when import shown

log = logging.getLogger(__name__)

STRETCH = 12  # exchanges a note condenses
MAX_NOTE_CHARS = 1200  # a note is a paragraph: a longer answer is cut at a sentence
MAX_NOTES = 500
NOTES_HEADER = "Notes on earlier parts of this conversation:\n"

ASK = {
    "en": ("You keep notes on a role-play conversation between {user} and {name}. Write one short paragraph "
           "(at most 80 words) of facts from the exchanges below: what {user} said about themselves, their life, "
           "plans and people, with names, numbers and days, and what {name} promised or recommended. Plain "
           "sentences in the third person, no commentary."),
    "zh": ("你在为{user}和{name}之间的对话做笔记。请用一小段话（不超过120字）记下下面这些对话中的事实：{user}说起的"
           "自己、生活、打算和身边的人（人名、数字、日期都要写上），以及{name}答应或推荐过的事。用第三人称陈述，不要评论。"),
}


@dataclass(frozen=True)
class Note:
    """A condensed stretch: its text, the ids of the exchanges it covers (oldest first), the days they span
    (`since`, `until`: the exchanges' `at`, "" when unknown) and who wrote it (engine label and model)."""

    text: str
    covers: tuple[str, ...]
    since: str = ""
    until: str = ""
    engine: str = ""

    def turns(self, history: Sequence[Exchange], ids: Sequence[str] | None = None) -> tuple[int, int] | None:
        """(first, last) turn (1-based) it covers in this history, or None when it no longer matches. `ids`: the
        history's exchange_ids, when the caller has them (they are a hash per exchange: made once per history)."""
        ids = exchange_ids(history) if ids is None else ids
        n = len(self.covers)
        for start in range(len(ids) - n + 1):
            if ids[start] == self.covers[0] and tuple(ids[start:start + n]) == self.covers:
                return start + 1, start + n
        return None

    def heading(self, history: Sequence[Exchange], ids: Sequence[str] | None = None) -> str:
        span = self.turns(history, ids)
        where = f"turns {span[0]}-{span[1]}" if span else "turns no longer in the conversation"
        days = " to ".join(dict.fromkeys(d for d in (shown(self.since)[:10], shown(self.until)[:10]) if d))
        return f"[notes on {where}{' · ' + days if days else ''}]"


def exchange_id(ex: Exchange) -> str:
    """What ties a note to an exchange: a hash of who said what and the reply (its time is not part of it)."""
    return hashlib.sha1(f"{ex.user_role}\x00{ex.text}\x00{ex.reply}".encode()).hexdigest()[:16]


def exchange_ids(history: Sequence[Exchange]) -> list[str]:
    return [exchange_id(ex) for ex in history]


def valid_notes(notes: Sequence[Note], history: Sequence[Exchange], ids: Sequence[str] | None = None) -> list[Note]:
    """The notes whose every covered exchange is still in the history, unchanged and in order."""
    if not notes:
        return []
    ids = exchange_ids(history) if ids is None else ids
    return [n for n in notes if n.turns(history, ids) is not None]


def due(notes: Sequence[Note], older: Sequence[Exchange]) -> list[Exchange] | None:
    """The oldest whole stretch of `older` (the exchanges out of the history window) no valid note covers yet,
    or None when every whole stretch has its note."""
    ids = exchange_ids(older)
    covered: set[str] = set()
    for note in valid_notes(notes, older, ids):
        covered.update(note.covers)
    run: list[Exchange] = []
    for ex, key in zip(older, ids):
        if key in covered:
            run = []
            continue
        run.append(ex)
        if len(run) == STRETCH:
            return run
    return None


def note_prompt(stretch: Sequence[Exchange], name: str, user_role: str, language: str) -> list[dict]:
    ask = ASK["zh" if language.startswith("zh") else "en"].format(name=name, user=user_role)
    lines = []
    for ex in stretch:
        when = shown(ex.at)
        lines.append((f"({when}) " if when else "") + format_query(ex.user_role or user_role, ex.text))
        lines.append(format_reply(name, ex.reply))
    return [{"role": "system", "content": ask}, {"role": "user", "content": "\n".join(lines)}]


def written_note(text: str) -> str:
    """The engine's answer as a note: one paragraph, capped at a sentence end."""
    text = " ".join(text.split())
    if len(text) > MAX_NOTE_CHARS:
        cut = max(text.rfind(p, 0, MAX_NOTE_CHARS) for p in ".。!！?？")
        text = text[:cut + 1] if cut > MAX_NOTE_CHARS // 2 else text[:MAX_NOTE_CHARS]
    return text


def write_note(stream: Callable[[list[dict]], Iterator[str]], stretch: Sequence[Exchange], name: str, user_role: str,
               language: str, engine: str) -> Note:
    """Ask an engine (`stream` takes the messages) for the note on one stretch."""
    text = written_note("".join(stream(note_prompt(stretch, name, user_role, language))))
    if not text:
        raise InputError(_("The engine wrote an empty note."))
    return Note(text, tuple(exchange_id(ex) for ex in stretch), stretch[0].at, stretch[-1].at, engine)


def note_line(note: Note, history: Sequence[Exchange], ids: Sequence[str] | None = None) -> str:
    return f"{note.heading(history, ids)}\n{note.text}\n"


def notes_block(notes: Sequence[Note], history: Sequence[Exchange], ids: Sequence[str] | None = None) -> str:
    if not notes:
        return ""
    ids = exchange_ids(history) if ids is None else ids
    return (NOTES_HEADER + "".join(note_line(n, history, ids) for n in notes)).rstrip("\n")


def note_record(note: Note) -> dict:
    """A note as a chat file keeps it (never without its covered ids)."""
    return {"text": note.text, "covers": list(note.covers), "since": note.since, "until": note.until,
            "engine": note.engine}


def note_from(record: object, where: str) -> Note:
    """A chat file's note, or a sentence naming what is wrong with it."""
    if not isinstance(record, dict) or not isinstance(record.get("text"), str) or not record["text"].strip():
        raise InputError(_("{where} has no 'text'.", where=where))
    covers = record.get("covers")
    if not isinstance(covers, list) or not covers or not all(isinstance(c, str) and c for c in covers):
        raise InputError(_("{where} does not say which exchanges it covers ('covers'); a note is never kept without "
                           "them.", where=where))
    fields = {k: record.get(k) or "" for k in ("since", "until", "engine")}
    if not all(isinstance(v, str) for v in fields.values()):
        raise InputError(_("{where} has a malformed 'since', 'until' or 'engine'.", where=where))
    return Note(written_note(record["text"]), tuple(covers), **fields)
