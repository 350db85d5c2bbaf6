"""The player's controls on a conversation: the same message answered again, another reply kept beside the
others (swipes.py), a reply continued, the visitor's own line written for them, a branch from an earlier
exchange. Each is a stream (reply.Streaming) or a plain change; a failed or stopped stream leaves the history
as it was."""

from __future__ import annotations

import copy
import time
from collections.abc import Generator
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import EmptyReply, InputError
from ..i18n import _
from .continuation import continue_messages, cut_mark_off, gap, joined, my_line_request, my_line_system
from .conversation import branched
from .engines import ChatRequest
from .prompt import Exchange, PromptParts, lay_out, unwrapped
from .reply import Reply, Streaming
from .swipes import another, flipped, kept, replies_of, rewritten

if TYPE_CHECKING:
    from .core import ChatCore


def regenerate(conv: ChatCore) -> Streaming:
    """Drop the last exchange and answer the same message again."""
    if not conv.history:
        raise InputError(_("There is no reply to regenerate yet."))
    return Streaming(_again(conv, conv.history.pop()))


def _again(conv: ChatCore, last: Exchange) -> Generator[str, None, Reply]:
    try:
        return (yield from conv.turn(last.text, last.user_role, [last.reply]))
    except Exception:
        conv.history.append(last)
        raise


def swipe(conv: ChatCore) -> Streaming:
    """Another reply to the last message, kept beside the ones before it (swipes.py): the new one is kept, and
    `keep` or `flip` brings back any other."""
    if not conv.history:
        raise InputError(_("There is no reply to swipe yet."))
    return Streaming(_swipe(conv, conv.history[-1]))


def _swipe(conv: ChatCore, last: Exchange) -> Generator[str, None, Reply]:
    conv.history.pop()
    try:  # every reply the message has had is avoided, so a quoting engine goes through all its candidates
        reply = yield from conv.turn(last.text, last.user_role, replies_of(last))
    except BaseException:  # failed, or closed mid-stream: the exchange stays as it was
        conv.history.append(last)
        raise
    conv.history[-1] = another(last, conv.history[-1])
    return reply


def keep(conv: ChatCore, number: int, turn: int | None = None) -> Exchange:
    """Keep alternative `number` (1-based) of exchange `turn` (1-based; the last by default): the
    conversation goes on from it."""
    k = _turn_index(conv, turn)
    conv.history[k] = kept(conv.history[k], number)
    return conv.history[k]


def flip(conv: ChatCore, step: int = 1, turn: int | None = None) -> Exchange:
    """Keep the next (`step` 1) or previous (-1) alternative of exchange `turn` (the last by default)."""
    k = _turn_index(conv, turn)
    conv.history[k] = flipped(conv.history[k], step)
    return conv.history[k]


def _turn_index(conv: ChatCore, turn: int | None) -> int:
    if not conv.history:
        raise InputError(_("There is no reply yet."))
    turn = len(conv.history) if turn is None else turn
    if not 1 <= turn <= len(conv.history):
        raise InputError(_("There is no exchange {turn}; the conversation has {count}.", turn=turn,
                           count=len(conv.history)))
    return turn - 1


def branch(conv: ChatCore, at: int | None = None) -> ChatCore:
    """A new conversation that shares the first `at` exchanges (all by default) and goes its own way from
    there; its memory keeps what belongs to those exchanges (Memory.branched). This one is left as it is."""
    other = copy.copy(conv)  # the same role, engine and seat, on a conversation of its own
    other.conversation = branched(conv.conversation, len(conv.history) if at is None else at)
    return other


def continue_reply(conv: ChatCore) -> Streaming:
    """The last reply goes on from where it stopped (a model asked to continue it; the offline engine quotes
    the next line of the same scene). Iterating gives what is added; `reply.text` is the whole reply."""
    if not conv.history:
        raise InputError(_("There is no reply to continue yet."))
    return Streaming(_continue(conv, conv.history[-1]))


def _continue(conv: ChatCore, last: Exchange) -> Generator[str, None, Reply]:
    conv.load()
    started = time.perf_counter()
    conv.history.pop()
    try:
        request = conv.prepare(last.text, last.user_role)
    finally:
        conv.history.append(last)
    so_far = cut_mark_off(last.reply)
    messages = continue_messages(request.messages, conv.role.name, so_far, conv.role.language, conv.layout.fold)
    request = replace(request, messages=messages, task="continue", continuing=so_far)
    last = rewritten(last, so_far)
    more: Reply | None = None
    for attempt in range(2):  # a model asked to go on often stops at once, the reply being whole: one more draw
        steps, first = conv.respond(request, started), True
        try:
            while True:
                piece = next(steps)
                if first:  # a Latin continuation starts after a space (continuation.gap)
                    bare = piece.lstrip()
                    piece, first = gap(last.reply, bare) + bare, not bare
                yield piece
        except StopIteration as done:
            more = done.value
            break
        except EmptyReply:
            if first and not attempt:
                continue
            # twice nothing (or what it showed cleaned away to nothing): the model finds the reply whole, which is
            # an answer, not a fault
            raise EmptyReply(_("{name} has nothing to add: the model ends the reply here. Regenerate it, or "
                               "write your next line.", name=conv.role.name)) from None
    assert more is not None
    whole = joined(last.reply, more.text)
    conv.history[-1] = rewritten(last, whole)
    return replace(more, text=whole)


def my_line(conv: ChatCore) -> Streaming:
    """The visitor's next line written for them, in their persona, for them to edit and send: nothing joins
    the history. The offline engine quotes a line of the visitor's role from the scenes, or says it cannot."""
    return Streaming(_my_line(conv))


def _my_line(conv: ChatCore) -> Generator[str, None, Reply]:
    conv.load()
    started = time.perf_counter()
    user = conv.user_role
    last = conv.history[-1].reply if conv.history else conv.fill(conv.role.fitting_greeting(user) or "")
    query = last or conv.role.name
    vectors = conv.embed_turn([query], False)
    drawn = conv.draw(query, vectors, user, [t for ex in conv.history for t in (ex.text, ex.reply)])
    system = my_line_system(conv.role.name, user, conv.about_player(user), conv.role.language)
    parts = PromptParts(system, conv.history_part(), "", drawn.packed,
                        message=my_line_request(user, conv.role.language))
    request = ChatRequest(messages=lay_out(parts, conv.layout), role=conv.role, user_role=user, text=query,
                          scenes=drawn.scenes, history=list(conv.history), embedder=conv.embedder,
                          packed=len(drawn.packed), task="my_line")
    line = yield from conv.respond(request, started, speaker=user)
    return replace(line, text=unwrapped(line.text))
