"""The transformers runtime of the local engine: any model transformers reads (a folder, a Hub id,
a GGUF file dequantised), on the CPU or a GPU, with a LoRA adapter merged in.

It is what `finetune` trains and what runs models llama.cpp cannot (a folder of safetensors, a GPU
where llama.cpp was built for the CPU). On the CPU it is the slower path: it dequantises a GGUF to
float32, so every token reads four times the bytes llama.cpp reads (bench/RESULTS.md).
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ....errors import EngineError
from ....i18n import _
from .runtime import (
    NEEDS_EXTRA,
    LoadedModel,
    check_length,
    continuation_tokens,
    mean_logprob,
    plain_prompt,
    register_runtime,
)

if TYPE_CHECKING:
    from .runtime import Emit, ModelSpec, Sampling

log = logging.getLogger(__name__)
PREFIX_CACHE_SIZE = 16  # system prompts whose attention cache is kept (about 15 MB each for SmolLM2)


@dataclass
class HFModel:
    tokenizer: object
    model: object


def _hub_kwargs(spec: ModelSpec) -> dict:
    """Revision, token and offline mode for a Hub model; the cache alone when the Hub is unreachable."""
    if not spec.on_hub:
        return {}
    from ....config import Settings
    from ....roles.hub import cache_only

    settings = Settings.from_env()
    offline = cache_only(settings)
    kwargs = {"revision": spec.revision, "token": settings.hf_token, "local_files_only": offline}
    if settings.hub_cache:
        kwargs["cache_dir"] = str(settings.hub_cache)
    return kwargs


def read_model(spec: ModelSpec, dtype=None):
    """A fresh tokenizer and model (the adapter merged in), not shared: `finetune` trains this one."""
    try:
        import torch  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise EngineError(_(NEEDS_EXTRA)) from None
    kwargs = {"gguf_file": spec.gguf_file} if spec.gguf_file else {}
    kwargs.update(_hub_kwargs(spec))
    try:
        tokenizer = AutoTokenizer.from_pretrained(spec.source, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(spec.source, **kwargs, **({"dtype": dtype} if dtype else {}))
    except ImportError as exc:  # gguf or accelerate missing
        raise EngineError(f"{_(NEEDS_EXTRA)} ({exc})") from None
    except OSError as exc:
        log.info("local model load failed: %s", exc)
        if spec.on_hub:
            raise EngineError(_("The model {model} is not in the local Hugging Face cache and the Hub cannot be "
                                "reached. Download it once with network, or give a folder.", model=spec.source)) from None
        raise EngineError(_("Could not read a model from {model}: {why}.", model=spec.source,
                            why=type(exc).__name__)) from None
    except Exception as exc:
        log.exception("local model load failed")
        raise EngineError(_("Could not load the model {model} ({why}).", model=spec.label or spec.source,
                            why=type(exc).__name__)) \
            from None
    if spec.adapter:
        tokenizer, model = _apply_adapter(spec.adapter, tokenizer, model)
    return tokenizer, model


def _apply_adapter(folder: str, tokenizer, model):
    """The adapter merged into a private copy of the base, so inference costs what the base costs."""
    if folder.lower().endswith(".gguf"):
        return tokenizer, _merge_gguf_adapter(Path(folder), model)
    try:
        from peft import PeftModel
    except ImportError:
        raise EngineError(_("{needs} (peft is needed for the adapter in {folder})", needs=_(NEEDS_EXTRA),
                            folder=folder)) from None
    try:
        model = PeftModel.from_pretrained(model, folder).merge_and_unload()
    except Exception as exc:  # a damaged or mismatched adapter
        log.info("adapter load failed: %r", exc)
        raise EngineError(_("The adapter in {folder} does not fit its base model ({why}).", folder=folder,
                            why=type(exc).__name__)) from None
    if (Path(folder) / "tokenizer_config.json").is_file():
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder)
    return tokenizer, model


def _merge_gguf_adapter(path: Path, model):
    """A llama.cpp adapter file (what the project ships) added into the transformers model's weights: its matrices
    are named as llama.cpp names them, and B's rows are in transformers' order for every architecture but llama's,
    whose q/k rows llama.cpp interleaves (gguf_lora.py)."""
    import torch

    from .gguf_lora import PROJECTIONS, ROTARY_INTERLEAVED, _read_gguf_adapter

    rank, alpha, pairs = _read_gguf_adapter(path)
    if getattr(model.config, "model_type", "") in ROTARY_INTERLEAVED:
        raise EngineError(_("The adapter file {adapter} is for llama.cpp alone on this architecture: run it with "
                            "llama.cpp (`bash scripts/setup.sh local`).", adapter=path))
    by_name = {f"blk.{i}.{short}.weight": (i, long) for i in range(model.config.num_hidden_layers)
               for long, short in PROJECTIONS.items()}
    layers = model.model.layers if hasattr(model, "model") and hasattr(model.model, "layers") \
        else model.get_decoder().layers
    with torch.no_grad():
        for target, pair in pairs.items():
            if target not in by_name:
                raise EngineError(_("The adapter in {adapter} was trained for another base model than {base} ({target} "
                                    "does not fit).", adapter=path, base=model.config.model_type, target=target))
            index, long = by_name[target]
            module = layers[index].get_submodule(long)
            a, b = (torch.from_numpy(pair[k]) for k in ("lora_A", "lora_B"))
            if tuple(module.weight.shape) != (b.shape[0], a.shape[1]):
                raise EngineError(_("The adapter in {adapter} was trained for another base model than {base} ({target} "
                                    "does not fit).", adapter=path, base=model.config.model_type, target=target))
            delta = (alpha / rank) * (b @ a)
            module.weight += delta.to(device=module.weight.device, dtype=module.weight.dtype)
    return model


class PrefixCache:
    """The attention cache of each system prompt, computed once and copied for every reply.

    Every turn with a role starts with the same system prompt; reusing its keys and values skips
    a third to a half of the prompt on a small CPU model. Entries are read-only once made (each
    reply works on a deep copy), so visitors never see one another's state.
    """

    enabled = True  # the bench turns it off to measure what it saves

    def __init__(self, size: int = PREFIX_CACHE_SIZE):
        self.size = size
        self._entries: OrderedDict[tuple, tuple[object, object]] = OrderedDict()
        self._lock = threading.Lock()

    def for_prompt(self, lm: LoadedModel, prefix: str, input_ids) -> object | None:
        """A private copy of the cache for `prefix`, or None when the prompt's tokens do not start with it."""
        import torch

        if not self.enabled:
            return None
        key = (lm.spec, prefix)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        if entry is None:
            ids = lm.tokenizer(prefix, return_tensors="pt", add_special_tokens=False)["input_ids"].to(lm.device)
            from transformers import DynamicCache

            cache = DynamicCache(config=lm.model.config)
            with torch.inference_mode():
                lm.model(input_ids=ids, past_key_values=cache, use_cache=True)
            entry = (ids, cache)
            with self._lock:
                self._entries[key] = entry
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
        ids, cache = entry
        n = int(ids.shape[1])
        if n >= int(input_ids.shape[1]) or not torch.equal(input_ids[0, :n], ids[0]):
            return None
        return copy.deepcopy(cache)


class TransformersRuntime:
    name = "transformers"

    def __init__(self) -> None:
        self.prefixes = PrefixCache()  # shared read-only work, like the models themselves

    def fits(self, spec: ModelSpec, device: str) -> bool:
        import importlib.util

        return importlib.util.find_spec("transformers") is not None and importlib.util.find_spec("torch") is not None

    def load(self, spec: ModelSpec, device: str) -> LoadedModel:
        started = time.perf_counter()
        tokenizer, model = read_model(spec)
        model.to(device)
        model.eval()
        context = int(getattr(model.config, "max_position_embeddings", 0) or 2048)

        def count(text: str) -> int:
            return len(tokenizer.encode(text, add_special_tokens=False))

        def template(messages: list[dict]) -> str:
            if getattr(tokenizer, "chat_template", None):
                return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            return plain_prompt(messages, tokenizer.bos_token if getattr(tokenizer, "add_bos_token", False) else "")

        return LoadedModel(spec, self.name, device, context, time.perf_counter() - started,
                           HFModel(tokenizer, model), count, template)

    def inputs(self, lm: LoadedModel, messages: list[dict], opening: str):
        """The prompt's tensors, and a private copy of the system prompt's cache when there is one."""
        tok = lm.tokenizer
        text = lm.template(messages)
        enc = tok(text + opening, return_tensors="pt", add_special_tokens=False)
        check_length(int(enc["input_ids"].shape[1]), lm)
        enc = enc.to(lm.device)
        cache = None
        if getattr(tok, "chat_template", None) and messages and messages[0]["role"] == "system":
            prefix = tok.apply_chat_template(messages[:1], tokenize=False)
            if text.startswith(prefix):
                cache = self.prefixes.for_prompt(lm, prefix, enc["input_ids"])
        return enc, cache

    def generate(self, lm: LoadedModel, messages: list[dict], opening: str, sampling: Sampling,
                 emit: Emit, should_stop: Callable[[], bool]) -> None:
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList, TextStreamer, set_seed

        inputs, cache = self.inputs(lm, messages, opening)

        class _Emit(TextStreamer):  # whole words and whole characters, as they are finished
            def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
                if text:
                    emit(text)

        class _StopWhenAsked(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                return should_stop()

        pad = lm.tokenizer.pad_token_id
        if pad is None:
            pad = lm.tokenizer.eos_token_id
        generation = dict(
            **inputs, streamer=_Emit(lm.tokenizer, skip_prompt=True, skip_special_tokens=True),
            max_new_tokens=sampling.max_tokens, repetition_penalty=sampling.repetition_penalty,
            no_repeat_ngram_size=sampling.no_repeat_ngram_size,
            stopping_criteria=StoppingCriteriaList([_StopWhenAsked()]), pad_token_id=pad,
        )
        if sampling.temperature > 0:  # 0: greedy, as llama.cpp reads it (transformers refuses a temperature of 0)
            generation.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p)
        else:
            generation.update(do_sample=False, temperature=None, top_p=None)
        if cache is not None:
            generation["past_key_values"] = cache
        if sampling.stop:
            generation.update(stop_strings=list(sampling.stop), tokenizer=lm.tokenizer)
        if sampling.frequency_penalty > 0:
            generation["logits_processor"] = [_WordPenalty(sampling.frequency_penalty, int(inputs["input_ids"].shape[1]),
                                                           lm.tokenizer)]
        if sampling.seed is not None:
            set_seed(sampling.seed)
        with torch.inference_mode():
            lm.model.generate(**generation)


    def score(self, lm: LoadedModel, messages: list[dict], opening: str, continuations: list[str]) -> list[float]:
        import torch

        tok = lm.tokenizer
        text = lm.template(messages) + opening
        prompt = tok.encode(text, add_special_tokens=False)
        out = []
        for c in continuations:
            full = tok.encode(text + c, add_special_tokens=False)
            check_length(len(full), lm)
            start = continuation_tokens(full, prompt)
            with torch.inference_mode():
                logits = lm.model(input_ids=torch.tensor([full], device=lm.device)).logits[0]
            out.append(mean_logprob(logits[start - 1:-1].float().cpu().numpy(), full[start:]))
        return out


class _WordPenalty:
    """llama.cpp's word penalty (llamacpp.word_penalty) as a transformers logits processor: each word the reply has
    said loses `frequency` per time said, its punctuation left alone."""

    def __init__(self, frequency: float, prompt: int, tokenizer):
        self.frequency, self.prompt, self.tokenizer = frequency, prompt, tokenizer
        self.words: dict[int, bool] = {}

    def __call__(self, input_ids, scores):
        import torch

        for row in range(input_ids.shape[0]):
            ids, counts = torch.unique(input_ids[row, self.prompt:], return_counts=True)
            for token, count in zip(ids.tolist(), counts.tolist()):
                if self.words.setdefault(token, any(ch.isalnum() for ch in self.tokenizer.decode([token]))):
                    scores[row, token] -= self.frequency * count
        return scores


TRANSFORMERS = register_runtime(TransformersRuntime())
