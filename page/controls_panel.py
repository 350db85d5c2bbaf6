"""The player's controls: a row under the chat (alternatives ◀ n/m ▶, branch from here, continue, write my line)
and the Story panel (whom the visitor plays, the author's note, the lines of the story)."""

from __future__ import annotations

from functools import partial

import gradio as gr

from chatharuhi_core.chat.persona import DEFAULT_DEPTH, MAX_DEPTH, MAX_DESCRIPTION_CHARS, MAX_NOTE_CHARS
from chatharuhi_core.config import Settings
from chatharuhi_core.errors import ChatHaruhiError
from chatharuhi_core.i18n import _, ngettext
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.common import WARNING_MARK, portrait_of
from chatharuhi_core.web.controls import (
    alternatives_label,
    back_to_parent,
    branch_from,
    controls_state,
    flip,
    line_choices,
    my_line,
    set_note,
    set_persona,
    switch_line,
    with_boxes,
    with_note,
    with_persona,
)
from chatharuhi_core.web.drawing import chat_messages, feedback_values
from chatharuhi_core.web.visit_state import Stream

from .language import L
from .reply_buttons import cut_short
from .settings_panel import choice
from .visit import clicked, current


class PlayerControls:
    """The row under the chat, and the Story panel; components as attributes. `settings`: the app's one Settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def render_row(self, more=None) -> PlayerControls:
        """The row under the message box; `more` renders the chat's own reply actions at its end (so that on a
        laptop everything done to a reply is on the first screen)."""
        with gr.Row(elem_id="story-controls", equal_height=True):
            self.prev = gr.Button("◀", size="sm", min_width=40, elem_id="swipe-prev", scale=0)
            self.count = gr.Markdown(alternatives_label(None), elem_id="swipe-count", min_height=0)
            self.next = gr.Button("▶", size="sm", min_width=40, elem_id="swipe-next", scale=0)
            if more is not None:
                more()
            self.branch = gr.Button(L("↳ Branch"), size="sm", elem_id="branch-here", scale=1)
            self.go_on = gr.Button(L("↪ Continue"), size="sm", elem_id="continue", scale=1)
            self.my_line = gr.Button(L("✍ My line"), size="sm", elem_id="impersonate", scale=1)
        self.state = gr.Markdown(elem_id="story-state", elem_classes=["reply-stats"])
        return self

    def render_panel(self) -> PlayerControls:
        with gr.Accordion(L("Story"), open=False, elem_id="story-panel"):
            self.persona = gr.Textbox(label=L("Who you play"), max_lines=4, elem_id="persona",
                                      placeholder=L("A retired army doctor, back from Afghanistan…"),
                                      info=L("Your name is the name in the story above; the character reads this too "
                                             "(at most {n} characters).", n=MAX_DESCRIPTION_CHARS))
            with gr.Row(equal_height=True):
                self.persona_default = gr.Checkbox(label=L("Use for every new chat"), value=False,
                                                   elem_id="persona-default", scale=2)
                self.face = gr.Image(label=L("Your portrait"), type="filepath", sources=["upload"], height=110,
                                     elem_id="persona-face", scale=1, buttons=[])
            self.note = gr.Textbox("", label=L("Author's note"), max_lines=3, elem_id="author-note",
                                   placeholder=L("Keep it tense: it is raining and the lamp is failing."),
                                   info=L("An instruction the model reads on every turn, near the end of the prompt "
                                          "(at most {n} characters). Empty: off.", n=MAX_NOTE_CHARS))
            self.depth = gr.Slider(0, MAX_DEPTH, value=DEFAULT_DEPTH, step=1, elem_id="note-depth",
                                   label=L("Note depth: messages from the end"))
            with gr.Row(equal_height=True):
                self.lines = gr.Dropdown(label=L("Line of the chat"), choices=[], value=None, scale=3,
                                         elem_id="story-line")
                self.parent = gr.Button(L("↩ Back to parent"), size="sm", scale=1, elem_id="line-parent")
        return self

    def wire(self, page, turns: list) -> None:
        """Each control changes the conversation and redraws the chat; the row's count, the lines and the state
        line follow every change of the conversation."""
        v, c = page.visit, page.chat
        drawn = [v.conv, c.chat, c.feedback_note]
        c.chat.select(clicked, None, v.selected, api_name=False, show_progress="hidden")
        v.selected.change(_count, [v.conv, v.selected], self.count, api_name=False, show_progress="hidden")
        # ◀ flips back; ▶ is a turn of its own (turns.wire): past the latest reply's last alternative it writes one
        door = v.door
        # each of these cancels a reply streaming, and its hold on the visit goes too (stops: a cancelled stream may
        # never end its own hold, and the next Send would be refused as if it still streamed)
        door.on(self.prev.click, self.flip_back, [v.conv, v.selected, c.user_role], drawn, api_name=False,
                show_progress="hidden", cancels=turns, stops="chat")
        door.on(self.branch.click, _branch, [v.conv, v.selected, c.user_role], [*drawn, c.text, v.selected],
                api_name=False, cancels=turns, stops="chat")
        door.on(self.lines.input, _switch_line, [v.conv, self.lines, c.user_role], [*drawn, v.selected],
                api_name=False, cancels=turns, stops="chat")
        door.on(self.parent.click, _parent, [v.conv, c.user_role], [*drawn, v.selected], api_name=False,
                cancels=turns, stops="chat")
        door.on(partial(gr.on, [self.prev.click, self.branch.click, self.lines.input, self.parent.click]), cut_short,
                None, page.turns.reply_buttons(page), queue=False, api_name=False, show_progress="hidden",
                stops="chat", hands_visit=True)
        boxes = [self.persona, self.note, self.depth]  # what a handler writing the conversation back carries
        door.on(self.face.change, _face, [v.conv, self.face, *boxes], [v.conv, c.chat], api_name=False,
                show_progress="hidden")
        # the text left, or the default ticked: a field left while the box was being ticked reads it unticked, so
        # only the box itself clears this browser's default
        kept = [v.conv, page.session.saved_persona, c.feedback_note]
        persona_in = [v.conv, self.persona, self.persona_default, self.note, self.depth]
        door.on(partial(gr.on, [self.persona.blur, self.persona.submit]), _persona(False), persona_in, kept,
                api_name=False, show_progress="hidden")
        door.on(self.persona_default.input, _persona(True), persona_in, kept, api_name=False, show_progress="hidden")
        # the note as it is typed and the depth as it is moved, one event for both (the latest values win: a field
        # left while the depth was set must not bring back the old depth)
        door.on(partial(gr.on, [self.note.change, self.depth.change]), _note,
                [v.conv, self.note, self.depth, self.persona], [v.conv, c.feedback_note], api_name=False,
                show_progress="hidden")
        door.on(v.conv.change, _view, [v.conv, v.selected, c.user_role, v.story_key, page.session.saved_persona],
                      [self.count, self.lines, self.state, v.story_key, self.persona, self.persona_default, self.note,
                       self.depth, self.face, v.conv], api_name=False, show_progress="hidden")
        door.on(self.my_line.click, self.write_my_line, [v.conv, c.user_role], [c.text, c.feedback_note],
                api_name=False, inputs_kwargs=page.chat.panel.fields(), stream="line")
        # the line stops once the visitor goes into the box (a Send stops it too: Turns._turn). Not Gradio's cancels
        # on every key: two cancels of one event at once raise in Gradio's server (KeyError in cancel_event)
        door.on(c.text.focus, _stop_line, None, None, queue=False, api_name=False, show_progress="hidden",
                stops="line")

    def flip_back(self, conv: Conversation | None, selected, user_role: str):
        """◀: the selected reply's previous alternative (a reply streaming stops)."""
        return flipped_to(conv, selected, -1, user_role, self.settings)

    def write_my_line(self, line: Stream, conv: Conversation | None, user_role: str, **panel):
        """The engine writes the visitor's next line into the box, as it comes, until the box is theirs again
        (its hold goes when they go into the box, or send); never sent by itself (`panel`: the settings panel's
        fields, by name)."""
        for text, error in my_line(current(conv), user_role, choice(panel), self.settings):
            if not line.open():  # a last frame that writes nothing: Gradio puts an event's last frame in the
                yield gr.skip(), gr.skip()  # page once more as it completes, over what the visitor typed since
                return
            if error:
                yield (text or gr.skip()), WARNING_MARK + error
                return
            yield text, gr.skip()
        yield gr.skip(), _("✍ Your next line is in the box: edit it, then send.")


def _stop_line() -> None:
    """The box is the visitor's again (they went into it to type): ✍ My line stops (its door `stops` it), or its
    next words would overwrite what they type."""


def redrawn(conv: Conversation, user_role: str):
    role = load_role(conv.role_id)
    return gr.Chatbot(value=chat_messages(conv, role, user_role), feedback_value=feedback_values(conv, role))


def _count(conv: Conversation | None, selected):
    return alternatives_label(conv, selected)


def flipped_to(conv: Conversation | None, selected, step: int, user_role: str, settings: Settings):
    """The selected reply's neighbouring alternative kept: the conversation, the chat and a sentence."""
    conv, said = flip(current(conv), selected, step, settings)
    return conv, redrawn(conv, user_role), said


def _branch(conv: Conversation | None, selected, user_role: str):
    try:
        new, box, said = branch_from(current(conv), selected)
    except ChatHaruhiError as exc:
        return gr.skip(), gr.skip(), WARNING_MARK + str(exc), gr.skip(), gr.skip()
    return new, redrawn(new, user_role), said, box if box else gr.skip(), None


def _switch_line(conv: Conversation | None, line_id: str | None, user_role: str):
    try:
        new = switch_line(current(conv), line_id)
    except ChatHaruhiError as exc:
        return gr.skip(), gr.skip(), WARNING_MARK + str(exc), gr.skip()
    said = "↳ " + ngettext("{line} · {n} exchange", "{line} · {n} exchanges", len(new.history), line=new.line.name)
    return new, redrawn(new, user_role), said, None


def _parent(conv: Conversation | None, user_role: str):
    try:
        new = back_to_parent(current(conv))
    except ChatHaruhiError as exc:
        return gr.skip(), gr.skip(), WARNING_MARK + str(exc), gr.skip()
    return new, redrawn(new, user_role), _("↩ Back to {line}.", line=new.line.name), None


def _persona(ticked: bool):
    """The description for this chat, and this browser's default for new chats when the box is ticked (`ticked`:
    the box itself changed, so an unticked box clears the default)."""
    def run(conv: Conversation | None, text: str, default: bool, note: str | None = None, depth=None):
        conv, said = set_persona(current(with_note(conv, note, depth)), text)
        if said:
            return gr.skip(), gr.skip(), WARNING_MARK + said
        saved = conv.persona if default else ("" if ticked else gr.skip())
        return conv, saved, _("✓ Saved whom you play.")
    return run


def _face(conv: Conversation | None, path: str | None, persona: str, note: str | None = None, depth=None):
    """The visitor's portrait beside their messages, for this visit (an image removed: none). It writes the
    conversation back, so it carries the Story panel's boxes too (their own saves may be running beside this)."""
    conv = current(conv)
    if (path or "") == conv.face:
        return gr.skip(), gr.skip()
    conv = (with_boxes(conv, persona, note, depth) or conv).copy()
    conv.face = path or ""
    return conv, gr.Chatbot(avatar_images=(conv.face or None, portrait_of(load_role(conv.role_id))))


def _note(conv: Conversation | None, text: str, depth, persona: str | None = None):
    """The author's note as written (a field left, the depth moved); nothing when it is as it was (the panel
    filled in for another chat or line). It carries the persona box (its own save may be running beside this)."""
    before = current(conv).note
    conv, said = set_note(current(with_persona(conv, persona)), text, depth)
    if not said and conv.note == before:
        return gr.skip(), gr.skip()
    if said:
        return gr.skip(), WARNING_MARK + said
    if conv.note:
        return conv, _("✎ Author's note at depth {depth}.", depth=conv.note.depth)
    return conv, _("✎ Author's note off.")


def story_key(conv: Conversation) -> str:
    """Which chat and line the Story panel's fields were filled from (v.story_key)."""
    return f"{conv.role_id}:{conv.line.id}"


def story_fields(conv: Conversation, default: str | None) -> tuple[Conversation, tuple]:
    """The Story panel's fields from `conv`: whom the visitor plays (a new chat without it takes this browser's
    default: `conv` comes back with it), the default box, the note and its depth, the portrait."""
    if not conv.persona and default and not conv.history:
        conv = conv.copy()
        conv.persona = default
    note = conv.note
    return conv, (conv.persona, bool(default) and conv.persona == default, note.text if note else "",
                  note.depth if note else DEFAULT_DEPTH, conv.face or None)


def _view(conv: Conversation | None, selected, user_role: str, key: str | None, default: str | None):
    """The row's count, the lines and the state line; and, when another chat or line came on screen, the panel's
    fields from it (a new chat without a persona takes this browser's default). The session's start fills them
    itself (Session.start_session), so that a field changed as soon as the page is usable is not filled over."""
    if conv is None:
        return (gr.skip(),) * 10
    choices, value = line_choices(conv)
    now = story_key(conv)
    common = (alternatives_label(conv, selected), gr.Dropdown(choices=choices, value=value),
              controls_state(conv, user_role or load_role(conv.role_id).visitor_name), now)
    if now == key:
        return (*common, *(gr.skip(),) * 6)
    filled, fields = story_fields(conv, default)
    return (*common, *fields, filled if filled is not conv else gr.skip())
