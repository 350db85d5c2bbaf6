"""Where roles come from. One function, load_role(), turns any reference into a Role:

- a bundled id, name or alias (`sherlock`, `孙悟空`);
- the id of a role imported before (kept under <cache>/roles/<id>/);
- a role package folder, or a zip of one; a ChatHaruhi 1.0 character folder, or a zip of one;
- a character card (V1/V2/V3, .png or .json), a ChatHaruhi 2.0 .jsonl, or a script (.txt);
- a Hub id: `owner/name[@rev]` (a role package, or a dataset of one ChatHaruhi jsonl) or
  `owner/name/role[@rev]` (a ChatHaruhi jsonl; the role's name may have spaces).

Anything from outside is checked by `safety` first, converted, and written as a role package
under the cache directory with an id that includes a hash of its content, so two uploads never
share a store. Roles are cached per process and shared read-only by every visitor.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Settings
from ..errors import ImportProblem, RoleNotFoundError
from ..i18n import _, ngettext
from .names import with_derived
from .role import Role, derive_role_id, find_image, load_role_package, load_scene_images, write_role_package
from .safety import DEFAULT_LIMITS, Limits, check_file, check_tree, load_image, read_bytes, read_text, safe_extract_zip

if TYPE_CHECKING:
    from .store import Progress

BUNDLED_DIR = Path(__file__).resolve().parents[2] / "characters"
MAX_CACHED_ROLES = 256

_CACHE: OrderedDict[str, Role] = OrderedDict()
_LOCK = threading.Lock()


@dataclass(frozen=True)
class ImportOptions:
    """What an import may need beyond the file itself."""

    name: str | None = None  # the character, for scripts (default: the most frequent speaker)
    aliases: tuple[str, ...] = ()
    series: str = ""
    display_name: str | None = None  # the file name the visitor sees (uploads arrive under temp names)
    limits: Limits = field(default=DEFAULT_LIMITS)
    # a world-info file: the character to link it to (the CLI's --to), else one whose card names the world, else
    # `world_fallback` (the page: the character the visitor is talking to)
    world_for: str | None = None
    world_fallback: str | None = None


Importer = Callable[[Path, Settings, ImportOptions], Role]
IMPORTERS: dict[str, Importer] = {}


def register_importer(*suffixes: str) -> Callable[[Importer], Importer]:
    """Decorator: handle files with these suffixes."""

    def wrap(fn: Importer) -> Importer:
        for s in suffixes:
            IMPORTERS[s] = fn
        return fn

    return wrap


def accepted_suffixes() -> list[str]:
    return sorted(IMPORTERS)


# ------------------------------------------------------------------ bundled


def bundled_ids(root: Path = BUNDLED_DIR) -> list[str]:
    """Folder names of the bundled role packages, in the order of characters/ORDER if present."""
    if not root.is_dir():
        return []
    ids = sorted(p.name for p in root.iterdir() if (p / "role.json").is_file())
    order_file = root / "ORDER"
    if order_file.is_file():
        wanted = [line.strip() for line in order_file.read_text(encoding="utf-8").splitlines()]
        ordered = [i for i in wanted if i in ids]
        return ordered + [i for i in ids if i not in ordered]
    return ids


def bundled_roles(root: Path = BUNDLED_DIR) -> list[Role]:
    return [load_role(i) for i in bundled_ids(root)]


def _find_bundled(ref: str) -> Path | None:
    direct = BUNDLED_DIR / ref
    if ref and "/" not in ref and (direct / "role.json").is_file():
        return direct
    wanted = ref.strip().casefold()
    for rid in bundled_ids():
        if rid.casefold() == wanted:
            return BUNDLED_DIR / rid
    for rid in bundled_ids():  # by display name or alias (e.g. "Sherlock Holmes", "孙悟空")
        role = _cached(str(BUNDLED_DIR / rid), lambda rid=rid: load_role_package(BUNDLED_DIR / rid))
        if wanted in {n.casefold() for n in role.speaker_names}:
            return BUNDLED_DIR / rid
    return None


def _peek(key: str) -> Role | None:
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    return None


def _cached(key: str, make: Callable[[], Role]) -> Role:
    role = _peek(key)
    if role is not None:
        return role
    return _remember(key, make())  # made outside the lock: an import may take seconds


def _remember(key: str, role: Role) -> Role:
    with _LOCK:
        _CACHE[key] = role
        _CACHE.move_to_end(key)
        while len(_CACHE) > MAX_CACHED_ROLES:
            _CACHE.popitem(last=False)
    return role


# ------------------------------------------------------------------ persisting imports


def _persist(role: Role, settings: Settings, portrait: bytes | None = None, name: str = "portrait") -> Role:
    """Write an imported role as a package under <cache>/roles/<id>/ (content-addressed)."""
    folder = settings.roles_dir / role.id
    image = load_image(portrait, name) if portrait else None  # checked before anything is written
    if not (folder / "role.json").is_file():
        settings.roles_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".import-", dir=settings.roles_dir))
        try:
            write_role_package(replace(role, image_path=None), tmp)
            if image is not None:
                image.save(tmp / "image.png")
            tmp.replace(folder)
        except OSError:
            if not (folder / "role.json").is_file():  # another visitor may have won the race
                raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    # pictures are read from the saved package: the import's own folder (an unzipped upload) is gone soon
    saved = replace(role, root=folder, image_path=find_image(folder), scene_images=load_scene_images(folder),
                    embeddings=role.embeddings)
    return _remember(f"id:{role.id}", saved)


def _imported(role_id: str, settings: Settings) -> Role | None:
    folder = settings.roles_dir / role_id
    if "/" in role_id or role_id.startswith(".") or not (folder / "role.json").is_file():
        return None
    return _cached(f"id:{role_id}", lambda: load_role_package(folder))


# ------------------------------------------------------------------ importers


def _label(path: Path, options: ImportOptions) -> str:
    return options.display_name or path.name


def _package_role(folder: Path, settings: Settings, options: ImportOptions, origin: str) -> Role:
    """A package from outside gets a content-derived id; its store/ is not trusted, only its texts."""
    role = load_role_package(folder)
    meta = (folder / "role.json").read_bytes()
    new_id = derive_role_id(role.id, meta + role.stories_sha256.encode())
    for scene in role.scene_images:  # pictures are served to browsers: refuse bombs here too
        load_image(read_bytes(scene.path, options.limits, scene.path.name), f"{origin}: images/{scene.path.name}",
                   options.limits)
    image_label = f"{origin}: {role.image_path.name}" if role.image_path else origin
    portrait = read_bytes(role.image_path, options.limits, image_label) if role.image_path else None
    role = replace(role, id=new_id, root=None, image_path=None, source=role.source or origin)
    return _persist(role, settings, portrait, image_label)


def _chatharuhi_role(folder: Path, settings: Settings, options: ImportOptions, label: str) -> Role:
    """A ChatHaruhi 1.0 character folder (system_prompt.txt, texts/, images/), saved as a package."""
    from .chatharuhi_folder import role_from_chatharuhi_folder

    role = role_from_chatharuhi_folder(folder, label, options.limits, options.name)
    for scene in role.scene_images:  # pictures are served to browsers: refuse bombs here too
        load_image(read_bytes(scene.path, options.limits, scene.path.name), f"{label}: images/{scene.path.name}",
                   options.limits)
    if options.aliases or options.series:
        role = replace(role, aliases=with_derived(role.name, [*role.aliases, *options.aliases]),
                       series=options.series or role.series)
    return _persist(role, settings)


def _folder_role(folder: Path, settings: Settings, options: ImportOptions, label: str) -> Role:
    """A role package, else a ChatHaruhi 1.0 character folder, at the top of `folder` or in its one sub-folder."""
    from .chatharuhi_folder import find_chatharuhi_folder

    found = sorted(folder.rglob("role.json"), key=lambda p: len(p.parts))
    if found and len(found[0].relative_to(folder).parts) <= 2:
        return _package_role(found[0].parent, settings, options, label)
    haruhi = find_chatharuhi_folder(folder)
    if haruhi is not None:
        return _chatharuhi_role(haruhi, settings, options, label)
    raise ImportProblem(_("{name} holds no character: a role package has role.json at the top or in one folder, and "
                          "a ChatHaruhi character folder has system_prompt.txt and texts/.", name=label))


def import_folder(folder: Path, settings: Settings, options: ImportOptions = ImportOptions()) -> Role:
    check_tree(folder, options.limits)
    return _folder_role(folder, settings, options, _label(folder, options))


@register_importer(".zip")
def import_zip(path: Path, settings: Settings, options: ImportOptions) -> Role:
    label = _label(path, options)
    settings.cache_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".unzip-", dir=settings.cache_dir))
    try:
        safe_extract_zip(path, work, options.limits, label)
        return _folder_role(work, settings, options, label)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@register_importer(".png", ".json")
def import_card(path: Path, settings: Settings, options: ImportOptions) -> Role:
    """A character card; a card naming a world already imported gets it. A world-info file is linked instead."""
    from .card_extras import world_name
    from .cards import card_to_role, read_card_bytes
    from .worlds import saved_world, with_world

    label = _label(path, options)
    data = read_bytes(path, options.limits, label)
    world = _world_in(data, label)
    if world is not None:
        return import_world(world, settings, options, label)
    spec, card, image = read_card_bytes(data, label, options.limits)
    role = card_to_role(spec, card, source=f"character card {label}")
    book = saved_world(world_name(role), settings)
    return _persist(with_world(role, book) if book else role, settings, image, label)


def _world_in(data: bytes, label: str):
    """The world in a SillyTavern world-info file (JSON with 'entries'), or None for anything else."""
    import json

    from .safety import PNG_SIGNATURE, decode_text
    from .worlds import is_world_info, world_from_json

    if data.startswith(PNG_SIGNATURE):
        return None
    try:
        obj = json.loads(decode_text(data, label))
    except (json.JSONDecodeError, ImportProblem):
        return None  # the card reader says what is wrong with it
    return world_from_json(obj, label) if is_world_info(obj) else None


def _card_naming(world: str, settings: Settings) -> str | None:
    """The id of the imported character, latest first, whose card names this world and has none linked yet."""
    import json

    from .card_extras import world_name

    found = []
    for meta in settings.roles_dir.glob("*/role.json") if settings.roles_dir.is_dir() else ():
        try:
            ext = json.loads(meta.read_text(encoding="utf-8")).get("extensions") or {}
        except (OSError, ValueError, AttributeError):
            continue
        probe = Role(id="", name="", system_prompt="", stories=[], extensions=ext if isinstance(ext, dict) else {})
        if "world" not in probe.extensions and world_name(probe).casefold() == world.casefold():
            found.append((meta.stat().st_mtime, meta.parent.name))
    return max(found)[1] if found else None


def import_world(book, settings: Settings, options: ImportOptions, label: str) -> Role:
    """Save a world by its name and link it to a character (see ImportOptions), which is saved as a new one."""
    from .worlds import save_world, with_world

    save_world(book, settings)
    target = options.world_for or _card_naming(book.name, settings) or options.world_fallback
    if not target:
        raise ImportProblem(ngettext(
            "{name}: the world '{world}' ({n} entry) is saved, but no character is linked to it: no card imported "
            "so far names it. Import a card that names it, or link it to a character (--link-to NAME, or add it in the "
            "page while talking to that character).",
            "{name}: the world '{world}' ({n} entries) is saved, but no character is linked to it: no card imported "
            "so far names it. Import a card that names it, or link it to a character (--link-to NAME, or add it in the "
            "page while talking to that character).", len(book.entries), name=label, world=book.name))
    role = load_role(target, settings)
    portrait = role.image_path.read_bytes() if role.image_path and role.image_path.is_file() else None
    return _persist(with_world(role, book), settings, portrait, role.image_path.name if role.image_path else label)


@register_importer(".jsonl")
def import_jsonl(path: Path, settings: Settings, options: ImportOptions) -> Role:
    from .chatharuhi_jsonl import parse_chatharuhi_jsonl

    label = _label(path, options)
    text = read_text(path, options.limits, label)
    role = parse_chatharuhi_jsonl(text, label, role_name=options.name, embedder=_active_embedder(settings),
                                  source=label)
    _check_scene_count(role, label, options.limits)
    return _persist(role, settings)


def _active_embedder(settings: Settings):
    """The deployment's embedder, to check stored vectors against its name and dimension."""
    from ..embedding import get_embedder

    return get_embedder(settings.embedder)  # UnknownNameError: a sentence naming the known embedders


@register_importer(".txt")
def import_script(path: Path, settings: Settings, options: ImportOptions) -> Role:
    from .script_scenes import ScriptOptions, role_from_script

    label = _label(path, options)
    role = role_from_script(read_text(path, options.limits, label), options.name, source_name=label,
                            options=ScriptOptions(aliases=tuple(options.aliases), series=options.series))
    _check_scene_count(role, label, options.limits)
    return _persist(role, settings)


def _check_scene_count(role: Role, label: str, limits: Limits) -> None:
    if len(role.stories) > limits.max_scenes:
        raise ImportProblem(_("{name} holds {count} scenes; the limit is {limit}.", name=label,
                               count=format(len(role.stories), ","), limit=format(limits.max_scenes, ",")))


def import_file(path: Path | str, settings: Settings | None = None, options: ImportOptions = ImportOptions()) -> Role:
    """Turn one file (or folder) from outside into a saved, validated role."""
    settings = settings or Settings.from_env()
    path = Path(path)
    label = _label(path, options)
    if path.is_symlink():
        raise ImportProblem(_("{name} is a link; links are not accepted, send the file itself.", name=label))
    if path.is_dir():
        return import_folder(path, settings, options)
    suffix = Path(label).suffix.lower() or path.suffix.lower()
    importer = IMPORTERS.get(suffix)
    if importer is None:
        kinds = ", ".join(accepted_suffixes())
        raise ImportProblem(_("{name}: files of type '{suffix}' are not accepted. Send one of: {kinds}.", name=label,
                               suffix=suffix or _("none"), kinds=kinds))
    check_file(path, options.limits, label)
    return importer(path, settings, options)


def import_hub(ref: str, settings: Settings | None = None, options: ImportOptions = ImportOptions()) -> Role:
    """A role from the Hub (downloaded once, then served from huggingface_hub's cache)."""
    from . import hub

    settings = settings or Settings.from_env()
    parsed = hub.parse_hub_id(ref)
    if parsed is None:
        raise RoleNotFoundError(_("'{ref}' is not a Hub id; use owner/name or owner/name/role.", ref=ref))
    key = f"hub:{parsed.label}"
    cached = _peek(key)
    if cached is not None:
        return cached
    local = hub.fetch(parsed, settings)
    if parsed.filename:
        role = _hub_jsonl(local, parsed, Path(parsed.filename).stem, settings, options)
    else:
        kind, found = hub.dataset_content(local, parsed)
        if kind == "package":
            role = _package_role(found, settings, options, parsed.label)
        else:  # a community role: the dataset's one file is a ChatHaruhi jsonl
            role = _hub_jsonl(found, parsed, parsed.repo_id.split("/")[1], settings, options)
    return _remember(key, role)


def _hub_jsonl(path: Path, parsed, stem: str, settings: Settings, options: ImportOptions) -> Role:
    """A ChatHaruhi jsonl from the Hub, named and described by the catalogue when it lists the role."""
    from .chatharuhi_jsonl import parse_chatharuhi_jsonl
    from .hub import listed_role

    listed = listed_role(parsed.label)
    label = path.name
    text = read_text(path, options.limits, label)
    role = parse_chatharuhi_jsonl(
        text, label, role_name=options.name or (listed.name if listed else None),
        embedder=_active_embedder(settings), source=f"https://huggingface.co/datasets/{parsed.repo_id}",
        role_id=derive_role_id(stem, text),
    )
    _check_scene_count(role, label, options.limits)
    if listed:
        names = [n for n in (listed.name_en, listed.name_zh) if n and n != role.name]
        role = replace(role, series=listed.series or role.series, aliases=with_derived(role.name, [*role.aliases, *names]),
                       user_name=listed.user_name or role.user_name,
                       description=f"{listed.series} · {listed.group}, from the Hugging Face Hub.")
    return _persist(role, settings)


# ------------------------------------------------------------------ the entry point


def load_role(ref: str | Path, settings: Settings | None = None, options: ImportOptions = ImportOptions()) -> Role:
    """Any role reference (see the module docstring) as a validated Role."""
    if not isinstance(ref, Path):
        ref = ref.strip()
        found = _find_bundled(ref) if ref else None  # bundled names win over files of the same name
        if found is not None:
            return _cached(str(found), lambda: load_role_package(found))
        role = _peek(f"id:{ref}")  # the per-turn path: an imported role already in memory
        if role is not None:
            return role
        settings = settings or Settings.from_env()
        role = _imported(ref, settings) if ref else None
        if role is not None:
            return role
    if isinstance(ref, Path) or (ref and Path(ref).expanduser().exists()):
        path = Path(ref).expanduser()
        if path.is_dir() and (path / "role.json").is_file() and not options.display_name:
            # a package folder on this machine is used in place, under its own id
            return _cached(f"dir:{path.resolve()}", lambda: load_role_package(path))
        return import_file(path, settings, options)
    settings = settings or Settings.from_env()
    from .hub import parse_hub_id

    if "/" in ref and parse_hub_id(ref):
        return import_hub(ref, settings, options)
    if "/" in ref or "\\" in ref:
        raise RoleNotFoundError(_("No role package folder or file at {ref}.", ref=ref))
    known = ", ".join(bundled_ids()) or _("none")
    raise RoleNotFoundError(_("No character called '{ref}'. Bundled characters: {known}.", ref=ref, known=known))


def open_role(ref: str | Path, settings: Settings, progress: Progress | None = None,
              options: ImportOptions = ImportOptions()) -> Role:
    """Load any role and make sure its scenes are searchable (built once, with progress)."""
    from .store import open_store

    role = load_role(ref, settings, options)
    open_store(role, _active_embedder(settings), settings, progress=progress)
    return role


def role_summary(role: Role) -> dict:
    """A few facts for listings and the CLI."""
    return {"id": role.id, "name": role.name, "series": role.series, "language": role.language,
            "scenes": len(role.stories), "portrait": bool(role.image_path)}


__all__ = [
    "BUNDLED_DIR", "IMPORTERS", "ImportOptions", "accepted_suffixes", "bundled_ids", "bundled_roles",
    "import_file", "import_hub", "load_role", "open_role", "register_importer", "role_summary",
]
