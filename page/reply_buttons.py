"""The buttons that start a reply, and Stop: while a reply streams, Send, Regenerate, Continue and ▶ are shown as
unavailable and ■ Stop is offered beside it, as in Gradio's ChatInterface. Outputs, in this order: Send,
Regenerate, Continue, ▶, Stop (Turns.reply_buttons). The server still refuses a second turn (Enter in the box, a
caller of the API) with a sentence (its door refuses a second reply's hold)."""

from __future__ import annotations

import gradio as gr

from chatharuhi_core.web.visit_state import VisitState


def busy():
    """A reply starts: Send, Regenerate, Continue and ▶ unavailable, ■ Stop offered beside Send."""
    off = gr.Button(interactive=False)
    return off, off, off, off, gr.Button(visible=True)


def settled(visit: VisitState):
    """A turn is over (done, failed, refused or cut by a switch): the buttons back, unless a reply of this visit
    still streams (a second Enter was refused while the first reply goes on)."""
    if visit.live("chat"):
        return busy()
    on = gr.Button(interactive=True)
    return on, on, on, on, gr.Button(visible=False)


def stop_reply(visit: VisitState):
    """■ Stop: the reply ends with what it has written, kept as a cut reply (nothing written yet: the message goes
    back to the box); Stop goes while it ends."""
    visit.halt("chat")
    return (*(gr.skip(),) * 4, gr.Button(visible=False))


def cut_short(visit: VisitState):
    """A switch, a cleared chat or a control that cancels the reply (◀, a branch, another line): the reply may
    not draw any more (its door `stops` it), and the buttons are back."""
    return settled(visit)
