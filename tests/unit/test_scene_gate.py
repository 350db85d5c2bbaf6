"""The group scene's gate: a character muted, a line rated or corrected while the characters talk is taken in by
the run before its next line (the muted one is not picked again) and kept in what it writes; a clear stops it."""

from __future__ import annotations

from dataclasses import replace

from chatharuhi_core.scene.cast import SceneState
from chatharuhi_core.web.common import EnginePanel
from chatharuhi_core.web.scene import SceneEvent, set_cast, stream_scene
from chatharuhi_core.web.scene_gate import SceneGate, apply_changes, scene_changes

CAST = ["sherlock", "elizabeth", "alice"]


def _muted(state: SceneState, role_id: str) -> tuple[SceneState]:
    out = state.copy()
    for m in out.members:
        if m.role_id == role_id:
            m.set_muted(True, len(out.lines))
    return (out,)


def test_a_character_muted_while_the_others_talk_is_not_picked_again_and_stays_muted(settings):
    state = set_cast(SceneState(), CAST, settings)
    gate = SceneGate()
    ticket = gate.begin()
    seen: list[SceneState] = []
    muted = None

    def between(now: SceneState) -> None:
        nonlocal muted
        gate.take(ticket, now)
        if muted is None:  # after the first line, the visitor mutes whoever spoke it, from the page's copy
            muted = now.lines[-1].role_id
            out, write = gate.edit(seen[-1] if seen else state, lambda s: _muted(s, muted))
            assert not write  # the run takes it in: the page writes nothing now
            gate.take(ticket, now)

    ups = list(stream_scene(state, EnginePanel("script"), settings, SceneEvent(turns=6, seed=3), between))
    gate.end(ticket)
    final = ups[-1].state
    by = [ln.role_id for ln in final.lines if ln.by_character]
    assert len(by) >= 3 and by[0] == muted and muted not in by[1:]
    assert next(m for m in final.members if m.role_id == muted).muted
    assert any("was muted" in (msg.get("content") or "") for msg in ups[-1].messages)


def test_a_rating_given_while_the_scene_runs_is_in_its_last_write(settings):
    state = set_cast(SceneState(), CAST, settings)
    gate = SceneGate()
    ticket = gate.begin()
    rated = None

    def between(now: SceneState) -> None:
        nonlocal rated
        if rated is None:
            page = now.copy()  # the page's copy after the first line
            rated = page.lines[-1].id
            changed = page.copy()
            changed.lines[-1] = replace(changed.lines[-1], rating="like")
            assert gate.edit(page, lambda _s: (changed,))[1] is False
        gate.take(ticket, now)

    ups = list(stream_scene(state, EnginePanel("script"), settings, SceneEvent(turns=3, seed=1), between))
    gate.end(ticket)
    assert next(ln for ln in ups[-1].state.lines if ln.id == rated).rating == "like"


def test_changes_after_the_last_line_wait_for_the_next_change_and_a_clear_drops_them(settings):
    state = set_cast(SceneState(), CAST, settings)
    gate = SceneGate()
    ticket = gate.begin()
    (changed,), write = gate.edit(state, lambda s: _muted(s, "alice"))
    assert not write
    gate.end(ticket)  # the run ended before its next line
    assert next(m for m in gate.latest(state).members if m.role_id == "alice").muted
    assert gate.latest(state) is state  # taken once
    gate.begin()
    gate.edit(state, lambda s: _muted(s, "alice"))
    gate.close()  # a clear, a new cast or an import
    assert gate.latest(state) is state


def test_scene_changes_are_by_id_and_apply_to_a_later_copy(settings):
    before = set_cast(SceneState(), CAST, settings)
    after = before.copy()
    after.members[0].talkativeness = 0.9
    changes = scene_changes(before, after)
    assert changes == [("member", "sherlock", (0.9, False))]
    later = before.copy()
    apply_changes(later, changes)
    assert later.members[0].talkativeness == 0.9


def _talk(state: SceneState, role_id: str, value: float) -> tuple[SceneState]:
    out = state.copy()
    next(m for m in out.members if m.role_id == role_id).talkativeness = value
    return (out,)


def test_two_changes_in_the_same_line_both_go_in(settings):
    """A mute and then a slider before the run's next line: each built on the page's state alone, so the second
    carried 'not muted' and took the mute back."""
    state = set_cast(SceneState(), CAST, settings)
    gate = SceneGate()
    ticket = gate.begin()
    gate.edit(state, lambda s: _muted(s, "alice"))
    (shown,), write = gate.edit(state, lambda s: _talk(s, "alice", 0.9))  # the page still holds `state`
    assert not write and next(m for m in shown.members if m.role_id == "alice").muted
    run = state.copy()
    gate.take(ticket, run)
    alice = next(m for m in run.members if m.role_id == "alice")
    assert alice.muted and alice.talkativeness == 0.9 and alice.mutes == [[0, True]]


def test_a_line_the_run_wrote_again_is_not_put_back(settings):
    """A thumb on the line being regenerated (Regenerate keeps its id): the old line must not come back over it."""
    state = set_cast(SceneState(), CAST, settings)
    ups = list(stream_scene(state, EnginePanel("script"), settings, SceneEvent(turns=1, seed=1)))
    page = ups[-1].state
    rated = page.copy()
    rated.lines[-1] = replace(rated.lines[-1], rating="like")
    changes = scene_changes(page, rated)
    rewritten = page.copy()
    rewritten.lines[-1] = replace(rewritten.lines[-1], text="Another text altogether.")
    apply_changes(rewritten, changes)
    assert rewritten.lines[-1].text == "Another text altogether." and rewritten.lines[-1].rating is None
    same = page.copy()
    apply_changes(same, changes)
    assert same.lines[-1].rating == "like"


def test_stop_writes_the_changes_made_while_the_run_went_on(settings):
    state = set_cast(SceneState(), CAST, settings)
    gate = SceneGate()
    ticket = gate.begin()
    gate.edit(state, lambda s: _muted(s, "alice"))
    stopped = gate.stop(state)  # the run's own end may never come (a cancelled stream)
    assert next(m for m in stopped.members if m.role_id == "alice").muted
    assert not gate.is_open(ticket) and gate.edit(stopped, lambda s: _talk(s, "alice", 0.2))[1]  # written at once
