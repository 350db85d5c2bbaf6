"""Where roles come from. One function, load_role(), turns a role reference into a Role.

Now: a bundled id (or name) and a role package folder. Roles are cached per process and
shared read-only by every visitor.
"""

from __future__ import annotations

import threading
from pathlib import Path

from .errors import RoleNotFoundError
from .role import Role, load_role_package

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "characters"

_CACHE: dict[str, Role] = {}
_LOCK = threading.Lock()


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
    if (direct / "role.json").is_file():
        return direct
    wanted = ref.strip().casefold()
    for rid in bundled_ids():
        if rid.casefold() == wanted:
            return BUNDLED_DIR / rid
    for rid in bundled_ids():  # by display name or alias (e.g. "Sherlock Holmes", "孙悟空")
        role = _load_cached(str(BUNDLED_DIR / rid), BUNDLED_DIR / rid)
        if wanted in {n.casefold() for n in role.speaker_names}:
            return BUNDLED_DIR / rid
    return None


def _load_cached(key: str, path: Path) -> Role:
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = load_role_package(path)
        return _CACHE[key]


def load_role(ref: str | Path) -> Role:
    """A bundled id or name, or the path of a role package folder."""
    if isinstance(ref, Path) or (isinstance(ref, str) and ("/" in ref or "\\" in ref)):
        path = Path(ref).expanduser()
        if path.is_dir():
            return _load_cached(str(path.resolve()), path)
        raise RoleNotFoundError(f"No role package folder at {path}.")
    found = _find_bundled(ref)
    if found is None:
        known = ", ".join(bundled_ids()) or "none"
        raise RoleNotFoundError(f"No character called '{ref}'. Bundled characters: {known}.")
    return _load_cached(str(found), found)
