"""Which build of llama.cpp's CPU kernels this process runs.

The llama-cpp-python wheel is built for AVX2 (scripts/llama-build.env), so that one wheel runs on every
x86-64 host of this machine kind. On a CPU with AVX-512 a build of llama.cpp's CPU backend for it reads
prompts faster (on the Intel host of this machine kind: 16-bit weights 1.5x, 8-bit ones 1.3x; bench/RESULTS.md),
and reading is most of a turn's first-token time. So:

- `build` (run by scripts/setup.sh; about 30 s a variant on 2 cores) compiles llama.cpp's CPU backend
  alone, from the wheel's own source release, once for each variant below, into the virtual environment,
  beside copies of the wheel's other libraries (the rest of llama.cpp does not depend on the CPU).
- `llama()` imports llama_cpp; the first time, it points llama-cpp-python at the best variant this CPU has
  the instructions for (LLAMA_CPP_LIB_PATH), once that variant has passed a check in a child process: it
  must read a prompt, agree with the wheel's build on the next token's scores, and read faster. A variant
  that crashes does so in the child, and the verdict is kept per CPU, so the check runs once.

No AMX variant is built: with ggml's AMX kernels, the first prompt read with 4- or 8-bit weights crashed
(segmentation fault) on the Intel host.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ....errors import EngineError
from ....i18n import _
from ....jsonl import read_object, replace_text

log = logging.getLogger(__name__)
ENV = "LLAMA_CPP_LIB_PATH"  # llama-cpp-python loads its libraries from this folder when it is set
VERDICTS = "verdicts.json"
WHEEL = "wheel (AVX2)"
# the largest difference in a top score allowed between builds: they sum in other orders (measured: up to 0.19
# of scores around 27 between the wheel and the AVX-512 build); a broken build is off by far more
SCORE_TOLERANCE = 0.5
CHECK_TIMEOUT_S = 120


@dataclass(frozen=True)
class Variant:
    """A build of llama.cpp's CPU backend: the CMake options it adds to the wheel's, and the CPU flags
    (as /proc/cpuinfo names them) it needs to run."""

    name: str
    cmake: tuple[str, ...]
    cpu_flags: frozenset[str]


_AVX512 = frozenset({"avx2", "fma", "f16c", "bmi2", "avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"})
VARIANTS = (  # the most capable first: the first one this CPU can run and that passes its check is used
    Variant("avx512-vnni", ("-DGGML_AVX512=ON", "-DGGML_AVX512_VBMI=ON", "-DGGML_AVX512_VNNI=ON",
                            "-DGGML_AVX512_BF16=ON"),
            _AVX512 | {"avx512vbmi", "avx512_vnni", "avx512_bf16"}),  # Ice Lake, Sapphire Rapids, Zen 4
    Variant("avx512", ("-DGGML_AVX512=ON",), _AVX512),  # Skylake-X, Cascade Lake
)
_lock = threading.Lock()


def variants_root() -> Path:
    """Where the variants are built: inside the virtual environment, like the wheel itself."""
    return Path(sys.prefix) / "llama-cpu"


def wheel_libs() -> Path:
    """The wheel's own library folder (found without importing llama_cpp, which would load it)."""
    import importlib.util

    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llama-cpp-python is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "lib"


def _cpuinfo(field: str) -> str | None:
    """The first CPU's value of a /proc/cpuinfo field (None where it cannot be read)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.split(":", 1)[0].strip() == field:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_flags() -> frozenset[str]:
    """The instruction sets this CPU and its kernel offer (empty where /proc/cpuinfo cannot tell)."""
    return frozenset((_cpuinfo("flags") or "").split())


def runnable(root: Path | None = None, flags: frozenset[str] | None = None) -> list[tuple[Variant, Path]]:
    """The variants built under `root` beside the installed wheel whose instructions this CPU has, best first."""
    root = root or variants_root()
    flags = cpu_flags() if flags is None else flags
    try:
        wheel = (wheel_libs() / "libllama.so").stat()
    except (OSError, RuntimeError):
        return []
    return [(v, root / v.name) for v in VARIANTS if v.cpu_flags <= flags and _beside(root / v.name, wheel)]


def _beside(folder: Path, wheel: os.stat_result) -> bool:
    """The variant was built beside this very wheel: its copy of libllama is the wheel's (size and time). One
    left from another version of llama-cpp-python would give its Python side libraries it does not match."""
    try:
        ours = (folder / "libllama.so").stat()
    except OSError:
        return False
    return (ours.st_size, ours.st_mtime_ns) == (wheel.st_size, wheel.st_mtime_ns)


def cpu_name() -> str:
    """The CPU's model name: which build runs best, and which weight format reads prompts fastest, is
    remembered per CPU."""
    import platform

    return _cpuinfo("model name") or platform.processor() or platform.machine()


# --- choosing, at the first import --------------------------------------------------------------------------

_CHECK = r"""
import ctypes, json, sys, time
import llama_cpp
from llama_cpp import Llama
model, threads = sys.argv[1], int(sys.argv[2])
llm = Llama(model_path=model, n_ctx=512, n_threads=threads, n_threads_batch=threads, n_ubatch=256, flash_attn=True,
            verbose=False)
batch = list(range(1000, 1128))
best = 0.0
for _unused in range(3):
    llm.reset()
    started = time.perf_counter()
    llm.eval(batch)
    best = max(best, len(batch) / (time.perf_counter() - started))
scores = ctypes.cast(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), ctypes.POINTER(ctypes.c_float))
scores = [float(scores[i]) for i in range(llm.n_vocab())]
top = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:20]
print(json.dumps({"tokens_per_s": best, "top": {str(i): scores[i] for i in top}}))
"""


def _probe(libs: Path | None, model: Path, threads: int) -> dict | None:
    """Read a prompt with `model` in a child process on the libraries in `libs` (None: the wheel's); its
    speed and top next-token scores, or None when the child failed or crashed."""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if libs is not None:
        env[ENV] = str(libs)
    try:
        done = subprocess.run([sys.executable, "-c", _CHECK, str(model), str(threads)], env=env, timeout=CHECK_TIMEOUT_S,
                              capture_output=True, text=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("llama.cpp build check could not run: %r", exc)
        return None
    if done.returncode != 0:
        log.info("llama.cpp build in %s failed its check (exit %s)", libs, done.returncode)
        return None
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def agrees(wheel: dict, variant: dict) -> bool:
    """The two builds score the wheel's top tokens within SCORE_TOLERANCE of each other, and the variant's
    first choice is one the wheel scores within SCORE_TOLERANCE of its own (builds sum in another order)."""
    ours, theirs = wheel["top"], variant["top"]
    best = max(ours.values())
    shared = [k for k in ours if k in theirs]
    return (ours.get(max(theirs, key=theirs.get), -1e9) >= best - SCORE_TOLERANCE and len(shared) >= len(ours) // 2
            and all(abs(ours[k] - theirs[k]) <= SCORE_TOLERANCE for k in shared))


def _key(threads: int) -> str:
    from importlib.metadata import version

    return f"{cpu_name()} · {threads} threads · llama-cpp-python {version('llama-cpp-python')}"


def choose(model: Path | None = None, threads: int = 1, root: Path | None = None,
           flags: frozenset[str] | None = None) -> Path | None:
    """The folder of the best variant for this CPU (None: the wheel's own build). A variant is used once it
    passed its check on this CPU, remembered in `root`/verdicts.json; with `model`, a variant not checked yet
    is checked now against the wheel's build (two child processes, about 3 s), reading `model`."""
    root = root or variants_root()
    candidates = runnable(root, flags)
    if not candidates:
        return None
    verdicts_path, key = root / VERDICTS, _key(threads)
    known = read_object(verdicts_path)
    entry = known.get(key) if isinstance(known.get(key), dict) else {}
    wheel = None
    for variant, folder in candidates:
        verdict = entry.get(variant.name)
        if isinstance(verdict, dict) and isinstance(verdict.get("used"), bool):
            if verdict["used"]:
                return folder
            continue
        if model is None:
            continue  # not checked yet: the wheel's build for now
        wheel = wheel or _probe(None, model, threads)
        if wheel is None:
            return None  # the wheel's own build cannot read this model here: nothing to compare with
        tried = _probe(folder, model, threads)
        same = tried is not None and agrees(wheel, tried)
        used = same and tried["tokens_per_s"] >= wheel["tokens_per_s"]
        entry[variant.name] = {"used": used, "tokens_per_s": round(tried["tokens_per_s"]) if tried else None,
                               "wheel_tokens_per_s": round(wheel["tokens_per_s"]),
                               "why": "faster, same scores" if used else "crashed or failed" if tried is None
                               else "scores differ" if not same else "not faster"}
        known[key] = entry
        try:
            replace_text(verdicts_path, json.dumps(known, indent=1, ensure_ascii=False))
        except OSError:
            pass  # checked again by the next process
        log.info("llama.cpp CPU build %s on %s: %s", variant.name, key, entry[variant.name])
        if used:
            return folder
    return None


_chosen: list[Path] = []  # the folder this process's llama_cpp was loaded from, when a variant was chosen


def llama(model: Path | None = None, threads: int = 1):
    """The llama_cpp module. Its first import in a process runs on the best build of llama.cpp's CPU kernels
    for this CPU (`choose`); a LLAMA_CPP_LIB_PATH set by the user wins. The choice is not left in the
    environment, so processes started later (a model server) are not given it unasked."""
    loaded = sys.modules.get("llama_cpp")
    if loaded is not None:  # every call after the first (some are per reply): no lock
        return loaded
    with _lock:
        if "llama_cpp" not in sys.modules and not os.environ.get(ENV):
            try:
                folder = choose(model, threads)
            except Exception as exc:  # a check that cannot run: the wheel's build, as before
                log.info("no llama.cpp CPU build chosen: %r", exc)
                folder = None
            if folder is not None:
                os.environ[ENV] = str(folder)
                try:
                    import llama_cpp
                finally:
                    del os.environ[ENV]
                _chosen.append(folder)
        try:
            import llama_cpp
        except (OSError, RuntimeError) as exc:  # llama-cpp-python's own loader: no library there, or a broken one
            where = os.environ.get(ENV)
            raise EngineError(_("llama.cpp's libraries could not be loaded from {where}: {why}",
                                where=where + " (LLAMA_CPP_LIB_PATH)" if where else wheel_libs(), why=exc)) from None
        return llama_cpp


def in_use() -> Path | None:
    """The folder of the variant this process runs (None: the wheel's build, or llama_cpp not loaded yet)."""
    user = os.environ.get(ENV)
    return Path(user) if user else (_chosen[-1] if _chosen else None)


def build_name(folder: Path | None = None) -> str:
    """A build's name for people: a variant's, or the wheel's."""
    folder = in_use() if folder is None else folder
    return folder.name if folder else WHEEL


# --- building, at set-up ------------------------------------------------------------------------------------

def build(root: Path | None = None, jobs: int | None = None) -> list[str]:
    """Build every variant under `root` from the wheel's source release, unless all were built beside this very
    wheel; the names built. Needs cmake and a C++ compiler; without them, says so and builds nothing."""
    from importlib.metadata import version

    root = root or variants_root()
    release = version("llama-cpp-python")
    libs = wheel_libs()
    wheel = (libs / "libllama.so").stat()
    if all(_beside(root / v.name, wheel) for v in VARIANTS):
        return []  # built beside this very wheel already
    if shutil.which("cmake") is None:
        print("No cmake here: llama.cpp's AVX-512 kernels are not built (the AVX2 wheel runs).", file=sys.stderr)
        return []
    jobs = jobs or os.cpu_count() or 1
    built = []

    def run(*cmd: str) -> None:
        done = subprocess.run(cmd, capture_output=True, text=True)  # a compiler's warnings are thousands of lines
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:3])} … failed:\n{done.stderr[-2000:]}")

    with tempfile.TemporaryDirectory() as tmp:
        try:
            run(sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-binary",
                ":all:", "--no-deps", f"llama-cpp-python=={release}", "-d", tmp)
            archive = next(Path(tmp).glob("llama_cpp_python-*.tar.gz"))
            shutil.unpack_archive(archive, tmp)
            source = next(p for p in Path(tmp).iterdir() if p.is_dir())
            wheel_flags = os.environ.get("CMAKE_ARGS", "").split()
            for variant in VARIANTS:
                out = Path(tmp) / f"build-{variant.name}"
                run("cmake", "-S", str(source), "-B", str(out), "-DCMAKE_BUILD_TYPE=Release", "-DLLAVA_BUILD=OFF",
                    *wheel_flags, *variant.cmake)
                run("cmake", "--build", str(out), "--target", "ggml-cpu", "-j", str(jobs))
                _install(libs, out / "bin", root / variant.name)
                built.append(variant.name)
        except (RuntimeError, OSError, StopIteration) as exc:
            print(f"llama.cpp's AVX-512 kernels could not be built here ({exc}); the AVX2 wheel runs. "
                  "The next set-up tries again.", file=sys.stderr)
            return built
    return built


def _install(wheel: Path, cpu: Path, dest: Path) -> None:
    """`dest`: the wheel's libraries with its CPU backend replaced by the one built in `cpu` (whole, or not
    at all)."""
    partial = dest.with_name(f".{dest.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for file in wheel.iterdir():
        if not file.name.startswith("libggml-cpu."):
            shutil.copy2(file, partial / file.name)
    for file in cpu.glob("libggml-cpu.so*"):
        shutil.copy2(file, partial / file.name, follow_symlinks=False)
    shutil.rmtree(dest, ignore_errors=True)
    partial.replace(dest)


def main() -> None:
    """What scripts/setup.sh runs after installing llama-cpp-python."""
    names = build()
    if names:
        print(f"Built llama.cpp's CPU kernels for: {', '.join(names)} (in {variants_root()})", file=sys.stderr)
