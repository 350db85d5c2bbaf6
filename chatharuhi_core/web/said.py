"""A chat's reply or a group scene's character line, as the visitor's arrows, thumb and pencil see it: the texts
it has had (chat/swipes.Choices), the record the feedback file keeps (a Rated: the rating and the engine's own words
once corrected) and what it answered (Answered).

The chat (web/controls.py, web/feedback.py) and the group scene (web/scene.py) each find the line an event names
and write the result back; flipping, rating and correcting are written here once, for both.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Protocol

from ..chat.swipes import Choices
from ..config import Settings
from ..data.feedback import FeedbackRecord, feedback_record
from ..i18n import _
from ..jsonl import append_record

log = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class Said:
    """One line the visitor acts on. `speaker`: the character's name in a group scene, whose sentences name them;
    None in a chat, where there is one character."""

    choices: Choices
    record: Rated
    answered: Answered
    speaker: str | None = None


def _record(said: Said, choices: Choices, event: str, settings: Settings) -> str | None:
    """The line's state after `event`, paired with what it answered and the texts passed over, in the feedback file."""
    answered = replace(said.answered, passed_over=choices.passed_over())
    return record_feedback(settings, said.record, choices.kept, answered, event)


def flip_said(said: Said, step: int, settings: Settings) -> tuple[Choices | None, str]:
    """The next or previous text kept (None with the sentence when it has no other); the choice goes to the
    feedback file as the kept text against the ones passed over."""
    if len(said.choices.texts) < 2:
        return None, (_("This reply has no alternatives yet: ↻ Regenerate adds one.") if said.speaker is None
                      else _("This line has no alternatives yet: ↻ Regenerate adds one."))
    choices = said.choices.flipped(step)
    said.record.rating, said.record.original = None, None  # a rating or correction was of the text on screen
    return choices, _record(said, choices, "swipe", settings) or ""


def rate_said(said: Said, liked: object, settings: Settings) -> str:
    """A thumb kept and written to the feedback file; the sentence that thanks for it (or says the disk refused)."""
    rating = rate(said.record, liked)
    failed = _record(said, said.choices, "rating", settings)
    name = said.speaker
    if rating == "like":
        note = (_("Thanks: noted that you liked this reply.") if name is None
                else _("Thanks: noted that you liked {name}'s line.", name=name))
    elif rating == "dislike":
        note = (_("Noted. Edit the reply (the pencil) to show how the character should have answered.")
                if name is None else _("Noted. Edit {name}'s line (the pencil) to show how it should have gone.",
                                       name=name))
    else:
        note = _("Rating removed.")
    return failed or note


def edit_said(said: Said, text: str, settings: Settings) -> tuple[Choices | None, str]:
    """The visitor's correction (None with the sentence when it is empty or the same): it takes the corrected text's
    place among the texts, the engine's own words are kept, and the feedback file gets it."""
    if not text:
        return None, (_("A reply cannot be empty; the edit was undone.") if said.speaker is None
                      else _("A line cannot be empty; the edit was undone."))
    if text == said.choices.kept:
        return None, ""
    correct(said.record, said.choices.kept, text)
    choices = said.choices.rewritten(text)
    failed = _record(said, choices, "edit", settings)
    return choices, failed or (_("Saved your correction: the character will go on from it.") if said.speaker is None
                               else _("Saved your correction of {name}'s line.", name=said.speaker))
