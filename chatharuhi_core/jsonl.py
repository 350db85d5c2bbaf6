"""JSON Lines files that survive a crash: append one whole line at a time, read past torn ones.

Feedback and synthesized dialogues are written while the process may be killed at any moment
(a Space restarts, a laptop sleeps, Ctrl-C). Each record is encoded first and written with one
`write` on a file opened for appending, under an advisory lock, then flushed to disk. A crash
can at worst leave a partial last line: readers skip it, and the next append starts on a fresh
line, so no complete record is ever lost or merged with another.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError
from .i18n import N_, _

_LOCK = threading.Lock()  # one process-wide lock for the threads of a server; flock for processes


def _flock(fd: int, exclusive: bool) -> None:
    try:
        import fcntl
    except ImportError:  # Windows: the thread lock is all there is
        return
    fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_UN)


def append_record(path: Path, record: dict, *, sync: bool = True) -> None:
    """Append `record` as one line; a torn line left by an earlier crash is closed first."""
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    with _LOCK:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            _flock(fd, True)
            size = os.fstat(fd).st_size
            if size and _last_byte(path, size) != b"\n":
                line = b"\n" + line  # the previous writer died mid-line
            written = os.write(fd, line)
            while written < len(line):  # a short write (full pipe, signal): finish the line
                written += os.write(fd, line[written:])
            if sync:
                os.fsync(fd)
        finally:
            _flock(fd, False)
            os.close(fd)


def _last_byte(path: Path, size: int) -> bytes:
    with path.open("rb") as f:
        f.seek(size - 1)
        return f.read(1)


@dataclass
class ReadResult:
    records: list[dict]
    skipped: int  # lines that were not a complete JSON object (a torn write)


def read_records(path: Path) -> ReadResult:
    """Every complete record; partial or garbled lines are counted, not fatal."""
    records: list[dict] = []
    skipped = 0
    if not path.exists():
        return ReadResult(records, 0)
    with path.open("rb") as f:
        for raw in f:
            raw = raw.strip()
            if not raw:
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                skipped += 1
                continue
            if isinstance(obj, dict):
                records.append(obj)
            else:
                skipped += 1
    return ReadResult(records, skipped)


def write_all(path: Path, records: Iterable[dict]) -> int:
    """Replace `path` with these records atomically (a temporary file, then a rename)."""
    lines = [json.dumps(rec, ensure_ascii=False) + "\n" for rec in records]
    replace_text(path, "".join(lines))
    return len(lines)


def replace_text(path: Path, text: str) -> None:
    """Write a whole file so that a crash leaves the old one or the new one, never half of either."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_object(path: Path) -> dict:
    """A JSON object kept in a file (as replace_text writes it); empty when the file is missing or damaged."""
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def parse_object(text: str, not_json: str, not_object: str) -> dict:
    """One JSON object read from `text` a visitor gave; an InputError with `not_json` or `not_object` (sentences
    saying what is wrong, for where the text came from) when it is not one."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise InputError(not_json) from None
    if not isinstance(data, dict):
        raise InputError(not_object)
    return data


# Python's json module says what is wrong in English; a visitor is told in their language (its position is said
# beside it, by line)
_JSON_WHY = {
    "Expecting value": N_("a value was expected"),
    "Expecting property name enclosed in double quotes": N_("a name in double quotes was expected"),
    "Expecting ':' delimiter": N_("a ':' was expected"),
    "Expecting ',' delimiter": N_("a ',' was expected"),
    "Unterminated string starting at": N_("a string is not closed"),
    "Invalid control character": N_("a control character is inside a string"),
    "Invalid \\escape": N_("a backslash escape is not valid"),
    "Invalid \\uXXXX escape": N_("a backslash escape is not valid"),
    "Extra data": N_("more text follows the end"),
}


def why_not_json(exc: json.JSONDecodeError) -> str:
    """What is wrong with a JSON text, in the visitor's language (Python's English is never shown)."""
    said = next((why for start, why in _JSON_WHY.items() if exc.msg.startswith(start)), N_("it is not well-formed"))
    return _(said)
