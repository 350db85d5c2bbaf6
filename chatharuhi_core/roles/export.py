"""Roles out: a card (PNG with both chunks, or JSON), a package folder or zip with a prebuilt
store, a ChatHaruhi 2.0 jsonl, or a ChatHaruhi 1.0 character folder. Exporters register by format
name; the format is inferred from the target's suffix when not given."""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from ..config import Settings
from ..embedding import get_embedder
from ..errors import ChatHaruhiError
from ..i18n import _
from .role import Role, write_role_package
from .store import Progress, write_prebuilt

Exporter = Callable[[Role, Path, Settings, "Progress | None"], Path]
EXPORTERS: dict[str, Exporter] = {}
SUFFIX_FORMATS = {".png": "card-png", ".json": "card-json", ".zip": "zip", ".jsonl": "jsonl"}


def register_exporter(name: str) -> Callable[[Exporter], Exporter]:
    def wrap(fn: Exporter) -> Exporter:
        EXPORTERS[name] = fn
        return fn

    return wrap


def format_for(target: Path) -> str:
    return SUFFIX_FORMATS.get(target.suffix.lower(), "folder")


@register_exporter("card-png")
def _card_png(role: Role, target: Path, settings: Settings, progress: Progress | None) -> Path:
    from .cards import write_card_png

    return write_card_png(role, target)


@register_exporter("card-json")
def _card_json(role: Role, target: Path, settings: Settings, progress: Progress | None) -> Path:
    from .cards import V3, write_card_json

    return write_card_json(role, target, V3)


@register_exporter("card-json-v2")
def _card_json_v2(role: Role, target: Path, settings: Settings, progress: Progress | None) -> Path:
    from .cards import V2, write_card_json

    return write_card_json(role, target, V2)


@register_exporter("folder")
def write_package_with_store(role: Role, target: Path, settings: Settings, progress: Progress | None,
                             with_store: bool = True) -> Path:
    """A role package folder; with a prebuilt store for the active embedder unless told not to."""
    if target.exists() and any(target.iterdir()):
        if not (target / "role.json").is_file():
            raise ChatHaruhiError(_("{target} is a folder with other files in it; choose an empty or new folder.",
                                    target=target))
        shutil.rmtree(target)
    write_role_package(role, target)
    if with_store:
        write_prebuilt(role, get_embedder(settings.embedder), target / "store", progress)
    return target


@register_exporter("folder-no-store")
def _folder_plain(role: Role, target: Path, settings: Settings, progress: Progress | None) -> Path:
    return write_package_with_store(role, target, settings, progress, with_store=False)


@register_exporter("zip")
def _zip(role: Role, target: Path, settings: Settings, progress: Progress | None) -> Path:
    """The package folder (named for the role id) zipped, store included."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_package_with_store(role, Path(tmp) / role.id, settings, progress)
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
            for p in sorted(folder.rglob("*")):
                if p.is_file():
                    zf.write(p, Path(role.id) / p.relative_to(folder))
    return target


@register_exporter("chatharuhi-folder")
def _chatharuhi_folder(role: Role, target: Path, settings: Settings, progress: Progress | None) -> Path:
    from .chatharuhi_folder import write_chatharuhi_folder

    return write_chatharuhi_folder(role, target)


@register_exporter("jsonl")
def _jsonl(role: Role, target: Path, settings: Settings, progress: Progress | None) -> Path:
    from .chatharuhi_jsonl import write_chatharuhi_jsonl

    return write_chatharuhi_jsonl(role, target, get_embedder(settings.embedder))


def export_role(role: Role, target: Path | str, settings: Settings | None = None, fmt: str | None = None,
                progress: Progress | None = None) -> Path:
    """Write the role to target in the given (or inferred) format; returns what was written."""
    settings = settings or Settings.from_env()
    target = Path(target)
    fmt = fmt or format_for(target)
    if fmt not in EXPORTERS:
        raise ChatHaruhiError(_("Unknown export format '{format}'. Formats: {known}.", format=fmt,
                                known=", ".join(sorted(EXPORTERS))))
    return EXPORTERS[fmt](role, target, settings, progress)
