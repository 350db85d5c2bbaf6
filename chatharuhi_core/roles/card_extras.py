"""What a SillyTavern card carries in `data.extensions` beyond the core fields, read where this app has the concept.

The card is kept whole in `role.extensions["card"]` (cards.py), so these are read from it when needed and an export
writes every extension back, the ones this app does not know included:

- `depth_prompt` {prompt, depth, role}: the character's note, put `depth` messages from the end of the prompt
  (SillyTavern's default 4, as a system message), beside the player's author's note;
- `talkativeness` (0 to 1, often written as a string): how often the character speaks up unasked in a group scene;
- `world`: the name of a separate world-info file, linked when one of that name is imported (worlds.py);
- `regex_scripts`: find-and-replace scripts for the display, the prompt, the input or the reply (regex_scripts.py).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from ..i18n import _
from .regex_scripts import RegexScript, RunContext, read_scripts, run_scripts
from .role import Role

DEFAULT_NOTE_DEPTH = 4
MAX_NOTE_DEPTH = 100
NOTE_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class DepthNote:
    """A text put `depth` messages from the end of the conversation in the prompt, as a message of `role`."""

    text: str
    depth: int = DEFAULT_NOTE_DEPTH
    role: str = "system"


def card_extensions(role: Role) -> dict[str, Any]:
    """The kept card's `data.extensions` ({} for a role that did not come from a card)."""
    card = role.extensions.get("card") if isinstance(role.extensions, dict) else None
    data = card.get("data") if isinstance(card, dict) else None
    ext = data.get("extensions") if isinstance(data, dict) else None
    return ext if isinstance(ext, dict) else {}


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # NaN is no number


def character_note(role: Role) -> DepthNote | None:
    """The card's `depth_prompt` ({{char}} filled; {{user}} is filled per turn), or None without one."""
    raw = card_extensions(role).get("depth_prompt")
    if not isinstance(raw, dict) or not isinstance(raw.get("prompt"), str) or not raw["prompt"].strip():
        return None
    depth = _number(raw.get("depth"))
    depth = DEFAULT_NOTE_DEPTH if depth is None else int(max(0, min(MAX_NOTE_DEPTH, depth)))
    who = raw.get("role") if raw.get("role") in NOTE_ROLES else "system"
    return DepthNote(raw["prompt"].strip(), depth, who)


def talkativeness(role: Role) -> float | None:
    """The card's `talkativeness`, clamped to 0..1 (None when the card gives none or it is not a number)."""
    value = _number(card_extensions(role).get("talkativeness"))
    return None if value is None else max(0.0, min(1.0, value))


def world_name(role: Role) -> str:
    """The name of the world-info file the card links (`extensions.world`), or ""."""
    value = card_extensions(role).get("world")
    return value.strip() if isinstance(value, str) else ""


@functools.lru_cache(maxsize=256)
def _scripts_for(raw_json: str, char: str) -> tuple[RegexScript, ...]:
    return tuple(read_scripts(json.loads(raw_json), char)[0])


def regex_scripts(role: Role) -> tuple[RegexScript, ...]:
    """The card's `regex_scripts` that compile, read once per card and shared read-only (a role is shared too)."""
    raw = card_extensions(role).get("regex_scripts")
    return _scripts_for(json.dumps(raw, sort_keys=True, ensure_ascii=False), role.name) if raw else ()


def script_problems(role: Role) -> list[str]:
    """One sentence per regex script of the card that is skipped, naming the card and the field, in the reader's
    language ([] when all run)."""
    raw = card_extensions(role).get("regex_scripts")
    problems = read_scripts(raw, role.name)[1] if raw else []
    return [_("{source}, field '{field}': {problem}", source=role.source or role.name,
              field="extensions.regex_scripts", problem=p) for p in problems]


def scripted(role: Role, text: str, where: str, placement: int, depth: int | None = None, user_role: str = "User") -> str:
    """`text` after the card's regex scripts for `where` (DISPLAY, PROMPT, STORED) and `placement` (USER_INPUT,
    AI_OUTPUT); the text itself for a character without scripts, so no other prompt changes by a byte."""
    scripts = regex_scripts(role)
    if not scripts or not text:
        return text
    return run_scripts(scripts, text, RunContext(where, placement, depth, user_role=user_role))
