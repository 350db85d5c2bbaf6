"""The local transformers engine: the bundled SmolLM2 GGUF, a model folder, a Hub id read from a
Hugging Face cache laid out here, streaming, stopping, timeouts and plain-sentence failures."""

from __future__ import annotations

import threading
import time

import pytest

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.chat.backends import local_model
from chatharuhi_core.chat.backends.local_model import ModelSpec, resolve_model
from chatharuhi_core.chat.tokens import count_tokens
from chatharuhi_core.errors import BackendError


@pytest.fixture(scope="module")
def smol(settings):
    """The bundled model, loaded once for the module (as the app loads it once per process)."""
    bot = ChatHaruhi(role_name="sherlock", llm="local", settings=settings)
    loading = bot.loading_message()  # None when another test module (eval, synthesize) loaded it first
    assert loading is None or loading.startswith("Loading the local model SmolLM2-135M-Instruct")
    bot.load()
    assert bot.loading_message() is None
    return local_model.load_model(bot.backend.spec)


def test_model_names_resolve(smollm2_gguf, tmp_path):
    assert resolve_model("") == ModelSpec(str(smollm2_gguf.parent), smollm2_gguf.name,
                                          label="SmolLM2-135M-Instruct")
    assert resolve_model(str(smollm2_gguf)).gguf_file == smollm2_gguf.name
    assert resolve_model("HuggingFaceTB/SmolLM2-360M-Instruct@main") == ModelSpec(
        "HuggingFaceTB/SmolLM2-360M-Instruct", None, "main", "SmolLM2-360M-Instruct", on_hub=True)
    gguf = resolve_model("bartowski/SmolLM2-1.7B-Instruct-GGUF/SmolLM2-1.7B-Instruct-Q4_K_M.gguf")
    assert gguf.on_hub and gguf.source == "bartowski/SmolLM2-1.7B-Instruct-GGUF" and gguf.gguf_file.endswith(".gguf")
    for bad in ("not a model", "./missing/folder/x", str(tmp_path)):
        with pytest.raises(BackendError) as err:
            resolve_model(bad)
        assert "\n" not in str(err.value)


def test_bundled_model_answers_in_english_and_streams(settings, smol):
    bot = ChatHaruhi(role_name="sherlock", llm="local", settings=settings)
    pieces = list(bot.stream("Who are you?"))
    reply = bot.history[-1].reply
    assert len(pieces) > 3 and "".join(pieces) == reply  # it streamed, and what was shown was kept
    letters = [c for c in reply if c.isalpha()]
    assert len(letters) > 10 and sum(c.isascii() for c in letters) / len(letters) > 0.95  # English
    stats = bot.last_stats
    assert stats.engine == "Local model (transformers)" and stats.model == "SmolLM2-135M-Instruct (cpu)"
    assert 0 < stats.first_token_s <= stats.total_s and stats.tokens_per_s > 0
    assert stats.tokens == smol.count_tokens(reply)  # counted with the model's own tokenizer


def test_budgets_count_with_the_models_tokenizer(settings, smol):
    bot = ChatHaruhi(role_name="sunwukong", llm="local", settings=settings)
    text = "齐天大圣孙悟空，金箍棒重一万三千五百斤。"
    assert bot.count_tokens(text) == smol.count_tokens(text) != count_tokens(text)
    req = bot.prepare("你是谁？")
    scenes = req.messages[1]["content"]
    assert smol.count_tokens(scenes) <= bot.budgets.story_tokens + 50  # header and separators aside
    assert bot.last_packed == scenes.count("\n###\n") + 1


def test_one_model_shared_by_every_conversation(settings, smol):
    a = ChatHaruhi(role_name="sherlock", llm="local", settings=settings)
    b = ChatHaruhi(role_name="alice", llm="local", settings=settings)
    assert a.backend.load() is b.backend.load() is smol


def _generating() -> int:
    return sum(t.name == "local-generate" for t in threading.enumerate())


def test_a_reader_who_leaves_stops_the_generation(settings, smol):
    bot = ChatHaruhi(role_name="sherlock", llm="local", settings=settings)
    stream = bot.stream("Tell me the whole story of the Hound of the Baskervilles.")
    next(stream)
    assert _generating() == 1
    stream.close()  # the visitor closed the tab
    deadline = time.monotonic() + 5
    while _generating() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _generating() == 0
    assert bot.history == []


def test_a_model_that_hangs_is_cut_by_the_timeout(settings, smol):
    bot = ChatHaruhi(role_name="sherlock", llm="local", settings=settings.with_(timeout_s=0.05))
    with pytest.raises(BackendError, match="produced nothing for 0.05 seconds"):
        bot.chat("Who are you?")
    assert bot.history == []
    assert ChatHaruhi(role_name="sherlock", llm="local", settings=settings).chat("Hello!")  # next one works


@pytest.fixture(scope="module")
def tiny_hub_model(smol, tmp_path_factory):
    """A tiny random Llama with SmolLM2's tokenizer, laid out as a Hugging Face cache entry."""
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-model")
    config = LlamaConfig(vocab_size=len(smol.tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                         bos_token_id=smol.tokenizer.bos_token_id, eos_token_id=smol.tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    smol.tokenizer.save_pretrained(folder)
    cache = tmp_path_factory.mktemp("hub-cache")
    snapshot = cache / "models--test-org--tiny-llama" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    for f in folder.iterdir():
        (snapshot / f.name).write_bytes(f.read_bytes())
    (cache / "models--test-org--tiny-llama" / "refs").mkdir()
    (cache / "models--test-org--tiny-llama" / "refs" / "main").write_text("a" * 40)
    return folder, cache


def test_a_model_folder_and_a_hub_id_from_the_cache(settings, tiny_hub_model, monkeypatch):
    folder, cache = tiny_hub_model
    budgets = settings.budgets.__class__(story_tokens=80, history_tokens=40)
    bot = ChatHaruhi(role_name="sherlock", llm="local", model=str(folder), settings=settings, budgets=budgets)
    assert bot.chat("Hi")  # random weights: any text, but it streams through the same path
    assert bot.last_stats.model == f"{folder.name} (cpu)"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_bot = ChatHaruhi(role_name="sherlock", llm="local", model="test-org/tiny-llama", settings=settings,
                         budgets=budgets)
    assert hub_bot.chat("Hi") and hub_bot.last_stats.model == "tiny-llama (cpu)"
    missing = ChatHaruhi(role_name="sherlock", llm="local", model="test-org/not-cached", settings=settings)
    start = time.monotonic()
    with pytest.raises(BackendError, match="not in the local Hugging Face cache"):
        missing.chat("Hi")
    assert time.monotonic() - start < 10


def test_a_prompt_longer_than_the_model_reads_is_told(settings, tiny_hub_model):
    folder, _ = tiny_hub_model  # this model reads 1,024 tokens; the default budgets give far more
    bot = ChatHaruhi(role_name="sherlock", llm="local", model=str(folder), settings=settings)
    with pytest.raises(BackendError, match="more than .* can read .*Lower the scene or history budget"):
        bot.chat("Who are you?")
    assert bot.history == []
