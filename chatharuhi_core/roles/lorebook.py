"""A card's lorebook (character_book): world notes that enter the prompt when their keys come up.

Card authors write an entry to fire when one of its keys appears in the last `scan_depth`
messages, as SillyTavern and the V2/V3 card specs do it: keys match case-insensitively unless the
entry says otherwise (Latin keys as whole words, Chinese anywhere in the text); a selective entry
also needs one of its secondary keys; constant entries always fire; the fired entries are kept by
priority while they fit the book's token budget, then ordered by insertion_order. Every entry is
also a scene for retrieval by meaning (see cards.py), so an entry can help even when no key is said.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import RoleFormatError
from ..i18n import _, ngettext

DEFAULT_SCAN_DEPTH = 4  # the new message and the three before it
DEFAULT_TOKEN_BUDGET = 400
MAX_RECURSION = 3


@dataclass(frozen=True)
class LoreEntry:
    """One note of the book; `content` may hold `{{user}}`, filled at chat time."""

    id: str
    content: str
    keys: tuple[str, ...] = ()
    secondary_keys: tuple[str, ...] = ()
    name: str = ""
    enabled: bool = True
    constant: bool = False
    selective: bool = False
    case_sensitive: bool = False
    use_regex: bool = False
    insertion_order: int = 100
    priority: int = 10
    position: str = "after_char"

    @property
    def label(self) -> str:
        """What the scenes panel calls it: its name, else its first key, else the start of its text."""
        if self.name or self.keys:
            return self.name or self.keys[0]
        return self.content[:40] + ("…" if len(self.content) > 40 else "")


@dataclass(frozen=True)
class Lorebook:
    entries: tuple[LoreEntry, ...]
    name: str = ""
    scan_depth: int = DEFAULT_SCAN_DEPTH
    token_budget: int = DEFAULT_TOKEN_BUDGET
    recursive_scanning: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "scan_depth": self.scan_depth, "token_budget": self.token_budget,
                "recursive_scanning": self.recursive_scanning,
                "entries": [{**asdict(e), "keys": list(e.keys), "secondary_keys": list(e.secondary_keys)}
                            for e in self.entries]}


@dataclass(frozen=True)
class Fired:
    """An entry that reached (or was kept out of) this turn's prompt, and why."""

    entry: LoreEntry
    reason: str  # "constant", "key 'Ashfall' in your message", "key 'sword' 3 messages back"
    used: bool = True  # False: it fired but did not fit the token budget


# ------------------------------------------------------------------ reading


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _keys(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    return tuple(k.strip() for k in value if isinstance(k, str) and k.strip()) if isinstance(value, list | tuple) else ()


def entry_from_json(row: dict, n: int, content: str | None = None) -> LoreEntry:
    """An entry from a card's character_book or a role.json lorebook (the same field names)."""
    ext = row.get("extensions") if isinstance(row.get("extensions"), dict) else {}
    rid = row.get("id")
    return LoreEntry(
        id=str(rid) if isinstance(rid, (str, int)) and not isinstance(rid, bool) and str(rid) else f"{n}",
        content=content if content is not None else str(row.get("content") or ""),
        keys=_keys(row.get("keys")), secondary_keys=_keys(row.get("secondary_keys")),
        name=str(row.get("name") or row.get("comment") or ""),
        enabled=row.get("enabled") is not False, constant=bool(row.get("constant")),
        selective=bool(row.get("selective")),
        case_sensitive=bool(row.get("case_sensitive", ext.get("case_sensitive")) or False),
        use_regex=bool(row.get("use_regex")),
        insertion_order=_int(row.get("insertion_order"), 100), priority=_int(row.get("priority"), 10),
        position=row.get("position") if row.get("position") in ("before_char", "after_char") else "after_char",
    )


def book_from_json(book: Any, file: str = "role.json", content: Callable[[str], str] | None = None) -> Lorebook | None:
    """A Lorebook from a card's character_book or role.json's `lorebook`; None when it has no entries.

    `content` rewrites each entry's text (an import expands `{{char}}` here).
    """
    if book is None:
        return None
    if not isinstance(book, dict) or not isinstance(book.get("entries", []), list):
        raise RoleFormatError(file, "lorebook", _("expected an object with a list of entries."))
    entries = []
    for n, row in enumerate(book.get("entries") or [], start=1):
        if not isinstance(row, dict) or not isinstance(row.get("content", ""), str):
            raise RoleFormatError(file, f"lorebook.entries[{n}]", _("expected an object with text 'content'."))
        text = (content or (lambda s: s))(row.get("content") or "").strip()
        if text:
            entries.append(entry_from_json(row, n, text))
    if not entries:
        return None
    return Lorebook(tuple(entries), name=str(book.get("name") or ""),
                    scan_depth=max(1, _int(book.get("scan_depth"), DEFAULT_SCAN_DEPTH)),
                    token_budget=max(0, _int(book.get("token_budget"), DEFAULT_TOKEN_BUDGET)),
                    recursive_scanning=bool(book.get("recursive_scanning")))


# ------------------------------------------------------------------ activation


def _matcher(key: str, entry: LoreEntry) -> Callable[[str], bool]:
    flags = 0 if entry.case_sensitive else re.IGNORECASE
    if entry.use_regex:
        body = key[1:].rsplit("/", 1)[0] if key.startswith("/") and key.count("/") >= 2 else key
        try:
            pattern = re.compile(body, flags)
        except re.error:
            return lambda _text: False
    else:
        # Latin keys match as whole words ("art" is not in "party"); Chinese ones anywhere
        left = r"(?<![A-Za-z0-9_])" if re.match(r"[A-Za-z0-9_]", key) else ""
        right = r"(?![A-Za-z0-9_])" if re.search(r"[A-Za-z0-9_]$", key) else ""
        pattern = re.compile(left + re.escape(key) + right, flags)
    return lambda text: bool(pattern.search(text))


def _found(keys: Sequence[str], entry: LoreEntry, window: Sequence[str]) -> tuple[str, int] | None:
    """(key, messages back) of the newest match; 0 back is the message being answered."""
    matchers = [(k, _matcher(k, entry)) for k in keys]
    for back, text in enumerate(reversed(window)):
        for key, match in matchers:
            if match(text):
                return key, back
    return None


def _where(back: int) -> str:
    if back == 0:
        return _("in the message being answered")
    return ngettext("{n} message back", "{n} messages back", back)


def activate(book: Lorebook | None, messages: Sequence[str], count: Callable[[str], int],
             budget: int | None = None) -> list[Fired]:
    """The entries for this turn: constant ones, and those whose keys the recent messages mention.

    `messages` is the conversation, oldest first, ending with the message being answered.
    Returned in insertion order; entries that fired but did not fit the budget come last, unused.
    """
    if book is None:
        return []
    window = list(messages[-book.scan_depth:])
    fired: dict[str, Fired] = {}
    for _unused in range(MAX_RECURSION if book.recursive_scanning else 1):
        added = False
        for entry in book.entries:
            if not entry.enabled or entry.id in fired:
                continue
            if entry.constant:
                fired[entry.id] = Fired(entry, _("constant"))
                added = True
                continue
            hit = _found(entry.keys, entry, window)
            if hit is None:
                continue
            reason = _("key '{key}' {where}", key=hit[0], where=_where(hit[1]))
            if entry.selective and entry.secondary_keys:
                second = _found(entry.secondary_keys, entry, window)
                if second is None:
                    continue
                reason += _(", with '{key}'", key=second[0])
            fired[entry.id] = Fired(entry, reason)
            added = True
        if not added:
            break
        window = window + [f.entry.content for f in fired.values()]  # recursive: notes may name other keys
    limit = book.token_budget if budget is None else budget
    kept, dropped, used = [], [], 0
    for f in sorted(fired.values(), key=lambda f: (-f.entry.priority, f.entry.insertion_order)):
        n = count(f.entry.content)
        if used + n <= limit:
            kept.append(f)
            used += n
        else:
            dropped.append(Fired(f.entry, f.reason + _(", over the lore budget"), used=False))
    kept.sort(key=lambda f: f.entry.insertion_order)
    return kept + dropped


LORE_HEADER = "World notes:"


def lore_block(fired: Sequence[Fired], fill: Callable[[str], str] = lambda s: s) -> str:
    """The fired entries as they go into the system message ('' when none fired)."""
    notes = [fill(f.entry.content) for f in fired if f.used]
    return (LORE_HEADER + "\n" + "\n\n".join(notes)) if notes else ""


__all__ = ["DEFAULT_SCAN_DEPTH", "DEFAULT_TOKEN_BUDGET", "Fired", "LoreEntry", "Lorebook", "activate",
           "book_from_json", "entry_from_json", "lore_block"]
