"""One conversation with one character, as a plain value: the only one the library, the command line, the page and
the tools keep.

A Conversation holds the exchanges and one record per reply (the prompt it was given, its engine, rating and
correction), the memory, the player's persona and author's note, and the chat's other lines: a chat is a tree of
lines, the line in use and its `others`, each a whole Conversation that says where it left its parent (`line`).
ChatHaruhi (chatbot.py) answers on one and keeps no history of its own; ChatTree (tree.py) walks one in the command
line; the page keeps one per character a visitor talks to (web/visit_state.py); the tools build one from the history
they are given. Branching, switching and the chat file are here once, for all of them.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field, replace

from ..errors import InputError
from ..i18n import _
from .memory import Memory
from .notes import valid_notes
from .persona import AuthorsNote, Persona
from .prompt import Exchange
from .reply import Reply
from .transcript import MAX_BRANCHES, Branch, ReplyMeta, Transcript


@dataclass
class Conversation:
    """One visitor's chat with one character."""

    role_id: str
    history: list[Exchange] = field(default_factory=list)
    meta: list[ReplyMeta] = field(default_factory=list)  # one per exchange: prompt, engine, rating, correction
    last: Reply | None = None  # the newest reply's record: the scenes and lore it drew on, its speed
    tried: list[str] = field(default_factory=list)  # every reply given to the last message, so Regenerate moves on
    memory: Memory = field(default_factory=Memory)  # pinned facts and the index of earlier exchanges
    # the player's controls: who they play beyond a name, their author's note, which line of the story this is
    # (its id, name, parent and fork point) and the chat's other lines
    persona: str = ""  # the description of whom the visitor plays ("": none); the name is the name in the story
    face: str = ""  # their portrait for this visit (an uploaded file's path; not kept past the visit)
    note: AuthorsNote | None = None
    line: Branch = field(default_factory=Branch)
    others: list[Conversation] = field(default_factory=list)

    def copy(self) -> Conversation:
        memory = self.memory.copy()  # its own pins and notes; the indexes are derived: shared, re-synced by text
        return Conversation(self.role_id, list(self.history), [replace(m) for m in self.full_meta()], self.last,
                            list(self.tried), memory, self.persona, self.face, self.note, self.line,
                            list(self.others))

    def full_meta(self) -> list[ReplyMeta]:
        """One record per exchange: those made without one (older states, the API, the library) get an empty one."""
        meta = list(self.meta[: len(self.history)])
        meta += [ReplyMeta(uuid.uuid4().hex, []) for _unused in range(len(self.history) - len(meta))]
        return meta


def bare(conv: Conversation) -> Conversation:
    """The line alone, without the chat's other lines (as it sits among another line's `others`)."""
    return replace(conv, others=[])


def branched(conv: Conversation, keep: int, name: str | None = None) -> Conversation:
    """A new line of the chat that shares the first `keep` exchanges of `conv`, its memory of them, its persona
    and note; `conv` is kept whole among the new line's others. A sentence when the chat has all the lines it keeps
    or `keep` is not an exchange of it."""
    if len(conv.others) >= MAX_BRANCHES:
        raise InputError(_("This chat has {n} lines, the most it keeps; go to one you no longer need and clear it "
                           "first.", n=len(conv.others) + 1))
    if not 0 <= keep <= len(conv.history):
        raise InputError(_("A branch starts after one of the {count} exchanges, not after {at}.",
                           count=len(conv.history), at=keep))
    full = conv.copy()
    n = len({conv.line.id, *(o.line.id for o in conv.others)}) + 1
    line = Branch(uuid.uuid4().hex[:8], name or _("Branch {n}", n=n), conv.line.id, keep)
    history = full.history[:keep]
    return Conversation(conv.role_id, history, full.meta[:keep], memory=conv.memory.branched(history),
                        persona=conv.persona, face=conv.face, note=conv.note, line=line,
                        others=[bare(full), *conv.others])


def switched(conv: Conversation, line_id: str | None) -> Conversation:
    """The chat's line `line_id` in use, the one before it kept among the others."""
    if not line_id or line_id == conv.line.id:
        return conv
    target = next((o for o in conv.others if o.line.id == line_id), None)
    if target is None:
        raise InputError(_("That line of the story is not in this chat any more."))
    rest = [o for o in conv.others if o.line.id != line_id]
    return replace(target.copy(), others=[bare(conv.copy()), *rest])


def parent_of(conv: Conversation) -> Conversation:
    """The line this one left, in use."""
    if conv.line.parent is None:
        raise InputError(_("This is the first line of the story; it has no parent to go back to."))
    return switched(conv, conv.line.parent)


def lines_of(conv: Conversation) -> list[Conversation]:
    """Every line of the chat, in the order they were made (the first line, then the branches by name)."""
    def made(c: Conversation) -> tuple:  # "Branch 10" after "Branch 9": the numbers in a name compared as numbers
        return c.line.parent is not None, [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", c.line.name)]
    return sorted([conv, *conv.others], key=made)


def line_of(conv: Conversation) -> Branch:
    """A conversation as a line of the chat file (its exchanges, records and memory with its place in the tree)."""
    full = conv.copy()
    return Branch(conv.line.id, conv.line.name, conv.line.parent, conv.line.at, full.history, full.meta,
                  list(conv.memory.pins), valid_notes(conv.memory.notes, full.history))


def transcript_of(conv: Conversation, role_name: str, user_role: str, player: Persona | None) -> Transcript:
    """The whole chat as its file holds it: the line in use first, then the others."""
    line = line_of(conv)
    return Transcript(conv.role_id, role_name, user_role, line.history, line.meta, line.pins, line.notes,
                      replace(line, history=[], meta=[], pins=[], notes=[]), [line_of(o) for o in conv.others],
                      player, conv.note)


def from_transcript(t: Transcript) -> Conversation:
    """A chat file read back: the line that was in use, with the others among its `others`."""
    about = t.persona.description if t.persona else ""

    def conversation(b: Branch) -> Conversation:
        return Conversation(t.role_id, list(b.history), list(b.meta), memory=Memory(list(b.pins), notes=list(b.notes)),
                            persona=about, note=t.note, line=replace(b, history=[], meta=[], pins=[], notes=[]))
    conv = conversation(replace(t.line, history=t.history, meta=t.meta, pins=t.pins, notes=t.notes))
    conv.others = [conversation(b) for b in t.branches]
    return conv
