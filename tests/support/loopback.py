"""Servers on loopback that the tests and the bench start: app.py (or another Gradio script) and
llama.cpp's OpenAI-compatible server. One place for the start, the wait and the clean stop."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LLAMA_PYTHON = ROOT / ".venv-llama" / "bin" / "python"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 90.0, proc: subprocess.Popen | None = None, poll: float = 0.05) -> float:
    """Seconds until url answers 200; fails early if proc exits first."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return time.perf_counter() - start
        except Exception:
            time.sleep(poll)
    raise TimeoutError(f"{url} did not answer within {timeout:g}s")


@contextmanager
def running(cmd: list[str], ready_url: str, env: dict[str, str] | None = None, log: Path | None = None,
            timeout: float = 90.0, poll: float = 0.05) -> Iterator[tuple[subprocess.Popen, float]]:
    """Start cmd, wait until ready_url answers; yields (process, seconds it took); stops it after."""
    out = open(log, "w") if log else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_http(ready_url, timeout, proc, poll)
        yield proc, time.perf_counter() - start
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log:
            out.close()


def app_env(cache: Path | None, home: Path | None = None, tmp: Path | None = None, **extra: str) -> dict[str, str]:
    """This environment minus the operator's settings, offline, with its own cache.

    cache: CHATHARUHI_CACHE. Or, as README's command starts the app, no cache setting at all and a
    `home` of its own (the cache is ~/.cache/chatharuhi, the Hub's ~/.cache/huggingface) with a
    system temp folder (`tmp`) outside it, so that Gradio serves nothing from the cache by accident.
    """
    drop = ("OPENAI_", "CHROMA_", "CHATHARUHI_") + (("HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME") if home else ())
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    # the local model is not loaded as each test's app starts (each has its own cache, so each would make the
    # model's copies again): tests of it pass CHATHARUHI_WARM_LOCAL="1", as README's command leaves it
    env.update({"GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
                "CHATHARUHI_WARM_LOCAL": "0", **extra})
    if cache is not None:
        env["CHATHARUHI_CACHE"] = str(cache)
    if home is not None:
        env["HOME"] = str(home)
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    return env


@contextmanager
def gradio_app(cache: Path | None, script: str = "app.py", log: Path | None = None, timeout: float = 90.0,
               poll: float = 0.05, home: Path | None = None, tmp: Path | None = None,
               **env_extra: str) -> Iterator[tuple[str, subprocess.Popen, float]]:
    """`python <script>` on a free loopback port; yields (url, process, seconds until it answered)."""
    port = free_port()
    env = app_env(cache, home, tmp, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", **env_extra)
    url = f"http://127.0.0.1:{port}/"
    with running([sys.executable, script], url, env, log, timeout, poll) as (proc, seconds):
        yield url, proc, seconds


@contextmanager
def llama_server(gguf: Path, log: Path | None = None, threads: int | None = None,
                 lora: Path | None = None, one_worker: bool = False, libs: Path | None = None,
                 flash_attn: bool = False) -> Iterator[str]:
    """llama-cpp-python's server (built by scripts/setup-llama-server.sh) serving gguf as "smollm2", with a
    llama.cpp LoRA file on top when given; yields its base URL, ending in /v1. `one_worker`: every call into
    llama.cpp on one thread (tests/support/llama_server_one_worker.py), as the bench's baseline at its best. `libs`: the
    llama.cpp libraries to run (a CPU variant's folder, chatharuhi_core/chat/engines/local/llama_cpu.py)."""
    if not LLAMA_PYTHON.exists():
        raise RuntimeError("No .venv-llama: run `bash scripts/setup-llama-server.sh` (scripts/test.sh does).")
    port = free_port()
    server = [str(Path(__file__).with_name("llama_server_one_worker.py"))] if one_worker else ["-m", "llama_cpp.server"]
    cmd = [str(LLAMA_PYTHON), *server, "--model", str(gguf), "--model_alias", "smollm2",
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"]
    if threads:
        cmd += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
    if lora:
        cmd += ["--lora_path", str(lora)]
    if flash_attn:
        cmd += ["--flash_attn", "true"]
    env = {**os.environ, "LLAMA_CPP_LIB_PATH": str(libs)} if libs else None
    with running(cmd, f"http://127.0.0.1:{port}/v1/models", env=env, log=log):
        yield f"http://127.0.0.1:{port}/v1"
