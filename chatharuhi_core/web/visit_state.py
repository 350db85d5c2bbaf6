"""One visit's state and the one way it changes: its chat, its other chats and its group scene, each changed by a
step applied to the current value under one lock, and the streams (a reply, a scene's run, ✍ My line) that may
still land their steps, each holding one ticket of one counter. The page reaches it only through its door
(page/door.py); a stream lands what it wrote by id, never a copy of what it read when it started."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STREAM_HOLD_S = 600.0  # a reply's hold lapses after this (a stream abandoned unclosed)
STREAMS = {"conv": "chat", "chats": "chat", "scene": "scene"}  # which stream writes each value


class VisitState:
    """One visitor's values and streams (in the page's per-session state; a fresh one per session)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.values: dict[str, Any] = {}  # "conv", "chats", "scene": the truth; the page's states mirror it
        self.streams: dict[str, tuple[int, float]] = {}  # kind -> (ticket, since)
        self.ticket = 0  # the one counter
        self.stopping = 0  # the ticket of a reply the visitor stopped (■ Stop): it ends with what it wrote

    def __deepcopy__(self, memo) -> VisitState:  # gr.State copies the page's for each session: a fresh one
        return type(self)()

    def held(self) -> threading.RLock:  # the visit's one lock: a step reads and writes the values under it
        return self._lock

    def current(self, name: str, page_value: Any) -> Any:
        """The value a step works on: the truth (the page's, until the door first saw it)."""
        with self._lock:
            return self.values.setdefault(name, page_value)

    def write(self, name: str, value: Any) -> bool:
        """A quick step's new value. Returns whether the page draws it now: while a stream of it runs, that
        stream's next frame draws it (a frame drawn now could reach the page after the stream's last)."""
        with self._lock:
            self.values[name] = value
            return not self.live(STREAMS[name])

    def live(self, kind: str) -> bool:
        with self._lock:
            held = self.streams.get(kind)
            return held is not None and time.monotonic() - held[1] < STREAM_HOLD_S

    def begin(self, kind: str, refuse: bool = False) -> Stream:
        """A stream of `kind` starts and the one before it may land no more; with `refuse`, while one is live it
        is refused instead (a second reply would write the chat without the first's exchange)."""
        with self._lock:
            if refuse and self.live(kind):
                return Stream(self, kind, 0)
            self.ticket += 1
            self.streams[kind] = (self.ticket, time.monotonic())
            return Stream(self, kind, self.ticket)

    def close(self, kind: str) -> None:
        """A switch, a cleared chat or scene, a control that cancels: the stream of `kind` may land no more."""
        with self._lock:
            self.streams.pop(kind, None)

    def halt(self, kind: str = "chat") -> bool:
        """■ Stop: the stream of `kind` ends with what it wrote; False when none is live."""
        with self._lock:
            if not self.live(kind):
                return False
            self.stopping = self.streams[kind][0]
            return True


@dataclass
class Stream:
    """A stream's hold on its visit (ticket 0: refused)."""

    visit: VisitState
    kind: str
    ticket: int

    def open(self) -> bool:  # whether it may still land (no switch, clear or newer stream of its kind since)
        return bool(self.ticket) and self.visit.streams.get(self.kind, (0, 0.0))[0] == self.ticket

    def halted(self) -> bool:  # ■ Stop was pressed for it
        return bool(self.ticket) and self.visit.stopping == self.ticket

    def land(self, name: str, step: Callable[[Any], Any], last: bool = False) -> Any:
        """The stream's step on the current value (None when it may land no more); `last` ends the stream in the
        same hold, so that a quick step after it is drawn by the page, not left for a frame that never comes."""
        with self.visit._lock:
            if not self.open():
                return None
            value = self.visit.values[name] = step(self.visit.values.get(name))
            if last:
                self.end()
            return value

    def end(self) -> None:
        with self.visit._lock:
            if self.open():
                self.visit.streams.pop(self.kind, None)
