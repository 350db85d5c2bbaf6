"""The script grammar every role is written in: `Name:「line」` for a spoken line, plain text for narration.

Classic scenes, chat history, fine-tuning data and imported scripts all use it, so it sits with the roles:
the chat path, the importers and the data tools read and write lines only through these functions.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

NARRATOR_ROLES = frozenset({"旁白", "narrator", "scene", "场景", "narration"})


def format_query(user_role: str, text: str) -> str:
    """`Kyon:「text」`, or `narrator:text` for narration roles."""
    user_role = (user_role or "").strip() or "User"
    if user_role.lower() in NARRATOR_ROLES:
        return f"{user_role}:{text}"
    return f"{user_role}:「{text}」"


def format_reply(character: str, reply: str) -> str:
    """The character's line as it appears in the scenes, so history reads like a script."""
    return f"{character}:「{reply}」"


_SCENE_LINE = re.compile(r"^\s*([^:：「」\n]{1,24}?)\s*[:：]\s*「(.*)」\s*$")


def parse_scene_lines(scene: str) -> list[tuple[str | None, str]]:
    """(speaker, line) for each `Name:「line」`; (None, text) for narration."""
    out: list[tuple[str | None, str]] = []
    for line in scene.splitlines():
        if not line.strip():
            continue
        m = _SCENE_LINE.match(line)
        if m:
            out.append((m.group(1).strip(), m.group(2).strip()))
        else:
            out.append((None, line.strip()))
    return out


def main_speaker(scenes: Iterable[str], prompt: str = "") -> str | None:
    """The character of a set of scenes: a speaker the system prompt names, else the most frequent."""
    counts = Counter(spk for text in scenes for spk, _ in parse_scene_lines(text) if spk)
    named = Counter({spk: n for spk, n in counts.items() if spk in prompt})
    best = (named or counts).most_common(1)
    return best[0][0] if best else None
