"""The 'Add a character' tab: a character from the Hugging Face Hub or from a file, added to this visitor's
picker only."""

from __future__ import annotations

import gradio as gr

from chatharuhi_core.config import Settings
from chatharuhi_core.errors import ChatHaruhiError
from chatharuhi_core.i18n import N_, both_spans
from chatharuhi_core.roles.safety import DEFAULT_LIMITS
from chatharuhi_core.roles.sources import accepted_suffixes, bundled_ids
from chatharuhi_core.web.chat import reopen
from chatharuhi_core.web.common import WARNING_MARK
from chatharuhi_core.web.picker import add_character, added_status, picker_choices, picker_entries

from .door import Later
from .language import L
from .visit import VIEW_SIZE, SwitchSeat, progress_cb, role_view, tiles

HELP = [
    N_("Bring a character from the Hugging Face Hub or from a file."),
    N_("**Hub id**: a dataset with a role package (`owner/name`), or a ChatHaruhi role "
       "(`silk-road/ChatHaruhi-RolePlaying/haruhi`); add `@revision` to pin one."),
    N_("**File**: a character card (`.png` or `.json`, V1/V2/V3), a ChatHaruhi `.jsonl`, "
       "a role package `.zip`, a ChatHaruhi 1.0 character folder as a `.zip`, or a script `.txt` "
       "(`Name:「line」`, `NAME: line` or screenplay). A SillyTavern world-info `.json` is linked to the character "
       "whose card names it, else to the one you are talking to."),
    N_("Files up to {mb} MB. The character is added to your picker only."),
]


def help_text() -> str:
    """The tab's help, in both languages (one shown by the page's language)."""
    mb = DEFAULT_LIMITS.max_file_bytes // (1024 * 1024)
    first, hub, file, size = HELP
    return f"{both_spans(first)}\n\n- {both_spans(hub)}\n- {both_spans(file)}\n\n{both_spans(size, mb=mb)}"


class AddTab:
    """The tab's components, as attributes, and its one event, with the app's one Settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def render(self) -> AddTab:
        gr.Markdown(help_text())
        with gr.Row():
            with gr.Column():
                self.hub_id = gr.Textbox(label=L("Hub id"), placeholder="silk-road/ChatHaruhi-RolePlaying/haruhi",
                                         elem_id="hub-id")
                self.script_name = gr.Textbox(label=L("Character's name (scripts only; default: who speaks most)"),
                                              elem_id="script-name")
            with gr.Column():
                self.upload = gr.File(label=L("Upload a file"), file_types=accepted_suffixes(),
                                      type="filepath", elem_id="upload")
        self.add_btn = gr.Button(L("Add character"), variant="primary", elem_id="add-role")
        self.add_status = gr.Markdown(elem_id="add-status")
        return self

    def inputs(self) -> list:
        return [self.hub_id, self.upload, self.script_name]

    def add_role(self, hub_id: str, upload: str | None, name: str, added: list[str] | None, progress=gr.Progress(), *seat):
        """Import, then show the new role in this visitor's picker and open its chat (`seat`: Visit.seat())."""
        at = SwitchSeat(*seat)
        added = list(added or [])
        try:
            role = add_character(hub_id, upload, name, self.settings, progress_cb(progress),
                                 at.conv.role_id if at.conv else None)
        except ChatHaruhiError as exc:
            return (*(gr.skip(),) * VIEW_SIZE, gr.skip(), gr.skip(), added, WARNING_MARK + str(exc), gr.skip(), "",
                    gr.skip())
        if role.id not in added and role.id not in bundled_ids():
            added.append(role.id)
        entries = picker_entries(added)
        status = "✓ " + added_status(role)
        chooser = gr.Dropdown(choices=picker_choices(entries), value=role.id)

        def step(conv, chats):  # as after a slow switch (Switches._switch): the chat as the visitor left it meanwhile
            new, chats = reopen(conv, chats, role.id)
            return (*role_view(new, chats, at.visitor), chooser, tiles(entries), added, status,
                    gr.Tabs(selected="chat-tab"), status, None)  # the upload box is emptied for the next file
        return Later(step)
