"""The visit's gate: one reply streams at a time, and what the visitor changes while it streams (a thumb, a pin,
their portrait, the Story panel, a corrected reply) is written with the reply's last frame, not undone by it."""

from __future__ import annotations

import copy

from chatharuhi_core.chat.memory import Memory, Pin
from chatharuhi_core.chat.persona import AuthorsNote
from chatharuhi_core.chat.prompt import Exchange
from chatharuhi_core.chat.transcript import ReplyMeta
from chatharuhi_core.web import turn_gate as web_gate
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.turn_gate import TurnGate, merged


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


def test_a_reply_holds_its_visits_gate_while_it_streams(monkeypatch):
    """A second turn of the same visit while a reply streams is refused (it would write the chat back without the
    first exchange); a switch, a clear or a control that cancels the reply lets the gate go, and so does time."""
    gate = TurnGate()
    first = gate.begin()
    assert first is not None and gate.is_open(first)
    assert gate.begin() is None and gate.is_open(first)  # refused, and the first still draws
    gate.end(first)
    second = gate.begin()
    assert second is not None and not gate.is_open(first)
    gate.close()  # a switch, a clear, ◀ or a branch: the reply is cancelled, its hold let go
    third = gate.begin()
    assert third is not None and not gate.is_open(second)
    gate.end(second)  # the cancelled one ends late: it does not let go of the third's hold
    assert gate.begin() is None
    monkeypatch.setattr(web_gate, "STREAM_HOLD_S", 0.0)  # a stream abandoned without ending lets go in time
    assert gate.begin() is not None


def test_changes_while_a_reply_streams_are_written_with_its_last_frame():
    """A thumb and a pin while the reply streams: the page writes neither (the last frame would undo them, or
    they, written after it, would drop the new exchange); the last frame writes both with the reply."""
    state, gate = _chat(), TurnGate()
    ticket = gate.begin(state)
    (rated, note), write = gate.edit(state, lambda conv: (_rated(conv), "Thanks"))
    assert not write and rated.meta[0].rating == "like" and note == "Thanks"
    (pinned, *_rest), write = gate.edit(state, lambda conv: (_pinned(conv),))  # the page still holds `state`
    assert not write and pinned.meta[0].rating == "like"  # each change builds on the one before
    final = gate.settle(ticket, _replied(state))
    assert [ex.text for ex in final.history] == ["Hi", "Tea?", "The hound?"]
    assert final.meta[0].rating == "like" and [p.text for p in final.memory.pins] == ["my sister is Anna"]
    assert gate.begin() is not None  # settled: the gate is free
    assert state.meta[0].rating is None and not state.memory.pins  # nothing changed in place


def test_a_change_that_read_the_chat_before_the_last_frame_reached_the_page_builds_on_it():
    state, gate = _chat(), TurnGate()
    ticket = gate.begin(state)
    final = gate.settle(ticket, _replied(state))
    (new, *_rest), write = gate.edit(state, lambda conv: (_rated(conv),))  # read `state` before the frame landed
    assert write and len(new.history) == 3 and new.meta[0].rating == "like"
    assert gate.latest(final) is new and gate.latest(state) is new  # what followed both


def test_changes_while_a_cancelled_reply_streamed_go_to_what_comes_next():
    """◀, a branch, a switch or a clear cancels the reply: what the visitor changed meanwhile is not lost."""
    state, gate = _chat(), TurnGate()
    ticket = gate.begin(state)
    gate.edit(state, lambda conv: (_pinned(conv),))
    gate.close()
    assert gate.settle(ticket, _replied(state)) is None  # the cancelled reply writes nothing
    assert [p.text for p in gate.latest(state).memory.pins] == ["my sister is Anna"]
    assert len(gate.latest(state).history) == 2


def test_a_change_when_no_reply_streams_is_written_at_once():
    state, gate = _chat(), TurnGate()
    (new,), write = gate.edit(state, lambda conv: (_rated(conv),))
    assert write and new.meta[0].rating == "like"
    (same, said), write = gate.edit(state, lambda conv: ("unchanged", "nothing to do"))
    assert write and same == "unchanged"


def test_merged_keeps_the_replys_own_changes_and_the_visitors_changes_elsewhere():
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
    regenerated.meta[1] = ReplyMeta("b2", [])
    out = merged(regenerated, before, edited)
    assert (out.persona, out.face, out.note) == ("A retired army doctor.", "/tmp/me.png", AuthorsNote("Rain.", 2))
    assert out.history[0].reply == "Good day, Watson." and out.meta[0].original == "Good day."
    assert out.history[1].reply == "Presently." and out.meta[1].rating is None  # the rated reply is gone
    assert not out.memory.pins
    untouched = merged(_replied(before), before, before.copy())
    assert untouched.history == _replied(before).history and untouched.memory.pins == before.memory.pins


def test_each_session_gets_a_fresh_gate_with_its_own_lock():
    gate = TurnGate()
    gate.begin(_chat())
    fresh = copy.deepcopy(gate)  # what gr.State does for a new session
    assert fresh.streaming == 0 and fresh.started is None and fresh._lock is not gate._lock


def test_a_reply_written_while_a_hub_character_was_fetched_stays_with_the_old_chat(settings, monkeypatch):
    """A Hub character can take a minute to fetch; the visitor chatted on meanwhile. The switch put away the chat
    as it read it when clicked, without that exchange; now it goes on from the gate (TurnGate.latest)."""
    from page import switches as page_switches
    from page.visit import SwitchSeat

    state, gate = _chat(), TurnGate()
    real = page_switches.open_role

    def slow_fetch(ref, settings_, progress=None):
        ticket = gate.begin(state)  # Send, while the fetch runs: the page still holds `state`
        gate.settle(ticket, _replied(state))
        return real(ref, settings_, progress)

    monkeypatch.setattr(page_switches, "open_role", slow_fetch)
    out = page_switches.Switches(settings)._switch("sunwukong", SwitchSeat(state, {}, "Watson", gate), lambda *a, **k: None)
    chats = out[8]
    assert [ex.text for ex in chats["sherlock"].history] == ["Hi", "Tea?", "The hound?"]
    assert out[0].role_id == "sunwukong"


def test_a_reply_still_streaming_when_a_slow_switch_ends_stops_drawing(settings, monkeypatch):
    from page import switches as page_switches
    from page.visit import SwitchSeat

    state, gate = _chat(), TurnGate()
    real, started = page_switches.open_role, []

    def slow_fetch(ref, settings_, progress=None):
        started.append(gate.begin(state))  # Send while the fetch runs; still streaming when it is done
        return real(ref, settings_, progress)

    monkeypatch.setattr(page_switches, "open_role", slow_fetch)
    page_switches.Switches(settings)._switch("sunwukong", SwitchSeat(state, {}, "Watson", gate), lambda *a, **k: None)
    assert not gate.is_open(started[0])  # it would have gone on streaming into 孙悟空's chat


def test_two_changes_from_the_same_chat_at_once_both_stay():
    """A thumb clicked straight from the persona box: the box's save and the thumb read the same chat, and the one
    written last undid the other. The second now builds on the first."""
    state, gate = _chat(), TurnGate()
    (rated,), _write = gate.edit(state, lambda conv: (_rated(conv),))
    (both,), _write = gate.edit(state, lambda conv: (_pinned(conv),))  # read before the first reached the page
    assert both.meta[0].rating == "like" and [p.text for p in both.memory.pins] == ["my sister is Anna"]
    (third,), _write = gate.edit(rated, lambda conv: (replace_persona(conv),))  # the first's write reached the page
    assert third.meta[0].rating == "like" and third.memory.pins and third.persona == "A doctor."
    assert gate.latest(state) is third and gate.latest(both) is third


def replace_persona(conv: Conversation) -> Conversation:
    out = conv.copy()
    out.persona = "A doctor."
    return out


def test_a_correction_to_an_exchange_without_a_record_is_kept():
    """An older state (or the API's) has exchanges with no record: each copy gives them a new id, and a change made
    to one while a reply streamed was always dropped."""
    before = Conversation("sherlock", [Exchange("Watson", "Hi", "Good day.")])
    edited = before.copy()
    edited.history[0] = Exchange("Watson", "Hi", "Good day, Watson.")
    assert merged(_replied(before), before, edited).history[0].reply == "Good day, Watson."


def test_a_change_written_between_reading_the_chat_and_starting_the_reply_is_kept():
    state, gate = _chat(), TurnGate()
    gate.edit(state, lambda conv: (_rated(conv),))  # written to the page just after the Send read `state`
    ticket = gate.begin(state)
    assert gate.settle(ticket, _replied(state)).meta[0].rating == "like"
