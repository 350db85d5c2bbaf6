"""A reply streamed for the page: the turn a Send, a Regenerate or a Continue starts, as frames the page draws (the
chat so far, then the reply landed on the conversation), and the local model reading ahead between turns."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from ..chat.chatbot import ChatHaruhi, Reply, Streaming
from ..chat.lanes import ticket_for, waiting_line
from ..chat.memory import in_background
from ..chat.persona import persona
from ..chat.prompt import Exchange
from ..chat.swipes import another, replies_of
from ..chat.transcript import ReplyMeta
from ..config import Settings
from ..errors import ChatHaruhiError, InputError, Stopped
from ..i18n import _
from ..roles.regex_scripts import AI_OUTPUT
from ..roles.role import Role
from ..roles.sources import load_role
from .chat import Conversation
from .common import WARNING_MARK, EnginePanel, Throttle, while_running
from .drawing import chat_messages, memory_line, stats_line
from .frames import on_page

log = logging.getLogger(__name__)


def make_bot(conv: Conversation, engine: EnginePanel, user_role: str, settings: Settings) -> ChatHaruhi:
    """A ChatHaruhi for this event, on a Conversation of its own with the page's history, memory and note (the
    page's value changes only through its door); ChatHaruhi fills blanks from the operator's settings."""
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
