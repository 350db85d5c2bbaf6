"""Who is in a scene and what was said: members with their talkativeness and presence, and lines.

Presence is kept as spans of line indices, so witnessing is a lookup: a member saw line i when i
falls in one of its spans. A member who joins late starts a span at the current length; one who
leaves closes it; coming back opens a new one.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field

from ..i18n import _
from ..roles.names import find_name

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
    mutes: list[list] = field(default_factory=list)  # [line index, muted] each time it was muted or unmuted
    # words the others call it by in its own scenes ("Count", "先生"), less those that call someone else in
    # another member's scenes ("师父" is 唐僧 to 孙悟空): set by the scene as its cast grows, never saved
    called: tuple[str, ...] = field(default=(), compare=False)

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

    def set_muted(self, muted: bool, at: int) -> None:
        """Mute or unmute before line `at`; the transcript shows it as a quiet line."""
        if self.muted != bool(muted):
            self.muted = bool(muted)
            self.mutes.append([at, self.muted])

    def names(self) -> tuple[str, ...]:
        """Every name the member answers to, longest first (so "Sherlock Holmes" wins over "Holmes")."""
        return tuple(sorted({self.name, *self.aliases, *self.called}, key=len, reverse=True))


@dataclass
class SceneLine:
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
    to: str | None = None  # a private line: the role id of the only character who hears it (a whisper)
    recalled: list[dict] = field(default_factory=list)  # {line, similarity, text}: earlier lines memory brought back
    alternatives: list[str] = field(default_factory=list)  # every text this line has had (swipes), `text` among them

    @property
    def private(self) -> bool:
        return self.to is not None

    @property
    def by_character(self) -> bool:
        return self.role_id is not None


def happenings(members: list[Member]) -> list[tuple[int, str]]:
    """(line index, a quiet sentence) for each join, leave, mute and unmute after the scene began: the
    transcript shows them between the lines. At one point, joins come first, then mutes, then leaves."""
    found: list[tuple[int, int, str]] = []
    for m in members:
        for start, end in m.spans:
            if start and start > 0:
                found.append((start, 0, _("{name} joined the scene", name=m.name)))
            if end is not None:
                found.append((end, 2, _("{name} left the scene", name=m.name)))
        for at, muted in m.mutes:
            found.append((at, 1, _("{name} was muted", name=m.name) if muted else
                          _("{name} was unmuted", name=m.name)))
    return [(at, text) for at, _order, text in sorted(found, key=lambda t: (t[0], t[1]))]


def mention_at(text: str, member: Member) -> int | None:
    """Where the member is first named in `text` (by name or alias), or None: see roles.names.find_name."""
    return find_name(text, member.names())


@dataclass
class SceneState:
    """A scene as a plain value (members and lines), for the page's per-visitor state and for files."""

    members: list[Member] = field(default_factory=list)
    lines: list[SceneLine] = field(default_factory=list)
    user_role: str = "You"
    order: str = "natural"
    allow_self: bool = False
    # each member's memory of what it witnessed (role id -> chat.memory.Memory): an index of embedded lines,
    # kept between the page's events so a turn embeds only the new lines. Shared by copies (an index is
    # keyed by the lines' text and safe between threads); never saved: it is rebuilt from the transcript.
    memory: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def present(self) -> list[Member]:
        return [m for m in self.members if m.present]

    def witnessed(self, member: Member, index: int) -> bool:
        """Whether the member heard line `index`: present then, and not a whisper to someone else."""
        to = self.lines[index].to
        return member.saw(index) and (to is None or to == member.role_id)

    def seen_at(self, member: Member) -> list[int]:
        """The indices of the lines this member witnessed, in order."""
        return [i for i in range(len(self.lines)) if self.witnessed(member, i)]

    def seen(self, member: Member) -> list[SceneLine]:
        """The transcript as this member witnessed it."""
        return [self.lines[i] for i in self.seen_at(member)]

    def copy(self) -> SceneState:
        return SceneState(copy.deepcopy(self.members), [copy.copy(ln) for ln in self.lines], self.user_role,
                          self.order, self.allow_self, self.memory)


def __getattr__(name: str):
    """`Line`, the scene line's old name, still imports (and says its new one once)."""
    if name == "Line":
        from ..deprecated import renamed

        renamed("chatharuhi_core.scene.cast.Line", "SceneLine")
        return SceneLine
    raise AttributeError(name)
