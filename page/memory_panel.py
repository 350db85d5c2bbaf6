"""What the character keeps of this conversation: the list, a fact to add, one to forget or rewrite."""

from __future__ import annotations

import gradio as gr

from chatharuhi_core.i18n import in_both
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.memory import (
    forget_memory,
    memory_choices,
    memory_markdown,
    pin_last_message,
    remember_fact,
    rewrite_memory,
)

from .language import L


class MemoryPanel:
    def render(self) -> MemoryPanel:
        with gr.Accordion(L("Memories"), open=False, elem_id="memory-panel"):
            self.listed = gr.Markdown(in_both(lambda: memory_markdown(None)), elem_id="memories")
            self.text = gr.Textbox(label=L("Remember"), placeholder=L("my sister is Anna"), max_lines=3,
                                   elem_id="memory-text")
            with gr.Row():
                self.remember = gr.Button(L("Remember"), size="sm", elem_id="remember")
                self.pin = gr.Button(L("Pin my last message"), size="sm", elem_id="pin-last")
            self.pick = gr.Dropdown(label=L("A memory"), choices=[], value=None, elem_id="memory-pick")
            with gr.Row():
                self.forget = gr.Button(L("Forget"), size="sm", elem_id="forget")
                self.rewrite = gr.Button(L("Rewrite with the text above"), size="sm", elem_id="rewrite-memory")
            self.note = gr.Markdown(elem_id="memory-note")
        return self

    def wire(self, page) -> None:
        """The buttons, and the list following the conversation (a switch, an import, a reply)."""
        conv, door, user_role = page.visit.conv, page.visit.door, page.chat.user_role
        out = [conv, self.listed, self.pick, self.note, self.text]
        door.on(self.remember.click, _event(remember_fact), [conv, self.text], out, api_name="remember")
        door.on(self.text.submit, _event(remember_fact), [conv, self.text], out, api_name=False)
        door.on(self.pin.click, _event(pin_last_message), [conv, user_role], out, api_name="pin_last")
        door.on(self.forget.click, _event(forget_memory), [conv, self.pick], out, api_name="forget_memory")
        door.on(self.rewrite.click, _event(rewrite_memory), [conv, self.pick, self.text], out,
                api_name="rewrite_memory")
        conv.change(_view, conv, [self.listed, self.pick], api_name=False, show_progress="hidden")


def _view(conv: Conversation | None):
    return memory_markdown(conv), gr.Dropdown(choices=memory_choices(conv), value=None)


def _event(change):
    """A memory change as the page runs it: the new conversation, the list, the sentence; the text box is
    emptied only when the change was made. Kept even while a reply streams (page/door.py)."""
    def run(conv, *args):
        new, said = change(conv, *args)
        done = new is not conv
        return (new if done else gr.skip(), *_view(new), said, "" if done else gr.skip())
    return run
