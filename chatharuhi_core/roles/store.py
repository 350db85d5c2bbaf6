"""The story store: a Chroma collection of a role's scenes, built from stories.jsonl.

The texts are the source of truth; a collection is a cache. It is reused only when its manifest
(kept as collection metadata) names the same embedder, dimension and stories hash, and it is
rebuilt when missing, stale or unreadable. Embedded PersistentClient by default; a Chroma
server when Settings.chroma_host is set.
"""

from __future__ import annotations

import logging
import re
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings
from ..embedding import Embedder, embedding_column
from ..errors import ChatHaruhiError
from ..i18n import _
from .role import Role

log = logging.getLogger(__name__)

MANIFEST_VERSION = 1
ADD_BATCH = 512
EMBED_BATCH = 256


@dataclass(frozen=True)
class Hit:
    """A scene found for a query, with its cosine similarity."""

    id: str
    text: str
    similarity: float


def _chroma_settings():
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False, allow_reset=False)


def collection_name(role_id: str, embedder_name: str) -> str:
    """Chroma wants 3-512 chars of [a-zA-Z0-9._-], starting and ending alphanumeric."""
    raw = f"chatharuhi-{role_id}-{embedder_name}"
    name = re.sub(r"[^A-Za-z0-9._-]", "-", raw).strip("-._")[:500]
    return name if len(name) >= 3 else f"{name}xxx"


def manifest_for(role: Role, embedder: Embedder) -> dict[str, Any]:
    import chromadb

    return {
        "chatharuhi_manifest": MANIFEST_VERSION,
        "embedder": embedder.name,
        "dim": embedder.dim,
        "stories_sha256": role.stories_sha256,
        "count": len(role.stories),
        "chromadb": chromadb.__version__,
    }


def manifest_matches(found: dict[str, Any] | None, wanted: dict[str, Any]) -> bool:
    """Same embedder, dimension, texts and count; the chromadb version may differ."""
    if not found:
        return False
    keys = ("chatharuhi_manifest", "embedder", "dim", "stories_sha256", "count")
    return all(found.get(k) == wanted[k] for k in keys)


class StoryStore:
    """Search a role's scenes by meaning. Read-only after build; safe to share across threads."""

    def __init__(self, collection, embedder: Embedder, size: int, where: str):
        self._collection = collection
        self.embedder = embedder
        self.size = size
        self.where = where

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_vector(self.embedder.embed([query])[0], k)

    def search_vector(self, vector: np.ndarray, k: int) -> list[Hit]:
        k = max(0, min(k, self.size))
        if k == 0:
            return []
        res = self._collection.query(
            query_embeddings=[np.asarray(vector, dtype=np.float32).tolist()],
            n_results=k,
            include=["documents", "distances"],
        )
        ids, docs, dists = res["ids"][0], res["documents"][0], res["distances"][0]
        return [Hit(id=i, text=d, similarity=1.0 - float(x)) for i, d, x in zip(ids, docs, dists)]


Progress = Callable[[int, int], None]  # (done, total) while scenes are embedded


def stored_vectors(role: Role, embedder: Embedder) -> np.ndarray | None:
    """Vectors that came with the role for this very embedder, if any."""
    vectors = role.embeddings.get(embedding_column(embedder))
    return None if vectors is None else np.asarray(vectors, dtype=np.float32)


def embed_stories(role: Role, embedder: Embedder, progress: Progress | None = None) -> np.ndarray:
    texts = [s.text for s in role.stories]
    parts = []
    if progress:
        progress(0, len(texts))
    for i in range(0, len(texts), EMBED_BATCH):
        parts.append(embedder.embed(texts[i : i + EMBED_BATCH]))
        if progress:
            progress(min(i + EMBED_BATCH, len(texts)), len(texts))
    return np.concatenate(parts, axis=0) if parts else np.zeros((0, embedder.dim), dtype=np.float32)


def _fill(collection, role: Role, embedder: Embedder, vectors: np.ndarray | None = None,
          progress: Progress | None = None) -> None:
    texts = [s.text for s in role.stories]
    if vectors is None:
        vectors = stored_vectors(role, embedder)
    if vectors is None:
        vectors = embed_stories(role, embedder, progress)
    if vectors.shape != (len(texts), embedder.dim):
        raise ChatHaruhiError(
            _("The embeddings for role '{role}' have shape {shape}, expected ({rows}, {dim}).", role=role.id,
              shape=vectors.shape, rows=len(texts), dim=embedder.dim)
        )
    for i in range(0, len(texts), ADD_BATCH):
        collection.add(
            ids=[s.id for s in role.stories[i : i + ADD_BATCH]],
            documents=texts[i : i + ADD_BATCH],
            embeddings=vectors[i : i + ADD_BATCH].tolist(),
        )


def _open_collection(client, role: Role, embedder: Embedder, vectors: np.ndarray | None,
                     progress: Progress | None = None):
    """Return (collection, rebuilt?) for a client, rebuilding a stale collection."""
    name = collection_name(role.id, embedder.name)
    wanted = manifest_for(role, embedder)
    existing = {c.name if hasattr(c, "name") else c for c in client.list_collections()}
    if name in existing:
        col = client.get_collection(name, embedding_function=None)
        if manifest_matches(col.metadata, wanted) and col.count() == len(role.stories):
            return col, False
        log.info("store for %s is stale; rebuilding", role.id)
        client.delete_collection(name)
    col = client.create_collection(
        name,
        embedding_function=None,
        metadata=wanted,
        configuration={"hnsw": {"space": "cosine"}},
    )
    _fill(col, role, embedder, vectors, progress)
    return col, True


def _probe(col, embedder: Embedder) -> None:
    """A query that touches the index, so a damaged store fails here and not mid-turn."""
    col.query(query_embeddings=[[0.0] * (embedder.dim - 1) + [1.0]], n_results=1, include=[])


def _persistent_dir(settings: Settings, role: Role, embedder: Embedder) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", role.id)
    return settings.cache_dir / "stores" / safe / embedder.name


def _copy_prebuilt(role: Role, embedder: Embedder, target: Path) -> bool:
    """Copy a package's store/ into the cache when its manifest matches; else ignore it."""
    import json

    src = role.store_dir
    if src is None or target.exists():
        return False
    try:
        manifest = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not manifest_matches(manifest, manifest_for(role, embedder)):
        log.info("prebuilt store of %s does not match; building from text", role.id)
        return False
    shutil.copytree(src, target, ignore=shutil.ignore_patterns("manifest.json"))
    return True


def _sqlite_ok(path: Path) -> bool:
    """Cheap check before Chroma opens the file: a damaged database must not poison its cache."""
    import sqlite3

    db = path / "chroma.sqlite3"
    if not db.exists():
        return True
    try:
        with db.open("rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                return False
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return con.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        finally:
            con.close()
    except (OSError, sqlite3.Error):
        return False


def _forget_client(path: Path) -> None:
    """Drop Chroma's per-path system cache so a rebuilt folder is opened afresh.

    chromadb keeps one System per persist directory for the process; after a failed open it
    stays broken. There is no public call for this, so the private map is used with care.
    """
    try:
        from chromadb.api.shared_system_client import SharedSystemClient

        system = SharedSystemClient._identifier_to_system.pop(str(path), None)
        SharedSystemClient._identifier_to_refcount.pop(str(path), None)
        if system is not None:
            system.stop()
    except Exception:  # best effort: a later open reports its own error
        pass


def open_persistent(path: Path, role: Role, embedder: Embedder, vectors: np.ndarray | None = None,
                    progress: Progress | None = None) -> tuple[StoryStore, bool]:
    """Open (or build) the store at path; a broken one is wiped and rebuilt once."""
    import chromadb

    for attempt in (1, 2):
        client = None
        try:
            if not _sqlite_ok(path):
                raise ValueError("the database file is damaged")
            path.mkdir(parents=True, exist_ok=True)
            client = chromadb.PersistentClient(path=str(path), settings=_chroma_settings())
            col, rebuilt = _open_collection(client, role, embedder, vectors, progress)
            _probe(col, embedder)
            return StoryStore(col, embedder, len(role.stories), str(path)), rebuilt
        except ChatHaruhiError:
            raise
        except Exception as exc:  # chromadb raises many kinds on a damaged database
            if attempt == 2:
                raise ChatHaruhiError(
                    _("The story store for '{name}' could not be built in {path}: {why}", name=role.name, path=path,
                      why=exc)
                ) from exc
            log.warning("story store at %s is unreadable (%s); rebuilding", path, exc)
            if client is not None:
                try:
                    client.close()
                except Exception:
                    pass
            _forget_client(path)
            shutil.rmtree(path, ignore_errors=True)
    raise AssertionError("unreachable")


def open_remote(settings: Settings, role: Role, embedder: Embedder, vectors: np.ndarray | None = None,
                progress: Progress | None = None) -> tuple[StoryStore, bool]:
    import chromadb

    try:
        client = chromadb.HttpClient(
            host=settings.chroma_host, port=settings.chroma_port, settings=_chroma_settings()
        )
        col, rebuilt = _open_collection(client, role, embedder, vectors, progress)
    except ChatHaruhiError:
        raise
    except Exception as exc:
        raise ChatHaruhiError(
            _("Could not use the Chroma server at {host}:{port} ({why}). Check CHROMA_HOST and CHROMA_PORT.",
              host=settings.chroma_host, port=settings.chroma_port, why=type(exc).__name__)
        ) from exc
    where = f"http://{settings.chroma_host}:{settings.chroma_port}"
    return StoryStore(col, embedder, len(role.stories), where), rebuilt


_CACHE: dict[tuple, StoryStore] = {}
_CACHE_LOCK = threading.Lock()
_BUILD_LOCKS: dict[tuple, threading.Lock] = {}


def open_store(role: Role, embedder: Embedder, settings: Settings,
               vectors: np.ndarray | None = None, progress: Progress | None = None) -> StoryStore:
    """The shared store for (role texts, embedder, location), opened or built once per process."""
    where = (settings.chroma_host, settings.chroma_port) if settings.chroma_host else str(settings.cache_dir)
    key = (role.id, role.stories_sha256, embedder.name, where)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
        lock = _BUILD_LOCKS.setdefault(key, threading.Lock())
    with lock:  # one build per key; other keys proceed in parallel
        with _CACHE_LOCK:
            if key in _CACHE:
                return _CACHE[key]
        if settings.chroma_host:
            store, _rebuilt = open_remote(settings, role, embedder, vectors, progress)
        else:
            path = _persistent_dir(settings, role, embedder)
            _copy_prebuilt(role, embedder, path)
            store, _rebuilt = open_persistent(path, role, embedder, vectors, progress)
        with _CACHE_LOCK:
            # another version of the same role (edited, re-imported) shares the collection's name, so this
            # open replaced it: that version's cached store points at a deleted collection and must reopen
            for other in [k for k in _CACHE if (k[0], k[2], k[3]) == (key[0], key[2], key[3]) and k != key]:
                del _CACHE[other]
            _CACHE[key] = store
        return store


def write_prebuilt(role: Role, embedder: Embedder, target: Path, progress: Progress | None = None) -> Path:
    """Build a store into a package's store/ folder with its manifest (for shipping)."""
    import json

    if target.exists():
        shutil.rmtree(target)
    store, _rebuilt = open_persistent(target, role, embedder, progress=progress)
    del store
    (target / "manifest.json").write_text(
        json.dumps(manifest_for(role, embedder), indent=2) + "\n", encoding="utf-8"
    )
    return target


def story_texts(hits: Sequence[Hit]) -> list[str]:
    return [h.text for h in hits]
