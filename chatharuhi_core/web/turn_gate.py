"""One visit's gate on its conversation: which reply may still draw in the chat, and what the visitor changed
while it streamed (a thumb, a pin, their portrait, the Story panel's boxes), so that the reply's last frame writes
the conversation back with those changes instead of over them."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from .chat import Conversation
from .visit_gate import VisitGate

STREAM_HOLD_S = 600.0  # a reply's hold on its visit's gate lapses after this (a stream abandoned unclosed)
AFTER_KEPT = 8  # how many of a visit's superseded conversations the gate remembers the successor of


def merged(reply: Conversation, before: Conversation, edited: Conversation) -> Conversation:
    """The conversation a reply wrote (`reply`, made from `before`) with what the visitor changed in `before`
    meanwhile (`edited`): whom they play, their portrait, the author's note, the pins, and each earlier exchange
    the reply left as it was (a rating, a correction). What the reply changed itself stays the reply's."""
    out = reply.copy()
    for name in ("persona", "face", "note"):
        if getattr(edited, name) != getattr(before, name):
            setattr(out, name, getattr(edited, name))
    if edited.memory.pins != before.memory.pins:
        out.memory.pins = list(edited.memory.pins)
    was, now = before._full_meta(), edited._full_meta()
    for k in range(min(len(before.history), len(edited.history), len(out.history))):
        # an exchange with no record of its own (an older state, the API) gets a new id at each copy: its text says
        kept = out.history[k] == before.history[k] and (k >= len(before.meta) or out.meta[k].id == was[k].id)
        if kept and (edited.history[k] != before.history[k] or now[k] != was[k]):
            out.history[k], out.meta[k] = edited.history[k], replace(now[k])
    return out


@dataclass
class TurnGate(VisitGate):
    """Which reply of a visit may still draw in the chat, and the visitor's changes while it streams (one per
    visitor, in the page's state).

    A switch of character or a cleared chat closes the gate on the reply streaming, on the server and at once.
    The page also cancels the reply, but on a busy machine its cancel can reach the server after the switch is
    done, and a frame sent in between would put the old character's chat back on screen.

    A reply holds the gate while it streams (`begin`, `settle`, `end`): a second turn of the same visit (Enter,
    then Send while the reply streams; Regenerate or Continue meanwhile) is refused instead of starting from the
    chat as it was before the first and writing it back without the first exchange. A quick change meanwhile
    (`edit`) is kept here, not in the page's state: the reply's last frame writes both (`settle`). Otherwise the
    last frame would undo the change, or the change, written after it, would drop the new exchange.
    """

    streaming: int = 0  # the ticket of the reply streaming now; 0 when none
    since: float = 0.0  # when it began (time.monotonic): one held longer than STREAM_HOLD_S is let go
    started: Conversation | None = None  # the page's conversation the streaming reply started from
    edited: Conversation | None = None  # that conversation as the visitor's changes since have left it
    line: int = 0  # the ✍ My line writing into the message box now (`line_begin`); another number stops it
    stopping: int = 0  # the ticket of a reply the visitor stopped (■ Stop): it ends with what it has written

    def __post_init__(self) -> None:
        super().__post_init__()
        # not a field (Gradio reads a state's fields for the page): id(a conversation the page held) -> (it, what
        # followed it). A handler that read it, queued before what followed reached the page (a reply's last frame,
        # a change beside it), works on what followed
        self._after: dict[int, tuple[Conversation, Conversation]] = {}

    def _live(self) -> bool:
        return bool(self.streaming) and self.streaming == self.ticket and time.monotonic() - self.since < STREAM_HOLD_S

    def _followed(self, old: Conversation | None, new: Conversation | None) -> None:
        """`new` follows `old` (and whatever `old` followed): the last AFTER_KEPT such steps are kept."""
        if old is None or new is None or old is new:
            return
        for key, (was, now) in list(self._after.items()):
            if now is old:
                self._after[key] = (was, new)
        self._after.pop(id(old), None)
        self._after[id(old)] = (old, new)
        while len(self._after) > AFTER_KEPT:
            self._after.pop(next(iter(self._after)))

    def _hand_over(self, to: Conversation | None) -> None:
        self._followed(self.started, to)
        self.started = self.edited = None

    def _latest(self, conv: Conversation | None) -> Conversation | None:
        if self._live():
            return self.edited if self.edited is not None else conv
        after = self._after.get(id(conv)) if conv is not None else None
        return after[1] if after is not None and after[0] is conv else conv

    def close(self) -> None:
        """A switch or a cleared chat: the reply streaming, if any, may not draw any more (and lets go); the
        visitor's changes while it streamed are handed to what comes next (`latest`)."""
        with self._lock:
            if self._live():
                self._hand_over(self.edited)
            self.ticket += 1

    def begin(self, state: Conversation | None = None) -> int | None:
        """A new reply starts from the page's conversation `state` and holds the gate (the one before it, if
        still drawing, may not draw any more), unless another reply of this visit is streaming: None then. A
        switch, a cleared chat or a control that cancels the reply (close) lets it go."""
        with self._lock:
            if self._live():
                return None
            follows = self._latest(state)  # a change written since the turn read `state`: as if made while it streams
            self.ticket += 1
            self.streaming, self.since = self.ticket, time.monotonic()
            self.started, self.edited = state, (follows if follows is not state else None)
            return self.ticket

    def settle(self, ticket: int, reply: Conversation) -> Conversation | None:
        """The reply of `ticket` is complete: the conversation its last frame writes (`reply`, with the visitor's
        changes made while it streamed), and the gate let go; None when it may not draw any more."""
        with self._lock:
            if not self.is_open(ticket):
                return None
            if self.streaming == ticket:
                out = reply
                if self.edited is not None and self.started is not None:
                    out = merged(reply, self.started, self.edited)
                self.streaming = 0
                self._hand_over(out)
                return out
            return reply

    def end(self, ticket: int) -> None:
        """The reply of `ticket` is done without settling (it failed, or was stopped): the visitor's changes
        meanwhile are handed to what comes next."""
        with self._lock:
            if self.streaming == ticket:
                self.streaming = 0
                self._hand_over(self.edited)

    def halt(self) -> bool:
        """■ Stop: the reply streaming now ends with what it has written (kept, as a cut reply); False when none
        streams."""
        with self._lock:
            if not self._live():
                return False
            self.stopping = self.streaming
            return True

    def halted(self, ticket: int) -> bool:
        return ticket == self.stopping

    def streams(self) -> bool:
        """Whether a reply of this visit is streaming now."""
        with self._lock:
            return self._live()

    def line_begin(self) -> int:
        """✍ My line starts writing into the message box: it goes on while `line_open` says so."""
        with self._lock:
            self.line += 1
            return self.line

    def line_open(self, ticket: int) -> bool:
        return ticket == self.line

    def line_stop(self) -> None:
        """The box is the visitor's again (they went into it to type, or sent a message): the line stops, or its next
        words would overwrite what they type, or fill the box the message just left."""
        with self._lock:
            self.line += 1

    def latest(self, conv: Conversation | None) -> Conversation | None:
        """The conversation a handler that read `conv` from the page should work on (the visitor's changes while a
        reply streamed, or the reply's last write, may not have reached the page yet)."""
        with self._lock:
            return self._latest(conv)

    def edit(self, conv: Conversation | None, change: Callable[[Conversation | None], tuple]) -> tuple[tuple, bool]:
        """A quick change of the conversation (`change` takes the conversation to change and returns a tuple whose
        first item is the new one, or anything else when nothing changed). Returns that tuple and whether the page
        writes the new conversation: while a reply streams it is kept here and the reply's last frame writes it."""
        with self._lock:
            base = self._latest(conv)
            out = change(base)
            if not isinstance(out[0], Conversation):
                return out, True
            if self._live():
                self.edited = out[0]
                return out, False
            self._followed(conv, out[0])  # a change beside this one (a box's save and a click at once) builds on it
            self._followed(base, out[0])
            return out, True
