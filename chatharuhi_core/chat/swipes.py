"""Alternatives of a reply ("swipes"): every reply a message has had is kept, the player flips between them, and
the one kept is what the conversation goes on from.

An exchange holds them in `Exchange.alternatives`, in the order they came, with the kept one (`reply`) among
them. A kept alternative against each one passed over is a preference pair (data/feedback.py), as a corrected
reply against the model's own words is (CharacterGLM: the player's choices improve the model).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

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


@dataclass(frozen=True)
class Choices:
    """What a chat's reply or a group scene's line has been: the text kept and every text it has had, in order,
    the kept one among them. One value for both, so that adding, keeping, flipping and correcting are written once
    (an Exchange keeps its texts in `reply` and `alternatives`, a SceneLine in `text` and `alternatives`)."""

    kept: str
    texts: tuple[str, ...]

    @classmethod
    def of(cls, kept: str, alternatives: Sequence[str]) -> Choices:
        alternatives = tuple(alternatives)
        return cls(kept, alternatives if kept in alternatives else (*alternatives, kept))

    @property
    def position(self) -> int:
        """The kept text's place among them (0-based)."""
        return self.texts.index(self.kept)

    @property
    def stored(self) -> tuple[str, ...]:
        """The alternatives as a line stores them: none while it has had one text."""
        return self.texts if len(self.texts) > 1 else ()

    def counter(self) -> str:
        """"2/3": the kept text's place and how many there are."""
        return f"{self.position + 1}/{len(self.texts)}"

    def passed_over(self) -> list[str]:
        """The texts not kept: each is the rejected side of a preference pair with the kept one."""
        return [t for t in self.texts if t != self.kept]

    def added(self, new: str) -> Choices:
        """`new` as one more text, kept (a text already there is kept again)."""
        return Choices(new, merged(self.texts, new))

    def picked(self, number: int) -> Choices:
        """Text `number` (1-based) kept; a sentence when there is none."""
        if not 1 <= number <= len(self.texts):
            raise InputError(ngettext("This reply has {n} alternative; there is no number {number}.",
                                      "This reply has {n} alternatives; there is no number {number}.",
                                      len(self.texts), number=number))
        return Choices(self.texts[number - 1], self.texts)

    def flipped(self, step: int) -> Choices:
        """The next (`step` 1) or previous (-1) text kept, going round at either end."""
        return Choices(stepped(self.texts, self.kept, step), self.texts)

    def rewritten(self, text: str) -> Choices:
        """The kept text corrected by the player: it takes the place of the one it corrects."""
        texts = list(self.texts)
        texts[self.position] = text
        return Choices(text, tuple(dict.fromkeys(texts)))


def choices(ex: Exchange) -> Choices:
    return Choices.of(ex.reply, ex.alternatives)


def chosen(ex: Exchange, c: Choices) -> Exchange:
    """The exchange with `c`'s text kept and its texts as its alternatives."""
    return replace(ex, reply=c.kept, alternatives=c.stored)


def replies_of(ex: Exchange) -> tuple[str, ...]:
    """Every reply the message has had, in order (just the reply while it has had one)."""
    return choices(ex).texts


def position(ex: Exchange) -> int:
    """The kept reply's place among them (0-based)."""
    return choices(ex).position


def added(ex: Exchange, new: str) -> Exchange:
    """The exchange with `new` as one more alternative, kept (an alternative already there is kept again)."""
    return chosen(ex, choices(ex).added(new))


def another(before: Exchange, after: Exchange) -> Exchange:
    """The exchange a regenerate made (`after`), with the replies the message had before it beside its own."""
    return chosen(after, choices(before).added(after.reply))


def kept(ex: Exchange, number: int) -> Exchange:
    """The exchange with alternative `number` (1-based) kept; a sentence when there is none."""
    return chosen(ex, choices(ex).picked(number))


def flipped(ex: Exchange, step: int) -> Exchange:
    """The next (`step` 1) or previous (-1) alternative kept, going round at either end."""
    return chosen(ex, choices(ex).flipped(step))


def rewritten(ex: Exchange, text: str) -> Exchange:
    """The kept reply corrected by the player: it takes the place of the one it corrects among the alternatives."""
    return chosen(ex, choices(ex).rewritten(text))


def passed_over(ex: Exchange) -> list[str]:
    """The alternatives not kept: each is the rejected side of a preference pair with the kept one."""
    return choices(ex).passed_over()


def counter(ex: Exchange) -> str:
    """"2/3": the kept alternative's place and how many there are."""
    return choices(ex).counter()


def check_alternatives(given: object, reply: str, where: str) -> tuple[str, ...]:
    """A saved exchange's alternatives: a list of texts with its reply among them; a sentence naming `where`."""
    if given is None or given == []:
        return ()
    if not isinstance(given, list) or not all(isinstance(a, str) and a.strip() for a in given):
        raise InputError(_("{where} has 'alternatives' that are not a list of replies.", where=where))
    if reply not in given:
        raise InputError(_("{where}: its reply is not among its 'alternatives'.", where=where))
    return merged(given, reply) if len(given) > 1 else ()

