"""The llama.cpp runtime of the local engine: a GGUF file run in this process by llama-cpp-python.

It reads the quantised weights as they are (the bundled SmolLM2 is 4-bit), so on a CPU a token costs
a quarter of the bytes transformers reads after dequantising: about five times the decode speed
(bench/RESULTS.md). A fine-tuned LoRA adapter from `finetune` is converted once to llama.cpp's
adapter format (gguf_lora.py) and applied on top. One model serves every visitor, one reply at a
time (a llama.cpp context is not shared between threads); each reply reuses the longest cached
prefix of its prompt (the role's system prompt, usually), kept in memory per model.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...errors import EngineError
from .local_runtime import (
    NEEDS_EXTRA,
    Emit,
    LoadedModel,
    ModelSpec,
    Sampling,
    check_length,
    plain_prompt,
    register_runtime,
)

log = logging.getLogger(__name__)
MAX_CONTEXT = 4096  # tokens of context allocated (the prompt budgets use far fewer; 8k would double the memory)
STATE_CACHE_BYTES = 256 << 20  # saved prompt states per model (about 10 MB for a 450-token prompt of SmolLM2)
GGUF_MAGIC = b"GGUF"


@dataclass
class LlamaHandle:
    llm: object  # llama_cpp.Llama
    lock: threading.Lock  # one reply at a time on this context


def gguf_path(spec: ModelSpec) -> Path:
    """The GGUF file on disk: the folder's file, or the Hub's copy in the local cache."""
    if not spec.on_hub:
        return Path(spec.source) / str(spec.gguf_file)
    from huggingface_hub import hf_hub_download

    from ...config import Settings
    from ...roles.hub import hub_reachable

    settings = Settings.from_env()
    offline = settings.hub_offline or not hub_reachable(settings)
    try:
        return Path(hf_hub_download(spec.source, str(spec.gguf_file), revision=spec.revision, token=settings.hf_token,
                                    local_files_only=offline,
                                    cache_dir=str(settings.hub_cache) if settings.hub_cache else None))
    except Exception as exc:  # not cached and offline, or not on the Hub
        log.info("GGUF download failed: %r", exc)
        raise EngineError(f"The model {spec.source}/{spec.gguf_file} is not in the local Hugging Face cache and the "
                           "Hub cannot be reached. Download it once with network, or give a file.") from None


def check_gguf(path: Path) -> None:
    """A file that is not a GGUF model is a sentence naming it, not a crash inside llama.cpp."""
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise EngineError(f"Could not read the model file {path} ({type(exc).__name__}).") from None
    if magic != GGUF_MAGIC:
        raise EngineError(f"{path} is not a GGUF model file (it does not start with the GGUF header).")


def _trained_context(path: Path) -> int:
    """The context length the model was trained on, from the file's header (MAX_CONTEXT when it says none)."""
    from gguf import GGUFReader

    fields = GGUFReader(str(path)).fields
    arch = fields.get("general.architecture")
    length = fields.get(f"{arch.contents()}.context_length") if arch else None
    return int(length.contents()) if length else MAX_CONTEXT


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


class LlamaCppRuntime:
    name = "llama.cpp"

    def fits(self, spec: ModelSpec, device: str) -> bool:
        if not spec.gguf_file or importlib.util.find_spec("llama_cpp") is None:
            return False
        if device == "cpu":
            return True
        import llama_cpp

        return bool(llama_cpp.llama_supports_gpu_offload())  # a CPU-only build leaves a GPU to transformers

    def load(self, spec: ModelSpec, device: str) -> LoadedModel:
        try:
            from llama_cpp import Llama, LlamaRAMCache
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError:
            raise EngineError(NEEDS_EXTRA) from None
        started = time.perf_counter()
        path = gguf_path(spec)
        check_gguf(path)
        lora = None
        if spec.adapter:
            from .gguf_lora import lora_for

            lora = lora_for(Path(spec.adapter), path)
        threads = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
        try:
            llm = Llama(model_path=str(path), n_ctx=min(MAX_CONTEXT, _trained_context(path)), n_threads=threads,
                        n_threads_batch=threads, n_gpu_layers=-1 if device != "cpu" else 0,
                        lora_path=str(lora) if lora else None, verbose=False)
        except (ValueError, RuntimeError) as exc:
            log.info("llama.cpp load failed: %r", exc)
            what = f"the adapter {spec.adapter} on {path}" if lora else str(path)
            raise EngineError(f"llama.cpp could not load {what} ({exc}).") from None
        context = int(llm.n_ctx())  # MAX_CONTEXT, or less when the model was trained on less
        llm.set_cache(LlamaRAMCache(capacity_bytes=STATE_CACHE_BYTES))

        def token_text(token: int) -> str:
            return llm.detokenize([token], special=True).decode("utf-8", errors="ignore") if token >= 0 else ""

        chat_template = llm.metadata.get("tokenizer.chat_template")
        formatter = Jinja2ChatFormatter(chat_template, eos_token=token_text(llm.token_eos()),
                                        bos_token=token_text(llm.token_bos())) if chat_template else None

        def count(text: str) -> int:
            return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

        def template(messages: list[dict]) -> str:
            return formatter(messages=messages).prompt if formatter else plain_prompt(messages)

        return LoadedModel(spec, self.name, device, context, time.perf_counter() - started,
                           LlamaHandle(llm, threading.Lock()), count, template)

    def generate(self, lm: LoadedModel, messages: list[dict], opening: str, sampling: Sampling,
                 emit: Emit, should_stop: Callable[[], bool]) -> None:
        from llama_cpp import LogitsProcessorList

        handle: LlamaHandle = lm.handle  # type: ignore[assignment]
        llm = handle.llm
        tokens = llm.tokenize((lm.template(messages) + opening).encode("utf-8"), add_bos=False, special=True)
        check_length(len(tokens), lm)
        seed = sampling.seed if sampling.seed is not None else random.randrange(2**31)
        with handle.lock:
            if should_stop():  # the visitor left while another reply held the model
                return
            states = llm.cache
            if sampling.seed is not None:
                # a reproducible reply reads its whole prompt afresh: a reused prefix changes how the rest is
                # batched, and so the last digits of the logits, and a sampled reply drifts from there
                llm.set_cache(None)
                llm.reset()
            pieces = llm.create_completion(
                tokens, max_tokens=sampling.max_tokens, temperature=sampling.temperature, top_p=sampling.top_p,
                top_k=50, min_p=0.0, repeat_penalty=sampling.repetition_penalty, stop=list(sampling.stop),
                stream=True, seed=seed, logits_processor=LogitsProcessorList([ngram_ban(sampling.no_repeat_ngram_size)]))
            try:
                for chunk in pieces:
                    text = chunk["choices"][0]["text"]
                    if text:
                        emit(text)
                    if should_stop():
                        break
            finally:
                pieces.close()
                llm.set_cache(states)


LLAMA_CPP = register_runtime(LlamaCppRuntime())
