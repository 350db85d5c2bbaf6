"""What a visit's gates share (the chat's TurnGate, the group scene's SceneGate): a ticket saying which stream may
still draw, and a lock of their own, kept in the page's per-session state."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass
class VisitGate:
    """A ticket (a stream may draw while `is_open` for the ticket it took) and a lock, one gate per visitor."""

    ticket: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.RLock()  # not a field: Gradio reads a state's fields (dataclasses.asdict) for the page

    def __deepcopy__(self, memo) -> VisitGate:
        """Each session's gate is a copy of the page's empty one (gr.State): a fresh gate with its own lock."""
        return type(self)()

    def is_open(self, ticket: int) -> bool:
        return ticket == self.ticket
