"""The llama.cpp runtime of the local engine: a GGUF file run in this process by llama-cpp-python.

It reads the quantised weights as they are (the bundled SmolLM2 is 4-bit), so on a CPU a token costs a
quarter of the bytes transformers reads after dequantising: about 2.8 times the decode speed
(bench/RESULTS.md, 68-70 against 24-25 tokens/s). Reading a prompt is another matter: llama.cpp multiplies a
batch of tokens by 4-bit Q4_1 weights at about 200 tokens/s here, and by 16-bit ones at about 430. So for a
small model in such a format the runtime keeps a 16-bit copy of the same weights (written once into the
cache) to read prompts with, and hands the prompt's keys and values to the 4-bit model to write the reply.
On some CPUs an 8-bit copy reads faster still (an Intel Xeon host of this machine kind: 1.15x), on others
slower (an AMD EPYC host: 0.7x); which one reads is measured once per CPU and remembered in the cache.

A fine-tuned LoRA adapter from `finetune` is merged once into both copies of the weights (for a
small model; gguf_lora.py), so it runs as fast as the base, or else converted to llama.cpp's adapter
format and applied on top. One model serves every visitor, one reply at a time (a llama.cpp
context is not shared between threads); each reply reuses the longest prefix of its prompt read
before (the role's system prompt, usually), from states kept in memory per model.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ....errors import EngineError
from ....i18n import _
from ....jsonl import read_object, replace_text
from ..cpu_share import foreground_busy, free_cores, less_for_foreground
from .llama_batch import (
    KV_BUDGET_BYTES,
    SEQ_CONTEXT,
    SLOTS,
    Batcher,
    batches,
    kv_bytes_per_token,
    relays_state,
    shared_prefix,
)
from .llama_cpu import build_name, cpu_name, llama
from .runtime import (
    NEEDS_EXTRA,
    Emit,
    LoadedModel,
    ModelSpec,
    Sampling,
    check_length,
    continuation_tokens,
    file_stamp,
    made_once,
    mean_logprob,
    plain_prompt,
    quantize,
    quiet_native,
    register_runtime,
)

log = logging.getLogger(__name__)
MAX_CONTEXT = 4096  # tokens of context allocated (the prompt budgets use far fewer; 8k would double the memory)
STATE_CACHE_BYTES = 256 << 20  # saved prompt states per model (about 10 MB for a 450-token prompt of SmolLM2)
GGUF_MAGIC = b"GGUF"
# Weight formats llama.cpp multiplies batches of tokens by quickly on a CPU (its tiled matrix kernels);
# for the others a 16-bit copy reads the prompt (measured on SmolLM2-135M, 2 cores: Q4_1 about 200
# prompt tokens/s, F16 about 430, the reply's tokens/s the other way round).
FAST_PREFILL = {0, 1, 2, 7, 32}  # general.file_type: F32, F16, Q4_0, Q8_0, BF16
PREFILL_COPY_MAX_BYTES = 1 << 30  # a 16-bit copy only for small models (1 GB: about 500M parameters)
PREFILL_MIN_TOKENS = 32  # fewer new prompt tokens than this: not worth handing the state over
# tokens the copy multiplies at once: 256 reads a 600-token prompt 7% faster than llama.cpp's default of 512 on
# the 2-core Intel host (1024: 12% slower; bench/RESULTS.md). The reply's model keeps the default, as the
# server does, so that a seeded reply reads its prompt as the server reads it.
PREFILL_UBATCH = 256
# llama.cpp's flash attention, in every context (the reader's and the reply's must agree: the state handed from
# one to the other lays the values out by it). On the Intel host it reads prompts 16-19% faster with the AVX2
# wheel and 6-7% with the AVX-512 kernels, writes replies as fast, and moves next-line scores no further from
# transformers' on the same weights than without it (40 lines of the bundled roles, mean / max nats a token
# apart: wheel 0.016 / 0.065 with it, 0.020 / 0.072 without; bench/RESULTS.md)
FLASH_ATTENTION = True
READER_MARGIN = 1.08  # how much faster than the 16-bit copy another reader must be to be chosen over it
READERS = ("f16", "q8_0")  # the copies that may read prompts, the default first
IDLE_SETTLE_S = 2.0  # a first load measures its readers once the model has been idle this long
MEASURE_TRIES = 5  # quiet spells a measurement interrupted by visitors gets before it waits for the next load
VERDICTS = "prompt-readers.json"  # which of them reads faster, per CPU, beside the copies


class PromptStates:
    """llama.cpp context states (keys and values, about 10 MB for 450 tokens of SmolLM2) of prompts read
    before, keyed by their tokens, least recently used dropped first. A new prompt starts from the one
    sharing the longest prefix with it: usually the same role's system prompt, even after other roles."""

    def __init__(self, capacity_bytes: int = STATE_CACHE_BYTES):
        self.capacity = capacity_bytes
        self._states: OrderedDict[tuple[int, ...], bytes] = OrderedDict()

    def longest(self, tokens: list[int]) -> tuple[int, tuple[int, ...], bytes | None]:
        """(shared length, the saved tokens, their state) of the saved prompt sharing most with `tokens`."""
        best: tuple[int, tuple[int, ...], bytes | None] = (0, (), None)
        for key, state in self._states.items():
            shared = shared_prefix(key, tokens)
            if shared > best[0]:
                best = (shared, key, state)
        if best[2] is not None:
            self._states.move_to_end(best[1])
        return best

    def put(self, tokens: list[int], state: bytes) -> None:
        self._states[tuple(tokens)] = state
        self._states.move_to_end(tuple(tokens))
        while sum(len(v) for v in self._states.values()) > self.capacity and len(self._states) > 1:
            self._states.popitem(last=False)


@dataclass
class LlamaHandle:
    llm: object  # llama_cpp.Llama: writes the reply
    lock: threading.Lock  # one reply at a time on these contexts
    prefill: object | None = None  # a 16-bit copy of the same weights that reads prompts (see above)
    states: PromptStates = field(default_factory=PromptStates)
    fresh: tuple[tuple[int, ...], bytes] | None = None  # the last prompt read afresh for a seeded reply, its state
    threads: int = 0  # how many threads the contexts run now (set per reply: cpu_share.py)
    most: int = 1  # the process's cores: the threads it was opened with
    batch: Batcher | None = None  # visitors' unseeded replies, written together (llama_batch.py)


def use_free_cores(handle: LlamaHandle, seeded: bool = False) -> int:
    """Run the contexts on as many threads as cores are free now: a thread whose core another process holds
    stalls the others at every layer. A seeded reply (eval's, a test's) runs on all of them, whatever else runs:
    the thread count changes the last digits of the sums, and a seed promises the same words on one build.
    Called with the handle's lock held."""
    return set_threads(handle, handle.most if seeded else less_for_foreground(min(handle.most, free_cores())))


def set_threads(handle: LlamaHandle, threads: int) -> int:
    """Run the reply model's and the reader's contexts on `threads` threads (with the handle's lock held)."""
    import llama_cpp

    if threads != handle.threads:
        for model in (handle.llm, handle.prefill):
            if model is not None:
                llama_cpp.llama_set_n_threads(model._ctx.ctx, threads, threads)
        log.info("llama.cpp now runs on %d of %d threads (the other cores are busy)" if threads < handle.most else
                 "llama.cpp now runs on all %d of %d threads", threads, handle.most)
        handle.threads = threads
    return threads


def open_batch(handle: LlamaHandle, context: int) -> Batcher | None:
    """The batch that writes visitors' replies together, on the weights of the copy that reads prompts (shared,
    not copied); None (one reply at a time, as before) where CHATHARUHI_LOCAL_SLOTS or the budget of keys and
    values allows fewer than 2, the model keeps a recurrent state, or the context cannot be made."""
    slots = batch_slots()
    if slots < 2:
        return None

    def read(head: list[int], threads: int):
        set_threads(handle, threads)
        read_head(handle, head)
        return (handle.prefill or handle.llm)._ctx.ctx

    weights = (handle.prefill or handle.llm)._model  # the reader's copy (16- or 8-bit) wrote batches faster
    if not batches(weights):
        log.info("no batch for the local model's replies: it keeps a recurrent state; one at a time")
        return None
    if not relays_state(weights):
        log.info("the local model keeps its keys and values in two caches (sliding-window layers), which the batch "
                 "cannot take over from the reader: the batch reads each prompt itself")
    per_seq = min(context, SEQ_CONTEXT)
    slots = min(slots, KV_BUDGET_BYTES // (per_seq * kv_bytes_per_token(weights)))
    if slots < 2:
        return None
    try:
        return Batcher(weights, read, handle.lock, handle.most, slots=slots, context=per_seq,
                       flash_attn=FLASH_ATTENTION)
    except (ValueError, RuntimeError, EngineError) as exc:
        log.warning("no batch for the local model's replies (%r): one at a time", exc)
        return None


def idle(handle: LlamaHandle) -> bool:
    """Whether the model writes no reply now and no visitor's short work runs in this process."""
    batch = handle.batch
    return not handle.lock.locked() and (batch is None or batch.busy == 0) and not foreground_busy()


def batch_slots() -> int:
    """How many replies the batch writes at once: CHATHARUHI_LOCAL_SLOTS, else llama_batch.SLOTS."""
    try:
        return max(1, int(os.environ.get("CHATHARUHI_LOCAL_SLOTS") or SLOTS))
    except ValueError:
        return SLOTS


def gguf_path(spec: ModelSpec) -> Path:
    """The GGUF file on disk: the folder's file, or the Hub's copy in the local cache."""
    if not spec.on_hub:
        return Path(spec.source) / str(spec.gguf_file)
    from huggingface_hub import hf_hub_download

    from ....config import Settings
    from ....roles.hub import cache_only

    settings = Settings.from_env()
    offline = cache_only(settings)
    try:
        return Path(hf_hub_download(spec.source, str(spec.gguf_file), revision=spec.revision, token=settings.hf_token,
                                    local_files_only=offline,
                                    cache_dir=str(settings.hub_cache) if settings.hub_cache else None))
    except Exception as exc:  # not cached and offline, or not on the Hub
        log.info("GGUF download failed: %r", exc)
        raise EngineError(_("The model {model} is not in the local Hugging Face cache and the Hub cannot be reached. "
                            "Download it once with network, or give a file.",
                            model=spec.source + "/" + str(spec.gguf_file))) from None


def check_gguf(path: Path) -> None:
    """A file that is not a GGUF model is a sentence naming it, not a crash inside llama.cpp."""
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise EngineError(_("Could not read the model file {path} ({why}).", path=path, why=type(exc).__name__)) from None
    if magic != GGUF_MAGIC:
        raise EngineError(_("{path} is not a GGUF model file (it does not start with the GGUF header).", path=path))


def file_type(path: Path) -> int | None:
    """The GGUF's general.file_type, read by llama.cpp from the header (gguf-py's reader parses the whole
    vocabulary in Python: 7 s for SmolLM2's)."""
    llama_cpp = llama()
    with quiet_native():
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        return None
    try:
        value = ctypes.create_string_buffer(64)
        if llama_cpp.llama_model_meta_val_str(model, b"general.file_type", value, 64) < 0:
            return None
        return int(value.value.decode())
    finally:
        llama_cpp.llama_model_free(model)


def prefill_copy(path: Path, cache: Path | None = None) -> Path | None:
    """The 16-bit copy of a small model whose format reads prompts slowly (made once, kept in the cache);
    None when the model's own format is fast enough, the model is too big to copy, or the copy fails."""
    kind = file_type(path)
    if kind is None or kind in FAST_PREFILL:
        return None
    size = path.stat().st_size
    if size * 16 / 5 > PREFILL_COPY_MAX_BYTES:  # 4-5 bits a weight now; 16 in the copy
        return None
    if cache is None:
        from ....config import Settings

        cache = Settings.from_env().cache_dir / "gguf-f16"
    import hashlib

    llama_cpp = llama()
    stamp = hashlib.sha256(file_stamp(path).encode()).hexdigest()[:16]
    out = cache / f"{path.stem}-f16-{stamp}.gguf"
    if out.is_file():
        return out
    try:
        made_once(out, lambda partial: quantize(path, partial, llama_cpp.LLAMA_FTYPE_MOSTLY_F16))
    except (EngineError, OSError) as exc:  # e.g. a read-only or full cache: the model reads its prompts itself
        log.warning("no 16-bit copy of %s for reading prompts (%s)", path, exc)
        return None
    log.info("wrote a 16-bit copy of %s for reading prompts: %s", path.name, out)
    return out


def eight_bit_copy(f16: Path) -> Path | None:
    """The 8-bit twin of a 16-bit copy (made once beside it), the other candidate to read prompts with."""
    llama_cpp = llama()
    out = f16.with_name(f16.name.replace("-f16-", "-q8_0-"))
    try:
        made_once(out, lambda partial: quantize(f16, partial, llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0))
    except (EngineError, OSError) as exc:
        log.warning("no 8-bit copy of %s (%s)", f16, exc)
        return None
    return out


def remembered_reader(f16: Path, threads: int) -> str | None:
    """This CPU's verdict on which copy reads prompts (a name in READERS), or None if it was never measured
    (or the file is damaged: measured again)."""
    entry = read_object(f16.parent / VERDICTS).get(_verdict_key(threads))
    chosen = entry.get("chosen") if isinstance(entry, dict) else None
    return chosen if chosen in READERS else None


def prompt_reader(f16: Path, threads: int, measure: bool = True) -> Path:
    """The copy that reads prompts on this CPU: the 16-bit one, or its 8-bit twin where that was measured
    faster (`reads_faster`, once per CPU; the verdict is kept beside the copies). The twin is made only when
    it is to be measured or used. With `measure` off, a CPU without a verdict reads with the 16-bit copy (the
    default) and is measured later (`measure_when_idle`)."""
    verdicts = f16.parent / VERDICTS
    remembered = remembered_reader(f16, threads)
    if remembered == "f16" or (remembered is None and not measure):
        return f16
    eight = eight_bit_copy(f16)
    if eight is None:
        return f16
    chosen = remembered or reads_faster({"f16": f16, "q8_0": eight}, threads, verdicts)
    return eight if chosen == "q8_0" else f16


def measure_when_idle(f16: Path, threads: int, idle: Callable[[], bool], settle_s: float = IDLE_SETTLE_S,
                      tries: int = MEASURE_TRIES) -> str | None:
    """The reader's measurement that a first load left for later, so that it does not delay a first reply
    (about 2 s on 2 cores: the 8-bit copy and the timing): made once the model has had no reply to write for
    `settle_s`, given up as soon as a visitor's reply starts and tried again at the next quiet spell (at most
    `tries` times). The verdict serves the next load; this process keeps reading with the 16-bit copy, which
    the batch's weights are shared with. Run on a thread that ends with it (on_own_thread's reason), and not a
    daemon: as the process ends (its main thread done), it stops at the next look, and no llama.cpp call of its
    own is cut off by the interpreter's teardown."""
    main = threading.main_thread()
    for _unused in range(tries):
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < settle_s:
            time.sleep(min(0.25, settle_s))
            if not main.is_alive():
                return None
            if not idle():
                quiet_since = time.monotonic()
        eight = eight_bit_copy(f16)
        if eight is None:
            return None
        chosen = reads_faster({"f16": f16, "q8_0": eight}, threads, f16.parent / VERDICTS,
                              stop=lambda: not (main.is_alive() and idle()))
        if chosen is not None:
            return chosen
    return None


def _verdict_key(threads: int) -> str:
    llama_cpp = llama()
    return (f"{cpu_name()} · {threads} threads · llama.cpp {llama_cpp.__version__} · {build_name()} · "
            f"{','.join(READERS)}{' · flash attention' if FLASH_ATTENTION else ''}")


def reads_faster(candidates: dict[str, Path], threads: int, verdicts: Path,
                 stop: Callable[[], bool] = lambda: False) -> str | None:
    """Which of the copies (by format name, the first being the default) reads a prompt fastest on this CPU,
    measured (a 128-token batch, each copy in turn, best of three, about two seconds) and recorded in
    `verdicts` per CPU and thread count; None, with nothing recorded, when `stop` says so between two reads.
    Another format wins only by READER_MARGIN or more, so a measurement disturbed by other work keeps the
    default. The formats' order differs between CPUs of this machine kind: on an AMD EPYC host 16-bit weights
    read 1.5x as fast as 8-bit ones, on an Intel Xeon host 8-bit ones read 1.15x as fast as 16-bit ones
    (bench/RESULTS.md)."""
    import json

    Llama = llama().Llama

    default = next(iter(candidates))
    speeds: dict[str, float] = {}
    try:
        models = {name: Llama(model_path=str(path), n_ctx=512, n_threads=threads, n_threads_batch=threads,
                              n_ubatch=PREFILL_UBATCH, flash_attn=FLASH_ATTENTION, verbose=False)
                  for name, path in candidates.items()}
        batch = list(range(1000, 1128))
        for _unused in range(3):
            for name, llm in models.items():
                if stop():  # a visitor's reply began: its CPU, and a timing it would have disturbed
                    return None
                llm.reset()
                started = time.perf_counter()
                llm.eval(batch)
                speeds[name] = max(speeds.get(name, 0.0), len(batch) / (time.perf_counter() - started))
        del models
    except Exception as exc:  # a copy llama.cpp cannot open: the default, measured again next time
        log.info("could not compare the prompt readers: %r", exc)
        return default
    best = max(speeds, key=speeds.get)
    chosen = best if speeds[best] >= READER_MARGIN * speeds[default] else default
    known, measured = read_object(verdicts), {k: round(v) for k, v in speeds.items()}
    known[_verdict_key(threads)] = {"chosen": chosen, "tokens_per_s": measured}
    try:
        replace_text(verdicts, json.dumps(known, indent=1, ensure_ascii=False))
    except OSError:
        pass  # measured again at the next load
    log.info("prompt reader for %s: %s (%s tokens/s)", cpu_name(), chosen, measured)
    return chosen


def _get_state(llm) -> bytes:
    """The context's keys and values as llama.cpp saves them (not llama-cpp-python's save_state, which also
    copies a float per vocabulary entry per token: 85 MB for a 450-token prompt of SmolLM2)."""
    llama_cpp = llama()
    size = llama_cpp.llama_state_get_size(llm._ctx.ctx)
    buffer = (ctypes.c_uint8 * int(size))()
    written = llama_cpp.llama_state_get_data(llm._ctx.ctx, buffer, size)
    return ctypes.string_at(buffer, int(written))


def _set_state(llm, state: bytes, tokens) -> None:
    """Load a state saved after reading `tokens`; the context then stands right after them."""
    llama_cpp = llama()
    buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
    if llama_cpp.llama_state_set_data(llm._ctx.ctx, buffer, len(state)) != len(state):
        raise EngineError(_("llama.cpp could not restore a saved prompt state."))
    llm.input_ids[:len(tokens)] = tokens
    llm.n_tokens = len(tokens)


def read_prompt(handle: LlamaHandle, tokens: list[int]) -> None:
    """Read all but the prompt's last token, starting from the longest prefix read before (the reader's
    own last prompt, or a saved state), and save the result; with a 16-bit copy, the copy reads and its
    state is handed to the reply's model. The reply's model then reads the last token and writes on."""
    llm = handle.llm
    reader = handle.prefill or llm
    head = tokens[:-1]
    if reader is not llm and len(head) - shared_prefix(llm.input_ids[:llm.n_tokens].tolist(), head) \
            < PREFILL_MIN_TOKENS:
        return  # the reply's model has (nearly) all of it already and reads the rest itself
    state = read_head(handle, head)
    if reader is not llm:
        _set_state(llm, state, head)


def read_head(handle: LlamaHandle, head: list[int]) -> bytes:
    """Read `head` into the reader's context (the 16-bit copy, else the reply's model) from the longest prefix
    read before, save its state among the prompt states and return it; the context then holds `head` alone."""
    reader = handle.prefill or handle.llm
    keep = shared_prefix(reader.input_ids[:reader.n_tokens].tolist(), head)
    shared, saved_tokens, saved = handle.states.longest(head)
    if saved is not None and shared > keep:
        _set_state(reader, saved, list(saved_tokens))
        keep = shared
    reader.n_tokens = keep  # eval drops the keys and values past this point
    if keep < len(head):
        reader.eval(head[keep:])
    else:  # a saved state of a longer prompt: its keys and values past `head` go
        reader._ctx.kv_cache_seq_rm(-1, keep, -1)
    state = _get_state(reader)
    handle.states.put(head, state)
    return state


def read_fresh(handle: LlamaHandle, tokens: list[int]) -> None:
    """Read all but the prompt's last token from its very start, as a seeded reply needs (a reused prefix
    changes how the rest is batched, and so the last digits of the logits, and a sampled reply drifts from
    there). The state of the last such read is kept, so more seeded replies to the same prompt (an eval's
    samples) restore it, bit for bit the same, instead of reading the prompt again."""
    llm = handle.llm
    head = tokens[:-1]
    if handle.fresh is not None and handle.fresh[0] == tuple(head):
        _set_state(llm, handle.fresh[1], head)
        return
    llm.reset()  # the reply's own model reads it (no 16-bit copy), as llama.cpp's server would
    if head:
        llm.eval(head)
    handle.fresh = (tuple(head), _get_state(llm))


def _all_logits(llm, tokens: list[int]):
    """Read `tokens` after the context's current end and return the logits at every one of them
    (llama-cpp-python's own eval keeps only the last row unless the whole context was opened for all)."""
    import numpy as np

    rows = []
    for i in range(0, len(tokens), llm.n_batch):
        batch = tokens[i:i + llm.n_batch]
        n_past = llm.n_tokens
        llm._ctx.kv_cache_seq_rm(-1, n_past, -1)
        llm._batch.set_batch(batch=batch, n_past=n_past, logits_all=True)
        llm._ctx.decode(llm._batch)
        vocab = llm.n_vocab()
        rows.append(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(len(batch) * vocab,))
                    .reshape(len(batch), vocab).copy())
        llm.input_ids[n_past:n_past + len(batch)] = batch
        llm.n_tokens = n_past + len(batch)
    return np.concatenate(rows) if rows else np.zeros((0, llm.n_vocab()))


def ngram_ban(size: int):
    """A logits processor that forbids repeating any `size`-gram already in the text (as transformers'
    no_repeat_ngram_size does): a small model otherwise loops on a phrase."""
    import numpy as np

    def process(input_ids, scores):
        n = len(input_ids)
        if size <= 0 or n < size:
            return scores
        ids = np.asarray(input_ids)
        tail = ids[n - size + 1:]
        windows = np.lib.stride_tricks.sliding_window_view(ids[:-1], size - 1)  # every earlier (size-1)-gram
        hits = np.nonzero((windows == tail).all(axis=1))[0]
        if hits.size:
            scores[ids[hits + size - 1]] = -np.inf
        return scores

    return process


def word_penalty(frequency: float, prompt: int, is_word: Callable[[int], bool]):
    """A logits processor that lowers each word the reply has already said by `frequency` per time said (OpenAI's
    frequency penalty, on the reply's own tokens that hold a letter or a character, not its punctuation): a small
    model that says "洒家" or "太平" a third time in a line is looping, and the n-gram ban does not see a phrase of
    one or two tokens. `prompt`: how many of the ids are the prompt's."""
    import numpy as np

    words: dict[int, bool] = {}

    def process(input_ids, scores):
        said = np.asarray(input_ids[prompt:], dtype=np.int64)
        if frequency <= 0 or said.size == 0:
            return scores
        ids, counts = np.unique(said, return_counts=True)
        keep = np.array([words.setdefault(int(t), is_word(int(t))) for t in ids], dtype=bool)
        scores[ids[keep]] -= frequency * counts[keep]
        return scores

    return process


def reply_guard(sampling: Sampling, prompt: int, is_word: Callable[[int], bool]):
    """The processors every reply is drawn through, alone or in the batch: the n-gram ban, then the word penalty."""
    ban, penalty = ngram_ban(sampling.no_repeat_ngram_size), word_penalty(sampling.frequency_penalty, prompt, is_word)

    def process(input_ids, scores):
        return penalty(input_ids, ban(input_ids, scores))

    return process


def is_word_piece(llm) -> Callable[[int], bool]:
    """Whether a token's text holds a letter or a CJK character (a word, or part of one), not only marks or spaces."""
    def check(token: int) -> bool:
        text = llm.detokenize([token]).decode("utf-8", errors="ignore")
        return any(ch.isalnum() for ch in text)

    return check


def _files(spec: ModelSpec, path: Path, f16: Path | None, threads: int) -> tuple[Path, Path | None, Path | None, bool]:
    """Which files a model opens: (the weights that write replies, a LoRA file applied at load, the copy that reads
    prompts, whether the weights read prompts themselves). On a CPU a wider copy (`f16`, prefill_copy) reads
    prompts faster (prompt_reader: the 16-bit one until this CPU's verdict is measured); an adapter is merged
    into the weights there, else applied at load."""
    copy = prompt_reader(f16, threads, measure=False) if f16 is not None else None
    eight_reads = copy is not None and copy != f16
    weights, lora = path, None
    if spec.adapter:
        from .gguf_lora import lora_for, merged_for

        if f16 is not None:  # small: merged into the weights, as fast as the base
            wide, weights = merged_for(Path(spec.adapter), path, f16, spec.cache_folder("lora-gguf"))
            copy = None if eight_reads else wide  # the 8-bit merged model reads faster itself
        else:
            lora = lora_for(Path(spec.adapter), path, spec.cache_folder("lora-gguf"))
    return weights, lora, copy, copy is None and eight_reads


class LlamaCppRuntime:
    name = "llama.cpp"

    def fits(self, spec: ModelSpec, device: str) -> bool:
        if not spec.gguf_file or importlib.util.find_spec("llama_cpp") is None:
            return False
        if device == "cpu":
            return True
        llama_cpp = llama()
        return bool(llama_cpp.llama_supports_gpu_offload())  # a CPU-only build leaves a GPU to transformers

    def load(self, spec: ModelSpec, device: str) -> LoadedModel:
        started = time.perf_counter()
        path = gguf_path(spec)
        check_gguf(path)
        threads = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
        try:  # the first load in a process picks the build of llama.cpp's CPU kernels (llama_cpu.py)
            Llama = llama(path if device == "cpu" else None, threads).Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError:
            raise EngineError(_(NEEDS_EXTRA)) from None
        f16 = prefill_copy(path, spec.cache_folder("gguf-f16")) if device == "cpu" else None  # to read prompts
        weights, lora, copy, reads_itself = _files(spec, path, f16, threads)

        def open_model(file: Path, **tuned):
            return Llama(model_path=str(file), n_ctx=MAX_CONTEXT, n_threads=threads, n_threads_batch=threads,
                         n_gpu_layers=-1 if device != "cpu" else 0, lora_path=str(lora) if lora else None,
                         flash_attn=FLASH_ATTENTION, verbose=False, **tuned)

        try:
            llm = open_model(weights, **({"n_ubatch": PREFILL_UBATCH} if reads_itself else {}))
        except (ValueError, RuntimeError) as exc:
            log.info("llama.cpp load failed: %r", exc)
            what = _("the adapter {adapter} on {path}", adapter=spec.adapter, path=path) if spec.adapter else str(path)
            raise EngineError(_("llama.cpp could not load {what} ({why}).", what=what, why=exc)) from None
        context = min(int(llm.n_ctx()), int(llm._model.n_ctx_train()) or MAX_CONTEXT)  # less if trained on less
        prefill = None
        if copy is not None:
            try:
                prefill = open_model(copy, n_ubatch=PREFILL_UBATCH)
            except (ValueError, RuntimeError) as exc:  # the reply's model reads the prompt itself
                log.warning("the copy %s that reads prompts did not load (%r)", copy, exc)

        def token_text(token: int) -> str:
            return llm.detokenize([token], special=True).decode("utf-8", errors="ignore") if token >= 0 else ""

        chat_template = llm.metadata.get("tokenizer.chat_template")
        formatter = Jinja2ChatFormatter(chat_template, eos_token=token_text(llm.token_eos()),
                                        bos_token=token_text(llm.token_bos())) if chat_template else None

        def count(text: str) -> int:
            return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

        bos = token_text(llm.token_bos()) if llm.metadata.get("tokenizer.ggml.add_bos_token") == "true" else ""

        def template(messages: list[dict]) -> str:
            return formatter(messages=messages).prompt if formatter else plain_prompt(messages, bos)

        log.info("llama.cpp's CPU kernels: %s; prompts read by %s", build_name(),
                 Path(prefill.model_path).name if prefill is not None else "the model itself")
        handle = LlamaHandle(llm, threading.Lock(), prefill, threads=threads, most=threads)
        if device == "cpu":
            handle.batch = open_batch(handle, context)
        loaded = LoadedModel(spec, self.name, device, context, time.perf_counter() - started, handle, count, template)
        if f16 is not None and remembered_reader(f16, threads) is None:
            loaded.later = threading.Thread(target=measure_when_idle, args=(f16, threads, lambda: idle(handle)),
                                            name="prompt-reader-measure")
            loaded.later.start()
        return loaded

    def generate(self, lm: LoadedModel, messages: list[dict], opening: str, sampling: Sampling,
                 emit: Emit, should_stop: Callable[[], bool]) -> None:
        from llama_cpp import LogitsProcessorList

        handle: LlamaHandle = lm.handle  # type: ignore[assignment]
        llm = handle.llm
        tokens = llm.tokenize((lm.template(messages) + opening).encode("utf-8"), add_bos=False, special=True)
        check_length(len(tokens), lm)
        seed = sampling.seed if sampling.seed is not None else random.randrange(2**31)
        ban = reply_guard(sampling, len(tokens), is_word_piece(llm))
        if handle.batch is not None and sampling.seed is None:  # a visitor's reply: written beside the others'
            handle.batch.reply(tokens, sampling, seed, emit, should_stop, ban)
            return
        with handle.lock:
            if should_stop():  # the visitor left while another reply held the model
                return
            use_free_cores(handle, seeded=sampling.seed is not None)
            (read_fresh if sampling.seed is not None else read_prompt)(handle, tokens)
            pieces = llm.create_completion(
                tokens, max_tokens=sampling.max_tokens, temperature=sampling.temperature, top_p=sampling.top_p,
                top_k=50, min_p=0.0, repeat_penalty=sampling.repetition_penalty, stop=list(sampling.stop),
                stream=True, seed=seed, logits_processor=LogitsProcessorList([ban]))
            try:
                for chunk in pieces:
                    text = chunk["choices"][0]["text"]
                    if text:
                        emit(text)
                    if should_stop():
                        break
            finally:
                pieces.close()


    def warm(self, lm: LoadedModel, messages: list[dict]) -> None:
        """Read `messages`, the start of a prompt to come, into the saved prompt states now (or, for a model whose
        batch reads prompts itself, into a stream the batch keeps); skipped while a reply holds the model. A failure
        here costs only the time it would have saved."""
        handle: LlamaHandle = lm.handle  # type: ignore[assignment]
        try:
            tokens = handle.llm.tokenize(lm.template(messages).encode("utf-8"), add_bos=False, special=True)
            if handle.batch is not None and not handle.batch.relays:  # the batch reads its prompts itself
                if len(tokens) < handle.batch.context:
                    handle.batch.read_ahead(tokens)
                return
            if len(tokens) >= lm.context or not handle.lock.acquire(blocking=False):
                return
            try:
                read_prompt(handle, tokens)  # the template's reply opening at the end is cut off at the next turn
            finally:
                handle.lock.release()
        except Exception as exc:
            log.info("reading a prompt ahead failed: %r", exc)

    def score(self, lm: LoadedModel, messages: list[dict], opening: str, continuations: list[str]) -> list[float]:
        handle: LlamaHandle = lm.handle  # type: ignore[assignment]
        llm = handle.llm
        text = lm.template(messages) + opening
        prompt = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        fulls = [llm.tokenize((text + c).encode("utf-8"), add_bos=False, special=True) for c in continuations]
        check_length(max(len(f) for f in fulls) if fulls else len(prompt), lm)
        out = []
        with handle.lock:
            read_prompt(handle, prompt)  # the prompt's head, read once (and its state kept) for every candidate
            for full in fulls:
                start = continuation_tokens(full, prompt)
                keep = min(start - 1, shared_prefix(llm.input_ids[:llm.n_tokens].tolist(), full))
                llm.n_tokens = keep
                logits = _all_logits(llm, full[keep:])  # row j predicts full[keep + j + 1]
                out.append(mean_logprob(logits[start - 1 - keep:-1], full[start:]))
        return out


LLAMA_CPP = register_runtime(LlamaCppRuntime())
