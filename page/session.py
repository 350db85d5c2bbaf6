"""A visit's start, and what is kept for the next one: this browser's local storage, or, for a visitor signed in
on a Space with persistent storage, their own folder there (never a key or a token)."""

from __future__ import annotations

import logging

import gradio as gr

from chatharuhi_core.chat.engines import engine_names
from chatharuhi_core.config import Settings
from chatharuhi_core.errors import ChatHaruhiError
from chatharuhi_core.i18n import _, language, ngettext
from chatharuhi_core.roles.sources import bundled_ids, load_role
from chatharuhi_core.web.browser_store import browser_secret, in_flight, pack, unpack
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.drawing import chat_messages
from chatharuhi_core.web.picker import SESSION_READY_JS, picker_choices, picker_entries
from chatharuhi_core.web.signin import engine_for, sign_in_note
from chatharuhi_core.web.user_store import account_id, forget_user, read_user, welcome_back, write_user

from .chat_tab import hub_list_in
from .controls_panel import story_fields, story_key
from .settings_panel import choice, engine_view
from .visit import VIEW_SIZE, role_name, role_view, scene_name, tiles

log = logging.getLogger("chatharuhi.app")


def _remembered(ref: str | None) -> Conversation | None:
    """The character this browser picked last time, when it can still be opened without the network."""
    if not ref:
        return None
    try:
        return Conversation(load_role(ref).id)
    except ChatHaruhiError:
        return None


def _opens(role_id: str) -> bool:
    """Whether a character kept in a browser still opens here (bundled, or imported into this server's cache)."""
    try:
        load_role(role_id)
        return True
    except ChatHaruhiError:
        return False


def remember_role(conv: Conversation | None):
    """What local storage keeps: the id of the character on screen (an imported one opens from the cache)."""
    return conv.role_id if conv is not None else gr.skip()


class Session:
    """This browser's storage (sealed with the server's key) and the events that fill and keep it, with the app's one
    Settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def render(self) -> Session:
        sealed = browser_secret(self.settings)  # the same key after a restart: browsers' values still open
        self.last_role = gr.BrowserState("", storage_key="chatharuhi-last-role", secret=sealed)  # the last pick
        self.saved_name = gr.BrowserState("", storage_key="chatharuhi-visitor-name", secret=sealed)  # their name
        self.saved_chats = gr.BrowserState({}, storage_key="chatharuhi-chats", secret=sealed)  # chats, for a reload
        # whom the visitor plays, when they asked for it in every new chat
        self.saved_persona = gr.BrowserState("", storage_key="chatharuhi-persona", secret=sealed)
        # the message whose reply is streaming: a reload meanwhile gives it back (session.cut_by_reload)
        self.saved_pending = gr.BrowserState("", storage_key="chatharuhi-pending", secret=sealed)
        return self

    def wire(self, page) -> None:
        v, c, s = page.visit, page.chat, page.chat.panel
        view = c.view(v)
        # the visit's start fills every panel at once: no "processing" veil over them (the page is usable meanwhile)
        kept = [self.last_role, self.saved_name, self.saved_chats, self.saved_pending, self.saved_persona]
        story = c.controls
        v.door.on(page.demo.load, self.start_session, kept,
                  view + [c.chooser, c.picker, v.added, s.engine, *s.view(), s.fold, page.group.user_role,
                          c.sign_in, c.role_status, s.base_url, c.speak_on, s.forget_me, v.drafts, v.story_key,
                          story.persona, story.persona_default, story.note, story.depth, story.face, c.hub_list],
                  show_progress="hidden").then(
            lambda name: (name or "").strip(), self.saved_name, v.visitor, api_name=False,
            show_progress="hidden").then(cut_by_reload, [v.conv, c.user_role, v.drafts, c.text],
                                         [c.text, c.chat, v.drafts], api_name=False, show_progress="hidden").then(
            c.set_avatar, v.conv, [c.chat, c.scene_picture], api_name=False,
            show_progress="hidden").then(None, js=SESSION_READY_JS, api_name=False)
        v.conv.change(remember_role, v.conv, self.last_role, api_name=False, show_progress="hidden")
        # a reply, a switch, a clear, an import, a memory; another engine or any of its settings (never the key).
        # One event for all of them: separate ones could finish out of order and leave an older record behind.
        kept = s.fields(key=False)
        listened = [x for x in kept.values() if x is not s.model] + [s.model_set]  # not the field's own change
        gr.on([x.change for x in (v.conv, *listened, c.speak_on)], self.keep_in_browser,
              [v.conv, v.chats, v.added, c.speak_on], self.saved_chats, api_name=False, inputs_kwargs=kept,
              show_progress="hidden")
        v.pending.change(lambda pending: in_flight(pending) or "", v.pending, self.saved_pending, queue=False,
                         api_name=False, show_progress="hidden")
        v.door.on(s.forget_me.click, self.forget_me, [v.conv, v.visitor],
                  view + [c.chooser, c.picker, v.added, self.saved_chats, c.role_status], api_name="forget_me",
                  stops="chat")

    def start_session(self, last_role: str | None = None, user_role: str | None = None, saved: dict | None = None,
                      pending: object = None, persona: str | None = None, profile: gr.OAuthProfile | None = None):
        """A new visitor, or one back after a reload: the chats this browser kept (local storage) with each
        character, the characters they added, the one they picked last (else the first bundled one), the name
        they gave themselves, and the engine they chose (else the deployment's; for a visitor signed in with
        Hugging Face where the operator chose none, the engine their own account pays for)."""
        settings = self.settings
        account = account_id(profile) if settings.user_chats else None
        own = read_user(settings.user_chats, account) if account else None  # kept on the Space for this account
        # a first sign-in here: the chats this browser kept become the account's
        kept = unpack(own if own is not None else saved, _opens, set(engine_names()))
        note = kept.note or (welcome_back(profile.name or profile.username, kept, role_name) if own else "")
        conv = kept.chats.pop(last_role, None) if last_role else None
        conv = conv or _remembered(last_role) or Conversation(bundled_ids()[0])
        # the Story panel's fields come with the rest (its own fill, after, would undo a field changed meanwhile)
        conv, story = story_fields(conv, persona)
        added = list(kept.added)
        if conv.role_id not in bundled_ids() and conv.role_id not in added:
            added.append(conv.role_id)
        entries = picker_entries(added)
        chooser = gr.Dropdown(choices=picker_choices(entries), value=conv.role_id)
        engine = kept.engine or engine_for(settings, profile)
        panel = kept.settings  # the engine's settings as they were left (only with the engine they were for)
        return (*role_view(conv, kept.chats, user_role), chooser, tiles(entries), added, engine,
                *engine_view(engine, settings, panel), panel.get("fold", settings.fold_prompt), scene_name(user_role),
                sign_in_note(settings, profile, engine), note, panel.get("base_url", ""), panel.get("speak", False),
                gr.Button(visible=bool(account)), _cut_off(pending), story_key(conv), *story, hub_list_in(language()))

    def keep_in_browser(self, profile: gr.OAuthProfile | None, conv: Conversation | None, chats: dict | None,
                        added: list[str] | None, speak: bool, **panel):
        """What this browser keeps for the next visit (never a key or a token): its chats, added characters, engine
        and the engine's settings (`panel`: as a browser keeps them). A visitor signed in on a Space with persistent
        storage has them kept under their own folder there instead, and their browser keeps nothing."""
        if conv is None:
            return gr.skip()
        engine = choice(panel)
        record = pack(conv, chats, added, engine.engine, {**engine.kept(), "speak": bool(speak)})
        settings = self.settings
        account = account_id(profile) if settings.user_chats else None
        if account is None:
            return record
        if not (record["chats"] or record["added"]) and read_user(settings.user_chats, account) is None:
            return {}  # nothing to keep yet (or just forgotten): no folder is made for settings alone
        try:
            write_user(settings.user_chats, account, record)
        except OSError as exc:  # storage full or read-only: the browser keeps it, as for everyone else
            log.warning("could not keep a signed-in visitor's chats on this Space (%s); kept in their browser",
                        type(exc).__name__)
            return record
        return {}

    def forget_me(self, conv: Conversation | None, user_role: str | None, profile: gr.OAuthProfile | None = None):
        """"Forget me": everything this Space kept for the signed-in visitor is deleted, and the session starts over
        on the first character with no chats and no added characters."""
        settings = self.settings
        account = account_id(profile) if settings.user_chats else None
        if account is None:
            return (*(gr.skip(),) * (VIEW_SIZE + 4), _("Sign in with Hugging Face first: only then does this Space keep "
                                                              "chats for you."))
        gone = forget_user(settings.user_chats, account)
        conv = Conversation(bundled_ids()[0])
        entries = picker_entries([])
        note = "✓ " + ngettext("Forgotten: this Space no longer keeps anything of yours ({n} chat deleted).",
                               "Forgotten: this Space no longer keeps anything of yours ({n} chats deleted).", gone)
        return (*role_view(conv, {}, user_role), gr.Dropdown(choices=picker_choices(entries), value=conv.role_id),
                tiles(entries), [], {}, note)


def cut_by_reload(conv: Conversation | None, user_role: str, drafts: dict | None, box: str | None):
    """A reload while a reply streamed: the message is back in the box (the chat with its character on screen)
    and the chat says the reply was cut off; kept as that character's draft when another one is on screen."""
    drafts = dict(drafts or {})
    if conv is None or conv.role_id not in drafts or (box or "").strip():
        return gr.skip(), gr.skip(), gr.skip()
    text = drafts.pop(conv.role_id)
    if conv.history and conv.history[-1].text == text:  # its reply was kept after all: nothing was cut off
        return gr.skip(), gr.skip(), drafts
    shown = chat_messages(conv, load_role(conv.role_id), user_role)
    said = {"role": "assistant", "metadata": {"title": _("■ Cut off")},
            "content": _("The reply to your last message was cut off when the page reloaded. Your message is back "
                         "in the box: send it again.")}
    return text, shown + [said], drafts


def _cut_off(pending: object) -> dict:
    """The drafts a visit starts with: the message whose reply a reload cut off, with its character (when it
    still opens here)."""
    flying = in_flight(pending)
    return {flying["role"]: flying["text"]} if flying and _opens(flying["role"]) else {}
