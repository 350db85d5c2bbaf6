"""A reply streamed into the chat: Send, Regenerate and an edited last message; then what follows a reply
(the scenes it drew on, its scene picture, its voice), and the local model reading ahead while the visitor types."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from chatharuhi_core.chat.voice import speak
from chatharuhi_core.config import Settings
from chatharuhi_core.i18n import _
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.common import EnginePanel, scene_picture_html
from chatharuhi_core.web.controls import with_boxes, writes_new
from chatharuhi_core.web.drawing import chat_messages, feedback_values, scene_image_for, scenes_markdown
from chatharuhi_core.web.feedback import answers_again, edit_message
from chatharuhi_core.web.landing import conv_landed
from chatharuhi_core.web.turn import CONTINUE, REGENERATE, SEND, TurnAsk, read_ahead, turn_frames
from chatharuhi_core.web.visit_state import Stream

from .controls_panel import flipped_to
from .door import quick_step
from .language import warn
from .reply_buttons import busy, settled, stop_reply
from .settings_panel import choice
from .visit import current


@dataclass
class Sent:
    """One turn as the page sent it, read once (`asked`): the visit's chat (with whom the visitor plays, from the
    Story panel), the message, the name in the story and the engine; `state`, the visit's chat as the turn found
    it (page/door.py): what the reply's own changes are told from when they land."""

    conv: Conversation
    text: str
    user_role: str
    engine: EnginePanel
    state: Conversation | None = None


def turn_fields(page) -> dict:
    """A turn's inputs by name (Gradio's inputs_kwargs), in the order the page's API takes them: the message, the
    name in the story, the settings panel's fields, then the Story panel's boxes (persona, author's note, its
    depth: every handler that writes the conversation back carries them, see web/controls.with_boxes). A
    gradio_client caller gives every input (README: the page's own events)."""
    c = page.chat
    return {"text": c.text, "user_role": c.user_role, **c.panel.fields(), "persona": c.controls.persona,
            "note": c.controls.note, "depth": c.controls.depth}


def asked(conv: Conversation | None, sent: dict, signed_in: gr.OAuthToken | None) -> Sent:
    """The one place a turn's inputs are read: `sent` is what `turn_fields` named; `signed_in` the visitor's
    Hugging Face sign-in, handed in by Gradio from their session (None when signed out)."""
    panel = dict(sent)
    text, user_role = panel.pop("text", ""), panel.pop("user_role", "")
    boxes = {name: panel.pop(name, None) for name in ("persona", "note", "depth")}
    return Sent(current(with_boxes(conv, **boxes)), text or "", user_role or "", choice(panel, signed_in), conv)


class Turns:
    """Send, Regenerate, Continue, ▶ and an edited last message, each a reply streamed into the chat, with the
    app's one Settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def _turn(self, hold: Stream, ask: Sent, how: str):
        """Stream one reply (`how`: SEND, REGENERATE or CONTINUE): the chat, the message box, the conversation and
        the stats line only; refused with a sentence while another reply of this visit streams (its door gave
        it no hold)."""
        conv, sent = ask.conv, how == SEND
        if sent:  # the message leaves the box: a line being written for the visitor must not fill it again
            hold.visit.close("line")
        if not hold.ticket:  # a reply of this visit is streaming: this one would write the chat back without it
            name = load_role(conv.role_id).name
            warn(_("{name} is still answering. Your message stays in the box: send it when the reply is done.",
                         name=name) if sent else _("{name} is still answering: try again when the reply is done.",
                                                   name=name))
            yield (gr.skip(),) * 5
            return
        yield from self._frames(hold, ask, how)

    def _frames(self, hold: Stream, ask: Sent, how: str):
        """_turn's frames, while its reply holds the visit.

        Mid-stream frames carry the chat alone. Gradio rebuilds a component (and its API schema) for
        every `gr.skip()` it is given, so per-frame skips of the other outputs were most of the app's
        CPU under load; the scenes, picture and voice come once, from `after_turn`.
        """
        conv, text, sent = ask.conv, ask.text, how == SEND
        first = True
        start = current(ask.state)
        frames = turn_frames(TurnAsk(conv, text, ask.user_role, how), ask.engine, self.settings, hold.halted)
        for up in frames:
            if not hold.open():  # the visitor switched character or cleared the chat meanwhile
                return
            if up.error:
                warn(up.error)
            # A sent message leaves the box with the first frame, and whatever the visitor types while the
            # reply streams is theirs: the box is never emptied again. After a failure the words come back.
            # A regenerate or a continue leaves the box alone.
            if not sent:
                box = gr.skip()
            elif up.error:
                box = text
            else:
                box = "" if first else gr.skip()
            state, messages = gr.skip(), up.messages
            if up.done:  # landed on the chat as the visitor's changes meanwhile left it (a thumb, a pin, a note)
                state = hold.land("conv", lambda now, made=up.conversation: conv_landed(now or start, start, made),
                                  last=True)
                if state is None:
                    return
                if not up.error and state.history != up.conversation.history:  # a reply corrected meanwhile
                    messages = chat_messages(state, load_role(state.role_id), ask.user_role)
            status = up.status if (up.status or up.done or first) else gr.skip()
            # the message in flight, put back in the box if the visitor switches character before the reply is done
            pending = "" if (up.done or not sent) else ({"role": conv.role_id, "text": text} if first else gr.skip())
            first = False
            yield messages, box, state, status, pending

    def send(self, hold: Stream, signed_in: gr.OAuthToken | None, conv, **sent):
        """`sent`: the turn's inputs by name (turn_fields); `signed_in` is the visitor's Hugging Face sign-in."""
        yield from self._turn(hold, asked(conv, sent, signed_in), SEND)

    def regenerate(self, hold: Stream, signed_in: gr.OAuthToken | None, conv, **sent):
        yield from self._turn(hold, asked(conv, sent, signed_in), REGENERATE)

    def go_on(self, hold: Stream, signed_in: gr.OAuthToken | None, conv, **sent):
        """Continue: the last reply goes on from where it stopped, streamed after it."""
        yield from self._turn(hold, asked(conv, sent, signed_in), CONTINUE)

    def answer_again(self, hold: Stream, signed_in: gr.OAuthToken | None, again: bool, conv, **sent):
        """After the visitor edited their last message: a new reply to it, streamed like Regenerate."""
        if not again:  # an edit that changed nothing the character must answer: the chat stays as it is
            yield (gr.skip(),) * 5
            return
        yield from self._turn(hold, asked(conv, sent, signed_in), REGENERATE)

    def swipe_next(self, hold: Stream, signed_in: gr.OAuthToken | None, selected, conv, **sent):
        """▶: the selected reply's next alternative; past the latest reply's last one, a new one written as
        Regenerate writes it (streamed). Outputs: a turn's, then the note under the chat."""
        ask = asked(conv, sent, signed_in)
        if writes_new(current(ask.state), selected, 1):
            for frame in self._turn(hold, ask, REGENERATE):
                yield (*frame, gr.skip())
            return
        # a flip is a quick step: while another reply streams, that reply's last frame draws it
        hold.end()
        conv, chat, said = quick_step(hold.visit, "conv",
                                      lambda now: flipped_to(now, selected, 1, ask.user_role, self.settings))
        yield chat, gr.skip(), conv, gr.skip(), gr.skip(), said

    def edit(self, conv: Conversation | None, user_role: str, evt: gr.EditData):
        """A corrected reply replaces the old one (and is saved as feedback); an edited message of the visitor's
        replaces their words, and when it is their last one the character answers it again (`answer_again`).
        Kept even while another reply streams (page/door.py)."""
        conv = current(conv)
        asked_before = conv.history[-1].text if conv.history else None
        conv, note = edit_message(conv, evt.index, evt.value, self.settings)
        role = load_role(conv.role_id)
        chat = gr.Chatbot(value=chat_messages(conv, role, user_role), feedback_value=feedback_values(conv, role))
        return conv, chat, note, answers_again(conv, role, evt.index) and conv.history[-1].text != asked_before

    def thumbs(self, conv: Conversation | None):
        """The chat's thumbs as the conversation has them, once a reply is complete: the chat draws them from its
        last thumbs given by the server, so a reply rated before (or while) another streamed showed unrated after
        it. (The turn's own frames stay plain messages: the page's API returns the chat as a list.)"""
        if conv is None:
            return gr.skip()
        return gr.Chatbot(feedback_value=feedback_values(conv, load_role(conv.role_id)))

    def read_ahead_for(self, conv, user_role, **panel):
        """A character opened, a conversation taken up or an engine picked: the local model loads and reads how the
        next prompt starts while the visitor types (the engines that read nothing ahead do nothing here).
        `panel`: the settings as a browser keeps them (no key)."""
        if conv is None:
            return
        read_ahead(conv, user_role, choice(panel), self.settings)

    def after_turn(self, conv: Conversation | None, speak_on: bool, handled: str | None):
        """Once a reply is complete: the scenes it drew on, its scene picture and, if asked, its voice.

        `handled` remembers the last reply dealt with, so a failed turn (which leaves the
        conversation as it was) does not show or speak the previous reply again.
        """
        if conv is None or not conv.history:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), handled
        reply = conv.history[-1].reply
        key = f"{conv.role_id}:{len(conv.history)}:{reply}"
        if key == handled:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), handled
        picture = scene_picture(load_role(conv.role_id), reply, self.settings)
        audio, voice_note = spoken(conv, reply, self.settings) if speak_on else (gr.skip(), gr.skip())
        return scenes_markdown(conv), audio, voice_note, picture, key

    def reply_buttons(self, page) -> list:
        """What a streaming reply makes unavailable (Send, Regenerate, Continue, ▶), then ■ Stop (busy, settled)."""
        c = page.chat
        return [c.send_btn, c.regen_btn, c.controls.go_on, c.controls.next, c.stop_btn]

    def wire(self, page) -> list:
        """Send, Regenerate and an edited last message: each streams a turn into the chat (`pending` holds its
        message until the reply is complete). Returns the turn events, for switches to cancel."""
        v, c, door = page.visit, page.chat, page.visit.door
        buttons = self.reply_buttons(page)
        quiet = {"api_name": False, "show_progress": "hidden"}
        settle = (settled, None, buttons)  # after a turn: the buttons back, unless another reply streams
        # while a reply streams the buttons that would start another are unavailable and Stop is offered, as in
        # Gradio's ChatInterface (a caller of the API, or Enter in the box, is still refused with a sentence).
        # Registered before the turns: Gradio 6.31's page applies a trigger's listeners in order, and one listed
        # after the streaming turn changed nothing until it ended
        gr.on([c.text.submit, c.send_btn.click, c.regen_btn.click, c.controls.next.click, c.controls.go_on.click],
              busy, None, buttons, queue=False, **quiet)
        turn_out = [c.chat, c.text, v.conv, c.reply_stats, v.pending]
        turn_in, sent = [v.conv], turn_fields(page)
        reply = {"stream": "chat", "refuse": True, "inputs_kwargs": sent}  # one reply of a visit at a time
        after = (self.after_turn, [v.conv, c.speak_on, v.handled],
                 [c.scenes, c.voice_audio, c.voice_note, c.scene_picture, v.handled])
        thumbs = (self.thumbs, v.conv, c.chat)
        # type the next line at once, unless the visitor has gone on to another field or list while the reply
        # ran: a focus taken back then closed the engine list they had opened, and sent their typing elsewhere
        focus_box = ("() => { const at = document.activeElement;"
                     " if (!at || at === document.body || at.closest('#message, #send'))"
                     " document.querySelector('#message textarea')?.focus(); }")
        reveal = page.reveal
        turns = []
        # Enter pressed again while the reply it started streams must reach the door and be refused with the
        # sentence: Gradio's default for a trigger ("once") dropped it in the browser, without a word
        sends = {**reply, "trigger_mode": "multiple"}
        for ev in (door.on(c.text.submit, self.send, turn_in, turn_out, api_name="submit", **sends),
                   door.on(c.send_btn.click, self.send, turn_in, turn_out, api_name="send", **sends)):
            turns.append(ev)
            door.on(ev.then, *settle, queue=False, hands_visit=True, **quiet)
            ev.then(*thumbs, api_name=False, queue=False, show_progress="hidden")
            ev.then(*after, api_name="after_turn" if len(turns) == 1 else False).then(
                None, js=focus_box, api_name=False).then(*reveal, api_name=False, show_progress="hidden")
        tail = (after, (*reveal,), thumbs)
        turns.append(door.on(c.regen_btn.click, self.regenerate, turn_in, turn_out, api_name="regenerate", **reply))
        _then(turns[-1], *tail)
        turns.append(door.on(c.controls.next.click, self.swipe_next, [v.selected, *turn_in],
                             [*turn_out, c.feedback_note], api_name=False, **reply))
        _then(turns[-1], *tail)
        turns.append(door.on(c.controls.go_on.click, self.go_on, turn_in, turn_out, api_name=False, **reply))
        _then(turns[-1], *tail)
        again = gr.State(False)  # the visitor edited their last message: it is answered again
        edited = door.on(c.chat.edit, self.edit, [v.conv, c.user_role], [v.conv, c.chat, c.feedback_note, again],
                         api_name=False)
        turns.append(door.on(edited.then, self.answer_again, [again, *turn_in], turn_out, api_name=False, **reply))
        _then(turns[-1], *tail)
        for ev in turns[2:]:
            door.on(ev.then, *settle, queue=False, hands_visit=True, **quiet)
        door.on(c.stop_btn.click, stop_reply, None, buttons, queue=False, hands_visit=True, **quiet)
        return turns


def _then(turn, after: tuple, reveal: tuple, thumbs: tuple) -> None:
    """What follows a turn: the chat's thumbs; the scenes, picture and voice (after_turn), then the voice player
    shown."""
    turn.then(*thumbs, api_name=False, queue=False, show_progress="hidden")
    turn.then(*after, api_name=False).then(*reveal, api_name=False, show_progress="hidden")


def scene_picture(role, reply: str, settings: Settings):
    found = scene_image_for(role, reply, settings)
    if found is None:
        return gr.HTML(value="", visible=False)
    return gr.HTML(value=scene_picture_html(*found), visible=True)


def spoken(conv: Conversation, text: str, settings: Settings):
    """Audio and a note for the page; the reply stays text when no voice is available."""
    speech = speak(load_role(conv.role_id), text, settings)
    return (str(speech.path) if speech.path else None), speech.notice


def reveal_player(audio: str | None):
    """The voice player appears once it has something to play: an empty audio player is the costliest
    part of the page's first paint (about a quarter of a second here, bench/first_screen.py)."""
    return gr.Audio(visible=True) if audio else gr.skip()
