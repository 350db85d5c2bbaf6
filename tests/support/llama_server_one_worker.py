"""llama-cpp-python's server with every call into llama.cpp on one worker thread, for the bench's baseline.

The server runs llama.cpp from Starlette's thread pool, and a streamed reply's chunks each go to whichever
worker is free. llama.cpp's OpenMP (libgomp) keeps a pool of threads per calling thread for as long as that
thread lives, so after a few requests several pools share 2 cores and libgomp stops spinning at its barriers:
measured here, 80-87 tokens/s for the first requests, then 21-27. One worker at a time (anyio reuses the
last idle one) keeps the server at its best, which is what the engine is compared with (bench/RESULTS.md).
Run as `python llama_server_one_worker.py ARGS...` with llama_cpp.server's own arguments."""

from __future__ import annotations

import runpy

import anyio
import anyio.to_thread

_plain = anyio.to_thread.run_sync
_one: list[anyio.CapacityLimiter] = []  # made inside the server's event loop, on its first call


async def _one_at_a_time(func, *args, **kwargs):
    if not _one:
        _one.append(anyio.CapacityLimiter(1))
    kwargs["limiter"] = _one[0]
    return await _plain(func, *args, **kwargs)


anyio.to_thread.run_sync = _one_at_a_time  # Starlette looks it up on each call

if __name__ == "__main__":
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
