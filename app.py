"""ChatHaruhi: the Gradio page. Layout and event wiring only; the work is in chatharuhi_core."""

from __future__ import annotations

import inspect
import json
import logging
import os
import threading
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home from a Space or laptop

import gradio as gr  # noqa: E402
from gradio.data_classes import FileData  # noqa: E402

from chatharuhi_core.chat.engines import default_budgets, engine_info, engine_names  # noqa: E402
from chatharuhi_core.chat.engines.local_model import on_gpu  # noqa: E402
from chatharuhi_core.chat.voice import speak  # noqa: E402
from chatharuhi_core.config import Budgets, Settings, gpu_runtime  # noqa: E402
from chatharuhi_core.errors import ChatHaruhiError  # noqa: E402
from chatharuhi_core.roles.hub import hub_roles  # noqa: E402
from chatharuhi_core.roles.placeholders import has_placeholder  # noqa: E402
from chatharuhi_core.roles.safety import DEFAULT_LIMITS  # noqa: E402
from chatharuhi_core.roles.sources import accepted_suffixes, bundled_ids, load_role, open_role  # noqa: E402
from chatharuhi_core.web.browser_store import browser_secret, pack, unpack  # noqa: E402
from chatharuhi_core.web.chat import (
    Conversation,
    TurnGate,
    answers_again,
    chat_messages,
    describe_role,
    edit_message,
    export_chat,
    feedback_values,
    greeting_messages,
    import_chat,
    rate_reply,
    read_ahead,
    scene_image_for,
    scenes_markdown,
    stream_turn,
)
from chatharuhi_core.web.common import (
    WARNING_MARK,
    EnginePanel,
    engine_note,
    message_text,
    portrait_html,
    portrait_of,
    scene_picture_html,
)
from chatharuhi_core.web.memory import (  # noqa: E402
    forget_memory,
    memory_choices,
    memory_markdown,
    pin_last_message,
    remember_fact,
    rewrite_memory,
)
from chatharuhi_core.web.picker import PICKER_JS, add_character, picker_choices, picker_entries, tiles_html
from chatharuhi_core.web.signin import engine_for, language_warnings, sign_in_note, token_of
from chatharuhi_core.web.tools import ToolError, chat_with_character, list_characters, search_scenes, speak_line
from chatharuhi_core.web.user_store import account_id, forget_user, read_user, welcome_back, write_user
from scene_page import build_scene_tab, cast_choices  # noqa: E402

ASSETS = Path(__file__).resolve().parent / "assets"
FEEDBACK_HINT = ("Rate a reply with the thumbs, or correct it with the pencil: your feedback is saved on this "
                 "server to improve the character. · 对回复的赞、踩和修改会被保存，用于改进角色。")
log = logging.getLogger("chatharuhi.app")


VIEW_SIZE = 9  # _role_view's outputs
# Gradio runs each step of a streaming event in a worker thread; a visitor waiting in an engine's lane (chat/lanes.py)
# holds one while it waits, so 32 visitors in line on the local model would leave Gradio's default 40 too few for
# everyone else's clicks. A waiting thread costs little (it sleeps on a condition).
WORKER_THREADS = 128


def _role_view(conv: Conversation, chats: dict | None = None, visitor: str | None = None):
    """Everything that changes with the character: portrait, text, chat, examples, name, and the
    visitor's other chats (kept for when they come back to a character). `visitor` is the name the
    visitor typed for themselves; without one, the character's usual partner (Watson for Holmes)."""
    role = load_role(conv.role_id)
    user_name = (visitor or "").strip() or role.visitor_name
    return (
        conv,
        portrait_html(role),
        describe_role(role, user_name),
        chat_messages(conv, role, user_name),
        gr.Dataset(samples=[[q] for q in role.examples], visible=bool(role.examples)),
        user_name,
        scenes_markdown(conv),
        "",  # the last reply's engine and speed
        chats if chats is not None else gr.skip(),
    )


def _reopen(current: Conversation | None, chats: dict | None, role_id: str) -> tuple[Conversation, dict]:
    """Put the chat on screen away (whole exchanges only: a reply cut off by the switch was never
    added) and bring out the chat with `role_id`: the one this visitor had before, or a new one."""
    chats = dict(chats or {})
    if current is not None:
        if current.history:
            chats[current.role_id] = current
        else:
            chats.pop(current.role_id, None)
    return chats.get(role_id) or Conversation(role_id), chats


def _current(conv: Conversation | None) -> Conversation:
    """The visitor's conversation; before the session has loaded, the page's first character, whose
    greeting is drawn into the page."""
    return conv if conv is not None else Conversation(bundled_ids()[0])


def _tiles(entries) -> str:
    """The picker's tiles: bundled characters and the visitor's own; the Hub's are in their own folded list."""
    return tiles_html([e for e in entries if not e.online])


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


def start_session(last_role: str | None = None, visitor: str | None = None, saved: dict | None = None,
                  profile: gr.OAuthProfile | None = None):
    """A new visitor, or one back after a reload: the chats this browser kept (local storage) with each
    character, the characters they added, the one they picked last (else the first bundled one), the name
    they gave themselves, and the engine they chose (else the deployment's; for a visitor signed in with
    Hugging Face where the operator chose none, the engine their own account pays for)."""
    settings = Settings.from_env()
    account = account_id(profile) if settings.user_chats else None
    own = read_user(settings.user_chats, account) if account else None  # kept on the Space for this account
    # a first sign-in here: the chats this browser kept become the account's
    kept = unpack(own if own is not None else saved, _opens, set(engine_names()))
    note = kept.note or (welcome_back(profile.name or profile.username, kept, _role_name) if own else "")
    conv = kept.chats.pop(last_role, None) if last_role else None
    conv = conv or _remembered(last_role) or Conversation(bundled_ids()[0])
    added = list(kept.added)
    if conv.role_id not in bundled_ids() and conv.role_id not in added:
        added.append(conv.role_id)
    entries = picker_entries(added)
    chooser = gr.Dropdown(choices=picker_choices(entries), value=conv.role_id)
    engine = kept.engine or engine_for(settings, profile)
    panel = kept.settings  # the engine's settings as they were left (only with the engine they were for)
    return (*_role_view(conv, kept.chats, visitor), chooser, _tiles(entries), added, engine,
            *change_engine(engine, panel), panel.get("fold", settings.fold_prompt), scene_name(visitor),
            sign_in_note(settings, profile, engine), note, panel.get("base_url", ""), panel.get("speak", False),
            gr.Button(visible=bool(account)))


def _role_name(role_id: str) -> str:
    try:
        return load_role(role_id).name
    except ChatHaruhiError:
        return role_id


def keep_in_browser(conv: Conversation | None, chats: dict | None, added: list[str] | None, engine: str | None,
                    model: str | None = None, base_url: str | None = None, story_tokens: float | None = None,
                    history_tokens: float | None = None, fold: bool = False, memory_tokens: float | None = None,
                    recall_tokens: float | None = None, speak: bool = False,
                    profile: gr.OAuthProfile | None = None):
    """What this browser keeps for the next visit (never a key or a token): its chats, added characters, engine
    and the engine's settings. A visitor signed in on a Space with persistent storage has them kept under their
    own folder there instead, and their browser keeps nothing."""
    if conv is None:
        return gr.skip()
    panel = {"model": model or "", "base_url": base_url, "story_tokens": story_tokens,
             "history_tokens": history_tokens, "memory_tokens": memory_tokens, "recall_tokens": recall_tokens,
             "fold": bool(fold), "speak": bool(speak)}
    record = pack(conv, chats, added, engine, panel)
    settings = Settings.from_env()
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


def forget_me(conv: Conversation | None, visitor: str | None, gate: TurnGate | None,
              profile: gr.OAuthProfile | None = None):
    """"Forget me": everything this Space kept for the signed-in visitor is deleted, and the session starts over
    on the first character with no chats and no added characters."""
    settings = Settings.from_env()
    account = account_id(profile) if settings.user_chats else None
    if account is None:
        return (*(gr.skip(),) * (VIEW_SIZE + 4), "Sign in with Hugging Face first: only then does this Space keep "
                "chats for you. · 请先登录。")
    _close(gate)
    gone = forget_user(settings.user_chats, account)
    conv = Conversation(bundled_ids()[0])
    entries = picker_entries([])
    note = (f"✓ Forgotten: this Space no longer keeps anything of yours ({gone} chat{'s' if gone != 1 else ''} "
            "deleted). · 已删除你在此保存的全部对话。")
    return (*_role_view(conv, {}, visitor), gr.Dropdown(choices=picker_choices(entries), value=conv.role_id),
            _tiles(entries), [], {}, note)


def language_view(conv: Conversation | None, engine: str, model: str | None, base_url: str | None,
                  profile: gr.OAuthProfile | None = None):
    """Before the first message: a warning, and the offline engine offered, when the chosen model cannot
    speak the character's language (the bundled SmolLM2 and 孙悟空)."""
    panel = EnginePanel(engine or "script", model or "", base_url or "")
    found = language_warnings(panel, [load_role(_current(conv).role_id)], Settings.from_env(), profile)
    if not found:
        return gr.Markdown(value="", visible=False), gr.Button(visible=False)
    return gr.Markdown(value=WARNING_MARK + found[0][1], visible=True), gr.Button(visible=True)


def remember_name(user_name: str, in_scene: str, conv: Conversation | None):
    """The name in the story changed (typed, pasted, filled in by the browser, or set by a switch): unless it
    is just the character's usual partner, it is the visitor's own and stays theirs when they switch
    character, in the Scene tab, and after a reload (this browser's local storage)."""
    name = (user_name or "").strip()
    mine = "" if name == load_role(_current(conv).role_id).visitor_name else name
    scene = scene_name(mine)
    return mine, (scene if scene != (in_scene or "").strip() else gr.skip())


def name_from_scene(in_scene: str, in_chat: str):
    """The name typed in the Scene tab is the visitor's name in the chat too."""
    name = (in_scene or "").strip()
    mine = "" if name == scene_name("") else name
    return mine, (mine if mine and mine != (in_chat or "").strip() else gr.skip())


def give_back(pending: dict | None, box: str | None, conv: Conversation | None, user_name: str,
              drafts: dict | None):
    """After a switch or a clear: the chat on screen is drawn once more from the conversation, over any frame
    of a cut reply that reached the page after it. A message whose reply was cut off stays with its character:
    a clear puts it back in the box; a switch says in the new chat that the reply was stopped and keeps the
    message as that character's draft, back in the box when the visitor returns (never under someone else)."""
    conv = _current(conv)
    chat = chat_messages(conv, load_role(conv.role_id), user_name)
    drafts = dict(drafts or {})
    box_free = not (box or "").strip()
    if pending and pending.get("role") not in (None, conv.role_id):
        old = _role_name(pending["role"])
        drafts[pending["role"]] = pending.get("text", "")
        chat = chat + [{"role": "assistant", "metadata": {"title": "⏹ Stopped · 已停止"},
                        "content": f"{old}'s reply was stopped when you switched. Your message waits in {old}'s "
                                   f"box when you go back. · {old}的回复已停止；切回去时，你的话还在输入框里。"}]
        pending = None
    if pending and box_free:
        return pending.get("text", ""), "", chat, drafts
    if box_free and conv.role_id in drafts:
        return drafts.pop(conv.role_id), "", chat, drafts
    return gr.skip(), "", chat, drafts


def remember_role(conv: Conversation | None):
    """What local storage keeps: the id of the character on screen (an imported one opens from the cache)."""
    return conv.role_id if conv is not None else gr.skip()


def _progress_cb(progress: gr.Progress):
    return lambda done, total: progress((done, total), desc="Embedding scenes · 正在嵌入场景", unit="scenes")


def _close(gate: TurnGate | None) -> None:
    """A switch or a cleared chat: the reply still streaming may not draw in the chat any more."""
    if gate is not None:
        gate.close()


def _switch(ref: str, conv: Conversation | None, chats: dict | None, visitor: str | None, gate: TurnGate | None,
            progress: gr.Progress):
    """Open any role (a Hub one may download); on failure keep the current one, say why once, in the
    page, and put the search list back on the character still on screen."""
    _close(gate)
    try:
        role = open_role(ref, Settings.from_env(), _progress_cb(progress))
    except ChatHaruhiError as exc:
        back = gr.Dropdown(value=conv.role_id) if conv is not None else gr.skip()
        return (*(gr.skip(),) * VIEW_SIZE, back, WARNING_MARK + str(exc))
    new, chats = _reopen(conv, chats, role.id)
    return (*_role_view(new, chats, visitor), ref, "")


def scene_name(visitor: str | None) -> str:
    """The visitor's name in a scene: the one they gave themselves, never a character's usual partner."""
    return (visitor or "").strip() or "You"


def pick_role(added: list[str] | None, conv: Conversation | None, chats: dict | None, visitor: str | None,
              gate: TurnGate | None, evt: gr.EventData, progress=gr.Progress()):
    """A click on a tile in the picker: bundled, or added by this visitor (the tile sends its ref)."""
    data = getattr(evt, "_data", None)  # what the tile's click sent: {"ref": ...}
    ref = data.get("ref") if isinstance(data, dict) else None
    if ref not in {e.ref for e in picker_entries(added) if not e.online}:
        _close(gate)
        return (*(gr.skip(),) * (VIEW_SIZE + 1), "")
    return _switch(ref, conv, chats, visitor, gate, progress)


def pick_hub_role(index: int | None, conv: Conversation | None, chats: dict | None, visitor: str | None,
                  gate: TurnGate | None = None, progress=gr.Progress()):
    """A row of the folded Hub list (ChatHaruhi's catalogue): fetched on first use, from the cache after."""
    listed = hub_roles()
    if not isinstance(index, int) or not 0 <= index < len(listed):
        _close(gate)
        return (*(gr.skip(),) * (VIEW_SIZE + 1), "")
    return _switch(listed[index].ref, conv, chats, visitor, gate, progress)


def switch_role(role_id: str, conv: Conversation | None = None, chats: dict | None = None,
                visitor: str | None = None, gate: TurnGate | None = None, progress=gr.Progress()):
    """The searchable list (and the API): the character's chat opens (this session's earlier one with it,
    or a fresh one); the chat on screen is kept for when the visitor comes back."""
    return _switch(role_id or "", conv, chats, visitor, gate, progress)


def add_role(hub_id: str, upload: str | None, name: str, added: list[str] | None, conv: Conversation | None = None,
             chats: dict | None = None, visitor: str | None = None, gate: TurnGate | None = None,
             progress=gr.Progress()):
    """The 'add a character' tab: import, then show the new role in this visitor's picker."""
    _close(gate)
    added = list(added or [])
    try:
        role = add_character(hub_id, upload, name, Settings.from_env(), _progress_cb(progress))
    except ChatHaruhiError as exc:
        return (*(gr.skip(),) * VIEW_SIZE, gr.skip(), gr.skip(), added, WARNING_MARK + str(exc), gr.skip(), "",
                gr.skip())
    if role.id not in added and role.id not in bundled_ids():
        added.append(role.id)
    entries = picker_entries(added)
    status = (f"✓ Added **{role.name}** ({len(role.stories)} scenes). It is in your picker now. "
              f"· 已添加，可在角色列表中找到。")
    chooser = gr.Dropdown(choices=picker_choices(entries), value=role.id)
    gallery = _tiles(entries)
    new, chats = _reopen(conv, chats, role.id)
    return (*_role_view(new, chats, visitor), chooser, gallery, added, status, gr.Tabs(selected="chat-tab"), status,
            None)  # the upload box is emptied for the next file


def _scene_picture(role, reply: str):
    found = scene_image_for(role, reply, Settings.from_env())
    if found is None:
        return gr.HTML(value="", visible=False)
    return gr.HTML(value=scene_picture_html(*found), visible=True)


def set_avatar(conv: Conversation | None):
    """The portrait as the avatar of the chat bubbles, the thumbs of rated replies (an imported chat)
    and the role's first scene picture: a follow-up, so the API outputs stay plain."""
    if conv is None:
        return gr.skip(), gr.skip()
    role = load_role(conv.role_id)
    reply = conv.history[-1].reply if conv.history else ""
    chat = gr.Chatbot(avatar_images=(None, portrait_of(role)), feedback_value=feedback_values(conv, role))
    return chat, _scene_picture(role, reply)


def clear_chat(conv: Conversation | None, visitor: str | None = None, gate: TurnGate | None = None):
    """Back to the greeting with the same character."""
    _close(gate)
    view = _role_view(Conversation(_current(conv).role_id), None, visitor)
    return view[:4] + view[6:8]  # conv, portrait, about, chat, scenes, stats


def rename_visitor(conv: Conversation | None, user_name: str):
    """The visitor typed a name in the story: the greeting and description say it (a card's {{user}})."""
    if conv is None:
        return gr.skip(), gr.skip()
    role = load_role(conv.role_id)
    if not any(has_placeholder(t) for t in (role.greeting, role.description)):
        return gr.skip(), gr.skip()
    chat = gr.Chatbot(value=chat_messages(conv, role, user_name), feedback_value=feedback_values(conv, role))
    return describe_role(role, user_name), chat


def change_engine(engine: str, kept: dict | None = None):
    """The settings an engine needs: a model field (its hint, and the models it suggests, such as the
    fine-tuned ones found on disk; free text still goes), a server's URL, key and fold, and the
    prompt budgets sized to the engine; `kept`: the model and budgets this browser kept for it."""
    info = engine_info(engine)
    settings = Settings.from_env()
    kept = kept or {}
    choices = info.suggest_models(settings) if info.suggest_models else []
    model = gr.Dropdown(choices=choices, value=kept.get("model", ""), visible=info.uses_model, info=info.model_hint)
    key = gr.Textbox(label=f"{info.key_label} (this session only, never stored)")
    budgets = default_budgets(engine, settings)
    return (engine_note(engine), model, gr.Group(visible=info.uses_server), key,
            kept.get("story_tokens", budgets.story_tokens), kept.get("history_tokens", budgets.history_tokens),
            kept.get("memory_tokens", budgets.memory_tokens), kept.get("recall_tokens", budgets.recall_tokens))


def _spoken(conv: Conversation, text: str):
    """Audio and a note for the page; the reply stays text when no voice is available."""
    speech = speak(load_role(conv.role_id), text, Settings.from_env())
    return (str(speech.path) if speech.path else None), speech.notice


def reveal_player(audio: str | None):
    """The voice player appears once it has something to play: an empty audio player is the costliest
    part of the page's first paint (about a quarter of a second here, bench/first_screen.py)."""
    return gr.Audio(visible=True) if audio else gr.skip()


def _turn(gate, conv, text, user_role, engine, model, base_url, api_key, story_tokens, history_tokens, fold,
          regenerate, memory_tokens=None, recall_tokens=None, signed_in=None):
    """Stream one reply: the chat, the message box, the conversation and the stats line only.

    Mid-stream frames carry the chat alone. Gradio rebuilds a component (and its API schema) for
    every `gr.skip()` it is given, so per-frame skips of the other outputs were most of the app's
    CPU under load; the scenes, picture and voice come once, from `after_turn`.
    """
    conv = _current(conv)
    panel = EnginePanel(engine, model, base_url, api_key, story_tokens, history_tokens, bool(fold), memory_tokens,
                        recall_tokens, signed_in=token_of(signed_in))
    gate = gate if gate is not None else TurnGate()
    ticket = gate.open()
    first = True
    for up in stream_turn(conv, text, user_role, panel, Settings.from_env(), regenerate=regenerate):
        if not gate.is_open(ticket):  # the visitor switched character or cleared the chat meanwhile
            return
        if up.error:
            gr.Warning(up.error)
        # A sent message leaves the box with the first frame, and whatever the visitor types while the
        # reply streams is theirs: the box is never emptied again. After a failure the words come back.
        # A regenerate leaves the box alone.
        if regenerate:
            box = gr.skip()
        elif up.error:
            box = text
        else:
            box = "" if first else gr.skip()
        state = up.conversation if up.done else gr.skip()
        status = up.status if (up.status or up.done or first) else gr.skip()
        # the message in flight, put back in the box if the visitor switches character before the reply is done
        pending = "" if (up.done or regenerate) else ({"role": conv.role_id, "text": text} if first else gr.skip())
        first = False
        yield up.messages, box, state, status, pending


def read_ahead_for(conv, user_role, engine, model, base_url, story_tokens, history_tokens, fold, memory_tokens=None,
                   recall_tokens=None):
    """A character opened, a conversation taken up or an engine picked: the local model loads and reads how the
    next prompt starts while the visitor types (the engines that read nothing ahead do nothing here)."""
    if conv is None:
        return
    panel = EnginePanel(engine, model, base_url, "", story_tokens, history_tokens, bool(fold), memory_tokens,
                        recall_tokens)
    read_ahead(conv, user_role, panel, Settings.from_env())


def after_turn(conv: Conversation | None, speak_on: bool, handled: str | None):
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
    picture = _scene_picture(load_role(conv.role_id), reply)
    audio, voice_note = _spoken(conv, reply) if speak_on else (gr.skip(), gr.skip())
    return scenes_markdown(conv), audio, voice_note, picture, key


def send(gate, conv, text, user_role, engine, model, base_url, api_key, story_tokens, history_tokens, fold=False,
         memory_tokens=None, recall_tokens=None, signed_in: gr.OAuthToken | None = None):
    """`signed_in` is the visitor's Hugging Face sign-in, handed in by Gradio from their session (None when
    signed out): the key of the engine their account pays for, for this reply only."""
    yield from _turn(gate, conv, text, user_role, engine, model, base_url, api_key, story_tokens, history_tokens,
                     fold, False, memory_tokens, recall_tokens, signed_in)


def regenerate(gate, conv, text, user_role, engine, model, base_url, api_key, story_tokens, history_tokens,
               fold=False, memory_tokens=None, recall_tokens=None, signed_in: gr.OAuthToken | None = None):
    yield from _turn(gate, conv, text, user_role, engine, model, base_url, api_key, story_tokens, history_tokens,
                     fold, True, memory_tokens, recall_tokens, signed_in)


EXPORT_DIR_NAME = "chatharuhi-exports"
EXPORT_MAX_AGE_S = 3600


def _export_dir() -> Path:
    """A fresh folder for an exported chat; files older than an hour are removed (Gradio keeps its own copy)."""
    import tempfile
    import time

    folder = Path(tempfile.gettempdir()) / EXPORT_DIR_NAME
    folder.mkdir(exist_ok=True)
    now = time.time()
    marker = folder / ".pruned"  # prune at most once a minute, not on every turn of every visitor
    if marker.exists() and now - marker.stat().st_mtime < 60:
        return Path(tempfile.mkdtemp(dir=folder))
    marker.touch()
    for old in folder.glob("*/*.jsonl"):
        try:
            if now - old.stat().st_mtime > EXPORT_MAX_AGE_S:
                old.unlink()
                old.parent.rmdir()
        except OSError:
            pass
    return Path(tempfile.mkdtemp(dir=folder))


def refresh_export(conv: Conversation | None, user_role: str):
    """Keep the export button's file in step with the conversation, so one click downloads it."""
    if conv is None or not conv.history:
        return gr.DownloadButton(value=None, interactive=False)
    return gr.DownloadButton(value=str(export_chat(conv, user_role, _export_dir())), interactive=True)


def import_chat_file(path: str | None, added: list[str] | None, conv: Conversation | None = None,
                     chats: dict | None = None, gate: TurnGate | None = None):
    """An exported chat, back exactly as it was: the character, every exchange, the visitor's name.

    A character imported earlier (not bundled) joins this visitor's picker, as if just added; the chat
    on screen is kept for when the visitor comes back to its character."""
    _close(gate)
    skip = (*(gr.skip(),) * VIEW_SIZE, gr.skip(), gr.skip(), gr.skip())
    if not path:
        return (*skip, "")
    current = conv
    try:
        conv, user_name = import_chat(path)
    except ChatHaruhiError as exc:
        return (*skip, WARNING_MARK + str(exc))
    _, chats = _reopen(current, chats, conv.role_id)
    added = list(added or [])
    if conv.role_id not in bundled_ids() and conv.role_id not in added:
        added.append(conv.role_id)
    entries = picker_entries(added)
    chooser = gr.Dropdown(choices=picker_choices(entries), value=conv.role_id)
    gallery = _tiles(entries)
    turns = len(conv.history)
    note = f"✓ Imported a chat of {turns} exchange{'s' if turns != 1 else ''}. · 已导入对话。"
    if turns > 50:
        note += " Its memory is indexed in the background; the Memories panel shows how far it has got."
    return (*_role_view(conv, chats, user_name), chooser, gallery, added, note)


def rate(conv: Conversation | None, evt: gr.LikeData):
    if conv is None:
        return gr.skip(), gr.skip()
    return rate_reply(conv, evt.index, evt.liked, Settings.from_env())


def edit(conv: Conversation | None, user_name: str, evt: gr.EditData):
    """A corrected reply replaces the old one (and is saved as feedback); an edited message of the visitor's
    replaces their words, and when it is their last one the character answers it again (`answer_again`)."""
    conv = _current(conv)
    asked = conv.history[-1].text if conv.history else None
    conv, note = edit_message(conv, evt.index, evt.value, Settings.from_env())
    role = load_role(conv.role_id)
    chat = gr.Chatbot(value=chat_messages(conv, role, user_name), feedback_value=feedback_values(conv, role))
    return conv, chat, note, answers_again(conv, role, evt.index) and conv.history[-1].text != asked


def answer_again(again: bool, gate, conv, text, user_role, engine, model, base_url, api_key, story_tokens, history_tokens,
                 fold=False, memory_tokens=None, recall_tokens=None, signed_in: gr.OAuthToken | None = None):
    """After the visitor edited their last message: a new reply to it, streamed like Regenerate."""
    if not again:  # an edit that changed nothing the character must answer: the chat stays as it is
        yield (gr.skip(),) * 5
        return
    yield from _turn(gate, conv, text, user_role, engine, model, base_url, api_key, story_tokens, history_tokens,
                     fold, True, memory_tokens, recall_tokens, signed_in)


def speak_last(conv: Conversation | None, user_name: str = ""):
    """The speak button: read the newest reply (or the greeting) aloud."""
    conv = _current(conv)
    role = load_role(conv.role_id)
    greeting = greeting_messages(role, user_name)
    text = conv.history[-1].reply if conv.history else (greeting[0]["content"] if greeting else "")
    return _spoken(conv, text) if text else (gr.skip(), "Nothing to read aloud yet.")


def speak_clicked(conv: Conversation | None, evt: gr.SelectData):
    """A click on any message of the character reads that one aloud (the page's first character
    before the session has loaded: its greeting is drawn into the page)."""
    if not isinstance(evt.value, (str, dict, list)):
        return gr.skip(), gr.skip()
    return _spoken(_current(conv), message_text(evt.value))


def _settings_panel() -> SimpleNamespace:
    """The engine and its settings, folded under the picker: a server's URL and key only for engines with one."""
    budgets = Budgets()
    engines = [(engine_info(n).label, n) for n in engine_names()]
    with gr.Accordion("Settings · 设置", open=False, elem_id="settings"):
        if Settings.from_env().sign_in:  # a Space with `hf_oauth: true` (elsewhere Gradio would fake a sign-in)
            gr.LoginButton("Sign in with Hugging Face · 登录", logout_value="Sign out ({}) · 退出", size="sm",
                           elem_id="sign-in")
        # a signed-in visitor whose chats this Space keeps (start_session shows it)
        forget = gr.Button("Forget me · 删除我的数据", size="sm", variant="stop", visible=False, elem_id="forget-me")
        engine = gr.Dropdown(engines, label="Engine · 引擎", elem_id="backend")
        model = gr.Dropdown([], value="", label="Model", visible=False, allow_custom_value=True,
                            filterable=True, elem_id="model")
        with gr.Group(visible=False) as server_box:
            base_url = gr.Textbox(label="Base URL", placeholder="https://api.openai.com/v1", elem_id="base-url")
            api_key = gr.Textbox(label="API key (this session only, never stored)", type="password",
                                 elem_id="api-key")
            fold = gr.Checkbox(label="Fold the prompt: no system message, no two user messages in a "
                               "row (for servers that reject them)", elem_id="fold")
        story_tokens = gr.Slider(0, 4000, value=budgets.story_tokens, step=16, label="Scene budget (tokens)",
                                 elem_id="story-tokens")
        history_tokens = gr.Slider(0, 4000, value=budgets.history_tokens, step=16,
                                   label="History budget (tokens)", elem_id="history-tokens")
        memory_tokens = gr.Slider(0, 2000, value=budgets.memory_tokens, step=16,
                                  label="Pinned memories budget (tokens) · 记忆", elem_id="memory-tokens")
        recall_tokens = gr.Slider(0, 2000, value=budgets.recall_tokens, step=16,
                                  label="Recall of earlier messages (tokens; 0: off) · 回想前文", elem_id="recall-tokens")
    return SimpleNamespace(forget_me=forget, engine=engine, model=model, server_box=server_box, base_url=base_url,
                           api_key=api_key,
                           fold=fold, story_tokens=story_tokens, history_tokens=history_tokens,
                           memory_tokens=memory_tokens, recall_tokens=recall_tokens)


def _hub_panel() -> gr.Dataset:
    """ChatHaruhi's own roles on the Hub, folded: fetched on first pick."""
    listed = hub_roles()
    with gr.Accordion(f"☁ ChatHaruhi on the Hub · {len(listed)} roles", open=False, elem_id="hub-panel"):
        return gr.Dataset(
            components=[gr.Textbox(visible=False), gr.Textbox(visible=False), gr.Textbox(visible=False)],
            headers=["Character · 角色", "Work · 作品", "Source · 来源"], type="index",
            samples=[[r.label, r.series, r.group] for r in listed], samples_per_page=12,
            elem_id="hub-list", label="Fetched from the Hugging Face Hub on first use · 首次使用时下载")


def _chat_side(first, first_view) -> SimpleNamespace:
    """The chat tab's left column: who to talk to, as whom, with which engine."""
    entries = picker_entries()
    with gr.Column(scale=1, min_width=300, elem_id="chat-side"):
        picker = gr.HTML(_tiles(entries), js_on_load=PICKER_JS, elem_id="picker")
        chooser = gr.Dropdown(picker_choices(entries), label="Search by name or work · 按名字或作品搜索",
                              filterable=True, elem_id="role-choice")
        role_status = gr.Markdown(elem_id="role-status")
        user_role = gr.Textbox(first.visitor_name, label="Your name in the story · 你在故事里的名字", elem_id="user-role")
        settings = _settings_panel()
        hub_list = _hub_panel()
        portrait = gr.HTML(first_view[1], elem_id="portrait")
    return SimpleNamespace(picker=picker, chooser=chooser, role_status=role_status, user_role=user_role,
                           hub_list=hub_list, portrait=portrait, **vars(settings))


def _chat_main(first, first_view) -> SimpleNamespace:
    """The chat tab's main column: the chat, the message box, and what goes with a reply."""
    with gr.Column(scale=2, elem_id="chat-main"):
        with gr.Row(elem_id="about-row", equal_height=False):
            about = gr.Markdown(first_view[2], elem_id="about")  # who you are talking to, above the chat
            # the scene the last reply drew on, beside the name: in sight without scrolling
            scene_picture = gr.HTML(visible=False, elem_id="scene-image", min_height=0)
        chat = gr.Chatbot(first_view[3], label="Chat", elem_id="chat", height=520, buttons=["copy"],
                          editable="all", avatar_images=(None, portrait_of(first)),
                          feedback_options=("Like", "Dislike"))
        reply_stats = gr.Markdown(elem_id="reply-stats", elem_classes=["reply-stats"])
        language_note = gr.Markdown(visible=False, elem_id="language-note")
        use_offline = gr.Button("Use the offline engine · 改用离线引擎", size="sm", visible=False, elem_id="use-offline")
        # what to ask, right above the box (a click fills it)
        examples = gr.Dataset(components=["textbox"], samples=[[q] for q in first.examples], label="Try asking · 试着问",
                              visible=bool(first.examples), elem_id="examples")
        with gr.Row(elem_id="message-row"):
            text = gr.Textbox(show_label=False, placeholder="Say something… · 说点什么…", scale=6, elem_id="message",
                              max_lines=6)
            send_btn = gr.Button("Send · 发送", variant="primary", scale=1, elem_id="send")
        note = gr.Markdown(elem_id="engine-note")
        sign_in = gr.Markdown(elem_id="sign-in-note")
        feedback_note = gr.Markdown(FEEDBACK_HINT if Settings.from_env().feedback_path else "",
                                    elem_id="feedback-note", elem_classes=["reply-stats"])
        with gr.Row():
            regen_btn = gr.Button("↻ Regenerate · 重新生成", size="sm", elem_id="regenerate")
            clear_btn = gr.Button("Clear · 清空", size="sm", elem_id="clear")
            export_btn = gr.DownloadButton("Export chat · 导出", size="sm", elem_id="export-chat", interactive=False)
            import_btn = gr.UploadButton("Import chat · 导入", size="sm", elem_id="import-chat", file_types=[".jsonl"],
                                         type="filepath")
        with gr.Row(equal_height=True):
            speak_on = gr.Checkbox(label="Speak replies · 朗读回复", value=False, elem_id="speak", scale=1)
            speak_btn = gr.Button("Speak last reply · 朗读上一句", size="sm", elem_id="speak-last", scale=1)
        voice_audio = gr.Audio(visible=False, label="Voice · 语音", type="filepath", autoplay=True,
                               interactive=False, elem_id="voice-audio", buttons=["download"],
                               waveform_options=gr.WaveformOptions(show_recording_waveform=False))
        voice_note = gr.Markdown(elem_id="voice-note")
        with gr.Accordion("Scenes retrieved for the last reply · 检索到的场景", open=False, elem_id="scenes-panel"):
            scenes = gr.Markdown(elem_id="scenes")
        memory = _memory_panel()
    return SimpleNamespace(about=about, chat=chat, reply_stats=reply_stats, text=text, send_btn=send_btn, note=note,
                           sign_in=sign_in, language_note=language_note, use_offline=use_offline,
                           feedback_note=feedback_note, scene_picture=scene_picture, examples=examples,
                           regen_btn=regen_btn, clear_btn=clear_btn, export_btn=export_btn, import_btn=import_btn,
                           speak_on=speak_on, speak_btn=speak_btn, voice_audio=voice_audio, voice_note=voice_note,
                           scenes=scenes, memory=memory)


def _memory_panel() -> SimpleNamespace:
    """What the character keeps of this conversation: the list, a fact to add, one to forget or rewrite."""
    with gr.Accordion("Memories · 记忆", open=False, elem_id="memory-panel"):
        listed = gr.Markdown(memory_markdown(None), elem_id="memories")
        text = gr.Textbox(label="Remember · 记住", placeholder="my sister is Anna · 我妹妹叫小红", max_lines=3,
                          elem_id="memory-text")
        with gr.Row():
            remember = gr.Button("Remember · 记住", size="sm", elem_id="remember")
            pin = gr.Button("Pin my last message · 记住我上一句", size="sm", elem_id="pin-last")
        pick = gr.Dropdown(label="A memory · 一条记忆", choices=[], value=None, elem_id="memory-pick")
        with gr.Row():
            forget = gr.Button("Forget · 忘记", size="sm", elem_id="forget")
            rewrite = gr.Button("Rewrite with the text above · 改写", size="sm", elem_id="rewrite-memory")
        note = gr.Markdown(elem_id="memory-note")
    return SimpleNamespace(listed=listed, text=text, remember=remember, pick=pick, forget=forget, rewrite=rewrite,
                           pin=pin, note=note)


def _memory_view(conv: Conversation | None):
    return memory_markdown(conv), gr.Dropdown(choices=memory_choices(conv), value=None)


def _memory_event(change):
    """A memory change as the page runs it: the new conversation, the list, the sentence; the text box is
    emptied only when the change was made."""
    def run(conv, *args):
        new, said = change(conv, *args)
        done = new is not conv
        return (new, *_memory_view(new), said, "" if done else gr.skip())
    return run


def _add_tab() -> SimpleNamespace:
    """The 'Add a character' tab: a Hub id or a file."""
    gr.Markdown(
        "Bring a character from the Hugging Face Hub or from a file. · 从 Hub 或文件添加角色。\n\n"
        "- **Hub id**: a dataset with a role package (`owner/name`), or a ChatHaruhi role "
        "(`silk-road/ChatHaruhi-RolePlaying/haruhi`); add `@revision` to pin one.\n"
        "- **File**: a character card (`.png` or `.json`, V1/V2/V3), a ChatHaruhi `.jsonl`, "
        "a role package `.zip`, or a script `.txt` (`Name:「line」`, `NAME: line` or screenplay).\n\n"
        f"Files up to {DEFAULT_LIMITS.max_file_bytes // (1024 * 1024)} MB. The character is added to "
        "your picker only."
    )
    with gr.Row():
        with gr.Column():
            hub_id = gr.Textbox(label="Hub id", placeholder="silk-road/ChatHaruhi-RolePlaying/haruhi",
                                elem_id="hub-id")
            script_name = gr.Textbox(label="Character's name (scripts only; default: who speaks most)",
                                     elem_id="script-name")
        with gr.Column():
            upload = gr.File(label="Upload a file · 上传文件", file_types=accepted_suffixes(), type="filepath",
                             elem_id="upload")
    add_btn = gr.Button("Add character · 添加", variant="primary", elem_id="add-role")
    add_status = gr.Markdown(elem_id="add-status")
    return SimpleNamespace(hub_id=hub_id, script_name=script_name, upload=upload, add_btn=add_btn,
                           add_status=add_status)


def _view(p: SimpleNamespace) -> list:
    """The outputs of _role_view, in its order."""
    return [p.conv, p.portrait, p.about, p.chat, p.examples, p.user_role, p.scenes, p.reply_stats, p.chats]


def _settings_in(p: SimpleNamespace, key: bool = True) -> list:
    """The settings panel as the chat and group-scene events read it (without the key: as a browser keeps it)."""
    return [p.engine, p.model, p.base_url, *([p.api_key] if key else []), p.story_tokens, p.history_tokens, p.fold,
            p.memory_tokens, p.recall_tokens]


def _wire_session(p: SimpleNamespace) -> None:
    """A visit's start (this browser's last character and name), the engine panel, the avatar."""
    view = _view(p)
    engine_view = [p.note, p.model, p.server_box, p.api_key, p.story_tokens, p.history_tokens, p.memory_tokens,
                   p.recall_tokens]
    sealed = browser_secret(Settings.from_env())  # the same key after a restart: browsers' values still open
    p.last_role = gr.BrowserState("", storage_key="chatharuhi-last-role", secret=sealed)  # this browser's last pick
    p.saved_name = gr.BrowserState("", storage_key="chatharuhi-visitor-name", secret=sealed)  # their name
    p.avatar = (set_avatar, p.conv, [p.chat, p.scene_picture])
    p.saved_chats = gr.BrowserState({}, storage_key="chatharuhi-chats", secret=sealed)  # its chats, for a reload
    # the visit's start fills every panel at once: no "processing" veil over them (the page is usable meanwhile)
    p.demo.load(start_session, [p.last_role, p.saved_name, p.saved_chats],
                view + [p.chooser, p.picker, p.added, p.engine, *engine_view, p.fold, p.scene_user, p.sign_in,
                        p.role_status, p.base_url, p.speak_on, p.forget_me], show_progress="hidden").then(
        lambda name: (name or "").strip(), p.saved_name, p.visitor, api_name=False, show_progress="hidden").then(
        *p.avatar, api_name=False, show_progress="hidden")
    p.conv.change(remember_role, p.conv, p.last_role, api_name=False, show_progress="hidden")
    # a reply, a switch, a clear, an import, a memory; another engine or any of its settings (never the key). One
    # event for all of them: separate ones could finish out of order and leave an older record in the browser.
    gr.on([c.change for c in (p.conv, *_settings_in(p, key=False), p.speak_on)], keep_in_browser,
          [p.conv, p.chats, p.added, *_settings_in(p, key=False), p.speak_on], p.saved_chats, api_name=False,
          show_progress="hidden", trigger_mode="always_last")
    # the visitor's pick, or the offer of the offline engine; not the visit's start, which sets the kept settings
    p.engine.input(change_engine, p.engine, engine_view, api_name="change_engine")
    p.forget_me.click(forget_me, [p.conv, p.visitor, p.gate], view + [p.chooser, p.picker, p.added, p.saved_chats,
                                                                      p.role_status], api_name="forget_me")
    # the language guard follows the character and the engine's model (a switch, a new engine, a typed model)
    guard = (language_view, [p.conv, p.engine, p.model, p.base_url], [p.language_note, p.use_offline])
    for changed in (p.conv, p.engine, p.model, p.base_url):
        changed.change(*guard, api_name=False, show_progress="hidden")
    # the local model reads the next prompt's start while the visitor types the message (chat/chatbot.py)
    gr.on([c.change for c in (p.conv, p.engine, p.model)], read_ahead_for,
          [p.conv, p.user_role, *_settings_in(p, key=False)], None, api_name=False, show_progress="hidden",
          trigger_mode="always_last")
    p.use_offline.click(lambda: "script", None, p.engine, api_name=False).then(
        change_engine, p.engine, engine_view, api_name=False)
    p.scene_tab.select(cast_choices, [p.added, p.scene_cast], p.scene_cast, api_name=False, show_progress="hidden")
    p.examples.click(lambda sample: sample[0], p.examples, p.text)


def _wire_turns(p: SimpleNamespace) -> list:
    """Send, Regenerate and an edited last message: each streams a turn into the chat (`pending` holds its
    message until the reply is complete). Returns the turn events, for switches to cancel."""
    turn_out = [p.chat, p.text, p.conv, p.reply_stats, p.pending]
    turn_in = [p.gate, p.conv, p.text, p.user_role, *_settings_in(p)]
    after = (after_turn, [p.conv, p.speak_on, p.handled],
             [p.scenes, p.voice_audio, p.voice_note, p.scene_picture, p.handled])
    focus_box = "() => { document.querySelector('#message textarea')?.focus(); }"  # type the next line at once
    p.reveal = (reveal_player, p.voice_audio, p.voice_audio)
    turns = []
    for ev in (p.text.submit(send, turn_in, turn_out, api_name="submit"), p.send_btn.click(send, turn_in, turn_out)):
        turns.append(ev)
        ev.then(*after, api_name="after_turn" if len(turns) == 1 else False).then(
            None, js=focus_box, api_name=False).then(*p.reveal, api_name=False, show_progress="hidden")
    turns.append(p.regen_btn.click(regenerate, turn_in, turn_out))
    turns[-1].then(*after, api_name=False).then(*p.reveal, api_name=False, show_progress="hidden")
    again = gr.State(False)  # the visitor edited their last message: it is answered again
    edited = p.chat.edit(edit, [p.conv, p.user_role], [p.conv, p.chat, p.feedback_note, again], api_name=False)
    turns.append(edited.then(answer_again, [again, *turn_in], turn_out, api_name=False))
    turns[-1].then(*after, api_name=False).then(*p.reveal, api_name=False, show_progress="hidden")
    return turns


def _wire_switches(p: SimpleNamespace, turns: list) -> None:
    """Another character (a tile, the search list, the Hub list, an import) or a cleared chat: a reply
    still streaming stops first, so it can neither finish in the new chat nor answer as the old
    character; its message goes back into the box unless the visitor has typed something new."""
    view = _view(p)
    cleared = [p.conv, p.portrait, p.about, p.chat, p.scenes, p.reply_stats]
    with_chats = [p.conv, p.chats, p.visitor, p.gate]
    after_switch = (give_back, [p.pending, p.text, p.conv, p.user_role, p.drafts],
                    [p.text, p.pending, p.chat, p.drafts])
    stops = {"cancels": turns}
    switched = [
        p.hub_list.click(pick_hub_role, [p.hub_list, *with_chats], view + [p.chooser, p.role_status], api_name=False,
                         **stops),
        p.picker.click(pick_role, [p.added, *with_chats], view + [p.chooser, p.role_status], api_name=False,
                       **stops),
        p.chooser.input(switch_role, [p.chooser, *with_chats], view + [p.chooser, p.role_status],
                        api_name="switch_role", **stops),
        p.add_btn.click(add_role, [p.hub_id, p.upload, p.script_name, p.added, *with_chats],
                        view + [p.chooser, p.picker, p.added, p.add_status, p.tabs, p.role_status, p.upload],
                        api_name="add_character", **stops),
        p.import_btn.upload(import_chat_file, [p.import_btn, p.added, p.conv, p.chats, p.gate],
                            view + [p.chooser, p.picker, p.added, p.feedback_note], api_name="import_chat", **stops),
        p.clear_btn.click(clear_chat, [p.conv, p.visitor, p.gate], cleared, **stops),
        p.chat.clear(clear_chat, [p.conv, p.visitor, p.gate], cleared, api_name=False, **stops),
    ]
    for ev in switched:
        ev.then(*after_switch, api_name=False, show_progress="hidden").then(*p.avatar, api_name=False)


def _wire_voice_feedback_names(p: SimpleNamespace) -> None:
    """Speaking a reply, the thumbs, the export, and the visitor's name in the story."""
    p.speak_btn.click(speak_last, [p.conv, p.user_role], [p.voice_audio, p.voice_note], api_name="speak_last").then(
        *p.reveal, api_name=False, show_progress="hidden")
    p.chat.select(speak_clicked, p.conv, [p.voice_audio, p.voice_note], api_name=False).then(
        *p.reveal, api_name=False, show_progress="hidden")
    p.conv.change(refresh_export, [p.conv, p.user_role], p.export_btn, api_name=False)
    p.chat.like(rate, p.conv, [p.conv, p.feedback_note], api_name=False)
    # the name in the story: typed, pasted or filled in by the browser, it is the visitor's from then on
    named = (rename_visitor, [p.conv, p.user_role], [p.about, p.chat])  # the greeting says the visitor's name again
    p.user_role.change(*named, api_name=False, trigger_mode="always_last", show_progress="hidden")
    # (`change`, not `input`: Gradio sends no input event for a paste or the browser's autofill)
    keep = (lambda name: name, p.visitor, p.saved_name)
    p.user_role.change(remember_name, [p.user_role, p.scene_user, p.conv], [p.visitor, p.scene_user],
                       api_name=False, show_progress="hidden").then(*keep, api_name=False, show_progress="hidden")
    p.scene_user.change(name_from_scene, [p.scene_user, p.user_role], [p.visitor, p.user_role], api_name=False,
                        show_progress="hidden").then(*keep, api_name=False, show_progress="hidden")


def _wire_memory(p: SimpleNamespace) -> None:
    """The memory panel's buttons, and its list following the conversation (a switch, an import, a reply)."""
    m = p.memory
    out = [p.conv, m.listed, m.pick, m.note, m.text]
    m.remember.click(_memory_event(remember_fact), [p.conv, m.text], out, api_name="remember")
    m.text.submit(_memory_event(remember_fact), [p.conv, m.text], out, api_name=False)
    m.pin.click(_memory_event(pin_last_message), [p.conv, p.user_role], out, api_name="pin_last")
    m.forget.click(_memory_event(forget_memory), [p.conv, m.pick], out, api_name="forget_memory")
    m.rewrite.click(_memory_event(rewrite_memory), [p.conv, m.pick, m.text], out, api_name="rewrite_memory")
    p.conv.change(_memory_view, p.conv, [m.listed, m.pick], api_name=False, show_progress="hidden")


def _as_tool(fn, serve=lambda result: json.dumps(result, ensure_ascii=False), returns=str):
    """A tool as Gradio serves it: its result through `serve` (JSON by default: an MCP client would otherwise
    read Python's repr; a file for a spoken line, which MCP gives as its URL), its failure sentence as the
    error the API or MCP client reads; name, parameters and docstring its own."""
    def tool(*args, **kwargs):
        try:
            return serve(fn(*args, **kwargs))
        except ToolError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    tool.__name__ = tool.__qualname__ = fn.__name__
    tool.__doc__ = fn.__doc__
    tool.__signature__ = inspect.signature(fn).replace(return_annotation=returns)
    tool.__annotations__ = {**fn.__annotations__, "return": returns}
    return tool


TOOLS = (_as_tool(list_characters), _as_tool(chat_with_character), _as_tool(search_scenes),
         _as_tool(speak_line, lambda path: FileData(path=path), FileData))


def _wire_tools(demo: gr.Blocks) -> None:
    """The documented API, which is also the MCP server's tools: list characters, chat, search scenes, speak.
    The page's own events stay callable (the page and its tests use them) but undocumented, so an agent
    sees four tools with described parameters, not the page's state and sliders."""
    for tool in TOOLS:
        gr.api(tool, api_name=tool.__name__)
    names = {tool.__name__ for tool in TOOLS}
    for block_fn in demo.fns.values():
        if block_fn.api_visibility == "public" and block_fn.api_name not in names:
            block_fn.api_visibility = "undocumented"


def build_demo() -> gr.Blocks:
    """The page: layout by panel, then the events, wired in the order their API names depend on."""
    # the first character is drawn into the page itself, so its greeting is on screen before any
    # event has run; the load event then brings the engine and, for a returning browser, its last pick
    first = load_role(bundled_ids()[0])
    first_view = _role_view(Conversation(first.id))
    with gr.Blocks(title="ChatHaruhi · 凉宫春日") as demo:
        visit = SimpleNamespace(
            conv=gr.State(None),
            added=gr.State([]),  # ids of the characters this visitor added
            handled=gr.State(None),  # the last reply whose scenes, picture and voice were shown
            chats=gr.State({}),  # role id -> this visitor's earlier chat with that character, in this session
            visitor=gr.State(""),  # the name the visitor gave themselves in the story ("": none yet)
            pending=gr.State(""),  # the message whose reply is streaming, and whose it is
            drafts=gr.State({}),  # messages whose reply a switch stopped, by character: back in its box on return
            gate=gr.State(TurnGate()),  # which reply may still draw in the chat
        )
        gr.Markdown(
            "# ChatHaruhi\nTalk to a character who stays in character: every reply draws on the "
            "character's own classic scenes. · 和角色聊天，每句回复都取材于角色的经典场景。",
            elem_id="intro",
        )
        with gr.Tabs(elem_id="tabs") as tabs, gr.Tab("Chat · 聊天", id="chat-tab"), gr.Row(elem_id="chat-row"):
            side = _chat_side(first, first_view)
            main = _chat_main(first, first_view)
        with tabs, gr.Tab("Scene · 群戏", id="scene-tab") as scene_tab:
            scene_cast, scene_user = build_scene_tab(_settings_in(side), visit.added, _export_dir)
        with tabs, gr.Tab("Add a character · 添加角色", id="add-tab"):
            add = _add_tab()
        p = SimpleNamespace(demo=demo, tabs=tabs, scene_tab=scene_tab, scene_cast=scene_cast, scene_user=scene_user,
                            **vars(visit), **vars(side), **vars(main), **vars(add))
        _wire_session(p)
        _wire_switches(p, _wire_turns(p))
        _wire_voice_feedback_names(p)
        _wire_memory(p)
        _wire_tools(demo)
    return demo


def _warm_up() -> None:
    """Load the embedder and open every bundled store in the background, not at import."""
    from chatharuhi_core.chat.chatbot import ChatHaruhi

    try:
        for rid in bundled_ids():
            _ = ChatHaruhi(role_name=rid).store
        log.info("warm-up done: %d bundled stores open", len(bundled_ids()))
    except Exception:
        log.exception("warm-up failed; stores will be built on first use")


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    demo = build_demo()
    demo.queue(default_concurrency_limit=32)
    host = os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1")
    port = int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    settings = Settings.from_env()
    on_gpu()  # where the `spaces` package is installed (ZeroGPU), the local engine's GPU function exists at start
    if settings.zero_gpu and not gpu_runtime():
        log.warning("this is a ZeroGPU Space, but torch and transformers are not installed: visitors start on the "
                    "offline engine. Append requirements-zerogpu.txt to requirements.txt for %s on the GPU.",
                    settings.gpu_model)
    # Gradio serves only files under these (and its temp folder and the working folder): the bundled
    # characters, the page's assets, imported characters and the spoken replies, which all live in the
    # cache (~/.cache/chatharuhi when started as README says). Never the whole cache: the feedback file is there.
    for folder in (settings.roles_dir, settings.spoken_dir):
        folder.mkdir(parents=True, exist_ok=True)
    allowed = [str(Path(__file__).resolve().parent / "characters"), str(ASSETS), str(settings.roles_dir),
               str(settings.spoken_dir)]
    demo.launch(server_name=host, server_port=port, css_paths=[ASSETS / "style.css"], theme=gr.themes.Soft(),
                allowed_paths=allowed, max_file_size=DEFAULT_LIMITS.max_file_bytes, prevent_thread_lock=True,
                mcp_server=settings.mcp, max_threads=WORKER_THREADS)
    # warm up once the page answers: started earlier, it competed with the launch for the CPU
    threading.Thread(target=_warm_up, daemon=True).start()
    demo.block_thread()


if __name__ == "__main__":
    main()
