"""The local engine: the bundled SmolLM2 GGUF (run by llama.cpp), the same file and a model folder or a
Hub id read from a Hugging Face cache laid out here (run by transformers), streaming, stopping, timeouts
and plain-sentence failures. tests/test_local_llamacpp.py has what is particular to llama.cpp."""

from __future__ import annotations

import threading
import time

import pytest
from support.make_inputs import TINY_LLAMA, tiny_llama_hub_cache

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.chat.engines.base import open_engine
from chatharuhi_core.chat.engines.local import model as local_model
from chatharuhi_core.chat.engines.local.model import ModelSpec, resolve_model
from chatharuhi_core.config import Budgets
from chatharuhi_core.errors import EngineError
from chatharuhi_core.tokens import count_tokens


@pytest.fixture(scope="module")
def smol(settings):
    """SmolLM2, loaded once for the module (as the app loads a model once per process)."""
    bot = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings)
    loading = bot.loading_message()  # None when another test module (eval, synthesize) loaded it first
    assert loading is None or loading.startswith("Loading the local model SmolLM2-135M-Instruct")
    bot.load()
    assert bot.loading_message() is None
    return local_model.load_model(bot.engine.spec)


@pytest.fixture(scope="module")
def smol_hf(settings):
    """The same file run by transformers (the runtime finetune trains and a GPU uses)."""
    return local_model.load_model(local_model.resolve_model("smollm2"), "cpu", "transformers")


def test_model_names_resolve(smollm2_gguf, tmp_path):
    assert resolve_model("smollm2") == ModelSpec(str(smollm2_gguf.parent), smollm2_gguf.name,
                                                 label="SmolLM2-135M-Instruct")
    assert resolve_model(str(smollm2_gguf)).gguf_file == smollm2_gguf.name
    assert resolve_model("HuggingFaceTB/SmolLM2-360M-Instruct@main") == ModelSpec(
        "HuggingFaceTB/SmolLM2-360M-Instruct", None, "main", "SmolLM2-360M-Instruct", on_hub=True)
    gguf = resolve_model("bartowski/SmolLM2-1.7B-Instruct-GGUF/SmolLM2-1.7B-Instruct-Q4_K_M.gguf")
    assert gguf.on_hub and gguf.source == "bartowski/SmolLM2-1.7B-Instruct-GGUF" and gguf.gguf_file.endswith(".gguf")
    for bad in ("not a model", "./missing/folder/x", str(tmp_path)):
        with pytest.raises(EngineError) as err:
            resolve_model(bad)
        assert "\n" not in str(err.value)


def test_bundled_model_answers_in_english_and_streams(settings, smol):
    bot = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings)
    streaming = bot.stream("Who are you?")
    pieces = list(streaming)
    reply = bot.history[-1].reply
    assert len(pieces) > 3 and "".join(pieces) == reply  # it streamed, and what was shown was kept
    letters = [c for c in reply if c.isalpha()]
    assert len(letters) > 10 and sum(c.isascii() for c in letters) / len(letters) > 0.95  # English
    stats = streaming.reply.stats
    assert stats.engine == "Local model" and stats.model == "SmolLM2-135M-Instruct (llama.cpp, cpu)"
    assert 0 < stats.first_token_s <= stats.total_s and stats.tokens_per_s > 0
    assert stats.tokens == smol.count_tokens(reply)  # counted with the model's own tokenizer


def test_budgets_count_with_the_models_tokenizer(settings, smol):
    bot = ChatHaruhi(role_name="sunwukong", engine="local", model="smollm2", settings=settings)
    text = "齐天大圣孙悟空，金箍棒重一万三千五百斤。"
    assert bot.count_tokens(text) == smol.count_tokens(text) != count_tokens(text)
    req = bot.prepare("你是谁？")
    scenes = req.messages[1]["content"]
    assert smol.count_tokens(scenes) <= bot.budgets.story_tokens + 50  # header and separators aside
    assert req.packed == scenes.count("\n###\n") + 1


def test_the_engine_brings_budgets_sized_to_a_small_model(settings, smol):
    bot = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings)
    assert bot.budgets == local_model.LOCAL_BUDGETS == Budgets(story_tokens=256, history_tokens=192, memory_tokens=192,
                                                               recall_tokens=128, recall_k=6, note_tokens=0)
    assert ChatHaruhi(role_name="sherlock", engine="script", settings=settings).budgets == Budgets()  # the paper's
    mine = Budgets(story_tokens=600, history_tokens=300)
    assert ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings,
                      budgets=mine).budgets == mine
    assert ChatHaruhi(role_name="sherlock", engine="local", model="smollm2",
                      settings=settings.with_(budgets=mine)).budgets == mine


def test_transformers_runs_the_same_file_when_asked(settings, smol_hf, monkeypatch):
    monkeypatch.setenv("CHATHARUHI_LOCAL_RUNTIME", "transformers")
    bot = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings)
    assert bot.engine.load() is smol_hf and smol_hf.runtime == "transformers"
    said = bot.answer("Who are you?")
    letters = [c for c in said.text if c.isalpha()]
    assert len(letters) > 10 and sum(c.isascii() for c in letters) / len(letters) > 0.95  # English
    assert said.stats.model == "SmolLM2-135M-Instruct (transformers, cpu)"


@pytest.mark.parametrize("runtime", ["llama.cpp", "transformers"])
def test_greedy_gives_the_most_likely_reply_whatever_the_seed(settings, smol, smol_hf, runtime, monkeypatch):
    """eval --greedy: temperature 0 writes the same reply under any seed, in both runtimes (transformers
    refuses a temperature of 0 when it samples, so that runtime must not sample)."""
    monkeypatch.setenv("CHATHARUHI_LOCAL_RUNTIME", runtime)

    def reply(seed: int) -> str:
        # SmolLM2, the fixtures' model, loaded once for the module (the default, Gemma with its adapter, took 55 s
        # to load on transformers here: what is tested is the greedy path, the same in both)
        engine = open_engine("local", settings, model="smollm2", seed=seed, temperature=0.0, max_tokens=24)
        return ChatHaruhi(role_name="alice", engine=engine, settings=settings).chat("Who are you?")

    assert reply(1) == reply(2) != ""


def test_the_system_prompt_cache_gives_the_same_next_token(settings, smol_hf):
    """transformers: the cached keys and values of the system prompt, then the rest, give the same logits as
    the whole prompt. (llama.cpp reuses the longest cached prefix itself: tests/test_local_llamacpp.py.)"""
    import torch

    from chatharuhi_core.chat.engines.local.transformers_model import TRANSFORMERS

    smol = smol_hf
    bot = ChatHaruhi(role_name="sunwukong", engine="local", model="smollm2", settings=settings)
    messages = bot.prepare("你的金箍棒有多重？").messages
    TRANSFORMERS.inputs(smol, messages, "孙悟空:「")  # the first turn with this role fills the cache
    enc, cache = TRANSFORMERS.inputs(smol, messages, "孙悟空:「")
    assert cache is not None
    cached = cache.get_seq_length()
    assert 0 < cached < enc["input_ids"].shape[1]
    assert cached == len(smol.tokenizer(smol.tokenizer.apply_chat_template(messages[:1], tokenize=False),
                                        add_special_tokens=False)["input_ids"])
    with torch.inference_mode():
        whole = smol.model(**enc).logits[0, -1]
        rest = smol.model(input_ids=enc["input_ids"][:, cached:], attention_mask=enc["attention_mask"],
                          past_key_values=cache).logits[0, -1]
    assert torch.allclose(whole, rest, atol=1e-3)
    assert int(whole.argmax()) == int(rest.argmax())
    _, again = TRANSFORMERS.inputs(smol, messages, "孙悟空:「")
    assert again.get_seq_length() == cached  # every reply gets a fresh copy; the shared one is untouched


def test_one_model_shared_by_every_conversation(settings, smol):
    a = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings)
    b = ChatHaruhi(role_name="alice", engine="local", model="smollm2", settings=settings)
    assert a.engine.load() is b.engine.load() is smol


def _generating() -> int:
    return sum(t.name == "local-generate" for t in threading.enumerate())


def test_a_reader_who_leaves_stops_the_generation(settings, smol):
    bot = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings)
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
    bot = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings.with_(timeout_s=0.05))
    with smol.handle.lock, pytest.raises(EngineError, match="produced nothing for 0.05 seconds"):
        bot.chat("Who are you?")  # the model held elsewhere: nothing comes (a prompt read before could be quick)
    assert bot.history == []
    # the next one works
    assert ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings).chat("Hello!")


@pytest.fixture(scope="module")
def tiny_hub_model(tmp_path_factory):
    """A tiny random Llama with SmolLM2's tokenizer, laid out as a Hugging Face cache entry."""
    cache = tiny_llama_hub_cache(tmp_path_factory.mktemp("hub-cache"))
    folder = next((cache / ("models--" + TINY_LLAMA.replace("/", "--")) / "snapshots").iterdir())
    return folder, cache


def test_a_model_folder_and_a_hub_id_from_the_cache(settings, tiny_hub_model, monkeypatch):
    folder, cache = tiny_hub_model
    budgets = settings.budgets.__class__(story_tokens=80, history_tokens=40)
    bot = ChatHaruhi(role_name="sherlock", engine="local", model=str(folder), settings=settings, budgets=budgets)
    said = bot.answer("Hi")
    assert said.text  # random weights: any text, but it streams through the same path
    assert said.stats.model == f"{folder.name} (transformers, cpu)"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_bot = ChatHaruhi(role_name="sherlock", engine="local", model=TINY_LLAMA, settings=settings,
                         budgets=budgets)
    said = hub_bot.answer("Hi")
    assert said.text and said.stats.model == "chatharuhi-llama (transformers, cpu)"
    missing = ChatHaruhi(role_name="sherlock", engine="local", model="test-org/not-cached", settings=settings)
    start = time.monotonic()
    with pytest.raises(EngineError, match="not in the local Hugging Face cache"):
        missing.chat("Hi")
    assert time.monotonic() - start < 10


def test_a_prompt_longer_than_the_model_reads_is_told(settings, tiny_hub_model):
    folder, _ = tiny_hub_model  # this model reads 1,024 tokens; the paper's budgets give far more
    bot = ChatHaruhi(role_name="sherlock", engine="local", model=str(folder), settings=settings, budgets=Budgets())
    with pytest.raises(EngineError, match="more than .* can read .*Lower the scene or history budget"):
        bot.chat("Who are you?")
    assert bot.history == []
