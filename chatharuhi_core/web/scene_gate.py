"""One visit's gate on its group scene: which run of lines may still draw, and what the visitor changed while it
ran (a character's talkativeness or mute, a line's thumb or correction). The run takes those changes in before its
next line, so a character muted while the others talk is not picked again, and its next write keeps them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..scene.cast import SceneLine, SceneState
from .visit_gate import VisitGate

# what a change did: ("member", role id, (talkativeness, muted)), or ("line", line id, (the line before, after))
Change = tuple[str, str, tuple]


def scene_changes(before: SceneState, after: SceneState) -> list[Change]:
    """The members whose talkativeness or mute and the lines whose record a quick change altered, by id: applied
    to another copy of the scene (the run's own, a line or two on) they mean the same."""
    was = {m.role_id: (m.talkativeness, m.muted) for m in before.members}
    changes: list[Change] = [("member", m.role_id, (m.talkativeness, m.muted)) for m in after.members
                             if m.role_id in was and was[m.role_id] != (m.talkativeness, m.muted)]
    lines = {ln.id: ln for ln in before.lines}
    changes += [("line", ln.id, (replace(lines[ln.id]), replace(ln))) for ln in after.lines
                if ln.id in lines and lines[ln.id] != ln]
    return changes


def apply_changes(state: SceneState, changes: list[Change]) -> None:
    """The changes made in `state` itself (the run's scene state, or a copy the page writes). A line changed only
    where it is still as the change found it: a line the run wrote again (Regenerate keeps its id) is the run's."""
    members = {m.role_id: m for m in state.members}
    where = {ln.id: k for k, ln in enumerate(state.lines)}
    for kind, key, value in changes:
        if kind == "member" and key in members:
            talk, muted = value
            members[key].talkativeness = talk
            members[key].set_muted(muted, len(state.lines))
        elif kind == "line" and key in where:
            was, now = value
            if isinstance(now, SceneLine) and state.lines[where[key]] == was:
                state.lines[where[key]] = replace(now)


@dataclass
class SceneGate(VisitGate):
    """Which run of the group scene may still draw (`begin`, `close`), and the visitor's quick changes while one
    runs (`edit`): kept here, taken in by the run before its next line (`take`); those made after its last line
    wait for the next change or run (`latest`). One per visitor, in the page's state."""

    running: int = 0
    pending: list[Change] = field(default_factory=list)

    def begin(self) -> int:
        """A run starts (the page has cancelled any other); the changes still waiting go in before its first
        line."""
        with self._lock:
            self.ticket += 1
            self.running = self.ticket
            return self.ticket

    def stop(self, state: SceneState) -> SceneState:
        """Stop: the run may not draw any more (its cancelled frames may never end it), and the scene to write is
        `state` with the changes made while it ran."""
        with self._lock:
            self.ticket += 1
            self.running = 0
            return self.latest(state)

    def close(self) -> None:
        """A clear, a new cast or an import: the run, if any, may not draw any more; what waited goes with it."""
        with self._lock:
            self.ticket += 1
            self.running = 0
            self.pending = []

    def end(self, ticket: int) -> None:
        with self._lock:
            if self.running == ticket:
                self.running = 0

    def take(self, ticket: int, state: SceneState) -> None:
        """Before the run's next line, and its last write: the changes made meanwhile, made in its state."""
        with self._lock:
            if self.running == ticket and self.pending:
                apply_changes(state, self.pending)
                self.pending = []

    def latest(self, state: SceneState) -> SceneState:
        """The scene a handler should work on: with the changes made after a run's last line, if any."""
        with self._lock:
            if self.running or not self.pending:
                return state
            out = state.copy()
            apply_changes(out, self.pending)
            self.pending = []
            return out

    def edit(self, state: SceneState, change: Callable[[SceneState], tuple]) -> tuple[tuple, bool]:
        """A quick change (`change` takes the scene and returns a tuple whose first item is the new one). Returns
        it and whether the page writes it: while a run goes on, the run takes it in (its next write would
        otherwise undo it) and the page writes nothing now."""
        with self._lock:
            if self.running:  # the scene as the changes waiting have left it: each builds on the one before
                base = state.copy()
                apply_changes(base, self.pending)
            else:
                base = self.latest(state)
            out = change(base)
            if not isinstance(out[0], SceneState):
                return out, True
            if self.running:
                self.pending += scene_changes(base, out[0])
                return out, False
            return out, True
