"""The fine-tuned Gemma this repository ships (issue 65), read from a clean checkout: the adapter file is what its
manifest says (size, type, hash), its base is the installed packages at the trained version, eval's held-out scenes
are not in the recorded training rows, the manifest's command rebuilds those rows byte for byte, and the local
engine's blank model is this model for every bundled character, in Chinese and English, on llama.cpp and on
transformers (the Space's runtime), with no language warning. A damaged copy is refused with a sentence and the
engine falls back and keeps answering."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from support.app import run_cli

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.chat.engines import open_engine
from chatharuhi_core.chat.engines.local import model as local_model
from chatharuhi_core.chat.engines.local.packaged import DEFAULT, GEMMA3_270M
from chatharuhi_core.chat.engines.local.shipped import MAX_FILE_BYTES, MODELS_DIR, sha256_of, verify
from chatharuhi_core.chat.languages import language_gap
from chatharuhi_core.data.holdout import HoldOut
from chatharuhi_core.roles.sources import bundled_ids, load_role

ROOT = Path(__file__).resolve().parents[2]
FOLDER = MODELS_DIR / DEFAULT.adapter


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((FOLDER / "manifest.json").read_text(encoding="utf-8"))


def test_the_adapter_is_a_small_f16_or_q8_file_with_its_hash_and_notice(manifest):
    adapter = FOLDER / manifest["adapter"]["file"]
    assert adapter.suffix == ".gguf" and manifest["adapter"]["type"] in ("f16", "q8_0")
    assert adapter.stat().st_size == manifest["adapter"]["bytes"] <= MAX_FILE_BYTES
    assert sha256_of(adapter) == manifest["adapter"]["sha256"]
    assert all(p.stat().st_size <= MAX_FILE_BYTES for p in FOLDER.iterdir())  # every file a Space takes as it is
    notice = (FOLDER / "NOTICE.md").read_text(encoding="utf-8")
    assert "Gemma Terms of Use" in notice and "ai.google.dev/gemma/terms" in notice
    assert "Gemma Terms of Use" in (ROOT / "README.md").read_text(encoding="utf-8").split("**Models and terms.**")[1]


def test_its_base_is_the_installed_packages_at_the_trained_version(manifest):
    assert manifest["base"]["sha256"] == GEMMA3_270M.sha256
    assert manifest["base"]["packages"] == GEMMA3_270M.versions
    for package, version in manifest["base"]["packages"].items():
        assert metadata.version(package) == version
    for line in ("requirements.txt", "requirements-local.txt"):  # the Space's path and the laptop's
        text = (ROOT / line).read_text(encoding="utf-8")
        assert all(f"{p}=={v}" in text for p, v in manifest["base"]["packages"].items()), line
    assert verify(FOLDER, GEMMA3_270M.sha256).adapter.name == manifest["adapter"]["file"]


def test_no_held_out_scene_is_in_the_recorded_training_rows(manifest):
    """The manifest's held-out scenes are eval's default ones for today's bundled characters, and no training row
    came from any of them (a row's source is scene:ROLE:SCENE:TURN)."""
    held = manifest["held_out"]["scenes"]
    holdout = HoldOut(manifest["held_out"]["per_role"], manifest["held_out"]["min_tokens"], manifest["held_out"]["seed"],
                      manifest["held_out"]["deep"])
    for role_id in bundled_ids():
        assert sorted(held[role_id]) == sorted(holdout.scene_ids(load_role(role_id))), role_id
    sources = manifest["training"]["row_sources"]
    assert len(sources) == manifest["training"]["rows"]
    leaked = [s for s in sources if s.startswith("scene:") and s.split(":")[2] in held.get(s.split(":")[1], [])]
    assert sources and not leaked


def test_the_manifests_command_rebuilds_the_same_rows(manifest, tmp_path):
    """`finetune ... --rows-only FILE`, the training command with the rows written instead of trained on: the same
    bytes as the rows the adapter was trained on (their SHA-256 in the manifest)."""
    rows = tmp_path / "rows.jsonl"
    command = manifest["training"]["rows_command"].replace("ROWS.jsonl", str(rows))
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "chatharuhi_core"] and "--rows-only" in argv
    out = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                         env={**_env(tmp_path)})
    assert out.returncode == 0, out.stderr[-2000:]
    built = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
    assert [r["source"] for r in built] == manifest["training"]["row_sources"]
    assert sha256_of(rows) == manifest["training"]["rows_sha256"]


def _env(tmp_path: Path) -> dict:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHATHARUHI_", "OPENAI_"))}
    env.update(CHATHARUHI_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    return env


def test_the_blank_model_is_the_fine_tune_and_speaks_every_bundled_characters_language(settings):
    spec = local_model.resolve_model("")
    assert spec.adapter == str(FOLDER / json.loads((FOLDER / "manifest.json").read_text())["adapter"]["file"])
    assert spec.label == DEFAULT.label and not spec.note
    for role_id in bundled_ids():
        engine = ChatHaruhi(role=load_role(role_id), engine="local", settings=settings).engine
        assert language_gap(engine, load_role(role_id)) is None, role_id  # no "speaks English only"


@pytest.mark.parametrize("runtime", ["llama.cpp", "transformers"])
def test_it_answers_in_each_language(settings, monkeypatch, runtime):
    """On llama.cpp (a laptop) and on transformers (a Space installs requirements.txt: no llama.cpp), seeded."""
    monkeypatch.setenv("CHATHARUHI_LOCAL_RUNTIME", runtime)
    for role_id, question, chinese in (("sunwukong", "你是谁？", True), ("sherlock", "Who are you?", False)):
        engine = open_engine("local", settings, seed=0)
        said = ChatHaruhi(role_name=role_id, engine=engine, settings=settings).answer(question)
        text = said.text.replace(" ", "")
        cjk = sum("\u4e00" <= ch <= "\u9fff" for ch in text)
        assert text and (cjk >= 0.7 * len(text) if chinese else cjk == 0), text
        assert said.stats.model.startswith(f"{DEFAULT.label} ({runtime}"), said.stats.model


def test_a_damaged_copy_is_refused_with_a_sentence_naming_the_file(tmp_path, cache_dir):
    copy = tmp_path / "my-adapter"
    shutil.copytree(FOLDER, copy)
    adapter = next(copy.glob("*.gguf"))
    data = bytearray(adapter.read_bytes())
    data[-100] ^= 0xFF
    adapter.write_bytes(bytes(data))
    out = run_cli("chat", "--role", "sherlock", "--engine", "local", "--model", str(copy), "Who are you?", cache=cache_dir)
    assert out.returncode != 0
    assert f"{adapter} does not match its manifest (its SHA-256 differs)" in out.stderr
    assert "Traceback" not in out.stderr
