"""The parts of the local model's batch that need no model (issue 43): a reply's text held back while it may be
the start of a stop, a saved sequence state re-laid for a context with a stream per sequence, the core watch
that looks without sleeping, a lane that widens at once when the model turns out to batch, and the page's frames
shared among the replies streaming at once."""

import struct
import threading
import time

import pytest

from chatharuhi_core.chat.engines.cpu_share import CoreWatch
from chatharuhi_core.chat.engines.local.llama_batch import STATE_MAGIC, BatchReply, streams
from chatharuhi_core.chat.engines.local.runtime import Sampling
from chatharuhi_core.chat.lanes import Lanes, LaneSpec
from chatharuhi_core.errors import EngineError
from chatharuhi_core.web.common import FRAME_INTERVAL_S, FRAMES_PER_S, MAX_FRAME_INTERVAL_S, Throttle


def _reply(stop=("」", "\n\n")) -> tuple[BatchReply, list[str]]:
    said: list[str] = []
    return BatchReply([1, 2, 3], Sampling(stop=stop), 0, said.append, lambda: False), said


def test_a_reply_says_what_cannot_be_a_stop_and_ends_before_the_stop():
    job, said = _reply()
    assert not job.add(b"I am ")
    assert not job.add(b"Holmes.\n")  # "\n" may be the start of "\n\n": held back
    assert "".join(said) == "I am Holmes."
    assert job.add(b"\nWatson: hello")  # the stop: nothing from it on is said
    job.finish()
    assert "".join(said) == "I am Holmes." and job.text == "I am Holmes."


def test_a_character_split_across_tokens_is_said_whole():
    job, said = _reply()
    closing = "好」".encode()
    assert not job.add(closing[:2])  # half of 好
    assert said == []
    assert job.add(closing[2:])  # the rest of 好, then the closing quote
    assert "".join(said) == "好"


def test_a_reply_cut_by_its_length_says_what_it_held_back():
    job, said = _reply()
    job.add(b"Elementary.\n")
    job.finish()
    assert "".join(said) == "Elementary.\n"


def _state(seq: int, streams_count: int, body: bytes) -> bytes:
    return struct.pack("<III", STATE_MAGIC, seq, streams_count) + body


def test_a_one_stream_state_is_laid_out_for_a_stream_per_sequence():
    body = struct.pack("<I", 3) + b"cells-and-keys"
    out = streams(_state(0, 1, body), 4, 2)
    magic, seq, count = struct.unpack_from("<III", out)
    assert (magic, seq, count) == (STATE_MAGIC, 2, 4)
    assert out[12:12 + len(body)] == body  # the one stream's cells, then three empty streams
    assert out[12 + len(body):] == struct.pack("<III", 0, 0, 0)


@pytest.mark.parametrize("bad", [_state(0, 2, b""), struct.pack("<III", 123, 0, 1)])
def test_a_state_in_an_unknown_layout_is_a_sentence(bad):
    with pytest.raises(EngineError, match="layout"):
        streams(bad, 4, 0)


def _stat(busy0: int, busy1: int, total: int) -> str:
    return (f"cpu  0 0 0 0\ncpu0 {busy0} 0 0 {total - busy0} 0 0 0 0 0 0\n"
            f"cpu1 {busy1} 0 0 {total - busy1} 0 0 0 0 0 0\n")


def test_the_core_watch_reads_the_span_since_its_last_look():
    readings = iter([_stat(0, 0, 100), _stat(0, 0, 100), _stat(0, 0, 100),  # the first look: a fresh window
                     _stat(100, 0, 200)])  # since then another process held core 0 the whole time
    # this process's own CPU stands still: in a full run, threads left by earlier tests spent CPU in the span
    watch = CoreWatch([0, 1], every_s=0.0, fresh_after_s=60.0, read=lambda: next(readings), own_cpu=lambda: 5.0)
    assert watch.look() == 2
    time.sleep(0.1)
    assert watch.look() == 1


def test_the_core_watch_answers_from_memory_inside_its_interval():
    reads = []

    def read():
        reads.append(1)
        return _stat(0, 0, 100 + len(reads))

    watch = CoreWatch([0, 1], every_s=60.0, read=read)
    assert watch.look() == 2
    before = len(reads)
    assert watch.look() == 2 and len(reads) == before  # no read, no sleep


def test_a_lane_widens_at_once_when_its_engine_batches():
    lanes = Lanes()
    lane = lanes.lane(LaneSpec("local model", "the local model", 1))
    serving = lane.join()
    assert list(serving.waiting(0.01)) == []  # the first is served
    waiting = [lane.join() for _ in range(3)]
    places = [next(iter(t.waiting(0.01))).place for t in waiting]
    assert places == [1, 2, 3]
    assert lanes.lane(LaneSpec("local model", "the local model", 4)) is lane  # the model loaded with a batch
    admitted = []

    def go(ticket):
        for _ in ticket.waiting(0.01):
            pass
        admitted.append(ticket)

    threads = [threading.Thread(target=go, args=(t,)) for t in waiting]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert len(admitted) == 3  # all three in beside the first, without anyone leaving


def test_many_replies_streaming_share_the_pages_frames():
    alone = Throttle()
    assert alone.due() and not alone.due()  # the first frame at once, the next one a frame apart
    assert alone.interval() == FRAME_INTERVAL_S
    crowd = [Throttle() for _ in range(7)]  # eight replies streaming in this process
    assert alone.interval() == pytest.approx(8 / FRAMES_PER_S)
    crowd += [Throttle() for _ in range(100)]
    assert alone.interval() == MAX_FRAME_INTERVAL_S  # a reply still moves several times a second
    del crowd  # their replies ended
    assert alone.interval() == FRAME_INTERVAL_S
