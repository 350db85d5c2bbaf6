"""The player's controls on the page, as plain functions over a Conversation: alternatives browsed and kept,
branches made and walked, a persona and an author's note set, and the visitor's next line written for them.

A chat is a tree of lines. The line on screen is the Conversation; its `others` are the chat's other lines, each a
whole Conversation with its own history and memory, and its `line` says where it left its parent. Continue is a
turn (web.turn.continue_turn).
"""

from __future__ import annotations

import html
from collections.abc import Iterator

from ..chat.conversation import branched, lines_of, parent_of, switched
from ..chat.persona import DEFAULT_DEPTH, MAX_DESCRIPTION_CHARS, authors_note, persona
from ..chat.swipes import chosen, position, replies_of
from ..chat.transcript import Branch
from ..config import Settings
from ..errors import ChatHaruhiError, InputError
from ..i18n import _, ngettext
from ..roles.sources import load_role
from .chat import Conversation
from .common import EnginePanel
from .feedback import _exchange_at, reply_said
from .said import flip_said
from .turn import engine_frames, make_bot

switch_line, back_to_parent = switched, parent_of  # the page's words for a line walked to and its parent


def selected_reply(conv: Conversation, index: object) -> int | None:
    """The exchange whose reply the player selected (chat message `index`), else the last one; None without any."""
    at = _exchange_at(conv, load_role(conv.role_id), index) if index is not None else None
    if at is not None and at[1] == 1:
        return at[0]
    return len(conv.history) - 1 if conv.history else None


def alternatives_label(conv: Conversation | None, index: object = None) -> str:
    """"2 / 3" for the selected reply (the last by default), with which exchange it is when not the last."""
    if conv is None or (k := selected_reply(conv, index)) is None:
        return "**0 / 0**"
    ex = conv.history[k]
    which = "" if k == len(conv.history) - 1 else " · " + _("reply {number}", number=k + 1)
    return f"**{position(ex) + 1} / {len(replies_of(ex))}**{which}"


def writes_new(conv: Conversation | None, index: object, step: int) -> bool:
    """▶ on the latest reply's last alternative (or on a reply that has none) writes a new one, as a swipe past
    the end does in SillyTavern; anywhere else it flips (an earlier reply cannot be written again without
    changing what follows it)."""
    if step <= 0 or conv is None or (k := selected_reply(conv, index)) is None or k != len(conv.history) - 1:
        return False
    ex = conv.history[k]
    return position(ex) == len(replies_of(ex)) - 1


def flip(conv: Conversation, index: object, step: int, settings: Settings) -> tuple[Conversation, str]:
    """The next or previous alternative of the selected reply kept; the choice goes to the feedback file as the
    kept reply against the ones passed over."""
    conv = conv.copy()
    k = selected_reply(conv, index)
    if k is None:
        return conv, _("There is no reply to flip through yet.")
    kept, said = flip_said(reply_said(conv, load_role(conv.role_id), k), step, settings)
    if kept is not None:
        conv.history[k] = chosen(conv.history[k], kept)
        if k == len(conv.history) - 1:
            conv.tried = list(kept.texts)
    return conv, said


def line_name(line: Branch) -> str:
    """A line's name as shown: the first line's "Main" (the name every chat file gives it) in the visitor's
    language; a branch's name as it was made."""
    return _("Main") if line.name == Branch().name else line.name


def branch_from(conv: Conversation, index: object) -> tuple[Conversation, str, str]:
    """(the new line, text for the message box, a sentence): a branch that shares everything up to the selected
    message. From a reply, the branch goes on after it; from the visitor's own message, the branch stops before it
    and the message is put back in the box to be said another way; without a selection, from the last reply."""
    role = load_role(conv.role_id)
    at = _exchange_at(conv, role, index) if index is not None else None
    if at is None:
        keep, box = len(conv.history), ""
    else:
        keep, box = (at[0] + 1, "") if at[1] == 1 else (at[0], conv.history[at[0]].text)
    new = branched(conv, keep)
    line = new.line
    said = (_("{name}: a new line of the story after exchange {n} of {parent}.", name=line.name, n=keep,
              parent=line_name(conv.line)) if keep
            else _("{name}: a new line of the story from the greeting of {parent}.", name=line.name,
                   parent=line_name(conv.line)))
    return new, box, "↳ " + said


def _label(conv: Conversation, names: dict[str, str]) -> str:
    size = ngettext("{n} exchange", "{n} exchanges", len(conv.history))
    if conv.line.parent is None:
        return f"{line_name(conv.line)} · {size}"
    where = _("from {parent} after {at}", parent=names.get(conv.line.parent, "?"), at=conv.line.at)
    return f"{line_name(conv.line)} · {where} · {size}"


def line_choices(conv: Conversation | None) -> tuple[list[tuple[str, str]], str | None]:
    """The chat's lines for the picker (label, id), in the order they were made, and the one on screen."""
    if conv is None:
        return [], None
    lines = lines_of(conv)
    names = {c.line.id: line_name(c.line) for c in lines}
    return [(_label(c, names), c.line.id) for c in lines], conv.line.id


def set_note(conv: Conversation, text: str, depth: object) -> tuple[Conversation, str]:
    """The author's note of this line (off when empty); a sentence when it is too long."""
    conv = conv.copy()
    try:
        conv.note = authors_note(text, depth if depth is not None else 4)
    except InputError as exc:
        return conv, str(exc)
    return conv, ""


def set_persona(conv: Conversation, description: str) -> tuple[Conversation, str]:
    """Whom the visitor plays, beyond their name: a description (capped) for this chat."""
    conv = conv.copy()
    text = (description or "").strip()
    if len(text) > MAX_DESCRIPTION_CHARS:
        return conv, _("That description is {length} characters long; a persona holds {most}. It was not used; "
                       "please shorten it.", length=format(len(text), ","), most=MAX_DESCRIPTION_CHARS)
    conv.persona = text
    return conv, ""


def with_persona(conv: Conversation | None, persona: str | None) -> Conversation | None:
    """The conversation with the page's persona box as it reads now.

    Leaving the box saves the persona in its own event, which Gradio may run beside the Send the same click
    started (or beside a portrait upload that writes the conversation back without it); a persona the page
    shows is in the next prompt only if the turn itself reads the box. An over-long persona keeps what was
    saved (its own event says why)."""
    if conv is None or persona is None or persona.strip() == conv.persona:
        return conv
    fixed, said = set_persona(conv, persona)
    return conv if said else fixed


def with_note(conv: Conversation | None, text: str | None, depth: object = None) -> Conversation | None:
    """The conversation with the page's author's note boxes as they read now, for the same reason as
    with_persona: a note written and sent at once was saved by its own event while the turn ran beside it, and
    the turn wrote the conversation back without it (1 try in 5 on a busy machine). A note that is not valid
    keeps what was saved (its own event says why)."""
    if conv is None or text is None:
        return conv
    try:
        note = authors_note(text, depth if depth is not None else conv.note.depth if conv.note else DEFAULT_DEPTH)
    except InputError:
        return conv
    if note == conv.note:
        return conv
    fixed = conv.copy()
    fixed.note = note
    return fixed


def with_boxes(conv: Conversation | None, persona: str | None = None, note: str | None = None,
               depth: object = None) -> Conversation | None:
    """The conversation with the Story panel's boxes as the page shows them (with_persona, with_note): what a
    handler that writes the conversation back carries, so that a box's own save running beside it is not undone."""
    return with_note(with_persona(conv, persona), note, depth)


def controls_state(conv: Conversation | None, user_role: str) -> str:
    """One line under the chat: which line of the story this is, whom the visitor plays, and the author's note."""
    if conv is None:
        return ""
    parts = []
    if conv.others or conv.line.parent:
        parts.append(f"↳ {html.escape(line_name(conv.line))}")
    if conv.persona:
        about = html.escape(conv.persona[:60]) + "…" * (len(conv.persona) > 60)
        parts.append(_("as {user}: {persona}", user=html.escape(user_role), persona=about))
    if conv.note:
        note = html.escape(conv.note.text[:60]) + "…" * (len(conv.note.text) > 60)
        parts.append("✎ " + _("note at depth {depth}: {note}", depth=conv.note.depth, note=note))
    return " · ".join(parts)


def my_line(conv: Conversation, user_role: str, engine: EnginePanel,
                settings: Settings) -> Iterator[tuple[str, str | None]]:
    """(the visitor's next line so far, None) as the engine writes it for them, then (line, error sentence or
    None) once; the chat is not changed, the line goes in the box and is never sent by itself."""
    text = ""
    try:
        bot = make_bot(conv, engine, user_role, settings)
        persona(bot.user_role, conv.persona or "")  # a name too long is a sentence before any work
        for text, _status, done in engine_frames(bot, bot.my_line):
            if done is None:
                yield text, None
        yield done.text, None
    except ChatHaruhiError as exc:
        yield text, str(exc)
    except Exception as exc:  # never a traceback in the page
        yield text, _("Something went wrong while writing your line ({error}). Please try again.",
                      error=type(exc).__name__)
