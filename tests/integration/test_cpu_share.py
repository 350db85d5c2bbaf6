"""The local engine runs on the cores no other process is using (issue 43, item 1): read from /proc/stat,
less this process's own use, chosen before each reply; the same seeded reply whatever the thread count."""

import subprocess
import time

import pytest

from chatharuhi_core.chat.chatbot import ChatHaruhi
from chatharuhi_core.chat.engines import cpu_share, open_engine
from chatharuhi_core.chat.engines.local import llamacpp as local_llamacpp

BEFORE = "cpu  10 0 10 80 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\ncpu1 5 0 5 40 0 0 0 0 0 0\nintr 1 2\n"
AFTER = "cpu  30 0 10 90 0 0 0 0\ncpu0 25 0 5 40 0 0 0 0 0 0\ncpu1 5 0 5 50 0 0 0 0 0 0\nintr 1 2\n"


def test_the_busy_share_is_read_per_core():
    assert cpu_share.busy_share(BEFORE, AFTER, [0, 1]) == pytest.approx(1.0)  # cpu0 fully busy, cpu1 idle
    assert cpu_share.busy_share(BEFORE, AFTER, [1]) == pytest.approx(0.0)  # only the cores we may run on
    readings = iter([BEFORE, AFTER])
    assert cpu_share.free_cores([0, 1], 0.0, lambda: next(readings)) == 1
    readings = iter([BEFORE, BEFORE.replace("cpu1 5 0 5 40", "cpu1 5 0 5 40")])
    assert cpu_share.free_cores([0, 1], 0.0, lambda: next(readings)) == 2  # nothing moved: all free

    def unreadable():
        raise OSError("no /proc here")

    assert cpu_share.free_cores([0, 1, 2], 0.0, unreadable) == 3  # cannot tell: every core, as before


def test_another_process_on_a_core_leaves_one_fewer():
    cores = cpu_share.our_cores()
    if len(cores) < 2:
        pytest.skip("one core: nothing to give up")
    assert cpu_share.free_cores(cores, 0.2) >= len(cores) - 1  # quiet (this test machine's own noise aside)
    hog = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        assert cpu_share.free_cores(cores, 0.2) <= len(cores) - 1
    finally:
        hog.kill()


def test_a_visitors_reply_runs_on_the_free_cores_and_a_seeded_one_on_all(settings, monkeypatch):
    most = len(cpu_share.our_cores())
    visitor = open_engine("local", settings, model="smollm2")
    batch = visitor.load().handle.batch  # a visitor's reply is written in the batch, which watches the cores
    monkeypatch.setattr(batch._watch, "look", lambda: 1)  # another process holds the rest
    ChatHaruhi(role_name="sherlock", engine=visitor, settings=settings).answer("Hello.")
    assert batch.threads == 1 and visitor.load().handle.threads == 1
    replies = []
    for free in (1, most):  # a seeded reply: the same words however many cores are free
        monkeypatch.setattr(local_llamacpp, "free_cores", lambda *a, n=free, **k: n)
        engine = open_engine("local", settings, model="smollm2", seed=7, temperature=0.8)
        replies.append(ChatHaruhi(role_name="sherlock", engine=engine, settings=settings)
                       .answer("What do you make of Moriarty?").text)
        assert engine.load().handle.threads == most
    assert replies[0] == replies[1]
