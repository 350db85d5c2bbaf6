"""A stream's steps, by id: what a reply or a group scene's run wrote, put on the visit's value as the visitor's own
steps meanwhile have left it (web/visit_state.py lands them under the visit's lock). A reply adds or rewrites its
exchange; a run adds lines, or writes its last one again (Regenerate keeps the id)."""

from __future__ import annotations

from dataclasses import replace

from ..chat.memory import Memory
from ..scene.cast import SceneState
from .chat import Conversation


def conv_landed(now: Conversation, start: Conversation, reply: Conversation) -> Conversation:
    """What a reply made from `start` changed, put on `now` (the chat as the visitor's steps since have left it):
    the exchanges it added or rewrote, by id; its record; the memory's notes; whom the visitor plays, their
    portrait and note where the visitor left them as the reply found them."""
    out = now.copy()
    out.last, out.tried = reply.last, list(reply.tried)
    for name in ("persona", "face", "note"):
        if getattr(now, name) == getattr(start, name):
            setattr(out, name, getattr(reply, name))
    notes = reply.memory.notes if reply.memory.notes != start.memory.notes else out.memory.notes
    out.memory = Memory(out.memory.pins, reply.memory.index, list(notes), reply.memory.note_index)
    was = {m.id: (ex, m) for ex, m in zip(start.history, start.meta)}
    where = {m.id: k for k, m in enumerate(out.meta)}
    for k, (ex, meta) in enumerate(zip(reply.history, reply.full_meta())):
        if len(start.meta) <= k < len(start.history):  # an exchange with no record (an older state): by its place
            if ex != start.history[k] and k < len(out.history) and out.history[k] == start.history[k]:
                out.history[k], out.meta[k] = ex, replace(meta)
            continue
        if was.get(meta.id) == (ex, meta):
            continue  # the reply left it as it found it: the visitor's version stays
        if meta.id in where:
            out.history[where[meta.id]], out.meta[where[meta.id]] = ex, replace(meta)
        elif meta.id not in was:  # new (an exchange the visitor removed meanwhile stays removed)
            out.history.append(ex)
            out.meta.append(replace(meta))
    return out


def scene_landed(now: SceneState, start: SceneState, run: SceneState) -> SceneState:
    """The lines a run made from `start` wrote (new ones, and ones it wrote again: Regenerate keeps the id), put on
    `now` (the scene as the visitor's mutes, thumbs and corrections since have left it), with the options it ran
    with (the visitor's name, the order)."""
    out = now.copy()
    out.user_role, out.order, out.allow_self = run.user_role, run.order, run.allow_self
    was = {ln.id: ln for ln in start.lines}
    where = {ln.id: k for k, ln in enumerate(out.lines)}
    for ln in run.lines:
        if was.get(ln.id) == ln:
            continue
        if ln.id in where:
            out.lines[where[ln.id]] = replace(ln)
        elif ln.id not in was:
            out.lines.append(replace(ln))
    return out
