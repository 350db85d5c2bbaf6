"""A stand-in for Hugging Face's `spaces` package, put on the path by the ZeroGPU tests: `spaces.GPU` records
the duration each call asked for (the callable given as `duration` is called with the call's arguments, as
ZeroGPU does) and, for a generator, how many pieces came out while the GPU was lent. With FAKE_SPACES_LOG
set, each record is also a JSON line in that file, for a test that drives the app in another process."""

from __future__ import annotations

import functools
import inspect
import json
import os

CALLS: list[dict] = []  # one per call: {"function", "duration", "pieces"}
DECORATED: list[str] = []


def _record(entry: dict) -> None:
    CALLS.append(entry)
    path = os.environ.get("FAKE_SPACES_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def GPU(fn=None, *, duration=60):  # noqa: N802 - the real package's name
    def wrap(f):
        DECORATED.append(f.__name__)

        def seconds(args, kwargs) -> float:
            return duration(*args, **kwargs) if callable(duration) else duration

        if inspect.isgeneratorfunction(f):
            @functools.wraps(f)
            def run_gen(*args, **kwargs):
                entry = {"function": f.__name__, "duration": seconds(args, kwargs), "pieces": 0}
                try:
                    for piece in f(*args, **kwargs):
                        entry["pieces"] += 1
                        yield piece
                finally:
                    _record(entry)
            return run_gen

        @functools.wraps(f)
        def run(*args, **kwargs):
            entry = {"function": f.__name__, "duration": seconds(args, kwargs), "pieces": None}
            try:
                return f(*args, **kwargs)
            finally:
                _record(entry)
        return run

    return wrap(fn) if callable(fn) else wrap
