"""Another character (a tile, the search list, the Hub list, an added character, an imported chat) or a cleared
chat: a reply still streaming stops first, so it can neither finish in the new chat nor answer as the old
character; its message goes back into the box unless the visitor has typed something new."""

from __future__ import annotations

import gradio as gr

from chatharuhi_core.config import Settings
from chatharuhi_core.errors import ChatHaruhiError
from chatharuhi_core.i18n import _, ngettext
from chatharuhi_core.roles.hub import hub_roles
from chatharuhi_core.roles.sources import bundled_ids, load_role, open_role
from chatharuhi_core.web.chat import Conversation, reopen
from chatharuhi_core.web.chat_files import import_chat
from chatharuhi_core.web.common import WARNING_MARK
from chatharuhi_core.web.drawing import chat_messages
from chatharuhi_core.web.picker import CATCH_UP_JS, after_start_js, picker_choices, picker_entries

from .door import Later
from .reply_buttons import settled
from .visit import VIEW_SIZE, SwitchSeat, current, progress_cb, role_name, role_view, tiles


def clear_chat(conv: Conversation | None, user_role: str | None = None):
    """Back to the greeting with the same character."""
    now = current(conv)  # whom the visitor plays and their note stay; the lines of the story go
    view = role_view(Conversation(now.role_id, persona=now.persona, face=now.face, note=now.note), None, user_role)
    return view[:4] + view[6:8]  # conv, portrait, about, chat, scenes, stats


def give_back(pending: dict | None, box: str | None, conv: Conversation | None, user_role: str,
              drafts: dict | None):
    """After a switch or a clear: the chat on screen is drawn once more from the conversation, over any frame
    of a cut reply that reached the page after it. A message whose reply was cut off stays with its character:
    a clear puts it back in the box; a switch says in the new chat that the reply was stopped and keeps the
    message as that character's draft, back in the box when the visitor returns (never under someone else)."""
    conv = current(conv)
    chat = chat_messages(conv, load_role(conv.role_id), user_role)
    drafts = dict(drafts or {})
    box_free = not (box or "").strip()
    if pending and pending.get("role") not in (None, conv.role_id):
        old = role_name(pending["role"])
        drafts[pending["role"]] = pending.get("text", "")
        chat = chat + [{"role": "assistant", "metadata": {"title": _("■ Stopped")},
                        "content": _("{name}'s reply was stopped when you switched. Your message waits in {name}'s "
                                     "box when you go back.", name=old)}]
        pending = None
    if pending and box_free:
        return pending.get("text", ""), "", chat, drafts
    if box_free and conv.role_id in drafts:
        return drafts.pop(conv.role_id), "", chat, drafts
    return gr.skip(), "", chat, drafts


class Switches:
    """Another character or a cleared chat, with the app's one Settings (a Hub character is fetched with it)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def _switch(self, ref: str, at: SwitchSeat, progress: gr.Progress):
        """Open any role (a Hub one may download); on failure keep the current one, say why once, in the
        page, and put the search list back on the character still on screen. A Hub character can take a minute to
        fetch, and the visitor may chat on meanwhile: the switch then puts away the chat as it is (Later)."""
        try:
            role = open_role(ref, self.settings, progress_cb(progress))
        except ChatHaruhiError as exc:
            back = gr.Dropdown(value=at.conv.role_id) if at.conv is not None else gr.skip()
            return (*(gr.skip(),) * VIEW_SIZE, back, WARNING_MARK + str(exc))

        def step(conv: Conversation | None, chats: dict | None):
            new, chats = reopen(conv, chats, role.id)
            return (*role_view(new, chats, at.visitor), ref, "")
        return Later(step)

    def pick_role(self, evt: gr.EventData, added: list[str] | None, progress=gr.Progress(), *seat):
        """A click on a tile in the picker: bundled, or added by this visitor (the tile sends its ref)."""
        data = getattr(evt, "_data", None)  # what the tile's click sent: {"ref": ...}
        ref = data.get("ref") if isinstance(data, dict) else None
        if ref not in {e.ref for e in picker_entries(added) if not e.online}:
            return (*(gr.skip(),) * (VIEW_SIZE + 1), "")
        return self._switch(ref, SwitchSeat(*seat), progress)

    def pick_hub_role(self, index: int | None, progress=gr.Progress(), *seat):
        """A row of the folded Hub list (ChatHaruhi's catalogue): fetched on first use, from the cache after."""
        listed = hub_roles()
        if not isinstance(index, int) or not 0 <= index < len(listed):
            return (*(gr.skip(),) * (VIEW_SIZE + 1), "")
        return self._switch(listed[index].ref, SwitchSeat(*seat), progress)

    def switch_role(self, role_id: str, progress=gr.Progress(), *seat):
        """The searchable list (and the API): the character's chat opens (this session's earlier one with it,
        or a fresh one); the chat on screen is kept for when the visitor comes back."""
        return self._switch(role_id or "", SwitchSeat(*seat), progress)

    def import_chat_file(self, path: str | None, added: list[str] | None, *seat):
        """An exported chat, back exactly as it was: the character, every exchange, the visitor's name.

        A character imported earlier (not bundled) joins this visitor's picker, as if just added; the chat
        on screen is kept for when the visitor comes back to its character (`seat`: read as it is once the file
        is read, Later)."""
        skip = (*(gr.skip(),) * VIEW_SIZE, gr.skip(), gr.skip(), gr.skip())
        if not path:
            return (*skip, "")
        try:
            conv, user_name = import_chat(path, self.settings)
        except ChatHaruhiError as exc:
            return (*skip, WARNING_MARK + str(exc))
        added = list(added or [])
        if conv.role_id not in bundled_ids() and conv.role_id not in added:
            added.append(conv.role_id)
        entries = picker_entries(added)
        chooser = gr.Dropdown(choices=picker_choices(entries), value=conv.role_id)
        turns = len(conv.history)
        note = "✓ " + ngettext("Imported a chat of {n} exchange.", "Imported a chat of {n} exchanges.", turns)
        if turns > 50:
            note += " " + _("Its memory is indexed in the background; the Memories panel shows how far it has got.")

        def step(now: Conversation | None, chats: dict | None):
            _same, chats = reopen(now, chats, conv.role_id)
            return (*role_view(conv, chats, user_name), chooser, tiles(entries), added, note)
        return Later(step)

    def wire(self, page, turns: list) -> None:
        v, c, a = page.visit, page.chat, page.add
        view = c.view(v)
        cleared = [v.conv, c.portrait, c.about, c.chat, c.scenes, c.reply_stats]
        after_switch = (give_back, [v.pending, c.text, v.conv, c.user_role, v.drafts],
                        [c.text, v.pending, c.chat, v.drafts])
        stops, slow, door = {"cancels": turns, "stops": "chat"}, {"slow": True}, v.door
        switched = [
            door.on(c.hub_list.click, self.pick_hub_role, [c.hub_list, *v.seat()], view + [c.chooser, c.role_status],
                    api_name=False, **stops, **slow),
            door.on(c.picker.click, self.pick_role, [v.added, *v.seat()], view + [c.chooser, c.role_status],
                    api_name=False, **stops, **slow),
            door.on(c.chooser.input, self.switch_role, [c.chooser, *v.seat()], view + [c.chooser, c.role_status],
                    api_name="switch_role", js=after_start_js(2 + len(v.seat())), **stops, **slow),  # door, list, seat
            door.on(a.add_btn.click, a.add_role, [*a.inputs(), v.added, *v.seat()],
                    view + [c.chooser, c.picker, v.added, a.add_status, page.tabs, c.role_status, a.upload],
                    api_name="add_character", **stops, **slow),
            door.on(c.import_btn.upload, self.import_chat_file, [c.import_btn, v.added, *v.seat()],
                    view + [c.chooser, c.picker, v.added, c.feedback_note], api_name="import_chat", **stops, **slow),
            door.on(c.clear_btn.click, clear_chat, [v.conv, v.visitor], cleared, **stops),
            door.on(c.chat.clear, clear_chat, [v.conv, v.visitor], cleared, api_name=False, **stops),
        ]
        avatar = (c.set_avatar, v.conv, [c.chat, c.scene_picture])
        switched[1].then(None, None, None, js=CATCH_UP_JS, api_name=False, queue=False)  # the last tile clicked
        buttons = page.turns.reply_buttons(page)
        for ev in switched:
            ev.then(*after_switch, api_name=False, show_progress="hidden").then(*avatar, api_name=False)
            door.on(ev.then, settled, None, buttons, queue=False, api_name=False, show_progress="hidden",
                    hands_visit=True)
