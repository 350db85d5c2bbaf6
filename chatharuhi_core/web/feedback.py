"""The visitor's thumbs and edits on a reply or a group scene's line: which message an event names, the rating
and the kept original, and the feedback file's record of it, paired with what it answered."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Protocol

from ..chat.swipes import passed_over, rewritten
from ..config import Settings
from ..data.feedback import FeedbackRecord, feedback_record
from ..i18n import N_, _
from ..jsonl import append_record
from ..roles.role import Role
from ..roles.sources import load_role
from .chat import Conversation
from .common import message_text
from .drawing import chat_messages, greeting_messages

log = logging.getLogger(__name__)


def message_index(index: object) -> int | None:
    """The chat message a Gradio event names: an int, or (message, part) for a message of several parts."""
    if isinstance(index, (list, tuple)):
        index = index[0] if index else -1
    return index if isinstance(index, int) else None


class Rated(Protocol):
    """A chat's reply (ReplyMeta) or a character's line in a group scene (Line): what the visitor's thumb
    and pencil change, and what the feedback file keeps of it."""

    id: str
    messages: list[dict]  # the prompt the engine received
    engine: str
    model: str
    rating: str | None
    original: str | None  # the engine's own words, kept once the visitor corrected them


def rate(said: Rated, liked: object) -> str | None:
    """A thumb: "like", "dislike" or None (taken back)."""
    said.rating = rating_of(liked)
    return said.rating


def correct(said: Rated, current: str, new: str) -> None:
    """The engine's own words to keep after an edit: kept from the first edit, dropped when edited back."""
    if said.original is None:
        said.original = current
    elif new == said.original:
        said.original = None


@dataclass(frozen=True)
class Answered:
    """What a rated reply or line answered, as the feedback file pairs it: the character who spoke, the visitor's
    name, the words it answered and the texts the visitor passed over for it; one value, so the chat, the story
    controls and the group scene fill the same fields."""

    role_id: str
    role_name: str
    user_role: str
    asked: str
    passed_over: list[str] | None = None


def record_feedback(settings: Settings, said: Rated, text: str, answered: Answered, event: str) -> str | None:
    """Append a reply's or line's current state (`text`, its rating, the correction) to the feedback file,
    paired with what it answered; a sentence if the disk refused it."""
    path = settings.feedback_path
    if path is None:
        return None
    rec = feedback_record(FeedbackRecord(reply_id=said.id, role_id=answered.role_id, role_name=answered.role_name,
                                         user_role=answered.user_role, text=answered.asked, messages=said.messages,
                                         original=said.original or text,
                                         corrected=text if said.original is not None else None, rating=said.rating,
                                         engine=said.engine, model=said.model, event=event,
                                         passed_over=answered.passed_over))
    try:
        append_record(path, rec)
    except OSError as exc:
        log.error("feedback not saved: %s", exc)
        return _("Your feedback could not be saved on the server (its disk refused the write).")
    return None


def rating_of(value: object) -> str | None:
    """Gradio's LikeData.liked (True, False, "Like", "Dislike", None) as "like", "dislike" or None."""
    if value is True or (isinstance(value, str) and value.lower() == "like"):
        return "like"
    if value is False or (isinstance(value, str) and value.lower() == "dislike"):
        return "dislike"
    return None


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


def _record(conv: Conversation, role: Role, k: int, event: str, settings: Settings) -> str | None:
    ex = conv.history[k]
    answered = Answered(conv.role_id, role.name, ex.user_role, ex.text, passed_over(ex))
    return record_feedback(settings, conv.meta[k], ex.reply, answered, event)


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
    rating = rate(conv.meta[k], liked)
    failed = _record(conv, role, k, "rating", settings)
    if rating == "like":
        note = _("Thanks: noted that you liked this reply.")
    elif rating == "dislike":
        note = _("Noted. Edit the reply (the pencil) to show how the character should have answered.")
    else:
        note = _("Rating removed.")
    return conv, failed or note


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
    text = message_text(new_text).strip()
    if not text:
        return conv, _("A reply cannot be empty; the edit was undone.")
    ex, meta = conv.history[k], conv.meta[k]
    if text == ex.reply:
        return conv, ""
    correct(meta, ex.reply, text)
    conv.history[k] = rewritten(ex, text)
    failed = _record(conv, role, k, "edit", settings)
    return conv, failed or _("Saved your correction: the character will go on from it.")


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
