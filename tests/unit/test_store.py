"""Real Chroma and the real USE embedder: build, reuse, rebuild when stale or damaged."""

import dataclasses
import json
import shutil

import numpy as np
import pytest

from chatharuhi_core.config import Settings
from chatharuhi_core.roles.role import Story, load_role_package, write_role_package
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.roles.store import _persistent_dir, manifest_for, open_persistent, open_store, write_prebuilt


class OtherEmbedder:
    """Same model, another name and dimension: a store built with USE must not be reused."""

    def __init__(self, base):
        self.base = base
        self.name = "use-truncated-256"
        self.dim = 256

    def embed(self, texts):
        v = self.base.embed(texts)[:, :256]
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_search_finds_the_scene_in_both_languages(settings, embedder):
    wukong = open_store(load_role("sunwukong"), embedder, settings)
    top = wukong.search("金箍棒多重", 3)
    assert "一万三千五百斤" in top[0].text
    assert top[0].similarity >= top[1].similarity
    holmes = open_store(load_role("sherlock"), embedder, settings)
    assert "Moriarty" in holmes.search("Who is the most dangerous man you ever faced?", 1)[0].text
    assert len(holmes.search("violin", 100)) == len(load_role("sherlock").stories)


def test_reused_then_rebuilt_when_stale(tmp_path, embedder):
    role = load_role("sherlock")
    path = tmp_path / "store"
    _, rebuilt = open_persistent(path, role, embedder)
    assert rebuilt
    _, rebuilt = open_persistent(path, role, embedder)
    assert not rebuilt  # same texts, same embedder: reused
    new = Story("new", "Watson:「Hi」\nSherlock Holmes:「Hello.」")
    changed = dataclasses.replace(role, stories=role.stories[:-1] + [new])
    store, rebuilt = open_persistent(path, changed, embedder)
    assert rebuilt and "Hello." in store.search("hello holmes", 1)[0].text


def test_an_edited_role_and_its_earlier_version_both_keep_searching(tmp_path, embedder):
    """Two versions of one role (edited, re-imported) share the store's name: opening one rebuilds it, so
    the other's open store must not be handed out again pointing at a deleted collection."""
    settings = Settings.from_env({"CHATHARUHI_CACHE": str(tmp_path)})
    role = load_role("sherlock")
    new = Story("new", "Watson:「Hi」\nSherlock Holmes:「Hello.」")
    edited = dataclasses.replace(role, stories=role.stories[:-1] + [new])
    for version in (role, edited, role, edited):
        assert open_store(version, embedder, settings).search("violin", 1)


def test_other_embedder_never_reuses(tmp_path, embedder):
    role = load_role("sherlock")
    path = tmp_path / "store"
    open_persistent(path, role, embedder)
    other = OtherEmbedder(embedder)
    store, rebuilt = open_persistent(path, role, other)
    assert rebuilt and store.embedder.dim == 256
    assert manifest_for(role, other)["dim"] == 256


def test_damaged_store_is_rebuilt(tmp_path, embedder):
    role = load_role("sunwukong")
    settings = Settings.from_env({"CHATHARUHI_CACHE": str(tmp_path / "cache")})
    path = _persistent_dir(settings, role, embedder)
    path.mkdir(parents=True)
    (path / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    store = open_store(role, embedder, settings)
    assert "一万三千五百斤" in store.search("金箍棒多重", 1)[0].text


def test_prebuilt_store_in_package_is_reused_only_when_it_matches(tmp_path, embedder):
    pkg = write_role_package(load_role("sherlock"), tmp_path / "pkg")
    role = load_role_package(pkg)
    write_prebuilt(role, embedder, pkg / "store")
    manifest = json.loads((pkg / "store" / "manifest.json").read_text())
    assert manifest["embedder"] == embedder.name and manifest["dim"] == embedder.dim
    assert manifest["stories_sha256"] == role.stories_sha256
    role = load_role_package(pkg)
    settings = Settings.from_env({"CHATHARUHI_CACHE": str(tmp_path / "cache")})
    store = open_store(role, embedder, settings)
    assert (tmp_path / "cache" / "stores" / "sherlock" / embedder.name / "chroma.sqlite3").is_file()
    assert store.search("violin at night", 1)[0].text.count("violin") >= 1

    # the same store shipped with edited texts is ignored and rebuilt from the texts
    shutil.rmtree(tmp_path / "cache")
    lines = (pkg / "stories.jsonl").read_text(encoding="utf-8").splitlines()
    (pkg / "stories.jsonl").write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    role = load_role_package(pkg)
    settings = Settings.from_env({"CHATHARUHI_CACHE": str(tmp_path / "cache2")})
    store = open_store(role, embedder, settings)
    assert store.size == 10 and len(store.search("anything", 50)) == 10


def test_wrong_vector_shape_is_a_sentence(tmp_path, embedder):
    from chatharuhi_core.errors import ChatHaruhiError

    role = load_role("sherlock")
    with pytest.raises(ChatHaruhiError, match="shape"):
        open_persistent(tmp_path / "s", role, embedder, vectors=np.zeros((3, 512), dtype=np.float32))


def test_concurrent_queries_are_embedded_in_batches_with_the_same_vectors(embedder):
    import threading

    import numpy as np

    from chatharuhi_core.embedding import EmbeddingBatcher

    calls = []

    def encode(texts):
        calls.append(len(texts))
        return embedder.embed(texts)

    batcher = EmbeddingBatcher(encode)
    texts = [f"Question number {i}: where were you last night?" for i in range(24)]
    results = [None] * len(texts)
    gate = threading.Barrier(len(texts))

    def ask(i):
        gate.wait()
        results[i] = batcher([texts[i]])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(calls) == len(texts) and len(calls) < len(texts)  # some callers shared a batch
    expected = embedder.embed(texts)
    assert np.allclose(np.vstack(results), expected, atol=1e-5)  # each got its own vector

    def broken(texts):
        raise ValueError("encoder failed")

    with pytest.raises(ValueError):
        EmbeddingBatcher(broken)(["x"])
