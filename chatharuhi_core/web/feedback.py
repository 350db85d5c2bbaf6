"""The visitor's thumbs and edits on a reply or a group scene's line: which message an event names, the rating
and the kept original, and the feedback file's record of it, paired with what it answered."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from ..config import Settings
from ..data.feedback import FeedbackRecord, feedback_record
from ..i18n import _
from ..jsonl import append_record

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
