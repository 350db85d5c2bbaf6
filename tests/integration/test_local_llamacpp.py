"""The local engine's llama.cpp runtime: the bundled GGUF run in-process agrees with llama.cpp's server
on the same file, a fixed seed gives the same reply, a fine-tuned adapter converted for llama.cpp moves
the model the way the adapter moves transformers' copy, and bad files get a sentence naming them."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import replace
from pathlib import Path

import httpx
import numpy as np
import pytest

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.chat.engines.local import model as local_model
from chatharuhi_core.chat.engines.local.gguf_lora import lora_for, merged_for
from chatharuhi_core.chat.engines.local.llamacpp import (
    LLAMA_CPP,
    LlamaHandle,
    _verdict_key,
    eight_bit_copy,
    measure_when_idle,
    prefill_copy,
    prompt_reader,
    read_prompt,
    reads_faster,
)
from chatharuhi_core.chat.engines.local.packaged import SMOLLM2, packaged_spec
from chatharuhi_core.chat.engines.local.runtime import Sampling
from chatharuhi_core.chat.prompt import Exchange
from chatharuhi_core.errors import EngineError, UnknownNameError

# seeded: the prompt is read afresh by the model itself (no 16-bit copy, no reused prefix), as the server reads it
GREEDY = Sampling(max_tokens=40, temperature=0.0, repetition_penalty=1.0, no_repeat_ngram_size=0, seed=0)
MESSAGES = [{"role": "system", "content": "You are Sherlock Holmes, the detective of Baker Street."},
            {"role": "user", "content": "What do you make of the mud on my boots?"}]


@pytest.fixture(scope="module")
def lm():
    return local_model.load_model(packaged_spec(SMOLLM2), "cpu")


def _generate(lm, sampling: Sampling, messages=MESSAGES, opening: str = "") -> str:
    pieces: list[str] = []
    LLAMA_CPP.generate(lm, messages, opening, sampling, pieces.append, lambda: False)
    return "".join(pieces)


def test_the_bundled_model_runs_in_process_with_llama_cpp(settings, lm):
    assert lm.runtime == "llama.cpp" and lm.device == "cpu"
    bot = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings)
    assert bot.engine.load() is lm  # one model for every conversation
    said = bot.answer("Who are you?")
    assert said.text and said.stats.model == "SmolLM2-135M-Instruct (llama.cpp, cpu)"
    assert said.stats.tokens == lm.count_tokens(said.text)


def test_greedy_text_matches_llama_cpp_server_on_the_same_file(lm, llama_server):
    """The same GGUF, the same build of llama.cpp, the same prompt, greedy: the in-process runtime and the
    server write the same words. The server is made to read the prompt in the engine's batches (all but the
    last token from an empty context, then the last one): llama.cpp's AVX-512 kernels sum a batch of 40 tokens
    in another order than a batch of 1, and a near tie can then go either way."""
    prompt = lm.template(MESSAGES)
    mine = _generate(lm, GREEDY)

    def complete(text, max_tokens: int) -> str:
        return httpx.post(f"{llama_server}/completions", timeout=120, json={
            "model": "smollm2", "prompt": text, "max_tokens": max_tokens, "temperature": 0.0, "repeat_penalty": 1.0,
        }).json()["choices"][0]["text"]

    tokens = lm.handle.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    complete("Nothing shared with the prompt.", 1)  # whatever the server read before, its next read starts empty
    complete(lm.handle.llm.detokenize(tokens[:-1], special=True).decode("utf-8"), 1)  # the head, in one batch
    assert mine and mine == complete(prompt, 40)


def test_lines_are_scored_as_transformers_scores_them(lm):
    """Next-line choice ranks lines by their mean log-probability: llama.cpp's (the prompt read once, every
    line's logits in one batch) agrees with transformers' on the same weights, and the line the model writes
    itself ranks first."""
    from chatharuhi_core.chat.engines.local.runtime import runtime_named

    mine = _generate(lm, GREEDY, opening="Sherlock Holmes:「")
    lines = [mine, "俺老孙来也！妖怪，吃俺老孙一棒！", "I have never been to London and I do not care for puzzles."]
    ours = LLAMA_CPP.score(lm, MESSAGES, "Sherlock Holmes:「", lines)
    again = LLAMA_CPP.score(lm, MESSAGES, "Sherlock Holmes:「", lines)  # from the saved prompt state
    theirs = runtime_named("transformers").score(local_model.load_model(packaged_spec(SMOLLM2), "cpu", "transformers"),
                                                 MESSAGES, "Sherlock Holmes:「", lines)
    assert ours == pytest.approx(again, abs=1e-3)
    # measured over 40 lines of the bundled roles: mean 0.014-0.020 nats a token apart, at most 0.083, whichever
    # build of llama.cpp's CPU kernels and with or without flash attention (bench/RESULTS.md)
    assert ours == pytest.approx(theirs, abs=0.1)
    assert ours[0] == max(ours)


def _os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_scoring_leaves_no_compute_threads_with_its_caller(settings, lm):
    """Eval scores lines from its long-lived main thread. llama.cpp's OpenMP keeps a worker pool per calling
    thread while that thread lives, and a pool left beside every reply's own made decoding 2.5 times slower
    on 2 cores: the engine scores on a thread of its own, so its caller gains no thread."""
    bot = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings)
    request = bot.prepare("What do you make of the mud on my boots?")
    scored, release = threading.Event(), threading.Event()
    out: list = []

    def caller() -> None:
        out.append(bot.engine.score(request, ["You have come from Afghanistan, I perceive.", "Elementary."]))
        scored.set()
        release.wait(30)

    before = _os_threads()
    thread = threading.Thread(target=caller)
    thread.start()
    try:
        assert scored.wait(120) and len(out[0]) == 2
        counts = []
        for _ in range(50):  # the scoring thread and its pool end right after the scores come back
            counts.append(_os_threads())
            if counts[-1] <= before + 1:
                break
            threading.Event().wait(0.1)
        assert counts[-1] <= before + 1, f"{before} threads before, then {counts[-3:]} with the caller waiting"
    finally:
        release.set()
        thread.join()


def test_a_fixed_seed_gives_the_same_reply(settings):
    def bot(seed: int | None) -> ChatHaruhi:
        engine = local_model.LocalModelEngine(local_model.EngineOptions(seed=seed))
        return ChatHaruhi(role_name="sunwukong", engine=engine, settings=settings)

    assert bot(7).chat("你是谁？") == bot(7).chat("你是谁？")
    assert len({bot(None).chat("你是谁？") for _ in range(3)}) > 1  # unseeded replies still vary


def test_seeded_replies_to_one_prompt_read_it_once_and_match_a_fresh_read(lm):
    """An eval asks each prompt for several seeded samples: the second reads nothing of the prompt again (the
    state of the first read is restored) and writes what a fresh read with that seed writes."""
    sampled = Sampling(max_tokens=30, temperature=0.7, top_p=0.9, repetition_penalty=1.0, no_repeat_ngram_size=0)
    other = [{"role": "system", "content": "你是孙悟空。" * 20}, {"role": "user", "content": "你是谁？"}]

    def seeded(seed: int, messages=MESSAGES) -> str:
        return _generate(lm, replace(sampled, seed=seed), messages)

    fresh = {seed: (seeded(9, other), seeded(seed))[1] for seed in (1, 2)}  # each read afresh after another prompt
    llm, evals = lm.handle.llm, []
    seeded(1)  # read once more, then restored below
    original = llm.eval
    llm.eval = lambda tokens: (evals.append(len(tokens)), original(tokens))
    try:
        restored = {seed: seeded(seed) for seed in (2, 1)}
    finally:
        del llm.eval
    assert restored == fresh and fresh[1] != fresh[2]
    assert evals and max(evals) == 1  # the prompt's last token, then the reply's own tokens one by one


def test_a_prompt_read_before_is_taken_from_the_saved_states(lm):
    """Another role answered in between: the prompt's state comes back from the saved ones, unread, and the
    reply is the one given the first time."""
    greedy = Sampling(max_tokens=40, temperature=0.0, repetition_penalty=1.0, no_repeat_ngram_size=0)
    other = [{"role": "system", "content": "你是孙悟空。" * 20}, {"role": "user", "content": "你是谁？"}]
    _generate(lm, greedy, other)  # whatever an earlier test left in the reply's model, this prompt is new to it
    first = _generate(lm, greedy)
    _generate(lm, greedy, other)
    reader = lm.handle.prefill or lm.handle.llm
    evals = []
    original = reader.eval
    reader.eval = lambda tokens: (evals.append(len(tokens)), original(tokens))
    try:
        assert _generate(lm, greedy) == first
    finally:
        del reader.eval
    assert evals == []  # nothing of the prompt read again


def test_the_next_turns_start_is_read_while_the_visitor_types(settings, lm):
    """After a reply the engine reads the next prompt's start (system prompt, history) in the background; the
    next message then reads only its scenes and itself."""
    bot = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings)
    me = bot.user_role
    bot.history = [Exchange(me, "Good morning, Mr. Holmes.", "Good morning. You have come about your brother."),
                   Exchange(me, "He has vanished.", "Since Tuesday night, to judge by the mud on your cuffs.")]
    start = bot.next_prompt_start()
    request = bot.prepare("What do you make of the mud on my boots?")
    assert request.messages[:len(start)] == start and len(start) == len(request.messages) - 2
    assert request.messages[-2]["content"].startswith("Classic scenes")  # the scenes, after the history
    llm = lm.handle.llm
    full = llm.tokenize((lm.template(request.messages) + "Sherlock Holmes:「").encode(), add_bos=False, special=True)
    ahead = llm.tokenize(lm.template(start).encode(), add_bos=False, special=True)
    bot.engine.warm(start).join()
    reader = lm.handle.prefill or llm
    evals: list[int] = []
    original = reader.eval

    def counted(tokens):  # the reply's own reading; the read-ahead it starts when done runs in "local-warm"
        if threading.current_thread().name != "local-warm":
            evals.append(len(tokens))
        return original(tokens)

    reader.eval = counted
    try:
        bot.chat("What do you make of the mud on my boots?")
    finally:
        del reader.eval
    new = len(full) - _shared(full, ahead)
    assert sum(evals) <= new < len(full) - len(ahead) + 8  # the start came from what was read ahead
    # and a finished reply starts the next read-ahead itself
    for thread in threading.enumerate():
        if thread.name == "local-warm":
            thread.join()
    ahead = llm.tokenize(lm.template(bot.next_prompt_start()).encode(), add_bos=False, special=True)
    assert reader.input_ids[:reader.n_tokens].tolist() == ahead[:-1]



def test_a_character_opened_on_the_page_is_read_before_the_first_message(settings, lm):
    """Picking a character (or the local engine) on the page loads the model and reads how the first message's
    prompt will start while the visitor types it; the offline engine reads nothing ahead."""
    from chatharuhi_core.web.chat import Conversation
    from chatharuhi_core.web.common import EnginePanel
    from chatharuhi_core.web.turn import make_bot, read_ahead

    conv, panel = Conversation("sunwukong"), EnginePanel("local", "smollm2", story_tokens=256, history_tokens=192)
    assert read_ahead(conv, "", EnginePanel("script"), settings) is None
    read_ahead(conv, "", panel, settings).join()
    start = make_bot(conv, panel, "", settings).next_prompt_start()
    ahead = lm.handle.llm.tokenize(lm.template(start).encode(), add_bos=False, special=True)
    reader = lm.handle.prefill or lm.handle.llm
    assert reader.input_ids[:reader.n_tokens].tolist() == ahead[:-1]

def _shared(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_reading_ahead_waits_for_no_reply_and_never_fails_one(lm):
    """A reply holding the model: the read-ahead is skipped, not queued; a start too long for the model is
    skipped too, silently (it would only have saved time)."""
    with lm.handle.lock:
        evals: list[int] = []
        reader = lm.handle.prefill or lm.handle.llm
        original = reader.eval
        reader.eval = lambda tokens: (evals.append(len(tokens)), original(tokens))
        try:
            LLAMA_CPP.warm(lm, [{"role": "system", "content": "You are Sherlock Holmes. " * 10}])
            assert evals == []
        finally:
            del reader.eval
    LLAMA_CPP.warm(lm, [{"role": "system", "content": "word " * 10_000}])  # over the context: nothing, no error


def test_the_16_bit_copy_reads_the_prompt_and_the_4_bit_model_goes_on_as_if_it_had(lm, smollm2_gguf, tmp_path):
    """Q4_1 reads prompts at half the speed of F16 here: the bundled model gets a 16-bit copy of the same
    weights for prompts; after the hand-over the 4-bit model sees the next token as it would alone (up to
    rounding: measured correlation 0.9997, mean difference 0.06, as between the two copies read alone)."""
    import threading

    from llama_cpp import Llama

    assert lm.handle.prefill is not None  # the bundled Q4_1 file
    copy = prefill_copy(smollm2_gguf, tmp_path)
    assert copy and prefill_copy(smollm2_gguf, tmp_path) == copy  # made once
    assert copy.stat().st_size > 2.5 * smollm2_gguf.stat().st_size  # 16 bits a weight, not 5
    prompt = lm.template([{"role": "system", "content": "You are Sherlock Holmes of Baker Street. " * 12},
                          {"role": "user", "content": "What do you make of the mud on my boots?"}]) + "Sherlock:「"

    def opened(path, logits: bool) -> Llama:
        return Llama(model_path=str(path), n_ctx=1024, n_threads=2, logits_all=logits, verbose=False)

    alone = opened(smollm2_gguf, True)
    tokens = alone.tokenize(prompt.encode(), add_bos=False, special=True)
    alone.eval(tokens)
    eight = eight_bit_copy(copy)  # the reader on CPUs where 8 bits read faster (reads_faster)
    assert eight and eight_bit_copy(copy) == eight and eight.stat().st_size < 0.6 * copy.stat().st_size
    for reader in (copy, eight):
        handed = opened(smollm2_gguf, True)
        read_prompt(LlamaHandle(handed, threading.Lock(), opened(reader, False)), tokens)
        assert handed.n_tokens == len(tokens) - 1
        handed.eval(tokens[-1:])
        mine, ref = np.array(handed.scores[len(tokens) - 1]), np.array(alone.scores[len(tokens) - 1])
        assert np.corrcoef(mine, ref)[0, 1] > 0.999 and np.abs(mine - ref).mean() < 0.2
        assert len(set(np.argsort(-mine)[:5]) & set(np.argsort(-ref)[:5])) >= 4


def test_the_faster_reader_is_measured_once_per_cpu_and_a_verdict_is_kept(lm, smollm2_gguf, tmp_path, monkeypatch):
    """Which copy reads prompts is this CPU's measured answer, kept in the cache: the next load reads the
    verdict and measures nothing; the model loaded reads with the copy chosen."""
    import llama_cpp

    copy = prefill_copy(smollm2_gguf, tmp_path)
    candidates, verdicts = {"f16": copy, "q8_0": eight_bit_copy(copy)}, tmp_path / "prompt-readers.json"
    chosen = reads_faster(candidates, 2, verdicts)
    kept = json.loads(verdicts.read_text())
    (entry,) = kept.values()
    assert entry["chosen"] == chosen and set(entry["tokens_per_s"]) == {"f16", "q8_0"}
    monkeypatch.setattr(llama_cpp, "Llama", None)  # measuring again would fail now
    assert prompt_reader(copy, 2) == candidates[chosen]
    for damaged in ("[1, 2]", json.dumps({k: "broken" for k in kept})):  # measured again (here it fails): 16 bits
        verdicts.write_text(damaged)
        assert prompt_reader(copy, 2) == copy
    loaded = Path(lm.handle.prefill.model_path)  # the bundled model, loaded with this CPU's verdict if it had one
    if lm.later is not None:  # it had none: it reads with 16 bits and measured once idle (the next test)
        lm.later.join(60)
        assert "-f16-" in loaded.name
    verdict = json.loads((loaded.parent / "prompt-readers.json").read_text())
    # this CPU's and this build's verdict (a cache used by earlier builds holds theirs too)
    if lm.later is None:
        assert ("-q8_0-" in loaded.name) == (verdict[_verdict_key(lm.handle.most)]["chosen"] == "q8_0")


def test_a_first_load_reads_with_16_bits_and_measures_the_readers_once_idle(smollm2_gguf, tmp_path):
    """A cache without this CPU's verdict (a first start, a Space without persistent storage) loads without the
    two seconds of the reader's measurement: it reads with the 16-bit copy at once and measures once the model
    is idle, for the next load, which then measures nothing."""
    spec = replace(packaged_spec(SMOLLM2), cache=str(tmp_path))
    first = LLAMA_CPP.load(spec, "cpu")
    verdicts = tmp_path / "gguf-f16" / "prompt-readers.json"
    assert "-f16-" in Path(first.handle.prefill.model_path).name and first.later is not None
    first.later.join(60)
    chosen = json.loads(verdicts.read_text())[_verdict_key(first.handle.most)]["chosen"]
    again = LLAMA_CPP.load(spec, "cpu")
    assert again.later is None and ("-q8_0-" in Path(again.handle.prefill.model_path).name) == (chosen == "q8_0")


def test_a_visitors_reply_interrupts_the_readers_measurement(smollm2_gguf, tmp_path):
    copy = prefill_copy(smollm2_gguf, tmp_path)
    looks = iter([True] * 6 + [False] * 100)  # quiet through the settling, then a visitor's reply begins
    assert measure_when_idle(copy, 2, lambda: next(looks), settle_s=0.5, tries=1) is None
    assert not (tmp_path / "prompt-readers.json").exists()  # nothing measured under a reply is kept
    assert measure_when_idle(copy, 2, lambda: True, settle_s=0.1) in ("f16", "q8_0")  # the next quiet spell
    assert (tmp_path / "prompt-readers.json").exists()


def test_a_cache_that_cannot_be_written_leaves_the_model_without_copy_and_the_adapter_named(
        smollm2_gguf, adapter, tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    assert prefill_copy(smollm2_gguf, blocked / "f16") is None  # the model reads its prompts itself
    folder, _, _ = adapter
    with pytest.raises(EngineError, match="Could not write the adapter in .*sherlock-random-lora converted"):
        lora_for(folder, smollm2_gguf, blocked / "lora")


def test_a_model_in_a_fast_format_gets_no_copy(smollm2_gguf, tmp_path):
    import ctypes

    import llama_cpp

    q8 = tmp_path / "smol-q8_0.gguf"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype, params.allow_requantize = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0, True
    assert llama_cpp.llama_model_quantize(str(smollm2_gguf).encode(), str(q8).encode(), ctypes.byref(params)) == 0
    assert prefill_copy(q8, tmp_path / "copies") is None


def test_no_four_tokens_are_repeated_as_transformers_no_repeat_ngram_does(lm):
    """A small model loops on a phrase; the engine forbids any 4-gram already in the text, on llama.cpp too."""
    looping = [{"role": "user", "content": "Repeat after me forever: the cat sat on the mat, the cat sat on the mat, "
                                           "the cat sat on the mat"}]

    def repeats(n: int) -> int:
        sampling = Sampling(max_tokens=60, temperature=0.0, repetition_penalty=1.0, no_repeat_ngram_size=n)
        ids = lm.handle.llm.tokenize(_generate(lm, sampling, looping).encode(), add_bos=False)
        grams = [tuple(ids[i:i + 4]) for i in range(len(ids) - 3)]
        return len(grams) - len(set(grams))

    assert repeats(0) > 0 and repeats(4) == 0


def test_a_file_that_is_not_a_gguf_model_is_named(settings, tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a model at all" * 100)
    bot = ChatHaruhi(role_name="sherlock", engine="local", model=str(bad), settings=settings)
    with pytest.raises(EngineError, match=r"broken\.gguf is not a GGUF model file"):
        bot.chat("Hello")
    assert bot.history == []


def test_asking_for_a_runtime_that_cannot_run_the_model_is_a_sentence(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    monkeypatch.setenv("CHATHARUHI_LOCAL_RUNTIME", "llama.cpp")
    engine = local_model.LocalModelEngine(local_model.EngineOptions(model=str(folder)))
    with pytest.raises(EngineError, match="llama.cpp runtime cannot run model"):
        engine.load()
    monkeypatch.setenv("CHATHARUHI_LOCAL_RUNTIME", "vllm")
    with pytest.raises(UnknownNameError, match="Known local runtimes: llama.cpp, transformers"):
        engine.load()


@pytest.fixture(scope="module")
def adapter(tmp_path_factory):
    """A LoRA adapter on the bundled model, as `finetune` lays it out, with random (non-zero) weights:
    training is tested elsewhere; here what matters is that llama.cpp applies the same change."""
    import torch
    from peft import LoraConfig, get_peft_model

    from chatharuhi_core.chat.engines.local.transformers_model import read_model

    folder = tmp_path_factory.mktemp("adapters") / "sherlock-random-lora"
    tokenizer, base = read_model(packaged_spec(SMOLLM2))
    torch.manual_seed(0)
    model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear",
                                             init_lora_weights=False))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.mul_(0.3)
    model.save_pretrained(folder)
    (folder / local_model.FINETUNE_MANIFEST).write_text(json.dumps({"base_model": ""}))
    ids = tokenizer(base_prompt(tokenizer), return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        tuned = model(input_ids=ids).logits[0].numpy()
        with model.disable_adapter():
            plain = model(input_ids=ids).logits[0].numpy()
    return folder, plain, tuned


def base_prompt(tokenizer) -> str:
    return tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)


def _logits(llm, prompt: str) -> np.ndarray:
    """The logits at every position of the prompt."""
    llm.reset()
    llm.eval(llm.tokenize(prompt.encode(), add_bos=False, special=True))
    return np.array(llm.scores[:llm.n_tokens])


def test_a_finetuned_adapter_moves_llama_cpp_as_it_moves_transformers(settings, adapter, tmp_path, smollm2_gguf):
    """Both ways llama.cpp gets an adapter: merged into the weights (small models: no slower than the base)
    and as an adapter file applied at run time."""
    from llama_cpp import Llama

    folder, hf_plain, hf_tuned = adapter
    moved_hf = hf_tuned - hf_plain
    assert np.abs(moved_hf).mean() > 0.2  # the adapter changes the model
    prompt = local_model.load_model(packaged_spec(SMOLLM2), "cpu").template(MESSAGES)

    def opened(path: Path, lora: Path | None = None) -> Llama:
        return Llama(model_path=str(path), n_ctx=512, n_threads=2, logits_all=True, verbose=False,
                     lora_path=str(lora) if lora else None)

    def agreement(tuned: Llama) -> float:
        moved = _logits(tuned, prompt) - _logits(plain, prompt)
        assert moved.shape == moved_hf.shape
        return float(np.mean([np.corrcoef(c, h)[0, 1] for c, h in zip(moved, moved_hf)]))

    plain = opened(smollm2_gguf)
    converted = lora_for(folder, smollm2_gguf, tmp_path / "lora")
    assert lora_for(folder, smollm2_gguf, tmp_path / "lora") == converted  # made once, then reused
    # measured: 0.96 converted as here; 0.87 with the query/key rows left in transformers' order
    assert agreement(opened(smollm2_gguf, converted)) > 0.94
    wide, narrow = merged_for(folder, smollm2_gguf, prefill_copy(smollm2_gguf, tmp_path / "f16"), tmp_path / "lora")
    assert merged_for(folder, smollm2_gguf, prefill_copy(smollm2_gguf, tmp_path / "f16"), tmp_path / "lora") \
        == (wide, narrow)
    # measured: 0.98 in 16 bits (8 bits passes the same bar); 0.44 when re-quantised to the base's Q4_1
    assert agreement(opened(wide)) > 0.94 and agreement(opened(narrow)) > 0.94
    # through the engine: the fine-tuned folder answers on llama.cpp, under its own name
    bot = ChatHaruhi(role_name="sherlock", engine="local", model=str(folder), settings=settings)
    said = bot.answer("Who are you?")
    assert said.stats.model == "sherlock-random-lora (llama.cpp, cpu)"
    # merged: read by its 16-bit copy, as the base, or by itself in 8 bits where 8-bit weights read faster
    loaded = bot.engine.load()
    tuned = loaded.handle
    if loaded.later is None:  # this cache holds this CPU's verdict
        verdicts = json.loads((settings.cache_dir / "gguf-f16" / "prompt-readers.json").read_text())
        chosen = verdicts[_verdict_key(len(os.sched_getaffinity(0)))]["chosen"]
    else:  # measured later, for the next load: 16 bits read now
        loaded.later.join(60)
        chosen = "f16"
    assert (tuned.prefill is not None) == (chosen == "f16")
    assert tuned.llm.context_params.n_ubatch == (256 if tuned.prefill is None else 512)
    # the merge went into the conversation's cache (CHATHARUHI_CACHE), not the user's home
    assert {p.name.split("-merged-")[1][:4] for p in (settings.cache_dir / "lora-gguf").glob("*merged*")} \
        == {"f16-", "q8_0"}


def test_a_load_runs_on_a_thread_that_ends_with_it(adapter, monkeypatch):
    """A fine-tuned folder loaded by transformers merges the adapter with torch's matmuls. torch and llama.cpp
    share one libgomp, which keeps a worker pool per calling thread while that thread lives: the load on a
    long-lived thread (the bench's main thread; a visitor's worker thread) left every later llama.cpp reply
    3.5 times slower on 2 cores. So the load runs on a thread of its own, gone when the model comes back."""
    from chatharuhi_core.chat.engines.local.transformers_model import TransformersRuntime

    ran_on: list[threading.Thread] = []
    load = TransformersRuntime.load

    def recorded(self, spec, device):
        ran_on.append(threading.current_thread())
        return load(self, spec, device)

    monkeypatch.setattr(TransformersRuntime, "load", recorded)
    loaded = local_model.load_model(local_model.resolve_model(str(adapter[0])), "cpu", "transformers")
    assert loaded.runtime == "transformers"
    assert ran_on and ran_on[0] is not threading.current_thread() and not ran_on[0].is_alive()


def test_the_adapter_cache_keeps_the_most_recently_used_within_its_size(tmp_path):
    """Every finetune run is a new adapter and each merge of the bundled model is 400 MB: old ones go."""
    from chatharuhi_core.chat.engines.local.gguf_lora import prune

    for age, name in enumerate(["newest", "second", "third", "oldest"]):
        (tmp_path / f"{name}.gguf").write_bytes(b"x" * 100)
        os.utime(tmp_path / f"{name}.gguf", (1_000_000 - age, 1_000_000 - age))
    (tmp_path / "notes.txt").write_text("not ours")
    assert [p.stem for p in prune(tmp_path, capacity=250)] == ["oldest", "third"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["newest.gguf", "notes.txt", "second.gguf"]
    assert prune(tmp_path, capacity=0) == []  # the two newest (a merge in use is two files) always stay


def test_an_adapter_for_another_base_is_named(adapter, tmp_path, smollm2_gguf):
    from safetensors.numpy import load_file, save_file

    folder, _, _ = adapter
    other = tmp_path / "other-lora"
    other.mkdir()
    (other / "adapter_config.json").write_text((folder / "adapter_config.json").read_text())
    weights = load_file(str(folder / "adapter_model.safetensors"))
    save_file({k: v[:, :32] if "lora_A" in k else v for k, v in weights.items()}, str(other / "adapter_model.safetensors"))
    with pytest.raises(EngineError, match="other-lora was trained for another base model"):
        lora_for(other, smollm2_gguf, tmp_path / "lora")
    (other / "adapter_model.safetensors").write_bytes(b"damaged")
    with pytest.raises(EngineError, match="other-lora cannot be read"):
        lora_for(other, smollm2_gguf, tmp_path / "lora")
    assert not list((tmp_path / "lora").glob("*.gguf"))  # nothing half-written left behind


def test_a_hub_model_not_cached_with_the_hub_unreachable_is_a_sentence(tmp_path, monkeypatch):
    """Not the offline setting: the Hub probed and found unreachable (a closed port), for both runtimes."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    for model in ("test-org/not-cached/model.gguf", "test-org/not-cached"):
        engine = local_model.LocalModelEngine(local_model.EngineOptions(model=model))
        with pytest.raises(EngineError, match="not in the local Hugging Face cache"):
            engine.load()


def test_a_gguf_named_on_the_hub_is_read_from_the_cache_with_the_hub_unreachable(settings, tmp_path, monkeypatch,
                                                                                 smollm2_gguf):
    """What a Space's `preload_from_hub` or one run with network leaves behind (issue 54, item 4): a GGUF in the
    Hugging Face cache, named as repository/file, answers with the Hub's port closed; laid out here as
    huggingface_hub lays it (a blob, a snapshot's link to it, the branch's commit)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    repo, commit = hub / "models--test-org--small-gguf", "0123456789abcdef0123456789abcdef01234567"
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (repo / "blobs" / "a1b2c3").symlink_to(smollm2_gguf)  # the file's bytes, without copying 93 MB
    (repo / "snapshots" / commit / "small.Q4_1.gguf").symlink_to(Path("../../blobs/a1b2c3"))
    engine = local_model.LocalModelEngine(local_model.EngineOptions(model="test-org/small-gguf/small.Q4_1.gguf",
                                                                    cache_dir=settings.cache_dir))
    loaded = engine.load()
    assert loaded.runtime == "llama.cpp" and engine.model_label().startswith("small.Q4_1.gguf (llama.cpp")
    bot = ChatHaruhi(role_name="sherlock", engine=engine, settings=settings)
    assert bot.answer("Who are you?").text.strip()
