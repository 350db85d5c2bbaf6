"""A chat as a tree of lines, for the library and the command line: one ChatHaruhi answering on the line in use, a
Conversation whose `others` are the chat's other lines (conversation.py, the same value the page keeps).

    tree = ChatTree(ChatHaruhi(role_name="sherlock"))
    tree.bot.chat("What is your method?")
    tree.branch(0)            # a new line from the greeting; the first one is kept
    tree.switch("Main")       # and back

Branching, switching and the chat file (transcript.py, version 3) are conversation.py's, shared with the page.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import InputError
from ..i18n import _
from .chatbot import ChatHaruhi
from .conversation import Conversation, branched, from_transcript, lines_of, parent_of, switched, transcript_of
from .transcript import Branch, ReplyMeta, Transcript


class ChatTree:
    """The lines of one chat with one character; `bot` answers on the line in use (`conversation`)."""

    def __init__(self, bot: ChatHaruhi, place: Branch | None = None, meta: list[ReplyMeta] | None = None):
        self.bot = bot
        if place is not None:
            bot.conversation.line = replace(place, history=[], meta=[], pins=[], notes=[])
        if meta is not None:
            bot.conversation.meta = list(meta)

    @property
    def conversation(self) -> Conversation:
        return self.bot.conversation

    @property
    def place(self) -> Branch:
        """The line in use: its id, name, parent and where it left it."""
        return self.conversation.line

    @property
    def meta(self) -> list[ReplyMeta]:
        """The records of the replies of the line in use (the prompt each was given), for the chat file."""
        return self.conversation.meta

    def _use(self, conv: Conversation) -> ChatHaruhi:
        self.bot.conversation = conv
        return self.bot

    def branch(self, at: int | None = None, name: str | None = None) -> ChatHaruhi:
        """A new line that shares the first `at` exchanges of the line in use (all by default), now in use."""
        conv = self.conversation
        return self._use(branched(conv, len(conv.history) if at is None else at, name))

    def find(self, ref: str) -> Conversation:
        """A line by its id, its name or its number in `listing` (1-based); a sentence when there is none."""
        ref = (ref or "").strip()
        for i, line in enumerate(lines_of(self.conversation)):
            place = line.line
            if ref in (place.id, place.name) or ref.lower() == place.name.lower() or ref == str(i + 1):
                return line
        raise InputError(_("There is no line '{ref}' in this chat; /lines lists them.", ref=ref))

    def switch(self, ref: str) -> ChatHaruhi:
        return self._use(switched(self.conversation, self.find(ref).line.id))

    def parent(self) -> ChatHaruhi:
        return self._use(parent_of(self.conversation))

    def listing(self) -> list[str]:
        """One line of text per line of the story, the one in use marked."""
        lines = lines_of(self.conversation)
        names = {x.line.id: x.line.name for x in lines}
        out = []
        for i, x in enumerate(lines):
            where = f" (from {names.get(x.line.parent, '?')} after {x.line.at})" if x.line.parent else ""
            mark = "*" if x.line.id == self.place.id else " "
            out.append(f"{mark} {i + 1}. {x.line.name}{where}: {len(x.history)} exchanges")
        return out

    def transcript(self) -> Transcript:
        """The whole tree as a chat file holds it, the line in use first."""
        bot = self.bot
        return transcript_of(self.conversation, bot.role.name, bot.user_role, bot.player)

    def add_lines(self, t: Transcript) -> None:
        """The other lines of a chat file read back, each with its own history and memory."""
        self.conversation.others = from_transcript(t).others
