"""ZeroGPU: a Space on ZeroGPU hardware is lent a GPU only while a function decorated with `spaces.GPU`
runs, for at most the duration it asked for; a shorter ask waits less in ZeroGPU's queue. Where the
`spaces` package is importable (it is installed on ZeroGPU Spaces, and is a no-op on other hardware),
the local engine generates through the decorated function; elsewhere nothing changes and `spaces` is
not needed.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import threading
from collections.abc import Callable

MIN_SECONDS = 15  # the model's first move to the lent GPU, and the prompt
MAX_SECONDS = 120  # longer asks wait behind everyone's short ones
TOKENS_PER_SECOND = 20  # a 7B model decoding in transformers, with margin
_WRAPPED: dict[Callable, Callable] = {}  # per process: each generation function is decorated once
_LOCK = threading.Lock()


def reply_seconds(max_tokens: int, prompt_chars: int) -> int:
    """How long to ask the GPU for: the reply's longest length at a cautious decoding speed, plus the prompt
    (about three characters a token, read at thousands of tokens a second)."""
    need = MIN_SECONDS + max_tokens / TOKENS_PER_SECOND + prompt_chars / 3 / 2000
    return int(min(MAX_SECONDS, math.ceil(need)))


def present() -> bool:
    return importlib.util.find_spec("spaces") is not None


def on_gpu(fn: Callable, duration: Callable[..., int]) -> Callable | None:
    """`fn` decorated with `spaces.GPU(duration=duration)` (called with fn's arguments), once per process;
    None where the `spaces` package is not installed."""
    if not present():
        return None
    with _LOCK:
        if fn not in _WRAPPED:
            spaces = importlib.import_module("spaces")
            _WRAPPED[fn] = spaces.GPU(duration=duration)(fn)
        return _WRAPPED[fn]
