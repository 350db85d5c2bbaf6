"""One visitor's states, created inside the page, and the character view that every switch draws."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from chatharuhi_core.errors import ChatHaruhiError
from chatharuhi_core.i18n import _, language
from chatharuhi_core.roles.sources import bundled_ids, load_role
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.common import portrait_html
from chatharuhi_core.web.drawing import chat_messages, describe_role, scenes_markdown
from chatharuhi_core.web.picker import tiles_html

from .door import Door
from .language import L

VIEW_SIZE = 9  # role_view's outputs


class Visit:
    """What the page keeps for one visitor while the page is open (gr.State: per session, never shared)."""

    def __init__(self) -> None:
        self.conv = gr.State(None)
        self.added = gr.State([])  # ids of the characters this visitor added
        self.handled = gr.State(None)  # the last reply whose scenes, picture and voice were shown
        self.chats = gr.State({})  # role id -> this visitor's earlier chat with that character, in this session
        self.visitor = gr.State("")  # the name the visitor gave themselves in the story ("": none yet)
        self.pending = gr.State("")  # the message whose reply is streaming, and whose it is
        self.drafts = gr.State({})  # messages whose reply a switch stopped, by character: back in its box on return
        self.door = Door()  # the one way an event writes the chat, the other chats or the group scene
        self.door.track("conv", self.conv)
        self.door.track("chats", self.chats)
        self.selected = gr.State(None)  # the chat message the visitor clicked: the story controls act on it
        self.story_key = gr.State(None)  # which chat and line the Story panel's fields were last filled from

    def seat(self) -> list:
        """Where the visitor sits, as a switch reads it (Seat's fields, in order)."""
        return [self.conv, self.chats, self.visitor]


@dataclass
class SwitchSeat:
    """Where the visitor sits when they switch: the chat on screen, their other chats and their name (Visit.seat
    gives the states in this order)."""

    conv: Conversation | None = None
    chats: dict | None = None
    visitor: str | None = None


def role_view(conv: Conversation, chats: dict | None = None, user_role: str | None = None):
    """Everything that changes with the character: portrait, text, chat, examples, name, and the
    visitor's other chats (kept for when they come back to a character). `user_role` is the name the
    visitor typed for themselves; without one, the character's usual partner (Watson for Holmes)."""
    role = load_role(conv.role_id)
    shown_name = (user_role or "").strip() or role.visitor_name
    asked = role.described(language()).examples  # the questions to try, in the visitor's language where written
    return (
        conv,
        portrait_html(role),
        describe_role(role, shown_name),
        chat_messages(conv, role, shown_name),
        gr.Dataset(samples=[[q] for q in asked], visible=bool(asked)),
        shown_name,
        scenes_markdown(conv),
        "",  # the last reply's engine and speed
        chats if chats is not None else gr.skip(),
    )


def current(conv: Conversation | None) -> Conversation:
    """The visitor's conversation; before the session has loaded, the page's first character, whose
    greeting is drawn into the page."""
    return conv if conv is not None else Conversation(bundled_ids()[0])


def tiles(entries) -> str:
    """The picker's tiles: bundled characters and the visitor's own; the Hub's are in their own folded list."""
    return tiles_html([e for e in entries if not e.online])


def role_name(role_id: str) -> str:
    try:
        return load_role(role_id).name
    except ChatHaruhiError:
        return role_id


def clicked(evt: gr.SelectData):
    """The chat message the visitor clicked (its index): the story controls and the arrows act on it."""
    return evt.index if isinstance(evt.index, int) else (evt.index[0] if evt.index else None)


def progress_cb(progress: gr.Progress):
    return lambda done, total: progress((done, total), desc=_("Embedding scenes"), unit=_("scenes"))


def scene_name(user_role: str | None) -> str:
    """The visitor's name in a group scene: the one they gave themselves, never a character's usual partner; else
    "You" in the visitor's language."""
    return (user_role or "").strip() or _("You")


def conversation_buttons(ids: tuple[str, str, str, str]) -> tuple:
    """A group scene's row: Regenerate, Clear, Export and Import (`ids`: the four buttons' element ids). The chat
    puts its reply's own actions in the row under its box instead."""
    with gr.Row():
        regen = gr.Button(L("↻ Regenerate"), size="sm", elem_id=ids[0])
        clear = gr.Button(L("Clear"), size="sm", elem_id=ids[1])
        export = gr.DownloadButton(L("Export group scene"), size="sm", elem_id=ids[2], interactive=False)
        load = gr.UploadButton(L("Import group scene"), size="sm", elem_id=ids[3], file_types=[".jsonl"],
                               type="filepath")
    return regen, clear, export, load
