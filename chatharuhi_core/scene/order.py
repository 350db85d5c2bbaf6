"""Who speaks next: the orders people know from group chats, registered by name.

Each order answers two questions about a scene:
  responders(scene, rng)  who answers, in turn, after the visitor's line
  next(scene, rng)        who speaks the next line when the characters talk among themselves
Both consider only present, unmuted members, and never the speaker of the last line unless
the scene allows self-replies. The random generator is passed in so tests can seed it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..errors import look_up
from ..i18n import N_
from .cast import Member, SceneLine, mention_at


class Stage(Protocol):
    """What an order reads of a scene: who is in it, what was said, its rule on self-replies, and for the
    director, whether its engine writes and a way to ask it."""

    @property
    def members(self) -> list[Member]: ...

    @property
    def lines(self) -> list[SceneLine]: ...

    @property
    def allow_self(self) -> bool: ...

    @property
    def engine_writes(self) -> bool: ...

    def ask_director(self) -> Member | object | None: ...


def candidates(scene: Stage) -> list[Member]:
    """Present, unmuted members in list order, minus the last speaker unless self-replies are allowed."""
    last = scene.lines[-1].role_id if scene.lines else None
    return [m for m in scene.members if m.present and not m.muted and (scene.allow_self or m.role_id != last)]


def mentioned(scene: Stage, pool: list[Member]) -> list[Member]:
    """Members of `pool` named in the last line, in the order the line names them. A whisper calls nobody:
    the others did not hear it."""
    if not scene.lines or scene.lines[-1].to is not None:
        return []
    text = scene.lines[-1].text
    found = [(pos, i, m) for i, m in enumerate(pool) if (pos := mention_at(text, m)) is not None]
    return [m for _at, _n, m in sorted(found, key=lambda t: (t[0], t[1]))]


def _volunteers(scene: Stage, rng: random.Random) -> tuple[list[Member], list[Member], list[Member], list[Member]]:
    """(pool, the named ones, the others in a shuffled order, those of them who roll under their talkativeness)."""
    pool = candidates(scene)
    named = mentioned(scene, pool) if pool else []
    rest = [m for m in pool if m not in named]
    if pool:
        rng.shuffle(rest)
    return pool, named, rest, [m for m in rest if rng.random() < m.talkativeness]


def _natural(scene: Stage, rng: random.Random) -> list[Member]:
    """Named ones first; then each other member who rolls under its talkativeness; else one at random."""
    pool, named, _rest, volunteers = _volunteers(scene, rng)
    if not pool:
        return []
    return [*named, *volunteers] or [rng.choice(pool)]


def _natural_answer(scene: Stage, rng: random.Random) -> list[Member]:
    """Natural order after the visitor's line: the named ones; then, of those who volunteer, the ones with
    something to say to it when the engine can tell (the offline engine, which quotes: a character with no line
    that answers stays quiet instead of saying an unrelated one). When no one is named and no volunteer has a line,
    another who has one answers, else the first volunteer, who deflects in character; with no one willing, one
    present character at random, as before."""
    pool, named, rest, volunteers = _volunteers(scene, rng)
    if not pool:
        return []
    can = getattr(scene, "can_answer", None)
    if not volunteers or can is None:
        return [*named, *volunteers] or [rng.choice(pool)]
    able = [m for m in volunteers if can(m) is not False]
    if named or able:
        return [*named, *able]
    return [next((m for m in rest if m not in volunteers and can(m)), volunteers[0])]


def _natural_next(scene: Stage, rng: random.Random) -> Member | None:
    picked = _natural(scene, rng)
    return picked[0] if picked else None


def _list(scene: Stage, rng: random.Random) -> list[Member]:
    return candidates(scene)


def _list_next(scene: Stage, rng: random.Random) -> Member | None:
    """The member after the last character who spoke, going round the list."""
    pool = candidates(scene)
    if not pool:
        return None
    last = next((ln.role_id for ln in reversed(scene.lines) if ln.by_character), None)
    ids = [m.role_id for m in scene.members]
    if last in ids:
        after = ids[ids.index(last) + 1:] + ids[: ids.index(last) + 1]
        for rid in after:
            for m in pool:
                if m.role_id == rid:
                    return m
    return pool[0]


def spoken_this_round(scene: Stage) -> set[str]:
    """Who has spoken since everyone present last had a turn (a round resets once all have)."""
    current: set[str] = set()
    for line in scene.lines:
        if not line.by_character:
            continue
        if line.role_id in current:  # someone spoke twice: only possible after a forced turn
            current = set()
        current.add(line.role_id)
        everyone = {m.role_id for m in scene.members if m.present and not m.muted}
        if everyone <= current:
            current = set()
    return current


def _pooled_next(scene: Stage, rng: random.Random) -> Member | None:
    """One of those who have not spoken this round; a new round when all have."""
    pool = candidates(scene)
    if not pool:
        return None
    done = spoken_this_round(scene)
    fresh = [m for m in pool if m.role_id not in done]
    return rng.choice(fresh or pool)


def _pooled(scene: Stage, rng: random.Random) -> list[Member]:
    picked = _pooled_next(scene, rng)
    return [picked] if picked else []


def _manual(scene: Stage, rng: random.Random) -> list[Member]:
    return []  # the visitor picks who answers


def _director(scene: Stage, rng: random.Random) -> list[Member]:
    picked = _director_next(scene, rng)
    return [picked] if picked else []


def _director_next(scene: Stage, rng: random.Random) -> Member | None:
    """The engine picks from a short plain request; an engine that cannot write falls back to natural order."""
    if not scene.engine_writes:
        return _natural_next(scene, rng)
    choice = scene.ask_director()
    if choice is END:
        return None
    return choice or _natural_next(scene, rng)


END = object()  # the director's answer when it ends the scene


@dataclass(frozen=True)
class Order:
    name: str
    label: str
    responders: Callable[[Stage, random.Random], list[Member]]
    next: Callable[[Stage, random.Random], Member | None]


ORDERS: dict[str, Order] = {
    o.name: o
    for o in (
        Order("natural", N_("Natural: named ones answer, then the talkative"), _natural_answer, _natural_next),
        Order("list", N_("List order: everyone in turn"), _list, _list_next),
        Order("pooled", N_("Pooled: everyone once before anyone twice"), _pooled, _pooled_next),
        Order("manual", N_("Manual: you pick who answers"), _manual, _pooled_next),
        Order("director", N_("Director: the engine picks, or ends the scene"), _director, _director_next),
    )
}


def order_names() -> list[str]:
    return list(ORDERS)


def get_order(name: str) -> Order:
    return look_up(ORDERS, N_("order"), name)
