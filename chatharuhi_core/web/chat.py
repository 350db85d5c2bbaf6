"""What the page does for one visitor, as plain functions over a Conversation value.

The page (page/) keeps a Conversation in gr.State (one per browser session) and calls these; nothing
here is per-visitor module state. The API key arrives with each event and is never stored.
"""

from __future__ import annotations

import html
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..chat.chatbot import ChatHaruhi, Reply, ReplyStats, Streaming
from ..chat.lanes import ticket_for, waiting_line
from ..chat.memory import Memory, in_background
from ..chat.notes import valid_notes
from ..chat.persona import AuthorsNote, persona
from ..chat.prompt import Exchange
from ..chat.swipes import another, passed_over, replies_of, rewritten
from ..chat.transcript import Branch, ReplyMeta, Transcript, dump_chat, load_chat
from ..chat.when import shown
from ..config import Settings
from ..errors import ChatHaruhiError, InputError, Stopped
from ..i18n import N_, _, ngettext
from ..roles.card_extras import regex_scripts
from ..roles.lorebook import Fired
from ..roles.placeholders import fill
from ..roles.regex_scripts import AI_OUTPUT, USER_INPUT
from ..roles.role import Role
from ..roles.sources import load_role
from .common import (
    LIST_SEPARATOR,
    WARNING_MARK,
    EnginePanel,
    Throttle,
    export_file,
    lang_of,
    message_text,
    while_running,
)
from .feedback import Answered, correct, message_index, rate, record_feedback
from .frames import on_page

log = logging.getLogger(__name__)


@dataclass
class Conversation:
    """One visitor's chat with one character."""

    role_id: str
    history: list[Exchange] = field(default_factory=list)
    meta: list[ReplyMeta] = field(default_factory=list)  # one per exchange: prompt, engine, rating, correction
    last: Reply | None = None  # the newest reply's record: the scenes and lore it drew on, its speed
    tried: list[str] = field(default_factory=list)  # every reply given to the last message, so Regenerate moves on
    memory: Memory = field(default_factory=Memory)  # pinned facts and the index of earlier exchanges
    # the player's controls (web/controls.py): who they play beyond a name, their author's note, which line of the
    # story this is (its id, name, parent and fork point) and the chat's other lines
    persona: str = ""  # the description of whom the visitor plays ("": none); the name is the name in the story
    face: str = ""  # their portrait for this visit (an uploaded file's path; not kept past the visit)
    note: AuthorsNote | None = None
    line: Branch = field(default_factory=Branch)
    others: list[Conversation] = field(default_factory=list)

    def copy(self) -> Conversation:
        memory = self.memory.copy()  # its own pins and notes; the indexes are derived: shared, re-synced by text
        return Conversation(self.role_id, list(self.history), [replace(m) for m in self._full_meta()], self.last,
                            list(self.tried), memory, self.persona, self.face, self.note, self.line,
                            list(self.others))

    def _full_meta(self) -> list[ReplyMeta]:
        """Exchanges made without metadata (older states, the API) get an empty record."""
        meta = list(self.meta[: len(self.history)])
        meta += [ReplyMeta(uuid.uuid4().hex, []) for _unused in range(len(self.history) - len(meta))]
        return meta


def reopen(current: Conversation | None, chats: dict | None, role_id: str) -> tuple[Conversation, dict]:
    """Put the chat on screen away (whole exchanges only: a reply cut off by the switch was never
    added) and bring out the chat with `role_id`: the one this visitor had before, or a new one."""
    chats = dict(chats or {})
    if current is not None:
        if current.history or current.others:
            chats[current.role_id] = current
        else:
            chats.pop(current.role_id, None)
    return chats.get(role_id) or Conversation(role_id), chats


def as_shown(role: Role, text: str, user: str | None = None) -> str:
    """A role's text as the page shows it: `{{user}}` as the visitor's name in the story (the role's
    default name until one is typed)."""
    return fill(text, role.name, (user or "").strip() or role.visitor_name)


def greeting_messages(role: Role, user: str | None = None) -> list[dict]:
    """The greeting, with `{{user}}` as the visitor's name in the story: the role's first one, or, when that one
    calls someone the visitor is not ("师父！" to a visitor who named themself 小明), the first of its other
    greetings that does not."""
    greeting = role.fitting_greeting((user or "").strip() or role.visitor_name) or next(iter(role.greetings), "")
    text = as_shown(role, greeting, user)
    return [{"role": "assistant", "content": text}] if text else []


def chat_messages(conv: Conversation, role: Role, user: str | None = None) -> list[dict]:
    """The chat as the page shows it: the greeting, then every finished exchange (through the card's display-only
    regex scripts, by each message's depth from the end, as SillyTavern draws them)."""
    msgs = greeting_messages(role, user)
    for ex in conv.history:
        msgs.append({"role": "user", "content": ex.text})
        msgs.append({"role": "assistant", "content": ex.reply})
    return shown_by_scripts(role, msgs, (user or "").strip() or role.visitor_name)


def shown_by_scripts(role: Role, msgs: list[dict], user: str) -> list[dict]:
    """Messages with the card's display-only regex scripts applied (the messages themselves when it has none)."""
    if not regex_scripts(role):
        return msgs
    last = len(msgs) - 1
    return [{**m, "content": on_page(role, m["content"], USER_INPUT if m["role"] == "user" else AI_OUTPUT, last - i,
                                     user)} for i, m in enumerate(msgs)]


def describe_role(role: Role, user: str | None = None) -> str:
    """The name (a level-2 heading, under the page's title) and one line about the character and its work: in the
    visitor's language where the package gives them in it (role.json's translations), else in the role's own. The
    name stays as the character is called in its story."""
    from ..i18n import language  # the visitor's, at the time of the event

    own, about = role.described(), role.described(language())
    lang, name = lang_of(role), html.escape(role.name)
    if about != own:
        lang, name = language(), f'<span lang="{lang_of(role)}">{name}</span>'  # the name in the role's language
    series = f" · <em>{html.escape(about.series)}</em>" if about.series else ""
    line = html.escape(as_shown(role, about.description, user))
    return f'<div lang="{lang}">\n\n## {name}{series}\n{line}{world_line(role)}\n\n</div>'


def world_line(role: Role) -> str:
    """The character's lorebook under its description: the world it holds (a card's own book, or a linked world-info
    file) and how many entries can come up in a reply ("" without one)."""
    from ..roles.worlds import linked_world

    if not role.lorebook:
        return ""
    world = linked_world(role) or role.lorebook.name
    n = sum(e.enabled for e in role.lorebook.entries)
    said = (ngettext("World info **{world}**: {n} entry", "World info **{world}**: {n} entries", n,
                     world=html.escape(world)) if world else
            ngettext("World info: {n} entry", "World info: {n} entries", n))
    return f"\n\n📖 {said}"  # a paragraph of its own: a phone shows each of #about's paragraphs on one line


def stats_line(stats: ReplyStats | None) -> str:
    """`Answered by <engine> · <model> · first token 0.42 s · 18.3 tokens/s (66 tokens in 3.9 s)`."""
    if stats is None:
        return ""
    model = f" · `{html.escape(stats.model)}`" if stats.model else ""
    speed = _("{rate} tokens/s", rate=format(stats.tokens_per_s, ".1f")) if stats.tokens_per_s else "–"
    cut = (" · ✂️ " + _("cut short (…): the model reached its length limit ({limit} tokens); Regenerate for another",
                       limit=stats.cut_at) if stats.cut_at else "")
    timing = _("first token {first} s · {speed} ({tokens} tokens in {total} s)", first=format(stats.first_token_s, ".2f"),
               speed=speed, tokens=stats.tokens, total=format(stats.total_s, ".1f"))
    return _("Answered by **{engine}**", engine=html.escape(_(stats.engine))) + model + " · " + timing + cut


def memory_line(reply: Reply) -> str:
    """What memory the reply used, in a few words after its stats ("" when it used none): pinned facts, notes,
    earlier exchanges recalled (the Memories panel says which and why)."""
    parts = []
    if reply.pinned:
        parts.append(ngettext("{n} pinned fact", "{n} pinned facts", reply.pinned))
    if reply.notes:
        parts.append(ngettext("{n} note", "{n} notes", len(reply.notes)))
    if reply.recalled:
        turns = _(LIST_SEPARATOR).join(str(r.turn) for r in reply.recalled[:4]) + ("…" if len(reply.recalled) > 4
                                                                                  else "")
        parts.append(ngettext("turn {turns} recalled", "turns {turns} recalled", len(reply.recalled), turns=turns))
    return (" · 🧠 " + _("remembered {what}", what=_(LIST_SEPARATOR).join(parts))) if parts else ""


def lore_markdown(fired: list[Fired]) -> str:
    """The lorebook entries of the last reply: which fired, why, and which the budget left out."""
    if not fired:
        return ""
    rows = []
    for f in fired:
        mark = "📖" if f.used else "✂️"
        rows.append(f"- {mark} **{html.escape(f.entry.label, quote=False)}** · {html.escape(f.reason, quote=False)}")
    return "**" + _("Lorebook entries") + "**\n\n" + "\n".join(rows)


def scenes_markdown(conv: Conversation) -> str:
    """The lorebook entries and scenes retrieved for the last reply, marking those that fit the budgets."""
    last = conv.last
    if last is None or not (last.scenes or last.lore or last.recalled):
        return "_" + _("Send a message to see which classic scenes the reply drew on.") + "_"
    parts = [lore] if (lore := lore_markdown(last.lore)) else []
    if last.recalled:
        parts.append("**" + _("Recalled from earlier in this conversation") + "**")
        for r in last.recalled:
            when = f" · {shown(r.at)}" if r.at else ""
            why = f" · {html.escape(r.why)}" if r.why else ""
            turn, used = _("turn {turn}", turn=r.turn), _("in the prompt")
            parts.append(f"**{turn}**{when}{why} · {used}\n\n{_quoted(r.text)}")
    if last.scenes:
        parts.append("**" + _("Classic scenes") + "**")
    for i, hit in enumerate(last.scenes):
        used = _("in the prompt") if i < last.packed else _("over the budget, left out")
        similar = _("similarity {value}", value=format(hit.similarity, ".2f"))
        parts.append(f"**{i + 1}. {html.escape(hit.id)}** · {similar} · {used}\n\n{_quoted(hit.text)}")
    return "\n\n".join(parts)


def _quoted(text: str) -> str:
    return "\n>\n".join("> " + html.escape(line) for line in text.splitlines() if line.strip())


def make_bot(conv: Conversation, engine: EnginePanel, user_role: str, settings: Settings) -> ChatHaruhi:
    """A ChatHaruhi for this event; ChatHaruhi fills blanks from the operator's settings."""
    role = load_role(conv.role_id)
    player = persona(user_role or role.visitor_name, conv.persona) if conv.persona else None
    return ChatHaruhi(role=role, user_role=user_role or None, history=conv.history, memory=conv.memory,
                      engine=engine.choice(settings), settings=settings, persona=player, note=conv.note)


def read_ahead(conv: Conversation, user_role: str, engine: EnginePanel, settings: Settings) -> threading.Thread | None:
    """A character opened or an engine picked: an engine that reads prompts ahead (the local model) loads now if
    it has not, and reads how the next message's prompt starts while the visitor types it, so the message reads
    only its scenes and itself. A message sent meanwhile waits for the load as it would have. Never fails: only
    the time it would have saved is lost."""
    try:
        bot = make_bot(conv, engine, user_role, settings)
        if bot.budgets.recall_tokens > 0 and len(conv.history) > 1:  # a chat taken up: its memory indexes now
            in_background(bot.index_ahead, "indexing the conversation")
        if bot.reads_ahead:
            bot.load()
            return bot.read_ahead_now()
    except Exception as exc:  # e.g. the local extra not installed: the message says so when it is sent
        log.info("reading ahead for %s failed: %r", conv.role_id, exc)
    return None


@dataclass
class TurnUpdate:
    """One frame of a streaming turn for the page."""

    messages: list[dict]
    conversation: Conversation
    error: str | None = None
    done: bool = False
    status: str = ""  # a line under the chat: loading, or how the reply went


def engine_frames(bot: ChatHaruhi, start: Callable[[], Streaming],
                  halted: Callable[[], bool] = lambda: False) -> Iterator[tuple[str, str, Reply | None]]:
    """(text so far, status, the reply once done) while an engine answers: a local model's first load with the
    seconds so far, the place in line of an engine that answers one visitor at a time, then the text as it
    streams (throttled), and last the whole reply. `halted`: the visitor pressed Stop, and the reply ends with what
    it has (ChatCore.halt). Errors are the caller's to say."""
    loading = bot.loading_message()
    if loading:  # a local model's first use: say so in the chat while it loads, with the seconds so far
        yield loading, loading, None
        for waited in while_running(bot.load):
            yield f"{loading} {waited} s", f"{loading} {waited} s", None
    # an engine that answers one visitor at a time (the local model, a one-slot server): in line, with the place
    with ticket_for(bot.engine) as ticket:
        for look in ticket.waiting():
            line = waiting_line(look)
            yield line, line, None
        throttle, text = Throttle(), ""
        streaming = start()
        for delta in streaming:
            text += delta
            if halted():
                bot.halt.set()
            if throttle.due():
                yield text, "", None
        yield text, "", streaming.reply


SEND, REGENERATE, CONTINUE = "send", "regenerate", "continue"  # what a turn does (_Turn.how)


@dataclass
class _Turn:
    """What one turn starts from: the chat as the visitor left it (a failure goes back to it), the chat the reply
    is written after, what the page shows above the reply meanwhile, and what the reply answers."""

    conv: Conversation
    role: Role
    how: str  # SEND, REGENERATE or CONTINUE
    text: str
    user_role: str
    base: Conversation
    shown: list[dict] = field(default_factory=list)
    before: str = ""  # continue: the reply as it stood, which the new words follow
    avoid: tuple[str, ...] = ()  # regenerate: every reply the message has had
    slot: ReplyMeta | None = None  # regenerate: the replaced reply's record, whose id the new one keeps
    last: Exchange | None = None

    def frame(self, reply: str, status: str) -> list[dict]:
        """The chat while the engine writes: a load or a place in line is said under the reply going on, not run
        into it."""
        if not status:
            content = on_page(self.role, self.before + reply, AI_OUTPUT, 0, self.user_role)
        else:
            content = self.before + "\n\n" + status if self.before else status
        return self.shown + [{"role": "assistant", "content": content}]


@dataclass(frozen=True)
class TurnAsk:
    """What a turn answers: the chat as the page holds it, the message (for SEND), the visitor's name, and how
    (SEND, REGENERATE: again to the last message, CONTINUE: the last reply goes on)."""

    conv: Conversation
    text: str
    user_role: str
    how: str = SEND


def turn_frames(ask: TurnAsk, engine: EnginePanel, settings: Settings,
                halted: Callable[[], bool] = lambda: False) -> Iterator[TurnUpdate]:
    """Stream one reply (a regenerated one joins the replies its message had, swipes.py). On failure the history
    stays as it was and the error is one sentence. `halted`: Stop was pressed (the reply is kept as far as it got)."""
    yield from _stream(_begin(ask.conv, ask.text, ask.user_role, ask.how), engine, settings, halted)


def stream_turn(conv: Conversation, text: str, user_role: str, engine: EnginePanel, settings: Settings, *,
                regenerate: bool = False) -> Iterator[TurnUpdate]:
    """Stream one reply: to `text`, or again to the last message (`regenerate`) (turn_frames)."""
    yield from turn_frames(TurnAsk(conv, text, user_role, REGENERATE if regenerate else SEND), engine, settings)


def continue_turn(conv: Conversation, user_role: str, engine: EnginePanel, settings: Settings) -> Iterator[TurnUpdate]:
    """Stream the last reply going on from where it stopped (Continue); on failure it stays as it was."""
    yield from turn_frames(TurnAsk(conv, "", user_role, CONTINUE), engine, settings)


def _begin(conv: Conversation, text: str, user_role: str, how: str) -> _Turn | TurnUpdate:
    """The turn to stream, or the one frame that says there is nothing to regenerate or continue yet."""
    role, base = load_role(conv.role_id), conv.copy()
    last = base.history[-1] if base.history else None
    if how != SEND and last is None:
        said = (_("There is no reply to regenerate yet.") if how == REGENERATE
                else _("There is no reply to continue yet."))
        return TurnUpdate(chat_messages(base, role, user_role), base, said, True)
    turn = _Turn(conv, role, how, text, user_role, base, last=last)
    if how == REGENERATE:
        base.history.pop()
        turn.slot = base.meta.pop()
        # every reply this message has had, so a quoting engine goes through all its candidates
        # instead of swinging between the best two
        turn.text, turn.user_role = last.text, last.user_role
        turn.avoid = tuple(dict.fromkeys([*base.tried, *replies_of(last)]))
    shown = chat_messages(base, role, turn.user_role)
    if how == CONTINUE:
        turn.before, turn.shown = shown[-1]["content"].rstrip(), shown[:-1]
    else:
        turn.shown = shown + [{"role": "user", "content": turn.text}]
    return turn


def _stream(turn: _Turn | TurnUpdate, engine: EnginePanel, settings: Settings,
            halted: Callable[[], bool] = lambda: False) -> Iterator[TurnUpdate]:
    """The frames of one turn: the reply as the engine writes it, then the chat with it (or the failure)."""
    if isinstance(turn, TurnUpdate):
        yield turn
        return
    reply, said = "", None
    try:
        bot = make_bot(turn.base, engine, turn.user_role, settings)
        start = bot.continue_reply if turn.how == CONTINUE else (lambda: bot.stream(turn.text, avoid=turn.avoid))
        for reply, status, said in engine_frames(bot, start, halted):
            if said is None:
                yield TurnUpdate(turn.frame(reply, status), turn.base, status=status)
    except Exception as exc:  # noqa: BLE001 - every failure is a sentence (_failed)
        yield _failed(turn, reply, exc)
        return
    yield _done(turn, bot.history, said)


def _failed(turn: _Turn, reply: str, exc: Exception) -> TurnUpdate:
    """The last frame of a turn that failed: the chat as it was, with the sentence."""
    conv, role, user_role = turn.conv, turn.role, turn.user_role
    if isinstance(exc, InputError):
        return TurnUpdate(chat_messages(conv, role, user_role), conv, str(exc), True)
    if isinstance(exc, Stopped):  # before a word: the chat as it was, the message back in the box
        return TurnUpdate(chat_messages(conv, role, user_role), conv, str(exc), True, "■ " + str(exc))
    if isinstance(exc, ChatHaruhiError):
        if turn.how == CONTINUE:  # the reply stays as it was; why it could not go on is said under the chat
            return TurnUpdate(chat_messages(conv, role, user_role), conv, str(exc), True, WARNING_MARK + str(exc))
        partial = (turn.before + reply + "\n\n") if (turn.before + reply) else ""
        return TurnUpdate(turn.shown + [{"role": "assistant", "content": partial + WARNING_MARK + str(exc)}], conv,
                          str(exc), True)
    log.exception("turn failed", exc_info=exc)  # never a traceback in the page
    sentence = _("Something went wrong while answering ({error}). Please try again.", error=type(exc).__name__)
    return TurnUpdate(turn.shown + [{"role": "assistant", "content": WARNING_MARK + sentence}], conv, sentence, True)


def _done(turn: _Turn, history: list[Exchange], said: Reply) -> TurnUpdate:
    """The last frame of a turn that went well: the chat with the reply, and its stats."""
    meta = list(turn.base.meta)
    if turn.how == CONTINUE:
        meta[-1] = replace(meta[-1], messages=said.messages)
        tried = turn.base.tried
    else:
        meta.append(ReplyMeta(turn.slot.id if turn.slot else uuid.uuid4().hex, said.messages, said.stats.engine,
                              said.stats.model))
        if turn.how == REGENERATE:  # the reply joins the ones the message had; the slot keeps its id for feedback
            history[-1] = another(turn.last, history[-1])
        avoid = turn.avoid
        tried = [said.text] if said.text in avoid else [*avoid, said.text]  # all used up: a new round starts here
    done = replace(turn.base, history=history, meta=meta, last=said, tried=tried)
    return TurnUpdate(chat_messages(done, turn.role, turn.user_role), done, None, True,
                      stats_line(said.stats) + memory_line(said))


_CAPTIONS: dict[tuple, object] = {}


def scene_image_for(role: Role, reply: str, settings: Settings) -> tuple[str, str] | None:
    """(path, caption) of the role's scene picture whose caption is closest in meaning to the reply."""
    if not role.scene_images:
        return None
    if not (reply or "").strip():
        first = role.scene_images[0]
        return str(first.path), first.caption
    from ..embedding import cosine, get_embedder

    embedder = get_embedder(settings.embedder)
    key = (role.id, tuple(i.caption for i in role.scene_images), embedder.name)
    if key not in _CAPTIONS:  # shared, read-only after the first computation
        _CAPTIONS[key] = embedder.embed([i.caption for i in role.scene_images])
    scores = cosine(embedder.embed([reply]), _CAPTIONS[key])[0]
    best = role.scene_images[int(scores.argmax())]
    return str(best.path), best.caption


# ------------------------------------------------------------ feedback: like, dislike, edit


def _exchange_at(conv: Conversation, role: Role, index: object) -> tuple[int, int] | None:
    """(exchange, 0 for the visitor's message or 1 for the reply) shown at chat `index`, or None."""
    index = message_index(index)
    if index is None:
        return None
    k, rest = divmod(index - len(greeting_messages(role)), 2)
    return (k, rest) if 0 <= k < len(conv.history) else None


def reply_at(conv: Conversation, role: Role, index: object) -> int | None:
    """The exchange whose reply is the chat message at `index` (after the greeting), or None."""
    at = _exchange_at(conv, role, index)
    return at[0] if at and at[1] == 1 else None


def question_at(conv: Conversation, role: Role, index: object) -> int | None:
    """The exchange whose visitor's message is the chat message at `index`, or None."""
    at = _exchange_at(conv, role, index)
    return at[0] if at and at[1] == 0 else None


def _record(conv: Conversation, role: Role, k: int, event: str, settings: Settings) -> str | None:
    ex = conv.history[k]
    answered = Answered(conv.role_id, role.name, ex.user_role, ex.text, passed_over(ex))
    return record_feedback(settings, conv.meta[k], ex.reply, answered, event)


RATE_WHEN_COMPLETE = N_("Rate this reply once it is complete.")  # a thumb on a reply still streaming


def rate_reply(conv: Conversation, index: int, liked: object, settings: Settings,
               streaming: bool = False) -> tuple[Conversation, str]:
    """A thumb on a reply: remember it and append it to the feedback file. `streaming`: a reply is being written
    after the chat's messages, so a thumb past them is on that reply (not yet one the conversation holds)."""
    role = load_role(conv.role_id)
    conv = conv.copy()
    k = reply_at(conv, role, index)
    if k is None:
        at = message_index(index)
        if streaming and at is not None and at >= len(chat_messages(conv, role, "")):
            return conv, _(RATE_WHEN_COMPLETE)
        return conv, _("Only the character's replies can be rated.")
    rating = rate(conv.meta[k], liked)
    failed = _record(conv, role, k, "rating", settings)
    if rating == "like":
        note = _("Thanks: noted that you liked this reply.")
    elif rating == "dislike":
        note = _("Noted. Edit the reply (the pencil) to show how the character should have answered.")
    else:
        note = _("Rating removed.")
    return conv, failed or note


def edit_message(conv: Conversation, index: int, new_text: object, settings: Settings) -> tuple[Conversation, str]:
    """An edited reply is a correction: it replaces the reply in the history and goes to the feedback file.

    An edited message of the visitor's replaces their words; when it is the last one, the page has
    the character answer it again (`answers_again`). The greeting cannot be edited.
    """
    role = load_role(conv.role_id)
    conv = conv.copy()
    q = question_at(conv, role, index)
    if q is not None:
        return _edit_question(conv, q, message_text(new_text).strip())
    k = reply_at(conv, role, index)
    if k is None:
        return conv, _("The greeting cannot be edited; send a message to start the conversation.")
    text = message_text(new_text).strip()
    if not text:
        return conv, _("A reply cannot be empty; the edit was undone.")
    ex, meta = conv.history[k], conv.meta[k]
    if text == ex.reply:
        return conv, ""
    correct(meta, ex.reply, text)
    conv.history[k] = rewritten(ex, text)
    failed = _record(conv, role, k, "edit", settings)
    return conv, failed or _("Saved your correction: the character will go on from it.")


def _edit_question(conv: Conversation, k: int, text: str) -> tuple[Conversation, str]:
    """The visitor rewrites their own message; the reply after it is answered again only when it is the last."""
    ex = conv.history[k]
    if not text:
        return conv, _("A message cannot be empty; the edit was undone.")
    if text == ex.text:
        return conv, ""
    conv.history[k] = replace(ex, text=text)
    if k == len(conv.history) - 1:
        conv.tried = []
        return conv, _("Your message was changed; the character answers it again.")
    return conv, _("Your message was changed; the replies after it stay as they were.")


def answers_again(conv: Conversation, role: Role, index: object) -> bool:
    """Whether chat `index` shows the visitor's last message: edited, it deserves a new answer."""
    return question_at(conv, role, index) == len(conv.history) - 1 and bool(conv.history)


def feedback_values(conv: Conversation, role: Role) -> list[str | None]:
    """The thumbs to show, one per assistant message (the greeting has none)."""
    values: list[str | None] = [None] * len(greeting_messages(role))
    for meta in conv._full_meta():
        values.append({"like": "Like", "dislike": "Dislike"}.get(meta.rating or ""))
    return values


# ------------------------------------------------------------ export and import


def _line_of(conv: Conversation) -> Branch:
    """A conversation as a line of the chat file (its exchanges, metadata and memory with its place in the tree)."""
    full = conv.copy()
    return Branch(conv.line.id, conv.line.name, conv.line.parent, conv.line.at, full.history, full.meta,
                  list(conv.memory.pins), valid_notes(conv.memory.notes, full.history))


def export_chat(conv: Conversation, user_role: str, folder: Path | None = None) -> Path:
    """The conversation, with its other lines, as a .jsonl file for download."""
    role = load_role(conv.role_id)
    name = user_role or role.visitor_name
    line = _line_of(conv)
    text = dump_chat(Transcript(conv.role_id, role.name, name, line.history, line.meta, line.pins, line.notes,
                                replace(line, history=[], meta=[], pins=[], notes=[]),
                                [_line_of(o) for o in conv.others], persona(name, conv.persona) if conv.persona
                                else None, conv.note))
    return export_file(text, f"chat-{conv.role_id}", folder)


def import_chat(path: str | Path, settings: Settings | None = None) -> tuple[Conversation, str]:
    """(conversation, the visitor's name in it) from an exported file, with its other lines; InputError with a
    sentence."""
    t = load_chat(Path(path).read_bytes())
    try:
        load_role(t.role_id)
    except ChatHaruhiError:
        raise InputError(_("This chat is with '{name}', who is not available here. Add the character in the "
                           "'Add a character' tab first, then import the chat again.",
                           name=t.role_name or t.role_id)) from None
    about = t.persona.description if t.persona else ""

    def conversation(b: Branch) -> Conversation:
        return Conversation(t.role_id, b.history, b.meta, memory=Memory(b.pins, notes=b.notes), persona=about,
                            note=t.note, line=replace(b, history=[], meta=[], pins=[], notes=[]))
    conv = conversation(replace(t.line, history=t.history, meta=t.meta, pins=t.pins, notes=t.notes))
    conv.others = [conversation(b) for b in t.branches]
    index_in_background(conv, settings or Settings.from_env())
    return conv, t.user_role


def index_in_background(conv: Conversation, settings: Settings) -> None:
    """Index every exchange of a chat just imported for recall, in the background: its first message waits for
    at most memory.WAIT_S, searching the rest by words, and the Memories panel shows how far it got."""
    if len(conv.history) < 2:
        return
    from ..embedding import get_embedder

    name, history, memory = load_role(conv.role_id).name, list(conv.history), conv.memory
    in_background(lambda: memory.index_older(history, name, get_embedder(settings.embedder)),
                  "indexing an imported chat")
