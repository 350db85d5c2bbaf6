"""Old names that still work for one release: each warns once per process with the name that replaces it, so a
script written for 0.1 keeps running and its author learns the new word (README, "Old names")."""

from __future__ import annotations

import warnings

_WARNED: set[str] = set()  # which old names have warned in this process: a fact about the program, not a visitor


def renamed(old: str, new: str) -> None:
    """Warn, once per process, that `old` is now `new` (a FutureWarning, which Python shows by default)."""
    if old in _WARNED:
        return
    _WARNED.add(old)
    warnings.warn(f"{old} is now {new}; the old name works until the next release.", FutureWarning, stacklevel=3)


def old_keyword(old: str, new: str):
    """A function's keyword `old` is now `new`: `old=` still works for one release, and says its new name once."""
    import functools

    def wrap(func):
        @functools.wraps(func)
        def run(*args, **kwargs):
            if old in kwargs:
                renamed(f"{func.__name__}({old}=...)", f"{func.__name__}({new}=...)")
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)
        return run
    return wrap
