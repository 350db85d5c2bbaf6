"""The one door through which a page event writes a visit's state (web/visit_state.py).

A handler is written as if it were alone: it takes the chat (or the other chats, or the group scene) and returns
the new one. Registered through `Door.on`, it is handed the visit's current value instead of the page's copy (which
may be a step behind: a reply's last frame, or a change beside it, not yet on the page), and what it returns is
the visit's new value. A stream (`stream=`) is handed its hold (a Stream) first: it lands its steps by id, and each
frame draws the current value. tests/unit/test_house.py walks the page's events and fails on any that writes a
visit's state another way."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass

import gradio as gr
from gradio.events import EventData
from gradio.helpers import Cache
from gradio.utils import get_type_hints, is_prop_update

from chatharuhi_core.web.visit_state import Stream, VisitState


def _parameters(fn, stream: bool) -> list[inspect.Parameter]:
    params = list(inspect.signature(fn).parameters.values())
    return params[1:] if stream else params


def _special(param: inspect.Parameter, hint) -> bool:
    """Whether Gradio fills this parameter itself (a progress bar, a request, a sign-in, an event's data)."""
    if isinstance(param.default, (gr.Progress, Cache)):
        return True
    hints = (gr.Request, gr.OAuthProfile, gr.OAuthToken)
    if hint in hints or any(hint == (h | None) for h in hints):
        return True
    return inspect.isclass(hint) and issubclass(hint, EventData)


def _positions(fn, count: int) -> list[int]:
    """Where each of `count` components lands among `fn`'s arguments (Gradio puts its own, a sign-in, an event's
    data, a progress bar, between them)."""
    hints = get_type_hints(fn)
    named = [p for p in inspect.signature(fn).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    free = [k for k, param in enumerate(named) if not _special(param, hints.get(param.name))]
    free += range(len(named), len(named) + count)  # the rest go to *args, after every named one
    return free[:count]


def _listed(blocks) -> list:
    return [] if blocks is None else list(blocks) if isinstance(blocks, (list, tuple, set)) else [blocks]


@dataclass(frozen=True)
class Way:
    """How a registration goes through the door (Door.on's keywords)."""

    stops: str | None = None
    stream: str | None = None
    refuse: bool = False
    hands_visit: bool = False
    slow: bool = False


class Later:
    """What a slow handler (`slow=True`: a character fetched or built) returns once its slow part is done: `step`
    takes the visit's values it reads, as they are now (the visitor may have chatted on meanwhile), and returns the
    handler's outputs. The door runs it under the visit's lock."""

    def __init__(self, step) -> None:
        self.step = step


class Door:
    """One per page: the visit's state (a gr.State, a fresh VisitState per session) and which of the page's
    states mirror which of its values."""

    def __init__(self) -> None:
        self.visit = gr.State(VisitState())
        self.names: dict[int, str] = {}  # a mirroring state's id -> the value's name

    def track(self, name: str, state: gr.State) -> None:
        self.names[state._id] = name

    def on(self, trigger, fn, inputs=None, outputs=None, **kw):
        """`trigger(fn, inputs, outputs, **kw)` through the door; `kw` may also say how (Way's fields): `stops`,
        the stream of that kind may land no more (a switch, a clear); `stream`, fn streams as that kind, handed its
        Stream first (`refuse`: not while one is live; else it takes over); `hands_visit`, fn asks the visit
        itself first (whether a reply streams); `slow`, fn runs outside the visit's lock and returns its outputs or
        a Later."""
        way = Way(**{name: kw.pop(name) for name in Way.__dataclass_fields__ if name in kw})
        stops, stream, refuse, hands_visit, slow = way.stops, way.stream, way.refuse, way.hands_visit, way.slow
        inputs, outputs = _listed(inputs), _listed(outputs)
        took = [(k, self.names[b._id]) for k, b in enumerate(inputs) if b._id in self.names]
        gives = [(k, self.names[b._id]) for k, b in enumerate(outputs) if b._id in self.names]
        door = _Walk([], gives, len(outputs), stops)
        wrapped = _streamed(fn, door, stream, refuse) if stream else _quick(fn, door, hands_visit, slow)
        functools.update_wrapper(wrapped, fn)
        first = inspect.Parameter("visit", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        wrapped.__signature__ = inspect.Signature([first, *_parameters(fn, bool(stream) or hands_visit)])
        wrapped.door = True
        at = [k - 1 for k in _positions(wrapped, len(inputs) + 1)[1:]]  # the visit's state comes first
        door.took = [(at[k], name) for k, name in took]
        return trigger(wrapped, [self.visit, *inputs], outputs, **kw)


class _Walk:
    """What one registration reads and writes of the visit: (argument position, name) in, (output, name) out."""

    def __init__(self, took: list, gives: list, count: int, stops: str | None) -> None:
        self.took, self.gives, self.count, self.stops = took, gives, count, stops

    def enter(self, visit: VisitState, args: tuple) -> list:
        if self.stops:
            visit.close(self.stops)
        args = list(args)
        for k, name in self.took:
            args[k] = visit.current(name, args[k])
        return args

    def _each(self, out, change):
        """`out` (one value, or a row of them) with each visit value's output passed through `change`."""
        if not self.gives:
            return out
        row = list(out) if self.count > 1 else [out]
        for k, name in self.gives:
            if not is_prop_update(row[k]):
                row[k] = change(name, row[k])
        return tuple(row) if self.count > 1 else row[0]

    def write(self, visit: VisitState, out):
        """A quick handler's outputs: its new values become the visit's; drawn now unless a stream draws them."""
        return self._each(out, lambda name, value: value if visit.write(name, value) else gr.skip())

    def draw(self, visit: VisitState, frame):
        """A stream's frame: each value it draws is the visit's current one (never a copy it took when it
        started)."""
        return self._each(frame, visit.current)


def _quick(fn, door: _Walk, hands_visit: bool, slow: bool):
    def wrapped(visit: VisitState, *args, **kwargs):
        visit = visit if visit is not None else VisitState()
        with visit.held():
            args = door.enter(visit, args)
            if not slow:
                return door.write(visit, fn(visit, *args, **kwargs) if hands_visit else fn(*args, **kwargs))
        out = fn(*args, **kwargs)
        with visit.held():
            if isinstance(out, Later):
                if door.stops:  # a reply begun while the slow part ran stops too: it would go on in the new chat
                    visit.close(door.stops)
                out = out.step(*(visit.current(name, None) for _k, name in door.took))
            return door.write(visit, out)
    return wrapped


def _streamed(fn, door: _Walk, kind: str, refuse: bool):
    def wrapped(visit: VisitState, *args, **kwargs):
        visit = visit if visit is not None else VisitState()
        with visit.held():
            args = door.enter(visit, args)
            hold: Stream = visit.begin(kind, refuse)
        try:
            for frame in fn(hold, *args, **kwargs):
                yield door.draw(visit, frame)
        finally:
            hold.end()
    return wrapped


def quick_step(visit: VisitState, name: str, step) -> tuple:
    """A quick step inside a stream's handler (▶ flipping instead of writing a new reply): `step(value)` returns
    the new value and the handler's other outputs; the value is skipped when the stream of it draws it."""
    with visit.held():
        out = step(visit.current(name, None))
        if not is_prop_update(out[0]) and not visit.write(name, out[0]):
            return (gr.skip(), *out[1:])
        return out
