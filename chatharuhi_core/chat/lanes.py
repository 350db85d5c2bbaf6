"""Lanes: engines that generate one reply at a time (the in-process local model, a llama.cpp server
with one slot) take visitors in order, and tell each one waiting their place and an estimate.

Why not Gradio's own queue: its concurrency limits belong to an event, and one event (Send) serves
every engine, so a limit there would hold visitors of an API engine behind the local model's. A lane
is keyed by what is actually shared (the process's model, one server), so the script and API engines
stay parallel. Why at all: without it, a one-slot server holds every extra request unanswered until
the model timeout, counted from submit (8 visitors gave 7 errors); in a lane the engine is asked only
once a slot is free, so its timeout counts from there.

A waiting visitor's turn polls its ticket about once a second (the page shows the place); a ticket not
polled for `STALE_S` belongs to a visitor who left, and is dropped, so a closed tab frees its place even
if its turn is never closed.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..i18n import _, ngettext

STALE_S = 15.0  # a waiting ticket not polled for this long: its visitor has gone


@dataclass(frozen=True)
class LaneSpec:
    """What an engine shares with other visitors' engines: `key` names the resource (one per process for the
    local model, one per server), `label` is how a visitor is told of it, `slots` how many replies at once."""

    key: str
    label: str  # a marked message (N_), translated where shown; `where` fills its {where}
    slots: int = 1
    where: str = ""


@dataclass(frozen=True)
class Waiting:
    """One look at a ticket that is still waiting: `place` 1 is next; `about_s` None while nothing is known."""

    place: int
    about_s: float | None
    label: str
    slots: int = 1
    where: str = ""


@dataclass(eq=False)
class Ticket:
    lane: Lane
    number: int
    seen: float = field(default_factory=time.monotonic)
    started: float | None = None  # when it got its slot

    def waiting(self, poll_s: float = 1.0) -> Iterator[Waiting]:
        """Yields the place while waiting (first at once, then about every poll_s); returns when a slot is ours."""
        yield from self.lane._wait(self, poll_s)

    def release(self) -> None:
        self.lane._release(self)

    def __enter__(self) -> Ticket:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class Lane:
    """Up to `slots` tickets served at once, the rest in arrival order."""

    def __init__(self, spec: LaneSpec):
        self.spec = spec
        self._cond = threading.Condition()
        self._queue: list[Ticket] = []  # waiting, in order
        self._serving: list[Ticket] = []
        self._numbers = itertools.count(1)
        self._mean_s: float | None = None  # moving mean of how long a ticket holds a slot

    def join(self) -> Ticket:
        with self._cond:
            ticket = Ticket(self, next(self._numbers))
            self._queue.append(ticket)
            return ticket

    @property
    def waiting_count(self) -> int:
        with self._cond:
            return len(self._queue)

    @property
    def serving_count(self) -> int:
        with self._cond:
            return len(self._serving)

    def _drop_stale(self, now: float) -> None:
        kept = [t for t in self._queue if now - t.seen < STALE_S]
        if len(kept) != len(self._queue):
            self._queue = kept
            self._cond.notify_all()

    def _admit(self, ticket: Ticket) -> bool:
        free = self.spec.slots - len(self._serving)
        if free > 0 and ticket in self._queue[:free]:
            self._queue.remove(ticket)
            ticket.started = time.monotonic()
            self._serving.append(ticket)
            self._cond.notify_all()
            return True
        return False

    def _look(self, ticket: Ticket, now: float) -> Waiting:
        ahead = self._queue.index(ticket)
        about = None
        if self._mean_s is not None:
            # the tickets ahead are served `slots` at a time, after a slot frees
            left = 0.0
            if len(self._serving) >= self.spec.slots:
                longest = max(now - (t.started or now) for t in self._serving)
                left = max(0.0, self._mean_s - longest)
            about = max(1.0, (ahead // self.spec.slots) * self._mean_s + left)
        return Waiting(ahead + 1, about, self.spec.label, self.spec.slots, self.spec.where)

    def _wait(self, ticket: Ticket, poll_s: float) -> Iterator[Waiting]:
        first = True
        while True:
            with self._cond:
                if not first:
                    self._cond.wait(poll_s)
                now = time.monotonic()
                ticket.seen = now
                self._drop_stale(now)
                if ticket in self._serving:
                    return
                if ticket not in self._queue:  # dropped as stale (not polled for STALE_S): back in line
                    self._queue.append(ticket)
                if self._admit(ticket):
                    return
                look = self._look(ticket, now)
            first = False
            yield look

    def _widen(self, spec: LaneSpec) -> None:
        with self._cond:
            self.spec = spec
            self._cond.notify_all()

    def _release(self, ticket: Ticket) -> None:
        with self._cond:
            if ticket in self._serving:
                self._serving.remove(ticket)
                held = time.monotonic() - (ticket.started or time.monotonic())
                self._mean_s = held if self._mean_s is None else 0.7 * self._mean_s + 0.3 * held
            elif ticket in self._queue:
                self._queue.remove(ticket)
            self._cond.notify_all()


class Lanes:
    """The lanes of one process, by key; an engine without a lane (None) is not queued."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lanes: dict[str, Lane] = {}

    def lane(self, spec: LaneSpec) -> Lane:
        with self._lock:
            lane = self._lanes.get(spec.key)
            if lane is not None and spec.slots > lane.spec.slots:
                lane._widen(spec)  # more slots now (the local model loaded with its batch): those waiting go in
            elif lane is None or lane.spec.slots != spec.slots:
                if lane is not None and (lane.serving_count or lane.waiting_count):
                    return lane  # fewer slots under load: the new count applies once it is idle
                lane = self._lanes[spec.key] = Lane(spec)
            return lane

    def for_engine(self, engine: object) -> Lane | None:
        """The lane of an engine that says it has one (an optional `lane()` method), else None."""
        probe = getattr(engine, "lane", None)
        spec = probe() if probe else None
        return self.lane(spec) if spec else None


class _NoTicket:
    """The ticket of an engine that serves everyone at once."""

    def waiting(self, poll_s: float = 1.0) -> Iterator[Waiting]:
        return iter(())

    def release(self) -> None:
        pass

    def __enter__(self) -> _NoTicket:
        return self

    def __exit__(self, *exc) -> None:
        pass


_PROCESS_LANES: Lanes | None = None
_PROCESS_LOCK = threading.Lock()


def process_lanes() -> Lanes:
    """The lanes every visitor of this process shares (the model and servers are the process's, not a visitor's)."""
    global _PROCESS_LANES
    with _PROCESS_LOCK:
        if _PROCESS_LANES is None:
            _PROCESS_LANES = Lanes()
        return _PROCESS_LANES


def ticket_for(engine: object, lanes: Lanes | None = None) -> Ticket | _NoTicket:
    """A place in the engine's lane (release it, or use it as a context manager); a no-op for a parallel engine."""
    lane = (lanes or process_lanes()).for_engine(engine)
    return lane.join() if lane else _NoTicket()


def ordinal(n: int) -> str:
    """A place in line in the current language: 1st, 2nd, 3rd, 4th… (第 1 位…)."""
    if 10 <= n % 100 <= 20:
        return _("{n}th", n=n)
    last = n % 10
    return (_("{n}st", n=n) if last == 1 else _("{n}nd", n=n) if last == 2 else _("{n}rd", n=n) if last == 3
            else _("{n}th", n=n))


def waiting_line(look: Waiting) -> str:
    """The sentence a waiting visitor sees, in the visitor's language."""
    about = _(", about {seconds} s", seconds=round(look.about_s)) if look.about_s is not None else ""
    pace = ngettext("one visitor", "{n} visitors", look.slots)
    return _("⏳ {place} in line for {label}, which answers {pace} at a time{about}.", place=ordinal(look.place),
             label=_(look.label, where=look.where), pace=pace, about=about)
