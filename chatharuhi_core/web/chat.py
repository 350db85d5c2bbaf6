"""The other chats a visitor put away, beside the one on screen (a chat.conversation.Conversation, imported from
here by the page).

The page keeps it per browser session (web/visit_state.py, page/door.py); what the page does with it is in turn
(a reply streamed), drawing (how it is shown), feedback (thumbs and edits) and chat_files (export and import).
Nothing here is per-visitor module state.
"""

from __future__ import annotations

from ..chat.conversation import Conversation

__all__ = ["Conversation", "reopen"]


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
