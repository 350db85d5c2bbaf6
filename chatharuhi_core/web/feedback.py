"""The visitor's thumbs and edits on a chat's replies and messages: which message an event names, and what a thumb
or an edit does to the conversation (the rating, the correction and the feedback file's record are web/said.py's,
shared with the group scene)."""

from __future__ import annotations

import logging
from dataclasses import replace

from ..chat.swipes import choices, chosen
from ..config import Settings
from ..i18n import N_, _
from ..roles.role import Role
from ..roles.sources import load_role
from .chat import Conversation
from .common import message_text
from .drawing import chat_messages, greeting_messages
from .said import Answered, Said, edit_said, rate_said

log = logging.getLogger(__name__)


def message_index(index: object) -> int | None:
    """The chat message a Gradio event names: an int, or (message, part) for a message of several parts."""
    if isinstance(index, (list, tuple)):
        index = index[0] if index else -1
    return index if isinstance(index, int) else None


# ------------------------------------------------------------ the chat's replies


def _exchange_at(conv: Conversation, role: Role, index: object) -> tuple[int, int] | None:
    """(exchange, 0 for the visitor's message or 1 for the reply) shown at chat `index`, or None."""
    index = message_index(index)
    if index is None:
        return None
    k, rest = divmod(index - len(greeting_messages(role)), 2)
    return (k, rest) if 0 <= k < len(conv.history) else None


def reply_at(conv: Conversation, role: Role, index: object) -> int | None:
    """The exchange whose reply is the chat message at `index` (after the greeting), or None."""
    at = _exchange_at(conv, role, index)
    return at[0] if at and at[1] == 1 else None


def question_at(conv: Conversation, role: Role, index: object) -> int | None:
    """The exchange whose visitor's message is the chat message at `index`, or None."""
    at = _exchange_at(conv, role, index)
    return at[0] if at and at[1] == 0 else None


def reply_said(conv: Conversation, role: Role, k: int) -> Said:
    """Exchange `k`'s reply as the arrows, thumb and pencil see it (web/said.py)."""
    ex = conv.history[k]
    return Said(choices(ex), conv.meta[k], Answered(conv.role_id, role.name, ex.user_role, ex.text))


RATE_WHEN_COMPLETE = N_("Rate this reply once it is complete.")  # a thumb on a reply still streaming


def rate_reply(conv: Conversation, index: int, liked: object, settings: Settings,
               streaming: bool = False) -> tuple[Conversation, str]:
    """A thumb on a reply: remember it and append it to the feedback file. `streaming`: a reply is being written
    after the chat's messages, so a thumb past them is on that reply (not yet one the conversation holds)."""
    role = load_role(conv.role_id)
    conv = conv.copy()
    k = reply_at(conv, role, index)
    if k is None:
        at = message_index(index)
        if streaming and at is not None and at >= len(chat_messages(conv, role, "")):
            return conv, _(RATE_WHEN_COMPLETE)
        return conv, _("Only the character's replies can be rated.")
    return conv, rate_said(reply_said(conv, role, k), liked, settings)


def edit_message(conv: Conversation, index: int, new_text: object, settings: Settings) -> tuple[Conversation, str]:
    """An edited reply is a correction: it replaces the reply in the history and goes to the feedback file.

    An edited message of the visitor's replaces their words; when it is the last one, the page has
    the character answer it again (`answers_again`). The greeting cannot be edited.
    """
    role = load_role(conv.role_id)
    conv = conv.copy()
    q = question_at(conv, role, index)
    if q is not None:
        return _edit_question(conv, q, message_text(new_text).strip())
    k = reply_at(conv, role, index)
    if k is None:
        return conv, _("The greeting cannot be edited; send a message to start the conversation.")
    edited, said = edit_said(reply_said(conv, role, k), message_text(new_text).strip(), settings)
    if edited is not None:
        conv.history[k] = chosen(conv.history[k], edited)
    return conv, said


def _edit_question(conv: Conversation, k: int, text: str) -> tuple[Conversation, str]:
    """The visitor rewrites their own message; the reply after it is answered again only when it is the last."""
    ex = conv.history[k]
    if not text:
        return conv, _("A message cannot be empty; the edit was undone.")
    if text == ex.text:
        return conv, ""
    conv.history[k] = replace(ex, text=text)
    if k == len(conv.history) - 1:
        conv.tried = []
        return conv, _("Your message was changed; the character answers it again.")
    return conv, _("Your message was changed; the replies after it stay as they were.")


def answers_again(conv: Conversation, role: Role, index: object) -> bool:
    """Whether chat `index` shows the visitor's last message: edited, it deserves a new answer."""
    return question_at(conv, role, index) == len(conv.history) - 1 and bool(conv.history)
