"""The buttons that start a reply, and Stop: while a reply streams, Send, Regenerate, Continue and ▶ are shown as
unavailable and ■ Stop is offered beside it, as in Gradio's ChatInterface. Outputs, in this order: Send,
Regenerate, Continue, ▶, Stop (Turns.reply_buttons). The server still refuses a second turn (Enter in the box, a
caller of the API) with a sentence (TurnGate.begin)."""

from __future__ import annotations

import gradio as gr

from chatharuhi_core.web.turn_gate import TurnGate


def busy():
    """A reply starts: Send, Regenerate, Continue and ▶ unavailable, ■ Stop offered beside Send."""
    off = gr.Button(interactive=False)
    return off, off, off, off, gr.Button(visible=True)


def settled(gate: TurnGate | None):
    """A turn is over (done, failed, refused or cut by a switch): the buttons back, unless a reply of this visit
    still streams (a second Enter was refused while the first reply goes on)."""
    if gate is not None and gate.streams():
        return busy()
    on = gr.Button(interactive=True)
    return on, on, on, on, gr.Button(visible=False)


def stop_reply(gate: TurnGate | None):
    """■ Stop: the reply ends with what it has written, kept as a cut reply (nothing written yet: the message goes
    back to the box); Stop goes while it ends."""
    if gate is not None:
        gate.halt()
    return (*(gr.skip(),) * 4, gr.Button(visible=False))


def cut_short(gate: TurnGate | None):
    """A switch, a cleared chat or a control that cancels the reply (◀, a branch, another line): the reply may
    not draw any more (TurnGate.close), and the buttons are back."""
    if gate is not None:
        gate.close()
    return settled(gate)
