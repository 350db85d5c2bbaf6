"""What a visitor's own browser keeps between visits (Gradio's BrowserState, in that browser's local storage): their
chat with each character (with its other lines, alternatives, persona and author's note), the characters they
added, the engine they chose and its settings (model, server address, prompt budgets, fold, voice). Never a key or
a token, never a prompt: only the words said, the memories pinned, the names and the settings, so a reload brings
the chat back as it was.

What comes back from a browser is checked: a record of another version, another shape or too large is set aside
with one sentence, and the visit starts fresh.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..chat.memory import MAX_PINS, Memory, Pin, check_pin
from ..chat.notes import MAX_NOTES, note_from, note_record, valid_notes
from ..chat.persona import MAX_DESCRIPTION_CHARS, authors_note
from ..chat.prompt import Exchange
from ..chat.reply import MAX_INPUT_CHARS
from ..chat.swipes import check_alternatives
from ..chat.transcript import MAIN, MAX_BRANCHES, Branch
from ..errors import ChatHaruhiError
from ..i18n import N_, _
from .chat import Conversation

VERSION = 1
MAX_EXCHANGES = 60  # per chat: the newest are kept
MAX_CHATS = 12  # the most recent characters
MAX_CHARS = 400_000  # the whole record, well under a browser's 5 MB of local storage
# A chat's tree: each line is kept like a chat (its newest MAX_EXCHANGES, whole), at most MAX_BRANCHES besides the
# one on screen; past MAX_CHARS the other lines of the least recent branched chat go first, then whole chats.
SET_ASIDE = N_("The chats saved in this browser could not be read (an older version, or damaged) and were set "
               "aside; you start fresh.")


@dataclass
class Restored:
    """A browser's record, read back: the chats by character, the added characters, the engine."""

    chats: dict[str, Conversation] = field(default_factory=dict)
    added: list[str] = field(default_factory=list)
    engine: str | None = None
    settings: dict = field(default_factory=dict)  # the engine's settings as the visitor left them (checked)
    note: str = ""  # a sentence when the record was set aside


# what the settings panel keeps, with the range each value must fall in (a slider's own)
BUDGET_RANGES = {"story_tokens": 4000, "history_tokens": 4000, "memory_tokens": 2000, "recall_tokens": 2000}
SWITCHES = ("fold", "speak")
MAX_MODEL_CHARS = 200
MAX_URL_CHARS = 300


def kept_url(url: object) -> str | None:
    """A server address fit to keep: http(s), no user or password in it, no query (where keys hide); else None."""
    if not isinstance(url, str) or not url.strip() or len(url) > MAX_URL_CHARS:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc or parts.query \
            or parts.fragment:
        return None
    return url.strip()


def kept_settings(given: object) -> dict:
    """The settings worth keeping (or read back), each checked; anything else is left out."""
    if not isinstance(given, dict):
        return {}
    out: dict = {}
    model = given.get("model")
    if isinstance(model, str) and len(model) <= MAX_MODEL_CHARS:
        out["model"] = model
    url = kept_url(given.get("base_url"))
    if url:
        out["base_url"] = url
    for name, most in BUDGET_RANGES.items():
        value = given.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= most:
            out[name] = int(value)
    for name in SWITCHES:
        if isinstance(given.get(name), bool):
            out[name] = given[name]
    return out


def _exchange(e: Exchange) -> list:
    """[who, said, reply], then its time and its alternatives when it has them."""
    row = [e.user_role, e.text, e.reply]
    if e.at or e.alternatives:
        row.append(e.at)
    if e.alternatives:
        row.append(list(e.alternatives))
    return row


def _chat(conv: Conversation, branches: bool = True) -> dict:
    """A chat as kept: its newest exchanges, memory, persona and note, where it is in its tree, and (for the line
    on screen) the chat's other lines, each kept the same way."""
    history = conv.history[-MAX_EXCHANGES:]
    out = {"role": conv.role_id, "exchanges": [_exchange(e) for e in history],
           "pins": [p.text for p in conv.memory.pins],
           "notes": [note_record(n) for n in valid_notes(conv.memory.notes, history)]}
    if conv.persona:
        out["persona"] = conv.persona
    if conv.note:
        out["note"] = [conv.note.text, conv.note.depth]
    if conv.line.parent is not None or conv.others or conv.line.id != MAIN:
        out["line"] = [conv.line.id, conv.line.name, conv.line.parent, conv.line.at]
    if branches and conv.others:
        out["branches"] = [_chat(o, False) for o in conv.others[:MAX_BRANCHES]]
    return out


def in_flight(pending: object) -> dict | None:
    """The message whose reply is streaming ({"role", "text"}, the page's `pending`), fit to keep (in a browser
    value of its own: written with the main record, a slow write of the first frame's could land after the last
    frame's and undo the reply); None for anything else."""
    if not isinstance(pending, dict):
        return None
    role, text = pending.get("role"), pending.get("text")
    if not isinstance(role, str) or not isinstance(text, str) or not text.strip():
        return None
    return {"role": role, "text": text[:MAX_INPUT_CHARS]}


def pack(current: Conversation | None, chats: dict | None, added: list[str] | None, engine: str | None,
         settings: dict | None = None) -> dict:
    """The record to keep: the chat on screen first, then the others; oldest chats dropped past the caps.
    `settings` (the engine's panel) is checked by `kept_settings`: a key is never among them."""
    convs = [current] if current is not None and (current.history or current.others) else []
    convs += [c for rid, c in (chats or {}).items()
              if (c.history or c.others) and (current is None or rid != current.role_id)]
    record = {"v": VERSION, "chats": [_chat(c) for c in convs[:MAX_CHATS]], "added": list(added or [])[:50],
              "engine": engine or "", "settings": kept_settings(settings)}
    while len(json.dumps(record, ensure_ascii=False)) > MAX_CHARS and record["chats"]:
        branched = [c for c in record["chats"] if c.get("branches")]
        if branched:  # the other lines of the least recent branched chat go first, the newest line last
            branched[-1]["branches"].pop()
        else:
            record["chats"].pop()  # then the least recent character's chat
    return record


def unpack(data: object, opens: Callable[[str], bool], engines: set[str]) -> Restored:
    """A browser's record, with chats and added characters kept only where the character still opens here."""
    if not data:
        return Restored()
    try:
        if not isinstance(data, dict) or data.get("v") != VERSION:
            raise ValueError("another version")
        found = Restored(engine=data.get("engine") if data.get("engine") in engines else None)
        found.settings = kept_settings(data.get("settings")) if found.engine else {}
        found.added = [a for a in data.get("added") or [] if isinstance(a, str) and opens(a)]
        for item in data.get("chats") or []:
            rid = item["role"]
            if not isinstance(rid, str) or rid in found.chats or not opens(rid):
                continue
            conv = _conversation(rid, item)
            conv.others = [_conversation(rid, b) for b in (item.get("branches") or [])[:MAX_BRANCHES]]
            found.chats[rid] = conv
        return found
    except (ValueError, TypeError, KeyError, ChatHaruhiError):
        return Restored(note=_(SET_ASIDE))


def _conversation(rid: str, item: dict) -> Conversation:
    """One kept line of a chat (KeyError, TypeError or ValueError for anything malformed: the record is set aside)."""
    # [who, said, reply], since exchanges carry their time [.., when], since they keep alternatives [.., alternatives]
    history = []
    for u, t, r, *w in item["exchanges"][-MAX_EXCHANGES:]:
        alternatives = check_alternatives(w[1], str(r), "A kept exchange") if len(w) > 1 else ()
        history.append(Exchange(str(u), str(t), str(r), str(w[0]) if w else "", alternatives))
    pins = [Pin(check_pin(str(p))) for p in (item.get("pins") or [])[:MAX_PINS]]  # as many as one may pin
    notes = [note_from(n, "A kept note") for n in (item.get("notes") or [])[:MAX_NOTES]]
    about = str(item.get("persona") or "")[:MAX_DESCRIPTION_CHARS]
    note = authors_note(*item["note"]) if item.get("note") else None
    line_id, name, parent, at = item.get("line") or [MAIN, "Main", None, 0]
    if parent is not None and not isinstance(parent, str) or not isinstance(at, int):
        raise ValueError("a malformed line")
    line = Branch(str(line_id), str(name)[:60], parent, min(at, len(history)))
    return Conversation(rid, history, memory=Memory(pins, notes=notes), persona=about, note=note, line=line)


def browser_secret(settings) -> str:
    """The key the page's browser-kept values are sealed with, kept in the cache so that they still open after
    the server restarts (Gradio's default is a new key each start, which forgets every browser's chats)."""
    import os
    import secrets

    path = settings.cache_dir / "browser-state.key"
    try:
        return path.read_text(encoding="utf-8").strip() or ""
    except OSError:
        pass
    key = secrets.token_hex(16)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(key)
    except FileExistsError:  # another process wrote it first: use theirs
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        pass  # a read-only cache: this start's own key
    return key
