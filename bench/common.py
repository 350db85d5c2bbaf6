"""Shared bench helpers: starting servers on loopback, timing, percentiles, the machine's facts."""

from __future__ import annotations

import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the scripted OpenAI-compatible server lives with the tests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def wait_http(url: str, proc: subprocess.Popen | None = None, timeout: float = 180.0, poll: float = 0.02) -> float:
    """Seconds until url answers 200 (polled every `poll` s)."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return time.perf_counter() - start
        except Exception:
            time.sleep(poll)
    raise TimeoutError(f"{url} did not answer within {timeout:g} s")


def offline_env(cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHATHARUHI_", "CHROMA_"))}
    env.update(GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1",
               CHATHARUHI_CACHE=str(cache), **extra)
    return env


@contextmanager
def app_process(cache: Path, script: str = "app.py", log: Path | None = None, **env_extra: str):
    """`python <script>` on a free loopback port; yields (url, process, seconds until it answered)."""
    port = free_port()
    env = offline_env(cache, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", **env_extra)
    out = open(log, "w") if log else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, script], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_http(url, proc)
        yield url, proc, time.perf_counter() - start
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log:
            out.close()


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
