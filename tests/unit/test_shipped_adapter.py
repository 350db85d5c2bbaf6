"""The adapter the project ships (issue 65), checked before it is used: a missing or damaged file, a hash that
differs, a base package absent or at another version are each one sentence naming the file and what to run, and a
blank model field then falls back to a model that works, saying why. The folders here are made by the test; the
real one is read in tests/integration/test_shipped_model.py."""

import json
from dataclasses import replace
from importlib import metadata

import pytest

from chatharuhi_core.chat.engines.local import model as local_model
from chatharuhi_core.chat.engines.local import packaged, shipped
from chatharuhi_core.chat.engines.local.shipped import ShippedError, sha256_of, verify


@pytest.fixture
def folder(tmp_path):
    """An adapter folder as tools/ship_adapter.py writes it, on a base package that is installed here (pytest)."""
    out = tmp_path / "models" / "tiny"
    out.mkdir(parents=True)
    (out / "adapter-f16.gguf").write_bytes(b"GGUF adapter bytes")
    manifest = {"format": 1, "adapter": {"file": "adapter-f16.gguf", "sha256": sha256_of(out / "adapter-f16.gguf")},
                "base": {"packages": {"pytest": metadata.version("pytest")}, "sha256": "b" * 64}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def test_an_adapter_that_matches_its_manifest_is_used(folder):
    found = verify(folder, "b" * 64)
    assert found.adapter == folder / "adapter-f16.gguf" and found.manifest["base"]["sha256"] == "b" * 64


def test_a_changed_adapter_file_is_named_with_how_to_restore_it(folder):
    (folder / "adapter-f16.gguf").write_bytes(b"GGUF adapter bytes, changed")
    with pytest.raises(ShippedError, match=r"adapter-f16\.gguf does not match its manifest \(its SHA-256 differs\): "
                                           r"restore it with `git checkout -- .*adapter-f16\.gguf`"):
        verify(folder)


def test_a_missing_adapter_file_or_manifest_is_named(folder):
    (folder / "adapter-f16.gguf").unlink()
    with pytest.raises(ShippedError, match=r"adapter-f16\.gguf is missing: restore it"):
        verify(folder)
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(ShippedError, match=r"manifest .*manifest\.json is damaged"):
        verify(folder)
    (folder / "manifest.json").unlink()
    with pytest.raises(ShippedError, match=r"manifest .*manifest\.json is missing"):
        verify(folder)


def test_a_base_package_absent_or_at_another_version_is_named_with_its_pip_line(folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["base"]["packages"] = {"pytest": "0.0.1"}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ShippedError, match=r"trained on pytest==0\.0\.1 \(version .* is installed\): run `pip install "
                                           r"pytest==0\.0\.1`"):
        verify(folder)
    manifest["base"]["packages"] = {"no-such-package-here": "1.0.0"}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ShippedError, match=r"no-such-package-here==1\.0\.0 \(not installed\)"):
        verify(folder)


def test_another_base_file_than_the_installed_one_is_refused(folder):
    with pytest.raises(ShippedError, match="another base file than the installed one"):
        verify(folder, "c" * 64)


def test_a_blank_model_falls_back_to_a_model_that_works_and_says_why(folder, monkeypatch, tmp_path):
    """The shipped adapter broken: the blank model field is Gemma as shipped, with the sentence as the engine's
    notice (the page and the command line show it); the fine-tune asked for by name is the sentence itself."""
    (folder / "adapter-f16.gguf").write_bytes(b"damaged")
    monkeypatch.setattr(shipped, "MODELS_DIR", folder.parent)
    broken = replace(packaged.GEMMA3_270M_CHATHARUHI, adapter="tiny")
    monkeypatch.setattr(packaged, "DEFAULT", broken)
    monkeypatch.setattr(packaged.PackagedModel, "folder", lambda self, cache=None: tmp_path)
    spec = local_model.default_spec()
    assert spec.adapter is None and spec.label == "Gemma 3 270M"
    assert "does not match its manifest" in spec.note and spec.note.endswith(
        "The local engine uses Gemma 3 270M until then.")
    with pytest.raises(ShippedError, match="does not match its manifest"):
        packaged.packaged_spec(broken)
