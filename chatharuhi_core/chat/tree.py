"""A chat as a tree of lines, for the library and the command line: the conversation in use and the others, each
a ChatHaruhi with its own history and memory, and where each left its parent (transcript.Branch).

    tree = ChatTree(ChatHaruhi(role_name="sherlock"))
    tree.bot.chat("What is your method?")
    tree.branch(0)            # a new line from the greeting; the first one is kept
    tree.switch("Main")       # and back

The page keeps the same tree in its Conversation values (web/controls.py); both write it to the chat file the same
way (transcript.py, version 3).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from ..errors import InputError
from ..i18n import _
from .chatbot import ChatHaruhi
from .notes import valid_notes
from .transcript import MAX_BRANCHES, Branch, ReplyMeta, Transcript


@dataclass
class ChatLine:
    """One line of the tree: its place (id, name, parent, fork point), its conversation and the metadata of its
    replies (the prompt each was given, for the chat file and feedback)."""

    place: Branch
    bot: ChatHaruhi
    meta: list[ReplyMeta] = field(default_factory=list)


class ChatTree:
    """The lines of one chat with one character; `bot` is the conversation in use."""

    def __init__(self, bot: ChatHaruhi, place: Branch | None = None, meta: list[ReplyMeta] | None = None):
        self.lines = [ChatLine(place or Branch(), bot, list(meta or []))]
        self.at = 0

    @property
    def line(self) -> ChatLine:
        return self.lines[self.at]

    @property
    def bot(self) -> ChatHaruhi:
        return self.line.bot

    def branch(self, at: int | None = None, name: str | None = None) -> ChatHaruhi:
        """A new line that shares the first `at` exchanges of the line in use (all by default), now in use."""
        if len(self.lines) > MAX_BRANCHES:
            raise InputError(_("This chat has {count} lines, the most it keeps.", count=len(self.lines)))
        bot = self.bot.branch(at)
        keep = len(bot.history)
        place = Branch(uuid.uuid4().hex[:8], name or f"Branch {len(self.lines) + 1}", self.line.place.id, keep)
        self.lines.append(ChatLine(place, bot, self.line.meta[:keep]))
        self.at = len(self.lines) - 1
        return bot

    def find(self, ref: str) -> int:
        """A line by its id, its name or its number in `listing` (1-based); a sentence when there is none."""
        ref = (ref or "").strip()
        for i, line in enumerate(self.lines):
            if ref in (line.place.id, line.place.name) or ref.lower() == line.place.name.lower() or ref == str(i + 1):
                return i
        raise InputError(_("There is no line '{ref}' in this chat; /lines lists them.", ref=ref))

    def switch(self, ref: str) -> ChatHaruhi:
        self.at = self.find(ref)
        return self.bot

    def parent(self) -> ChatHaruhi:
        if self.line.place.parent is None:
            raise InputError(_("This is the first line of the story; it has no parent to go back to."))
        return self.switch(self.line.place.parent)

    def listing(self) -> list[str]:
        """One line of text per line of the story, the one in use marked."""
        names = {x.place.id: x.place.name for x in self.lines}
        out = []
        for i, x in enumerate(self.lines):
            where = (f" (from {names.get(x.place.parent, '?')} after {x.place.at})" if x.place.parent else "")
            mark = "*" if i == self.at else " "
            out.append(f"{mark} {i + 1}. {x.place.name}{where}: {len(x.bot.history)} exchanges")
        return out

    def transcript(self) -> Transcript:
        """The whole tree as a chat file holds it, the line in use first."""
        def whole(x: ChatLine) -> Branch:
            h = x.bot.history
            meta = (x.meta + [ReplyMeta(uuid.uuid4().hex, []) for _n in range(len(h) - len(x.meta))])[-len(h):] \
                if h else []
            return replace(x.place, history=list(h), meta=meta, pins=list(x.bot.memory.pins),
                           notes=valid_notes(x.bot.memory.notes, h))
        now = whole(self.line)
        bot = self.bot
        return Transcript(bot.role.id, bot.role.name, bot.user_role, now.history, now.meta, now.pins, now.notes,
                          replace(now, history=[], meta=[], pins=[], notes=[]),
                          [whole(x) for i, x in enumerate(self.lines) if i != self.at], bot.player, bot.note)

    def add_lines(self, t: Transcript) -> None:
        """The other lines of a chat file read back, each a branch of the conversation in use with its own
        history and memory."""
        from .memory import Memory

        for b in t.branches:
            bot = self.bot.branch(0)
            bot.history = list(b.history)
            bot.memory = Memory(list(b.pins), notes=list(b.notes))
            self.lines.append(ChatLine(replace(b, history=[], meta=[], pins=[], notes=[]), bot, list(b.meta)))
