"""Shared bench helpers: starting servers on loopback, timing, percentiles, the machine's facts."""

from __future__ import annotations

import os
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the scripted server and the loopback helpers live with the tests

from loopback import gradio_app  # noqa: E402


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def first_piece_s(pieces) -> float:
    """Seconds until an iterator yields its first non-empty piece (NaN if it never does)."""
    import time

    start = time.perf_counter()
    for piece in pieces:
        if piece:
            return time.perf_counter() - start
    return float("nan")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def app_process(cache: Path, script: str = "app.py", log: Path | None = None, **env_extra: str):
    """loopback.gradio_app, polled every 20 ms (cold start is timed by it) and given 3 minutes."""
    return gradio_app(cache, script, log, timeout=180.0, poll=0.02, **env_extra)


def machine() -> str:
    """One paragraph on where the figures were taken."""
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    from importlib.metadata import version

    libs = ", ".join(f"{p} {version(p)}" for p in ("gradio", "chromadb", "openai", "transformers")
                     if _has(p))
    return (f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} cores{mem}; "
            f"Python {platform.python_version()}; {libs}")


def _has(dist: str) -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        version(dist)
        return True
    except PackageNotFoundError:
        return False


def write_section(results: Path, start: str, end: str, section: str) -> None:
    """Put a section (its own markers included) into RESULTS.md in place of the old one, or at the end.

    Each standalone bench script (local engine, first screen) owns one marked section of the file."""
    text = results.read_text(encoding="utf-8")
    if start in text:
        text = text[:text.index(start)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    results.write_text(text, encoding="utf-8")


def publish(results: Path, start: str, end: str, lines: list[str]) -> None:
    """A bench's section (its lines, markers included) put into RESULTS.md and printed."""
    section = "\n".join(lines)
    write_section(results, start, end, section)
    print("\n" + section)


def cached_settings(cache: Path):
    """(Settings with the bench's own cache, their embedder): what the memory benches read roles with."""
    from chatharuhi_core.config import Settings
    from chatharuhi_core.embedding import get_embedder

    settings = Settings.from_env({"CHATHARUHI_CACHE": str(cache)})
    return settings, get_embedder(settings.embedder)
