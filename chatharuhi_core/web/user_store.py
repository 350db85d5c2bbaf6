"""A signed-in visitor's chats kept on the Space's persistent storage, under a folder of their own, so they come
back on any browser; "Forget me" deletes that folder. The record is browser_store's (the same checks and caps,
never a key or a token); the folder is named by a hash of the account's id, never by a name a visitor chose.

Only for a visitor signed in with Hugging Face on a Space whose storage persists (`Settings.user_chats`);
everyone else's chats stay in their own browser.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from ..i18n import _, ngettext
from .browser_store import Restored
from .common import LIST_SEPARATOR

RECORD = "chats.json"


def account_id(profile: object) -> str | None:
    """The signed-in account's stable id (OpenID `sub`; the user name when a profile has no sub), or None."""
    if profile is None:
        return None
    get = profile.get if isinstance(profile, dict) else (lambda k: getattr(profile, k, None))
    found = get("sub") or get("preferred_username") or get("username")
    return str(found) if found else None


def user_folder(root: Path, account: str) -> Path:
    return root / hashlib.sha256(account.encode("utf-8")).hexdigest()[:32]


def read_user(root: Path, account: str) -> dict | None:
    """The account's kept record, or None when there is none (or it cannot be read: the visit starts fresh)."""
    try:
        return json.loads((user_folder(root, account) / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_user(root: Path, account: str, record: dict) -> None:
    """Replace the account's record in one step (a crash mid-write leaves the old one)."""
    folder = user_folder(root, account)
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".chats-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f, ensure_ascii=False)
        os.replace(tmp, folder / RECORD)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def forget_user(root: Path, account: str) -> int:
    """Delete everything kept for the account; returns how many chats there were."""
    record = read_user(root, account) or {}
    shutil.rmtree(user_folder(root, account), ignore_errors=True)
    return len(record.get("chats") or [])


def welcome_back(name: str, kept: Restored, label) -> str:
    """The line a returning signed-in visitor sees: which chats this Space kept for them (`label`: a role's name)."""
    if not kept.chats:
        return ""
    listed = _(LIST_SEPARATOR).join(ngettext("{name} ({n} exchange)", "{name} ({n} exchanges)", len(c.history),
                                             name=label(rid)) for rid, c in kept.chats.items())
    return _("Welcome back, {name}: this Space kept your chats with {listed}. Pick a character to go on; "
             "“Forget me” in Settings deletes them.", name=name, listed=listed)
