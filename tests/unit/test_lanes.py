"""Lanes: visitors of a one-at-a-time engine wait in order and see their place; leaving frees it."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from chatharuhi_core import i18n
from chatharuhi_core.chat import lanes as lanes_mod
from chatharuhi_core.chat.engines import create_engine
from chatharuhi_core.chat.engines.base import EngineOptions
from chatharuhi_core.chat.engines.server_slots import forget_servers, server_lane, server_root, server_slots
from chatharuhi_core.chat.lanes import Lane, Lanes, LaneSpec, ticket_for, waiting_line


def _lane(slots: int = 1) -> Lane:
    return Lane(LaneSpec("test", "the test model", slots))


def test_the_first_visitor_goes_at_once_and_the_others_wait_in_order():
    lane = _lane()
    a, b, c = lane.join(), lane.join(), lane.join()
    assert list(a.waiting()) == []  # a free slot: no waiting frame at all
    looks_b, looks_c = b.waiting(poll_s=0.01), c.waiting(poll_s=0.01)
    assert next(looks_b).place == 1 and next(looks_c).place == 2
    assert next(looks_b).about_s is None  # nothing served yet: no estimate rather than a made-up one
    a.release()
    assert list(looks_b) == []  # b is served now
    assert next(looks_c).place == 1
    b.release()
    assert list(looks_c) == [] and lane.serving_count == 1 and lane.waiting_count == 0
    c.release()


def test_the_estimate_comes_from_how_long_turns_took():
    lane = _lane()
    first = lane.join()
    list(first.waiting())
    time.sleep(0.2)
    first.release()
    a, b, c = lane.join(), lane.join(), lane.join()
    list(a.waiting())
    look_b, look_c = next(b.waiting(poll_s=0.01)), next(c.waiting(poll_s=0.01))
    assert 1.0 <= look_b.about_s <= look_c.about_s  # never "about 0 s"; later places wait longer or as long
    line = waiting_line(look_c)
    assert "2nd in line for the test model" in line and "one visitor at a time" in line and "位" not in line
    with i18n.speaking("zh"):
        assert "第 2 位" in waiting_line(look_c) and "in line" not in waiting_line(look_c)


def test_two_slots_serve_two_at_once():
    lane = _lane(2)
    a, b, c = lane.join(), lane.join(), lane.join()
    assert list(a.waiting()) == [] and list(b.waiting()) == []
    look = next(c.waiting(poll_s=0.01))
    assert look.place == 1 and "2 visitors at a time" in waiting_line(look)
    a.release()
    assert list(c.waiting(poll_s=0.01)) == []


def test_a_visitor_who_leaves_while_waiting_frees_their_place():
    lane = _lane()
    holder, leaving, staying = lane.join(), lane.join(), lane.join()
    list(holder.waiting())

    def turn(ticket):  # as a page turn: in line inside a with, frames yielded while waiting
        with ticket:
            for look in ticket.waiting(poll_s=0.01):
                yield look.place
            yield "served"

    gone = turn(leaving)
    assert next(gone) == 1
    gone.close()  # Gradio closes the turn of a visitor who closed the tab or pressed Stop
    assert next(turn(staying)) == 1 and lane.waiting_count == 1


def test_a_waiter_that_stops_polling_is_dropped(monkeypatch):
    monkeypatch.setattr(lanes_mod, "STALE_S", 0.05)
    lane = _lane()
    holder, silent, polling = lane.join(), lane.join(), lane.join()
    list(holder.waiting())
    next(silent.waiting(poll_s=0.01))  # seen once, then never again (a turn nobody advances)
    looks = polling.waiting(poll_s=0.01)
    assert next(looks).place == 2
    time.sleep(0.1)
    assert next(looks).place == 1


def test_many_threads_are_served_one_at_a_time_in_order():
    lane = _lane()
    order, inside, most = [], [0], [0]
    lock = threading.Lock()
    tickets = [lane.join() for _ in range(8)]

    def visitor(i):
        with tickets[i] as ticket:
            for _ in ticket.waiting(poll_s=0.01):
                pass
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                order.append(i)
            time.sleep(0.01)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=visitor, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and order == list(range(8))


def test_engines_that_serve_everyone_at_once_have_no_lane(monkeypatch):
    from chatharuhi_core.chat.engines.local import model as local_model

    # a model an earlier test of the session loaded in this process would give the lane its batch's slots
    monkeypatch.setattr(local_model, "_LOADED", {})
    lanes = Lanes()
    assert lanes.for_engine(create_engine("script")) is None
    assert lanes.for_engine(create_engine("openai", EngineOptions(api_key="sk-x"))) is None  # OpenAI's own API
    assert lanes.for_engine(create_engine("hf", EngineOptions(api_key="hf_x"))) is None  # the Hub's router
    local = lanes.for_engine(create_engine("local"))
    assert local.spec.slots == 1 and local.spec.label == "the local model"
    # every local model shares the process's cores: one lane, whichever model a visitor picked
    assert lanes.for_engine(create_engine("local", EngineOptions(model="other"))) is local
    with ticket_for(create_engine("script"), lanes) as ticket:
        assert list(ticket.waiting()) == []


def test_server_root_drops_the_api_path():
    assert server_root("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080"
    assert server_root("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080"
    assert server_root("https://host/llm/v1") == "https://host/llm"


class _Props(BaseHTTPRequestHandler):
    """llama.cpp's server as far as /props goes (its slot count); the real one is a C++ build we do not have."""

    slots = 3

    def do_GET(self):  # noqa: N802
        body = json.dumps({"total_slots": self.slots, "default_generation_settings": {}}).encode()
        code = 200 if self.path == "/props" else 404
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body) if code == 200 else 0))
        self.end_headers()
        if code == 200:
            self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def props_server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Props)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    forget_servers()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        srv.shutdown()
        forget_servers()


def test_a_llama_cpp_server_says_its_slots(props_server):
    lane = server_lane(props_server)
    assert lane.slots == 3 and lane.label.format(where=lane.where).startswith("the model server at 127.0.0.1:")
    engine = create_engine("openai", EngineOptions(base_url=props_server, model="m"))
    assert engine.lane() == lane


def test_a_server_that_queues_for_itself_has_no_lane(fake_openai):
    forget_servers()
    assert server_slots(fake_openai.base_url) is None
    assert server_lane("http://127.0.0.1:9/v1") is None  # nothing listening: no lane, and sending says why
