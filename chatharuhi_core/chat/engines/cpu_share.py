"""How many of this process's cores are free right now, so llama.cpp runs on those only.

llama.cpp's threads meet at a barrier at every layer: when one of them is not scheduled because another
process holds its core, all of them wait. On 2 cores with one busy (`yes > /dev/null`), the bundled model
decodes 33 tokens/s with 2 threads and 83 with 1; quiet, 2 threads give 100-104 and 1 gives 79-81
(bench/shared_cpu.py). So before each reply the engine looks at a few tens of milliseconds of /proc/stat,
less what this process itself used meanwhile, and uses as many threads as there are cores no other process
is using, at least one.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

WINDOW_S = 0.04  # long enough for a few scheduler ticks (10 ms each), short beside a reply
STAT = "/proc/stat"


def our_cores() -> list[int]:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def _ticks(text: str) -> dict[int, tuple[int, int]]:
    """(busy, total) jiffies per core from /proc/stat's `cpuN` lines."""
    out = {}
    for line in text.splitlines():
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu" or not name[3:].isdigit():
            continue
        values = [int(v) for v in fields[:8]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle and iowait
        out[int(name[3:])] = (sum(values) - idle, sum(values))
    return out


def busy_share(before: str, after: str, cores: list[int]) -> float:
    """How many of `cores` other work kept busy between two readings of /proc/stat (0.0 to len(cores))."""
    a, b = _ticks(before), _ticks(after)
    share = 0.0
    for core in cores:
        if core in a and core in b and b[core][1] > a[core][1]:
            share += (b[core][0] - a[core][0]) / (b[core][1] - a[core][1])
    return share


def free_cores(cores: list[int] | None = None, window_s: float = WINDOW_S,
               read: Callable[[], str] | None = None) -> int:
    """The cores free right now, at least 1; all of them where /proc/stat cannot be read."""
    cores = cores or our_cores()
    read = read or _read_stat
    try:
        own, start, before = _own_cpu(), time.perf_counter(), read()
        time.sleep(window_s)
        after, spent, elapsed = read(), _own_cpu() - own, time.perf_counter() - start
    except OSError:
        return len(cores)
    return free_between(before, after, cores, spent, elapsed)


def free_between(before: str, after: str, cores: list[int], spent_s: float, elapsed_s: float) -> int:
    """The cores other work left free between two readings of /proc/stat, at least 1: this process's own threads
    (the embedder that just read the message, the page), `spent_s` of CPU in `elapsed_s`, are not "other work"."""
    busy = busy_share(before, after, cores) - (spent_s / elapsed_s if elapsed_s > 0 else 0.0)
    return max(1, min(len(cores), len(cores) - round(max(0.0, busy))))


def _own_cpu() -> float:
    """CPU seconds this process has used, all its threads together."""
    t = os.times()
    return t.user + t.system


def _read_stat() -> str:
    with open(STAT, encoding="ascii") as f:
        return f.read()


class CoreWatch:
    """The cores free, from the span since the last look rather than a fresh sleep: a batch of replies looks
    before every step (tens of milliseconds apart), so a 40 ms wait each time would cost more than the step.
    A look after a long quiet spell (over `fresh_after_s`) measures a fresh window instead, as the average of
    minutes says little about the last second. One per batcher: what it keeps is a fact about the machine."""

    def __init__(self, cores: list[int] | None = None, every_s: float = 0.25, fresh_after_s: float = 2.0,
                 read: Callable[[], str] | None = None, own_cpu: Callable[[], float] | None = None):
        self.cores = cores or our_cores()
        self.every_s, self.fresh_after_s = every_s, fresh_after_s
        self._read = read or _read_stat
        self._own_cpu = own_cpu or _own_cpu  # a test's stand-in: leftover threads in a test process spend CPU too
        self._last: tuple[float, float, str] | None = None  # (when, own CPU seconds, /proc/stat)
        self.free = len(self.cores)

    def look(self) -> int:
        """The cores free now, at least 1 (all of them where /proc/stat cannot be read)."""
        now = time.perf_counter()
        if self._last is not None and now - self._last[0] < self.every_s:
            return self.free
        try:
            if self._last is None or now - self._last[0] > self.fresh_after_s:
                self.free = free_cores(self.cores, read=self._read)
                self._last = (time.perf_counter(), self._own_cpu(), self._read())
                return self.free
            then, own, before = self._last
            after, spent, now = self._read(), self._own_cpu(), time.perf_counter()
        except OSError:
            return len(self.cores)
        self.free = free_between(before, after, self.cores, spent - own, now - then)
        self._last = (now, spent, after)
        return self.free


_FOREGROUND = [0]  # visitors' short work running in this process now: a count, nobody's data
_FOREGROUND_LOCK = threading.Lock()


@contextmanager
def foreground() -> Iterator[None]:
    """Mark a visitor's short work in this process (reading a message into vectors and scenes, the offline
    engine choosing a line): while any runs, the local model's threads leave it a core (`less_for_foreground`),
    as a core another process holds. Without that, an offline visitor waited 1.8 s for a line behind 8 local
    replies (bench/crowd.py)."""
    with _FOREGROUND_LOCK:
        _FOREGROUND[0] += 1
    try:
        yield
    finally:
        with _FOREGROUND_LOCK:
            _FOREGROUND[0] -= 1


def less_for_foreground(threads: int) -> int:
    """`threads`, one fewer (at least one) while a visitor's short work runs in this process."""
    return max(1, threads - 1) if foreground_busy() else threads


def foreground_busy() -> bool:
    """Whether a visitor's short work runs in this process now."""
    return _FOREGROUND[0] > 0
