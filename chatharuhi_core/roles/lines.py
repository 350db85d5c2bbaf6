"""The script grammar every role is written in: `Name:「line」` for a spoken line, plain text for narration.

Classic scenes, chat history, fine-tuning data and imported scripts all use it, so it sits with the roles:
the chat path, the importers and the data tools read and write lines only through these functions.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..errors import ImportProblem
from ..i18n import _, ngettext

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


CLOSE_SECOND = 0.9  # a speaker with this share of the top speaker's lines is as likely the one to become


def lead_speaker(counts: Counter, source_name: str) -> str:
    """The speaker with the most lines, when one clearly leads; else the visitor is asked which one to become
    (two equal parts have no one protagonist to guess)."""
    ranked = counts.most_common()
    close = [s for s, n in ranked if n >= CLOSE_SECOND * ranked[0][1]]
    if len(close) > 1:
        options = ", ".join(ngettext("{who} ({n} line)", "{who} ({n} lines)", n, who=s) for s, n in ranked if s in close)
        raise ImportProblem(_("{file} has more than one main speaker: {options}. Say which one to become (the page's "
                              "\"Character's name\", or --name) and add it again.", file=source_name, options=options))
    return ranked[0][0]


def main_speaker(scenes: Iterable[str], prompt: str = "", source_name: str = "") -> str | None:
    """The character of a set of scenes: a speaker the system prompt names, else the most frequent. Given a
    `source_name` (an import), two speakers with nearly as many lines are not guessed between: it asks."""
    counts = Counter(spk for text in scenes for spk, _text in parse_scene_lines(text)
                     if spk and spk.lower() not in NARRATOR_ROLES)
    named = Counter({spk: n for spk, n in counts.items() if spk in prompt})
    if not (named or counts):
        return None
    if source_name and not named:
        return lead_speaker(counts, source_name)
    return (named or counts).most_common(1)[0][0]


@dataclass
class Partner:
    """Whom a character talks with most in its scenes (the visitor's name until they give one), the character's
    first line said to them (a greeting for a source that names none), and the partner's lines it answers (the
    questions to offer)."""

    name: str = ""
    first_reply: str = ""
    cues: list[str] = field(default_factory=list)


def partner_of(scenes: Iterable[str], is_role: Callable[[str], bool]) -> Partner:
    """The Partner of the character `is_role` tells apart, in its scenes read in order (a line answers the one
    before it in the same scene). A cue is 4 to 80 characters, as a question offered on the page is."""
    pairs: list[tuple[tuple[str, str], str]] = []
    for scene in scenes:
        spoken = [(who, text) for who, text in parse_scene_lines(scene) if who and who.lower() not in NARRATOR_ROLES]
        pairs += [(a, b[1]) for a, b in zip(spoken, spoken[1:]) if is_role(b[0]) and not is_role(a[0])]
    counts = Counter(who for (who, _cue), _reply in pairs)
    if not counts:
        return Partner()
    name = counts.most_common(1)[0][0]
    first = next((reply for (who, _cue), reply in pairs if who == name and reply), "")
    cues = [cue for (who, cue), _reply in pairs if who == name and 4 <= len(cue) <= 80]
    return Partner(name, first, cues)
