"""Resident memory of app.py once every bundled role is loaded (the warm-up opens every store),
and whether torch got imported (it must not be, unless the local engine is used)."""

from __future__ import annotations

import time
from pathlib import Path

from common import app_process


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _torch_loaded(pid: int) -> bool:
    return "libtorch" in Path(f"/proc/{pid}/maps").read_text()


def measure(cache: Path, tmp: Path) -> dict:
    log = tmp / "memory-app.log"
    with app_process(cache, "app.py", log=log) as (url, proc, _):
        deadline = time.time() + 300
        while "warm-up done" not in log.read_text() and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(1)
        out = {"rss_mb": _rss_mb(proc.pid), "torch": _torch_loaded(proc.pid),
               "warm": "warm-up done" in log.read_text()}
    print(f"  app with every bundled role loaded: {out['rss_mb']:.0f} MB resident, torch loaded: {out['torch']}",
          flush=True)
    return out
