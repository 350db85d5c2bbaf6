"""SillyTavern world-info files on their own: read as a lorebook, kept by name, and linked to a character.

SillyTavern keeps a world (its "World Info") in a file of its own, `{"entries": {"0": {...}, ...}}`, whose name is the
file's; a card links one by `extensions.world`. Here an imported world is saved under `<cache>/worlds/` by its name, a
card naming it gets it when imported (before or after the world), and a world can be linked to any character by
choice. Linking makes a new character (a new id: the same card with and without a world are two stores), whose
lorebook holds the world's entries after the card's own, each also a scene found by meaning, as a card's are.

SillyTavern's entry fields map onto the lorebook's: `key`/`keysecondary` are the keys, `comment` the name, `disable`
turns it off, `order` the insertion order, `constant`, `selective` and `caseSensitive` as they say; `position` 0 is
before the character's definition and every other place (after it, the author's note, a depth, the examples) after
it. Probability, groups, timed effects and per-entry scan depth are not applied.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import ImportProblem
from ..i18n import _
from .cards import lore_scenes
from .lorebook import Lorebook, book_from_json
from .role import Role, derive_role_id

WORLDS = "worlds"
LINK_VERSION = "world-link-1:"


def is_world_info(obj: Any) -> bool:
    """A world-info file, not a card: `entries` (an object or a list) and none of a card's fields."""
    return isinstance(obj, dict) and isinstance(obj.get("entries"), dict | list) and "spec" not in obj \
        and "data" not in obj and not any(k in obj for k in ("first_mes", "description", "mes_example"))


def _entry(row: dict) -> dict:
    """A SillyTavern world entry in the lorebook's own field names."""
    return {"id": row.get("uid", row.get("id")), "content": row.get("content"),
            "keys": row.get("key", row.get("keys")), "secondary_keys": row.get("keysecondary", row.get("secondary_keys")),
            "comment": row.get("comment"), "name": row.get("name"),
            "enabled": not row.get("disable") and row.get("enabled") is not False,
            "constant": row.get("constant"), "selective": row.get("selective"),
            "case_sensitive": row.get("caseSensitive", row.get("case_sensitive")),
            "insertion_order": row.get("order", row.get("insertion_order")),
            "position": "before_char" if row.get("position") in (0, "before_char") else "after_char"}


def world_from_json(obj: Any, label: str) -> Lorebook:
    """The world's entries as a Lorebook named for the world (its `name`, else the file's name)."""
    if not is_world_info(obj):
        raise ImportProblem(_("{name} is not a world-info file: it needs an 'entries' object.", name=label))
    rows = obj["entries"].values() if isinstance(obj["entries"], dict) else obj["entries"]
    name = str(obj.get("name") or Path(label).stem).strip()
    book = book_from_json({"name": name, "entries": [_entry(r) if isinstance(r, dict) else r for r in rows],
                           "scan_depth": obj.get("scan_depth"), "token_budget": obj.get("token_budget")},
                          f"{label} entries")
    if book is None:
        raise ImportProblem(_("{name}: the world '{world}' has no entry with text.", name=label, world=name))
    return book


def _slug(name: str) -> str:
    return re.sub(r"[^\w-]+", "-", name.casefold()).strip("-")[:80] or "world"


def save_world(book: Lorebook, settings: Settings) -> Path:
    """Keep the world under its name (a later one of the same name replaces it)."""
    folder = settings.cache_dir / WORLDS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{_slug(book.name)}.json"
    path.write_text(json.dumps(book.to_json(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


def saved_world(name: str, settings: Settings) -> Lorebook | None:
    """The world saved under this name, or None."""
    path = settings.cache_dir / WORLDS / f"{_slug(name)}.json"
    if not name.strip() or not path.is_file():
        return None
    return book_from_json(json.loads(path.read_text(encoding="utf-8")), path.name)


def linked_world(role: Role) -> str:
    """The name of the world linked to this character ("" when none was)."""
    value = role.extensions.get("world") if isinstance(role.extensions, dict) else None
    return value if isinstance(value, str) else ""


def _same(entry) -> tuple:
    """What makes two entries the same note, whichever file they came from (a card often carries its world's)."""
    return " ".join(entry.content.split()), tuple(k.strip().casefold() for k in entry.keys)


def with_world(role: Role, book: Lorebook) -> Role:
    """The character with the world's entries after its own lorebook's, each also a scene; a new id. A world linked
    before is replaced, not added to. An entry the character already carries (its card holds its world's entries,
    as SillyTavern exports them) is listed once; a world whose every entry it carries is only marked linked: the
    same character, not a second one of the same name."""
    before = linked_world(role)
    own = tuple(e for e in (role.lorebook.entries if role.lorebook else ()) if not before
                or not e.id.startswith(f"{before}:"))
    carried = {_same(e) for e in own}
    added = tuple(replace(e, id=f"{book.name}:{e.id}") for e in book.entries if _same(e) not in carried)
    if not added and not before:
        return replace(role, extensions={**role.extensions, "world": book.name})
    base = role.lorebook or replace(book, entries=())
    lore = replace(base, entries=(*own, *added), name=base.name or book.name)
    stories = [s for s in role.stories if not s.id.startswith("world-")] + lore_scenes(added, "world")
    content = LINK_VERSION + role.id + json.dumps(book.to_json(), sort_keys=True, ensure_ascii=False)
    return replace(role, id=derive_role_id(role.name, content), lorebook=lore, stories=stories, root=None,
                   extensions={**role.extensions, "world": book.name})
