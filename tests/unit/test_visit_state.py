"""A visit's one writer (web/visit_state.py, page/door.py): one reply streams at a time; what the visitor changes
while it streams (a thumb, a pin, their portrait, the Story panel, a corrected reply) is a step on the chat as it
is, which the reply's own exchange lands beside by id instead of undoing; a group scene's run lands each line on
the scene as it is and goes on from it (a character muted meanwhile is not picked again)."""

from __future__ import annotations

import copy
from dataclasses import replace

import gradio as gr

from chatharuhi_core.chat.memory import Memory, Pin
from chatharuhi_core.chat.persona import AuthorsNote
from chatharuhi_core.chat.prompt import Exchange
from chatharuhi_core.chat.transcript import ReplyMeta
from chatharuhi_core.scene.cast import SceneState
from chatharuhi_core.web import visit_state as web_visit
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.common import EnginePanel
from chatharuhi_core.web.landing import conv_landed, scene_landed
from chatharuhi_core.web.scene import SceneEvent, set_cast, stream_scene
from chatharuhi_core.web.visit_state import VisitState

CAST = ["sherlock", "elizabeth", "alice"]


def _chat() -> Conversation:
    return Conversation("sherlock", [Exchange("Watson", "Hi", "Good day."), Exchange("Watson", "Tea?", "Later.")],
                        [ReplyMeta("a", []), ReplyMeta("b", [])])


def _replied(conv: Conversation) -> Conversation:
    """What a Send writes: one exchange more (made from the conversation it started from)."""
    out = conv.copy()
    out.history.append(Exchange("Watson", "The hound?", "A large one."))
    out.meta.append(ReplyMeta("c", []))
    return out


def _rated(conv: Conversation) -> Conversation:
    out = conv.copy()
    out.meta[0].rating = "like"
    return out


def _pinned(conv: Conversation) -> Conversation:
    out = conv.copy()
    out.memory.remember("my sister is Anna", made_at=len(out.history))
    return out


def _through_door(fn, inputs: list, outputs: list, **how):
    """`fn` as the page registers it (Door.on), and the door: the wrapped function comes back instead of an event."""
    from page.door import Door

    with gr.Blocks():
        door = Door()
        states = {name: gr.State(None) for name in ("conv", "chats", "scene")}
        for name, state in states.items():
            door.track(name, state)
        pick = lambda names: [states.get(n) or gr.Textbox() for n in names]  # noqa: E731
        wrapped = door.on(lambda f, _inputs, _outputs, **_kw: f, fn, pick(inputs), pick(outputs), **how)
    return wrapped


def test_a_reply_holds_its_visit_while_it_streams(monkeypatch):
    """A second reply of the same visit while one streams is refused (it would write the chat back without the
    first exchange); a switch, a clear or a control that cancels the reply lets it go, and so does time."""
    visit = VisitState()
    first = visit.begin("chat", refuse=True)
    assert first.ticket and first.open()
    assert not visit.begin("chat", refuse=True).ticket and first.open()  # refused, and the first still lands
    first.end()
    second = visit.begin("chat", refuse=True)
    assert second.ticket and not first.open()
    visit.close("chat")  # a switch, a clear, ◀ or a branch: the reply is cancelled, its hold let go
    third = visit.begin("chat", refuse=True)
    assert third.ticket and not second.open()
    second.end()  # the cancelled one ends late: it does not let go of the third's hold
    assert not visit.begin("chat", refuse=True).ticket
    monkeypatch.setattr(web_visit, "STREAM_HOLD_S", 0.0)  # a stream abandoned without ending lets go in time
    assert visit.begin("chat", refuse=True).ticket


def test_one_counter_for_every_stream_and_the_scene_does_not_stop_the_chat():
    visit = VisitState()
    reply, run, line = visit.begin("chat", True), visit.begin("scene"), visit.begin("line")
    assert len({reply.ticket, run.ticket, line.ticket}) == 3 and visit.ticket == 3
    visit.close("scene")
    assert reply.open() and line.open() and not run.open()
    assert visit.begin("line").open() and not line.open()  # ✍ My line again: the old one stops writing


def test_changes_while_a_reply_streams_are_drawn_with_its_last_frame():
    """A thumb and a pin while the reply streams: the page draws neither now (its frame could reach the page after
    the reply's last); the reply lands beside them and its last frame draws all three."""
    visit, state = VisitState(), _chat()
    hold = visit.begin("chat", refuse=True)
    start = visit.current("conv", state)
    assert not visit.write("conv", _rated(visit.current("conv", state)))
    assert not visit.write("conv", _pinned(visit.current("conv", state)))  # each builds on the one before
    final = hold.land("conv", lambda now: conv_landed(now, start, _replied(start)), last=True)
    assert [ex.text for ex in final.history] == ["Hi", "Tea?", "The hound?"]
    assert final.meta[0].rating == "like" and [p.text for p in final.memory.pins] == ["my sister is Anna"]
    assert visit.begin("chat", refuse=True).ticket and not hold.open()  # landed last: the visit is free
    assert state.meta[0].rating is None and not state.memory.pins  # nothing changed in place


def test_a_change_that_read_the_chat_before_the_last_frame_reached_the_page_builds_on_it():
    visit, state = VisitState(), _chat()
    hold = visit.begin("chat", refuse=True)
    hold.land("conv", lambda now: conv_landed(now or state, state, _replied(state)), last=True)
    rate = _through_door(lambda conv: (_rated(conv), "Thanks"), ["conv"], ["conv", "note"])
    new, said = rate(visit, state)  # the page still held `state`
    assert len(new.history) == 3 and new.meta[0].rating == "like" and said == "Thanks"
    assert visit.current("conv", None) is new


def test_changes_while_a_cancelled_reply_streamed_stay():
    """◀, a branch, a switch or a clear cancels the reply: what the visitor changed meanwhile is not lost."""
    visit, state = VisitState(), _chat()
    hold = visit.begin("chat", refuse=True)
    visit.write("conv", _pinned(visit.current("conv", state)))
    visit.close("chat")
    assert hold.land("conv", lambda now: conv_landed(now, state, _replied(state))) is None  # it lands nothing
    assert [p.text for p in visit.current("conv", None).memory.pins] == ["my sister is Anna"]
    assert len(visit.current("conv", None).history) == 2


def test_a_change_when_no_reply_streams_is_drawn_at_once():
    visit = VisitState()
    rate = _through_door(lambda conv: (_rated(conv), "Thanks"), ["conv"], ["conv", "note"])
    new, _said = rate(visit, _chat())
    assert isinstance(new, Conversation) and new.meta[0].rating == "like"
    same = _through_door(lambda conv: (gr.skip(), "nothing to do"), ["conv"], ["conv", "note"])(visit, _chat())
    assert same[1] == "nothing to do" and visit.current("conv", None) is new


def test_landing_keeps_the_replys_own_changes_and_the_visitors_changes_elsewhere():
    before = _chat()
    before.memory = Memory([Pin("old pin", None)])
    edited = before.copy()
    edited.persona, edited.face, edited.note = "A retired army doctor.", "/tmp/me.png", AuthorsNote("Rain.", 2)
    edited.history[0] = Exchange("Watson", "Hi", "Good day, Watson.")  # a corrected reply
    edited.meta[0].original = "Good day."
    edited.meta[1].rating = "dislike"
    edited.memory.forget(1)
    regenerated = before.copy()  # Regenerate: the last reply is another now
    regenerated.history[1] = Exchange("Watson", "Tea?", "Presently.")
    regenerated.meta[1] = ReplyMeta("b", [{"role": "user", "content": "Tea?"}])  # Regenerate keeps the id
    out = conv_landed(edited, before, regenerated)
    assert (out.persona, out.face, out.note) == ("A retired army doctor.", "/tmp/me.png", AuthorsNote("Rain.", 2))
    assert out.history[0].reply == "Good day, Watson." and out.meta[0].original == "Good day."
    assert out.history[1].reply == "Presently." and out.meta[1].rating is None  # the rated reply is gone
    assert not out.memory.pins
    untouched = conv_landed(before.copy(), before, _replied(before))
    assert untouched.history == _replied(before).history and untouched.memory.pins == before.memory.pins


def test_each_session_gets_a_fresh_visit_with_its_own_lock():
    visit = VisitState()
    visit.begin("chat", refuse=True)
    visit.write("conv", _chat())
    fresh = copy.deepcopy(visit)  # what gr.State does for a new session
    assert not fresh.streams and not fresh.values and fresh.held() is not visit.held()


def test_a_reply_written_while_a_hub_character_was_fetched_stays_with_the_old_chat(settings, monkeypatch):
    """A Hub character can take a minute to fetch; the visitor chatted on meanwhile. The switch puts away the chat
    as it is when the fetch is done, with that exchange."""
    from page import switches as page_switches

    visit, state = VisitState(), _chat()
    real = page_switches.open_role

    def slow_fetch(ref, settings_, progress=None):
        hold = visit.begin("chat", refuse=True)  # Send, while the fetch runs
        hold.land("conv", lambda now: conv_landed(now, state, _replied(state)), last=True)
        return real(ref, settings_, progress)

    monkeypatch.setattr(page_switches, "open_role", slow_fetch)
    switch = _through_door(page_switches.Switches(settings).switch_role, ["ref", "conv", "chats", "visitor"],
                           ["conv", *"abcdefg", "chats", "list", "status"], slow=True, stops="chat")
    out = switch(visit, "sunwukong", lambda *a, **k: None, state, {}, "Watson")  # Gradio hands in the progress
    assert [ex.text for ex in out[8]["sherlock"].history] == ["Hi", "Tea?", "The hound?"]
    assert out[0].role_id == "sunwukong" and visit.current("conv", None).role_id == "sunwukong"


def test_a_reply_still_streaming_when_a_slow_switch_ends_stops_landing(settings, monkeypatch):
    from page import switches as page_switches

    visit, state, started = VisitState(), _chat(), []
    real = page_switches.open_role

    def slow_fetch(ref, settings_, progress=None):
        started.append(visit.begin("chat", refuse=True))  # Send while the fetch runs; still streaming when done
        return real(ref, settings_, progress)

    monkeypatch.setattr(page_switches, "open_role", slow_fetch)
    switch = _through_door(page_switches.Switches(settings).switch_role, ["ref", "conv", "chats", "visitor"],
                           ["conv", *"abcdefg", "chats", "list", "status"], slow=True, stops="chat")
    switch(visit, "sunwukong", lambda *a, **k: None, state, {}, "Watson")  # Gradio hands in the progress
    assert not started[0].open()  # it would have gone on streaming into 孙悟空's chat


def test_two_changes_from_the_same_chat_at_once_both_stay():
    """A thumb clicked straight from the persona box: the box's save and the thumb read the same chat, and the one
    written last undid the other. Each is a step on the chat as it is."""
    visit, state = VisitState(), _chat()
    rate = _through_door(_rated, ["conv"], ["conv"])
    pin = _through_door(_pinned, ["conv"], ["conv"])
    rate(visit, state)
    both = pin(visit, state)  # read before the first reached the page
    assert both.meta[0].rating == "like" and [p.text for p in both.memory.pins] == ["my sister is Anna"]


def test_a_correction_to_an_exchange_without_a_record_is_kept():
    """An older state (or the API's) has exchanges with no record: each copy gives them a new id, and a change made
    to one while a reply streamed was always dropped."""
    before = Conversation("sherlock", [Exchange("Watson", "Hi", "Good day.")])
    edited = before.copy()
    edited.history[0] = Exchange("Watson", "Hi", "Good day, Watson.")
    out = conv_landed(edited, before, _replied(before))
    assert [ex.reply for ex in out.history] == ["Good day, Watson.", "A large one."]


def test_a_change_written_between_reading_the_chat_and_starting_the_reply_is_kept():
    visit, state = VisitState(), _chat()
    visit.write("conv", _rated(state))  # written just after the Send's page read `state`
    hold = visit.begin("chat", refuse=True)
    start = visit.current("conv", state)  # the door hands the turn the chat as it is
    assert hold.land("conv", lambda now: conv_landed(now, start, _replied(start))).meta[0].rating == "like"


# ------------------------------------------------------------------ the group scene


def _muted(state: SceneState, role_id: str) -> SceneState:
    out = state.copy()
    for m in out.members:
        if m.role_id == role_id:
            m.set_muted(True, len(out.lines))
    return out


def _talk(state: SceneState, role_id: str, value: float) -> SceneState:
    out = state.copy()
    next(m for m in out.members if m.role_id == role_id).talkativeness = value
    return out


def _run(visit: VisitState, state: SceneState):
    from page.group_scene import Landing

    hold = visit.begin("scene")
    visit.current("scene", state)
    return hold, Landing(hold, state)


def test_a_character_muted_while_the_others_talk_is_not_picked_again_and_stays_muted(settings):
    visit, state = VisitState(), set_cast(SceneState(), CAST, settings)
    hold, landing = _run(visit, state)
    muted = None

    def between(now: SceneState) -> None:
        nonlocal muted
        if muted is None:  # after the first line, the visitor mutes whoever spoke it
            landing.between(now)
            muted = now.lines[-1].role_id
            assert not visit.write("scene", _muted(visit.current("scene", None), muted))  # the run's frame draws it
        landing.between(now)

    ups = list(stream_scene(state, EnginePanel("script"), settings, SceneEvent(turns=6, seed=3), between))
    final = landing.land(ups[-1].state, last=True)
    by = [ln.role_id for ln in final.lines if ln.by_character]
    assert len(by) >= 3 and by[0] == muted and muted not in by[1:]
    assert next(m for m in final.members if m.role_id == muted).muted
    assert any("was muted" in (msg.get("content") or "") for msg in ups[-1].messages)
    assert not hold.open()


def test_a_rating_given_while_the_scene_runs_is_kept_in_what_it_lands(settings):
    visit, state = VisitState(), set_cast(SceneState(), CAST, settings)
    _hold, landing = _run(visit, state)
    rated = None

    def between(now: SceneState) -> None:
        nonlocal rated
        landing.between(now)
        if rated is None:
            page = visit.current("scene", None).copy()
            rated = page.lines[-1].id
            page.lines[-1] = replace(page.lines[-1], rating="like")
            assert visit.write("scene", page) is False

    ups = list(stream_scene(state, EnginePanel("script"), settings, SceneEvent(turns=3, seed=1), between))
    final = landing.land(ups[-1].state, last=True)
    assert next(ln for ln in final.lines if ln.id == rated).rating == "like"


def test_a_change_after_a_runs_last_line_is_drawn_at_once_and_a_clear_stops_the_run(settings):
    visit, state = VisitState(), set_cast(SceneState(), CAST, settings)
    hold, landing = _run(visit, state)
    assert not visit.write("scene", _muted(state, "alice"))
    landing.land(state, last=True)  # the run ended
    assert next(m for m in visit.current("scene", None).members if m.role_id == "alice").muted
    assert visit.write("scene", _talk(visit.current("scene", None), "alice", 0.2))  # drawn at once now
    again = visit.begin("scene")
    visit.close("scene")  # a clear, a new cast or an import
    assert not again.open() and not hold.open()


def test_two_changes_in_the_same_line_both_go_in(settings):
    """A mute and then a slider before the run's next line: each built on the page's state alone, so the second
    carried 'not muted' and took the mute back. Through the door each is a step on the scene as it is."""
    visit, state = VisitState(), set_cast(SceneState(), CAST, settings)
    _hold, landing = _run(visit, state)
    mute = _through_door(lambda scene: _muted(scene, "alice"), ["scene"], ["scene"])
    talk = _through_door(lambda scene: _talk(scene, "alice", 0.9), ["scene"], ["scene"])
    assert isinstance(mute(visit, state), dict) and isinstance(talk(visit, state), dict)  # skipped: the run draws
    run = state.copy()
    landing.between(run)
    alice = next(m for m in run.members if m.role_id == "alice")
    assert alice.muted and alice.talkativeness == 0.9 and alice.mutes == [[0, True]]


def test_a_line_the_run_wrote_again_is_the_runs(settings):
    """A thumb on the line being regenerated (Regenerate keeps its id): the run's new text lands, unrated; a line
    the run left as it found it keeps the visitor's thumb."""
    state = set_cast(SceneState(), CAST, settings)
    page = list(stream_scene(state, EnginePanel("script"), settings, SceneEvent(turns=1, seed=1)))[-1].state
    rated = page.copy()
    rated.lines[-1] = replace(rated.lines[-1], rating="like")
    rewritten = page.copy()
    rewritten.lines[-1] = replace(rewritten.lines[-1], text="Another text altogether.")
    out = scene_landed(rated, page, rewritten)
    assert out.lines[-1].text == "Another text altogether." and out.lines[-1].rating is None
    assert scene_landed(rated, page, page.copy()).lines[-1].rating == "like"


def test_stop_draws_the_changes_made_while_the_run_went_on(settings):
    from page.group_scene import show_state

    visit, state = VisitState(), set_cast(SceneState(), CAST, settings)
    hold, _landing = _run(visit, state)
    visit.write("scene", _muted(state, "alice"))
    stop = _through_door(show_state, ["scene"], ["scene", "chat", "status"], stops="scene")
    stopped, _chat_now, _said = stop(visit, state)  # the run's own end may never come (a cancelled stream)
    assert next(m for m in stopped.members if m.role_id == "alice").muted
    assert not hold.open() and visit.write("scene", _talk(stopped, "alice", 0.2))  # drawn at once


# ------------------------------------------------------------------ the house: one door


def test_every_event_that_writes_a_visits_state_goes_through_its_one_door(settings):
    """The page's registered events, walked: each one whose outputs hold the chat, the other chats or the group
    scene is registered through the door (page/door.py), and no page function takes a gate of its own."""
    import inspect
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import app

    page = app.Page(settings)
    mirrors = {page.visit.conv._id, page.visit.chats._id, page.group.state._id}
    writers = [fn for fn in page.demo.fns.values() if any(b._id in mirrors for b in fn.outputs)]
    by_hand = [fn.name for fn in writers if not getattr(fn.fn, "door", False)]
    assert len(writers) >= 60 and not by_hand, by_hand
    visit = page.visit.door.visit._id
    holding = [fn for fn in page.demo.fns.values() if any(b._id == visit for b in fn.inputs)]
    assert all(getattr(fn.fn, "door", False) for fn in holding)
    gated = [fn.name for fn in page.demo.fns.values() if fn.fn is not None
             and "gate" in inspect.signature(fn.fn).parameters]
    assert not gated, gated


def test_the_door_finds_each_component_among_the_arguments_gradio_fills_in():
    """A handler may take an event's data, a sign-in and a progress bar between its components, and the seat as
    *args (a tile's click): the door swaps the visit's values in where Gradio puts the page's."""
    import functools
    import inspect

    from page.door import _positions

    def pick(evt: gr.EventData, added: list | None, progress=gr.Progress(), *seat):
        return None

    def send(signed_in: gr.OAuthToken | None, selected, conv, **sent):
        return None

    for fn, count, want in ((pick, 5, [0, 2, 4, 5, 6]), (send, 3, [0, 2, 3])):
        wrapped = functools.update_wrapper(lambda *a: None, fn)
        first = inspect.Parameter("visit", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        wrapped.__signature__ = inspect.Signature([first, *inspect.signature(fn).parameters.values()])
        assert _positions(wrapped, count) == want
