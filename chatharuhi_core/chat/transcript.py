"""A chat saved as JSON Lines and read back exactly: the page's export and import.

Line 1 is a header (format, version, role, the visitor's name in the story, and since version 2 the
character's pinned memories and its dated notes on older stretches, each with the ids of what it covers).
Each further line is one exchange with everything needed to go on from it: who spoke, what was said, the
reply, when ("at", ISO 8601, optional: memory finds what was said on a day by it), and the reply's id,
prompt, engine, rating and correction (so feedback works on an imported chat), and since version 3 the
other replies it had ("alternatives", swipes.py).

Version 3 keeps the whole tree of a chat: the header names the line on screen (`line`: its id, name, parent and
where it left the parent), the player's persona and author's note, and the other lines (`branches`, each with its
own memories and notes); the exchanges of the line on screen come first, in full, then each branch's own
exchanges after the point where it left its parent, each marked with its `branch` id. Versions 1 and 2 (one
line; version 1 without memories) are still read.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from ..errors import InputError
from ..i18n import _
from ..jsonl import parse_object
from .memory import MAX_PINS, Pin, check_pin
from .notes import MAX_NOTES, Note, note_from, note_record
from .persona import AuthorsNote, Persona, authors_note, persona
from .prompt import Exchange
from .swipes import check_alternatives
from .when import as_iso

FORMAT = "chatharuhi-chat"
VERSION = 3  # 2: pinned memories in the header; 3: alternatives, branches, persona, author's note
MAX_BYTES = 20 * 1024 * 1024
MAX_BRANCHES = 16  # lines of one chat besides the one on screen
MAIN = "main"
T = TypeVar("T")


def _kind(kind: str) -> str:
    """A saved file's kind ("chat" or "scene") in the current language, for the sentences about it."""
    return {"chat": _("chat"), "scene": _("scene")}.get(kind, kind)


@dataclass
class ReplyMeta:
    """What the page knows about one reply beyond its text."""

    id: str
    messages: list[dict]  # the prompt the model received
    engine: str = ""
    model: str = ""
    rating: str | None = None
    original: str | None = None  # the model's words, kept when the visitor corrected the reply


@dataclass
class Branch:
    """A line of a chat's story: its id and name, the line it left (`parent`, None for the first) and after how
    many of that line's exchanges (`at`), with its own exchanges and memory (its history includes the shared
    start)."""

    id: str = MAIN
    name: str = "Main"
    parent: str | None = None
    at: int = 0
    history: list[Exchange] = field(default_factory=list)
    meta: list[ReplyMeta] = field(default_factory=list)
    pins: list[Pin] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


@dataclass
class Transcript:
    role_id: str
    role_name: str
    user_role: str
    history: list[Exchange]
    meta: list[ReplyMeta]
    pins: list[Pin] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    line: Branch = field(default_factory=Branch)  # the line on screen (its id, name, parent, at)
    branches: list[Branch] = field(default_factory=list)  # the chat's other lines
    persona: Persona | None = None
    note: AuthorsNote | None = None


def _line_header(b: Branch) -> dict:
    return {"id": b.id, "name": b.name, "parent": b.parent, "at": b.at}


def _exchange_rows(history: list[Exchange], meta: list[ReplyMeta], branch: str | None = None) -> list[dict]:
    rows = []
    for ex, m in zip(history, meta):
        row = {"user_role": ex.user_role, "text": ex.text, "reply": ex.reply, "at": ex.at or None, "id": m.id,
               "engine": m.engine, "model": m.model, "rating": m.rating, "original": m.original, "prompt": m.messages}
        if ex.alternatives:
            row["alternatives"] = list(ex.alternatives)
        if branch is not None:
            row["branch"] = branch
        rows.append(row)
    return rows


def dump_chat(t: Transcript) -> str:
    header = {"format": FORMAT, "version": VERSION, "role": t.role_id, "name": t.role_name,
              "user_role": t.user_role, "exported": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "memories": [{"text": p.text, "turn": p.turn} for p in t.pins],
              "notes": [note_record(n) for n in t.notes], "line": _line_header(t.line),
              "persona": {"name": t.persona.name, "description": t.persona.description} if t.persona else None,
              "note": {"text": t.note.text, "depth": t.note.depth} if t.note else None,
              "branches": []}
    t = replace(t, branches=_in_tree_order(t))
    known = {t.line.id: t.history}
    for b in t.branches:
        header["branches"].append({**_line_header(b), "from": _stored_from(b, known[b.parent]),
                                   "memories": [{"text": p.text, "turn": p.turn} for p in b.pins],
                                   "notes": [note_record(n) for n in b.notes]})
        known[b.id] = b.history
    lines = [header, *_exchange_rows(t.history, t.meta)]
    for b, entry in zip(t.branches, header["branches"]):
        lines += _exchange_rows(b.history[entry["from"]:], b.meta[entry["from"]:], b.id)
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)


def _in_tree_order(t: Transcript) -> list[Branch]:
    """The branches with every parent before its children (a line whose parent is gone hangs off the line on
    screen, from its start)."""
    known, left, out = {t.line.id: t.history}, list(t.branches), []
    while left:
        ready = [b for b in left if b.parent in known] or [replace(left[0], parent=t.line.id, at=0)]
        for b in ready:
            known[b.id] = b.history
            out.append(b)
        left = [b for b in left if b.id not in known]
    return out


def _stored_from(b: Branch, parent: list[Exchange]) -> int:
    """Where a branch's own rows start: at its fork, unless the shared start was edited since on one side (then
    the branch is written whole)."""
    return b.at if b.at <= len(parent) and parent[:b.at] == b.history[:b.at] else 0


def text_field(obj: dict, key: str, where: str, kind: str, required: bool = True) -> str:
    """A text field of a saved chat or scene ("" when optional and absent), else a sentence naming where."""
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InputError(_("{where} of the {kind} file has no '{key}' text.", where=where, kind=_kind(kind), key=key))
    return value


def prompt_field(obj: dict, where: str, kind: str) -> list[dict]:
    """The prompt messages saved with a reply: a list of {role, content} objects."""
    prompt = obj.get("prompt") or []
    if not isinstance(prompt, list) or not all(isinstance(m, dict) and isinstance(m.get("content"), str)
                                               for m in prompt):
        raise InputError(_("{where} of the {kind} file has a malformed 'prompt'.", where=where, kind=_kind(kind)))
    return prompt


def rating_field(obj: dict) -> str | None:
    return obj.get("rating") if obj.get("rating") in ("like", "dislike") else None


def read_saved(data: bytes | str, kind: str, fmt: str, version: int,
               hints: dict[str, str] | None = None) -> list[tuple[int, dict]]:
    """(line number, object) for each line of a saved chat or scene, the header first.

    Shared by both file kinds: size, encoding, JSON, the format named on line 1 and its version
    are checked here, each failure one sentence; `hints` adds a sentence for a known other format.
    """
    if isinstance(data, bytes):
        if len(data) > MAX_BYTES:
            raise InputError(_("That {kind} file is over {size} MB; it cannot be a saved {kind}.", kind=_kind(kind),
                                size=MAX_BYTES // (1024 * 1024)))
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(_("That {kind} file is not UTF-8 text; choose a .jsonl file exported from this page.",
                                kind=_kind(kind))) \
                from None
    rows = []
    for n, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        rows.append((n, parse_object(raw, _("Line {n} of the {kind} file is not JSON; the file may be cut short.",
                                            n=n, kind=_kind(kind)),
                                     _("Line {n} of the {kind} file is not a JSON object.", n=n, kind=_kind(kind)))))
    if not rows or rows[0][1].get("format") != fmt:
        hint = (hints or {}).get(rows[0][1].get("format"), "") if rows else ""
        text = _("That file is not a {kind} exported from ChatHaruhi (its first line has no \"format\": \"{format}\").",
                 kind=_kind(kind), format=fmt)
        raise InputError(_("{sentence} {hint}", sentence=text, hint=_(hint)) if hint else text)
    header = rows[0][1]
    if not isinstance(header.get("version"), int) or header["version"] > version:
        raise InputError(_("That {kind} was saved by a newer ChatHaruhi (format version {version}); update this app "
                           "to open it.", kind=_kind(kind), version=header.get("version")))
    return rows


def load_chat(data: bytes | str) -> Transcript:
    """Read an exported chat; any problem is one sentence naming the line."""
    rows = read_saved(data, "chat", FORMAT, VERSION)
    first, header = rows[0]

    def _str(obj: dict, key: str, line: int, required: bool = True) -> str:
        return text_field(obj, key, _("Line {n}", n=line), "chat", required)

    own: dict[str | None, tuple[list[Exchange], list[ReplyMeta]]] = {None: ([], [])}
    for n, obj in rows[1:]:
        branch = obj.get("branch")
        history, meta = own.setdefault(branch if isinstance(branch, str) else None, ([], []))
        reply = _str(obj, "reply", n)
        history.append(Exchange(_str(obj, "user_role", n, False), _str(obj, "text", n), reply, _when(obj, n),
                                check_alternatives(obj.get("alternatives"), reply, _("Line {n} of the chat file", n=n))))
        prompt = prompt_field(obj, _("Line {n}", n=n), "chat")
        meta.append(ReplyMeta(_str(obj, "id", n, False) or f"imported-{n}", prompt, _str(obj, "engine", n, False),
                              _str(obj, "model", n, False), rating_field(obj), obj.get("original") or None))
    history, meta = own.pop(None)
    line = _line(header.get("line"), first)
    t = Transcript(_str(header, "role", first), _str(header, "name", first, False),
                   _str(header, "user_role", first, False), history, meta, _pins(header, first, len(history)),
                   _notes(header, first), line, _branches(header, first, line, history, meta, own),
                   _player_field(header, "persona", '"name", "description"', first,
                                 lambda raw: persona(raw.get("name"), raw.get("description"))),
                   _player_field(header, "note", '"text", "depth"', first,
                                 lambda raw: authors_note(raw.get("text"), raw.get("depth", 4))))
    return t


def _line(raw: object, first: int, where: str | None = None) -> Branch:
    """A line's id, name, parent and fork point from the header (the first line of a chat without them)."""
    if raw is None:
        return Branch()
    where = where or _("the line on screen")
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw["id"]:
        raise InputError(_("Line {n} of the chat file: {where} has no 'id'.", n=first, where=where))
    at, parent = raw.get("at", 0), raw.get("parent")
    if not isinstance(at, int) or isinstance(at, bool) or at < 0 or (parent is not None and not isinstance(parent, str)):
        raise InputError(_("Line {n} of the chat file: {where} ('{id}') has a malformed 'parent' or 'at'.", n=first,
                           where=where, id=raw["id"]))
    return Branch(raw["id"], str(raw.get("name") or raw["id"])[:60], parent, at)


def _branches(header: dict, first: int, line: Branch, history: list[Exchange], meta: list[ReplyMeta],
              own: dict) -> list[Branch]:
    """The other lines, each built from its parent's start and its own exchanges; a sentence for a branch that
    does not match its parent (an unknown parent, a fork past its parent's end) or exchanges of no branch."""
    raw = header.get("branches") or []
    if not isinstance(raw, list) or len(raw) > MAX_BRANCHES:
        raise InputError(_("Line {n} of the chat file: 'branches' should be a list of at most {limit}.", n=first,
                           limit=MAX_BRANCHES))
    known = {line.id: history}
    out = []
    for n, item in enumerate(raw, 1):
        b = _line(item, first, _("branch {n}", n=n))
        if b.id in known:
            raise InputError(_("Line {line} of the chat file: branch {n} repeats the id '{id}'.", line=first, n=n,
                               id=b.id))
        if b.parent not in known:
            raise InputError(_("Line {n} of the chat file: branch '{branch}' leaves '{parent}', which the file does "
                               "not have before it; the tree is malformed.", n=first, branch=b.name, parent=b.parent))
        parent = known[b.parent]
        if b.at > len(parent):
            raise InputError(_("Line {n} of the chat file: branch '{branch}' leaves its parent after exchange {at}, "
                               "but the parent has {count}: the branch does not match its parent.", n=first,
                               branch=b.name, at=b.at, count=len(parent)))
        stored_from = item.get("from", b.at)
        if not isinstance(stored_from, int) or not 0 <= stored_from <= b.at:
            raise InputError(_("Line {n} of the chat file: branch '{branch}' has a malformed 'from'.", n=first,
                               branch=b.name))
        mine, mine_meta = own.pop(b.id, ([], []))
        b.history = [*parent[:stored_from], *mine]
        parent_meta = meta if b.parent == line.id else next(x.meta for x in out if x.id == b.parent)
        b.meta = [*parent_meta[:stored_from], *mine_meta]
        if b.at > len(b.history):
            raise InputError(_("Line {n} of the chat file: branch '{branch}' has {count} exchanges but leaves its "
                               "parent after {at}: the branch does not match its parent.", n=first, branch=b.name,
                               count=len(b.history), at=b.at))
        b.pins, b.notes = _pins(item, first, len(b.history)), _notes(item, first)
        known[b.id] = b.history
        out.append(b)
    if own:
        raise InputError(_("The chat file has exchanges of branch '{branch}', which its header does not list; the "
                           "tree is malformed.", branch=next(iter(own))))
    return out


def _player_field(header: dict, key: str, fields: str, first: int, make: Callable[[dict], T]) -> T | None:
    """The header's persona or author's note (`key`), made by `make` from its object; None when absent, a sentence
    naming the line for a value that is not an object of `fields` or that `make` refuses."""
    raw = header.get(key)
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InputError(_("Line {n} of the chat file: '{key}' should be {fields}.", n=first, key=key,
                           fields="{" + fields + "}"))
    try:
        return make(raw)
    except InputError as exc:
        raise InputError(_("Line {n} of the chat file: {why}", n=first, why=exc)) from None


def _notes(header: dict, line: int) -> list[Note]:
    """The header's dated notes (none before notes existed), each with the ids of what it covers."""
    raw = header.get("notes") or []
    if not isinstance(raw, list):
        raise InputError(_("Line {n} of the chat file: 'notes' should be a list of {fields} objects.", n=line,
                           fields='{"text", "covers"}'))
    return [note_from(item, _("Line {line} of the chat file: note {n}", line=line, n=n))
            for n, item in enumerate(raw[:MAX_NOTES], 1)]


def _when(obj: dict, line: int) -> str:
    """An exchange's time ("at", ISO 8601: "2023-05-04" or "2023-05-04T13:56:00+00:00"; a day written out with
    its year, "1:56 pm on 8 May, 2023", is read as that), "" when absent."""
    at = obj.get("at")
    if at is None or at == "":
        return ""
    iso = as_iso(at) if isinstance(at, str) else None
    if iso is None:
        raise InputError(_("Line {n} of the chat file has an 'at' that is not a date with its year (write it as "
                           "2023-05-04 or 2023-05-04T13:56:00).", n=line))
    return iso


def _pins(header: dict, line: int, exchanges: int) -> list[Pin]:
    """The header's pinned memories (none in a version 1 file); a sentence for anything malformed."""
    raw = header.get("memories") or []
    where = _("Line {n} of the chat file", n=line)
    if not isinstance(raw, list):
        raise InputError(_("{where}: 'memories' should be a list of {fields} objects.", where=where,
                           fields='{"text": …}'))
    if len(raw) > MAX_PINS:
        raise InputError(_("{where} keeps {count} memories; a chat holds at most {limit}.", where=where, count=len(raw),
                           limit=MAX_PINS))
    pins = []
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise InputError(_("{where}: memory {n} has no 'text'.", where=where, n=n))
        turn = item.get("turn")
        if turn is not None and (not isinstance(turn, int) or isinstance(turn, bool) or not 1 <= turn <= exchanges):
            raise InputError(_("{where}: memory {n} points at exchange {turn}, which the chat does not have.",
                               where=where, n=n, turn=repr(turn)))
        try:
            pins.append(Pin(check_pin(item["text"]), turn))
        except InputError as exc:
            raise InputError(_("{where}: memory {n}: {why}", where=where, n=n, why=exc)) from None
    return pins
