"""Shared bench helpers: starting servers on loopback, timing, percentiles, the machine's facts."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the scripted server and the loopback helpers live with the tests

from loopback import gradio_app  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def first_piece_s(pieces) -> float:
    """Seconds until an iterator yields its first non-empty piece (NaN if it never does)."""
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
    libs = ", ".join(f"{p} {v}" for p in ("gradio", "chromadb", "openai", "transformers") if (v := _version(p)))
    return (f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} cores{mem}; "
            f"Python {platform.python_version()}; {libs}")


def _version(dist: str) -> str | None:
    """An installed distribution's version, None when it is not installed (the machine line names only those)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def write_section(results: Path, start: str, end: str, section: str) -> None:
    """Put a section (its own markers included) into RESULTS.md in place of the old one, or at the end.

    Each standalone bench script (local engine, first screen) owns one marked section of the file."""
    text = results.read_text(encoding="utf-8")
    if start in text:
        text = text[:text.index(start)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    results.write_text(text, encoding="utf-8")


def publish(name: str, lines: Iterable[str]) -> None:
    """A bench's section of RESULTS.md (its lines, between the markers `<!-- name -->` and `<!-- /name -->`)
    written in place of the old one, and printed: the markers and the file are named here once for every bench."""
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    section = "\n".join([start, *lines, end])
    write_section(RESULTS, start, end, section)
    print("\n" + section)


def verdict(ok: bool) -> str:
    """A goal row's last cell."""
    return "met" if ok else "**missed**"


def taken(script: str, note: str = "") -> str:
    """A section's first sentence: when (UTC), with which command line and on what machine (then `note`)."""
    return (f"Taken {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC with `.venv/bin/python {script} "
            f"{' '.join(sys.argv[1:])}` on: {machine()}{note}.")


def combine(runs: list[dict], same=(), total=(), middle=(), worst=(), mean=()) -> dict:
    """One table row from a bench's runs over seeds: the fields named under each word taken from the first run,
    summed, their median, their worst (largest) or their mean."""
    row = {k: runs[0][k] for k in same}
    row.update({k: sum(r[k] for r in runs) for k in total})
    row.update({k: median([r[k] for r in runs]) for k in middle})
    row.update({k: max(r[k] for r in runs) for k in worst})
    row.update({k: sum(r[k] for r in runs) / len(runs) for k in mean})
    return row


def seeded_rows(measures: Iterable[Callable[..., dict]], seeds: int, fields: dict, said: str) -> list[dict]:
    """A memory bench's table rows: each measure (one size and configuration) run with seed=0..seeds-1, the runs
    combined as `fields` say (see combine), and the row printed (`said`, formatted with it) as soon as it is done."""
    rows = []
    for measure in measures:
        rows.append(combine([measure(seed=seed) for seed in range(seeds)], **fields))
        print(said.format(**rows[-1]), flush=True)
    return rows


def memory_cost(r: dict) -> str:
    """The cells the memory benches share (recall.py, scene_recall.py): time memory adds per turn, p50 / p95; the
    embedding after a reply; the index's first build; the recall block's size, mean / max tokens."""
    return (f"{r['added_p50_ms']:.1f} / {r['added_p95_ms']:.1f} ms | {r['ahead_ms']:.0f} ms | {r['build_s']:.1f} s | "
            f"{r['tokens_mean']:.0f} / {r['tokens_max']}")


def cached_settings(cache: Path):
    """(Settings with the bench's own cache, their embedder): what the memory benches read roles with."""
    from chatharuhi_core.config import Settings
    from chatharuhi_core.embedding import get_embedder

    settings = Settings.from_env({"CHATHARUHI_CACHE": str(cache)})
    return settings, get_embedder(settings.embedder)


def commit() -> str:
    """The commit the bench ran at (with '+changes' when the work tree differs from it)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def append_row(log: Path, head: str, cells: Iterable[str]) -> None:
    """One row at the end of a markdown log table (a held-out run: date, commit, figures); `head` (its title,
    what it logs and the table's header) is written first when the log is new."""
    if not log.exists():
        log.write_text(head, encoding="utf-8")
    with log.open("a", encoding="utf-8") as f:
        f.write("| " + " | ".join(cells) + " |\n")
