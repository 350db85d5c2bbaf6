"""Which build of llama.cpp's CPU kernels runs: a variant only on a CPU with its instructions, only after it
read a prompt in a child process and scored it as the wheel's build does, and the verdict kept per CPU; one
that crashes never runs in the app. The real variants (built by scripts/setup.sh) are checked where this CPU
can run them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.loopback import ROOT

from chatharuhi_core.chat.engines.local import llama_cpu
from chatharuhi_core.chat.engines.local.llama_cpu import VARIANTS, agrees, choose, runnable, variants_root, wheel_libs

ALL = frozenset().union(*(v.cpu_flags for v in VARIANTS))
THREADS = 2


def _fake_variant(root: Path, name: str, cpu_backend: bytes | None = None) -> Path:
    """A variant folder: the wheel's libraries, its CPU backend replaced by `cpu_backend` when given."""
    folder = root / name
    shutil.copytree(wheel_libs(), folder)
    if cpu_backend is not None:
        for lib in folder.glob("libggml-cpu.so*"):
            lib.unlink()
            lib.write_bytes(cpu_backend)
    return folder


def test_a_variant_runs_only_where_the_cpu_has_its_instructions_and_it_was_built_beside_this_wheel(tmp_path):
    for variant in VARIANTS:
        (tmp_path / variant.name).mkdir()
        shutil.copy2(wheel_libs() / "libllama.so", tmp_path / variant.name / "libllama.so")
    assert [v.name for v, _ in runnable(tmp_path, ALL)] == [v.name for v in VARIANTS]  # the most capable first
    plain = next(v for v in VARIANTS if v.name == "avx512")
    assert [v.name for v, _ in runnable(tmp_path, plain.cpu_flags)] == ["avx512"]
    assert runnable(tmp_path, frozenset({"avx2", "fma", "f16c"})) == []  # an AVX2 CPU: the wheel
    (tmp_path / "avx512-vnni" / "libllama.so").write_bytes(b"left from another llama-cpp-python")
    assert [v.name for v, _ in runnable(tmp_path, ALL)] == ["avx512"]  # not beside this wheel: not offered
    shutil.rmtree(tmp_path / "avx512-vnni")
    assert [v.name for v, _ in runnable(tmp_path, ALL)] == ["avx512"]  # not built: not offered
    assert choose(None, THREADS, tmp_path / "nothing", ALL) is None


def test_scores_that_differ_beyond_summing_order_are_refused():
    wheel = {"top": {"5": 20.0, "7": 19.5, "9": 18.0}}
    assert agrees(wheel, {"top": {"5": 20.1, "7": 19.4, "9": 18.2}})
    assert agrees(wheel, {"top": {"7": 19.9, "5": 19.8, "9": 18.0}})  # a near tie may swap
    assert not agrees(wheel, {"top": {"9": 25.0, "5": 20.0, "7": 19.5}})  # another first choice, far off
    assert not agrees(wheel, {"top": {"5": 21.0, "7": 19.5, "9": 18.0}})  # a score moved by 1.0
    assert not agrees(wheel, {"top": {"1": 20.0, "2": 19.0, "3": 18.0}})  # other tokens altogether


def test_a_variant_that_crashes_is_refused_once_and_remembered(tmp_path, smollm2_gguf, monkeypatch):
    """Its check dies in a child process (here: a CPU backend that is not a library), the app's process never
    loads it, and the verdict spares the next process the check."""
    _fake_variant(tmp_path, "avx512", cpu_backend=b"not a library")
    flags = next(v for v in VARIANTS if v.name == "avx512").cpu_flags
    assert choose(smollm2_gguf, THREADS, tmp_path, flags) is None
    kept = json.loads((tmp_path / "verdicts.json").read_text())
    (verdict,) = kept.values()
    assert verdict["avx512"]["used"] is False and verdict["avx512"]["why"] == "crashed or failed"
    assert verdict["avx512"]["wheel_tokens_per_s"] > 0
    monkeypatch.setattr(llama_cpu, "_probe", lambda *a: pytest.fail("checked again"))
    assert choose(smollm2_gguf, THREADS, tmp_path, flags) is None


def test_a_damaged_verdict_file_is_checked_again(tmp_path, smollm2_gguf):
    _fake_variant(tmp_path, "avx512", cpu_backend=b"")
    (tmp_path / "verdicts.json").write_text('["not", "an object"]')
    flags = next(v for v in VARIANTS if v.name == "avx512").cpu_flags
    assert choose(smollm2_gguf, THREADS, tmp_path, flags) is None
    assert "avx512" in next(iter(json.loads((tmp_path / "verdicts.json").read_text()).values()))


def test_without_a_model_to_check_with_an_unchecked_variant_waits(tmp_path, monkeypatch):
    _fake_variant(tmp_path, "avx512")
    monkeypatch.setattr(llama_cpu, "_probe", lambda *a: pytest.fail("no model: nothing may be checked"))
    assert choose(None, THREADS, tmp_path, ALL) is None


def test_without_cmake_set_up_says_so_and_builds_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert llama_cpu.build(tmp_path) == []
    assert "No cmake here" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


BUILT = runnable()


@pytest.mark.skipif(not BUILT, reason="no CPU variant built (scripts/setup.sh) that this CPU can run")
def test_the_engine_runs_the_best_variant_this_cpu_passes_and_leaves_no_trace_in_the_environment(smollm2_gguf):
    """In a fresh process, as the app starts: the first load picks the variant (it passed its check on this CPU),
    the reply is written, and LLAMA_CPP_LIB_PATH is not left for the processes it starts."""
    script = (
        "import os, sys\n"
        "from chatharuhi_core.chat.engines.local.model import load_model, resolve_model\n"
        "from chatharuhi_core.chat.engines.local.llamacpp import LLAMA_CPP\n"
        "from chatharuhi_core.chat.engines.local.runtime import Sampling\n"
        "from chatharuhi_core.chat.engines.local.llama_cpu import build_name\n"
        "lm = load_model(resolve_model(''), 'cpu')\n"
        "out = []\n"
        "LLAMA_CPP.generate(lm, [{'role': 'user', 'content': 'Who are you?'}], '', Sampling(max_tokens=12, seed=0),"
        " out.append, lambda: False)\n"
        "print(build_name(), os.environ.get('LLAMA_CPP_LIB_PATH'), bool(''.join(out).strip()), sep='|')\n")
    env = {k: v for k, v in os.environ.items() if k != llama_cpu.ENV}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    verdicts = json.loads((variants_root() / "verdicts.json").read_text())
    entry = verdicts[llama_cpu._key(len(os.sched_getaffinity(0)))]
    chosen = next((v.name for v, _ in BUILT if entry.get(v.name, {}).get("used")), llama_cpu.WHEEL)
    assert done.stdout.strip().split("|") == [chosen, "None", "True"]  # a build's name may hold spaces


def test_a_user_s_library_folder_without_llama_cpp_is_a_sentence_naming_it(tmp_path):
    """LLAMA_CPP_LIB_PATH set by the user to a folder without llama.cpp: the command line says where it looked."""
    env = {**os.environ, llama_cpu.ENV: str(tmp_path), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "chatharuhi_core", "chat", "--role", "sherlock", "--engine", "local",
                           "Who are you?"], capture_output=True, text=True, env=env, timeout=300,
                          cwd=ROOT)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"llama.cpp's libraries could not be loaded from {tmp_path} (LLAMA_CPP_LIB_PATH)" in done.stderr
