"""One visitor's chat with one character, as a plain value (Conversation), and the other chats they put away.

The page keeps it per browser session (web/visit_state.py, page/door.py); what the page does with it is in turn
(a reply streamed), drawing (how it is shown), feedback (thumbs and edits) and chat_files (export and import).
Nothing here is per-visitor module state.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from ..chat.chatbot import Reply
from ..chat.memory import Memory
from ..chat.persona import AuthorsNote
from ..chat.prompt import Exchange
from ..chat.transcript import Branch, ReplyMeta


@dataclass
class Conversation:
    """One visitor's chat with one character."""

    role_id: str
    history: list[Exchange] = field(default_factory=list)
    meta: list[ReplyMeta] = field(default_factory=list)  # one per exchange: prompt, engine, rating, correction
    last: Reply | None = None  # the newest reply's record: the scenes and lore it drew on, its speed
    tried: list[str] = field(default_factory=list)  # every reply given to the last message, so Regenerate moves on
    memory: Memory = field(default_factory=Memory)  # pinned facts and the index of earlier exchanges
    # the player's controls (web/controls.py): who they play beyond a name, their author's note, which line of the
    # story this is (its id, name, parent and fork point) and the chat's other lines
    persona: str = ""  # the description of whom the visitor plays ("": none); the name is the name in the story
    face: str = ""  # their portrait for this visit (an uploaded file's path; not kept past the visit)
    note: AuthorsNote | None = None
    line: Branch = field(default_factory=Branch)
    others: list[Conversation] = field(default_factory=list)

    def copy(self) -> Conversation:
        memory = self.memory.copy()  # its own pins and notes; the indexes are derived: shared, re-synced by text
        return Conversation(self.role_id, list(self.history), [replace(m) for m in self._full_meta()], self.last,
                            list(self.tried), memory, self.persona, self.face, self.note, self.line,
                            list(self.others))

    def _full_meta(self) -> list[ReplyMeta]:
        """Exchanges made without metadata (older states, the API) get an empty record."""
        meta = list(self.meta[: len(self.history)])
        meta += [ReplyMeta(uuid.uuid4().hex, []) for _unused in range(len(self.history) - len(meta))]
        return meta


def reopen(current: Conversation | None, chats: dict | None, role_id: str) -> tuple[Conversation, dict]:
    """Put the chat on screen away (whole exchanges only: a reply cut off by the switch was never
    added) and bring out the chat with `role_id`: the one this visitor had before, or a new one."""
    chats = dict(chats or {})
    if current is not None:
        if current.history or current.others:
            chats[current.role_id] = current
        else:
            chats.pop(current.role_id, None)
    return chats.get(role_id) or Conversation(role_id), chats
