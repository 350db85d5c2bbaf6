"""Who is in a scene and what was said: members with their talkativeness and presence, and lines.

Presence is kept as spans of line indices, so witnessing is a lookup: a member saw line i when i
falls in one of its spans. A member who joins late starts a span at the current length; one who
leaves closes it; coming back opens a new one.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

DEFAULT_TALKATIVENESS = 0.5
MIN_MEMBERS, MAX_MEMBERS = 2, 6


@dataclass
class Member:
    """One character in the scene."""

    role_id: str
    name: str
    aliases: tuple[str, ...] = ()
    talkativeness: float = DEFAULT_TALKATIVENESS  # 0: never volunteers, 1: always does
    muted: bool = False  # never picked by an order; the visitor can still make it speak
    spans: list[list[int | None]] = field(default_factory=lambda: [[0, None]])  # [joined, left) line indices

    @property
    def present(self) -> bool:
        return bool(self.spans) and self.spans[-1][1] is None

    def saw(self, index: int) -> bool:
        """Whether the member was there when line `index` was spoken."""
        return any(start <= index and (end is None or index < end) for start, end in self.spans)

    def join(self, at: int) -> None:
        if not self.present:
            self.spans.append([at, None])

    def leave(self, at: int) -> None:
        if self.present:
            self.spans[-1][1] = at

    def names(self) -> tuple[str, ...]:
        """Every name the member answers to, longest first (so "Sherlock Holmes" wins over "Holmes")."""
        return tuple(sorted({self.name, *self.aliases}, key=len, reverse=True))


@dataclass
class Line:
    """One line of the transcript: the visitor's (role_id None) or a character's, with its record."""

    speaker: str
    text: str
    role_id: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    messages: list[dict] = field(default_factory=list)  # the prompt the character's engine received
    scenes: list[dict] = field(default_factory=list)  # {id, similarity, text, used} retrieved for it
    cue: str = ""  # the line it was answering (feedback pairs a reply with what it answered)
    engine: str = ""
    model: str = ""
    rating: str | None = None
    original: str | None = None  # the engine's words, kept when the visitor corrected the line

    @property
    def by_character(self) -> bool:
        return self.role_id is not None


def _is_cjk(text: str) -> bool:
    return any("\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" for ch in text)


def mention_at(text: str, member: Member) -> int | None:
    """Where the member is first named in `text`, or None.

    Latin names match as whole words and keep their capital (so "count on me" does not call
    Count Dracula); Chinese names match anywhere but need two characters ("亮" alone is too common).
    """
    best: int | None = None
    for name in member.names():
        if _is_cjk(name):
            if len(name) < 2:
                continue
            pos = text.find(name)
        else:
            m = re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text)
            pos = m.start() if m else -1
        if pos >= 0 and (best is None or pos < best):
            best = pos
    return best
