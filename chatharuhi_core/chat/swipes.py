"""Alternatives of a reply ("swipes"): every reply a message has had is kept, the player flips between them, and
the one kept is what the conversation goes on from.

An exchange holds them in `Exchange.alternatives`, in the order they came, with the kept one (`reply`) among
them. A kept alternative against each one passed over is a preference pair (data/feedback.py), as a corrected
reply against the model's own words is (CharacterGLM: the player's choices improve the model).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import InputError
from ..i18n import _, ngettext
from .prompt import Exchange

MAX_ALTERNATIVES = 20  # per message: the oldest that is not kept goes first


def merged(texts: Sequence[str], new: str) -> tuple[str, ...]:
    """`texts` with `new` after them (once), at most MAX_ALTERNATIVES: past it, the oldest that is not `new` goes.
    Shared by a chat's exchanges and a group scene's lines."""
    out = list(dict.fromkeys(texts))
    if new not in out:
        out.append(new)
    while len(out) > MAX_ALTERNATIVES:
        out.pop(next(i for i, t in enumerate(out) if t != new))
    return tuple(out)


def stepped(texts: Sequence[str], current: str, step: int) -> str:
    """The text `step` places from `current` among `texts`, going round at either end (the first when `current`
    is not among them)."""
    return texts[(texts.index(current) + step) % len(texts)] if current in texts else texts[0]


def replies_of(ex: Exchange) -> tuple[str, ...]:
    """Every reply the message has had, in order (just the reply while it has had one)."""
    return ex.alternatives if ex.reply in ex.alternatives else (*ex.alternatives, ex.reply)


def position(ex: Exchange) -> int:
    """The kept reply's place among them (0-based)."""
    return replies_of(ex).index(ex.reply)


def added(ex: Exchange, new: str) -> Exchange:
    """The exchange with `new` as one more alternative, kept (an alternative already there is kept again)."""
    replies = merged(replies_of(ex), new)
    return replace(ex, reply=new, alternatives=replies if len(replies) > 1 else ())


def another(before: Exchange, after: Exchange) -> Exchange:
    """The exchange a regenerate made (`after`), with the replies the message had before it beside its own."""
    return added(replace(after, reply=before.reply, alternatives=before.alternatives), after.reply)


def kept(ex: Exchange, number: int) -> Exchange:
    """The exchange with alternative `number` (1-based) kept; a sentence when there is none."""
    replies = replies_of(ex)
    if not 1 <= number <= len(replies):
        raise InputError(ngettext("This reply has {n} alternative; there is no number {number}.",
                                  "This reply has {n} alternatives; there is no number {number}.", len(replies),
                                  number=number))
    return replace(ex, reply=replies[number - 1], alternatives=replies if len(replies) > 1 else ())


def flipped(ex: Exchange, step: int) -> Exchange:
    """The next (`step` 1) or previous (-1) alternative kept, going round at either end."""
    replies = replies_of(ex)
    return kept(ex, replies.index(stepped(replies, ex.reply, step)) + 1)


def rewritten(ex: Exchange, text: str) -> Exchange:
    """The kept reply corrected by the player: it takes the place of the one it corrects among the alternatives."""
    if not ex.alternatives:
        return replace(ex, reply=text)
    replies = list(replies_of(ex))
    replies[position(ex)] = text
    return replace(ex, reply=text, alternatives=tuple(dict.fromkeys(replies)))


def passed_over(ex: Exchange) -> list[str]:
    """The alternatives not kept: each is the rejected side of a preference pair with the kept one."""
    return [r for r in replies_of(ex) if r != ex.reply]


def counter(ex: Exchange) -> str:
    """"2/3": the kept alternative's place and how many there are."""
    return f"{position(ex) + 1}/{len(replies_of(ex))}"


def check_alternatives(given: object, reply: str, where: str) -> tuple[str, ...]:
    """A saved exchange's alternatives: a list of texts with its reply among them; a sentence naming `where`."""
    if given is None or given == []:
        return ()
    if not isinstance(given, list) or not all(isinstance(a, str) and a.strip() for a in given):
        raise InputError(_("{where} has 'alternatives' that are not a list of replies.", where=where))
    if reply not in given:
        raise InputError(_("{where}: its reply is not among its 'alternatives'.", where=where))
    return merged(given, reply) if len(given) > 1 else ()

