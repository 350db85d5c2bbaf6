"""The character picker: tiles for the bundled and added characters, the searchable list, and the
'Add a character' tab's import."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import ChatHaruhiError, InputError
from ..roles.role import Role
from ..roles.sources import ImportOptions, bundled_ids, load_role, open_role
from ..roles.store import Progress
from .common import ASSETS, file_url, portrait_of

ONLINE_MARK = "☁"
ONLINE_IMAGE = ASSETS / "online.png"


@dataclass(frozen=True)
class PickerEntry:
    """One tile of the character picker and its line in the searchable list."""

    ref: str  # a bundled or imported id, or a Hub id
    caption: str  # under the portrait
    label: str  # in the searchable list
    image: str | None
    online: bool = False
    group: str = "Bundled · 内置"


def picker_entries(added: list[str] | None = None) -> list[PickerEntry]:
    """Bundled roles first, then the ones this visitor added, then ChatHaruhi's catalogue on the Hub
    (online), grouped by source. A list label holds both names and the work, so a search finds a role
    by any of them."""
    from ..roles.hub import hub_roles

    entries = []
    bundled = bundled_ids()
    for rid in [*bundled, *(added or [])]:
        try:
            role = load_role(rid)
        except ChatHaruhiError:
            continue  # an added role whose files were cleaned away
        label = f"{role.name} · {role.series}" if role.series else role.name
        group = "Bundled · 内置" if rid in bundled else "Yours · 你添加的"
        entries.append(PickerEntry(rid, role.name, label, portrait_of(role), group=group))
    for hub_role in hub_roles():
        caption = f"{hub_role.label} {ONLINE_MARK}"
        label = f"{caption} · {hub_role.series} · Hub: {hub_role.source}"
        entries.append(PickerEntry(hub_role.ref, caption, label, str(ONLINE_IMAGE), online=True,
                                   group=f"Hub · {hub_role.group}"))
    return entries


# A tile clicked before the visit's start has filled the page (SESSION_READY_JS) waits for it: run beside it, the
# switch and the start each redraw the page, and whichever lands last would win, half of it or all.
PICKER_JS = ("let held = null; const go = (ref) => trigger('click', {ref});"
             " document.addEventListener('chatharuhi-ready', () => { if (held) { go(held); held = null; } });"
             " element.addEventListener('click', (e) => { const b = e.target.closest('button[data-ref]');"
             " if (!b) return; if (document.body.dataset.session === 'ready') go(b.dataset.ref);"
             " else { held = b.dataset.ref; b.setAttribute('aria-busy', 'true');"
             " setTimeout(() => { if (held) { go(held); held = null; } }, 8000); } });")  # a start that failed
# The search box's pick waits the same way (the event's `js` runs before its function, and is awaited): `n` is
# the number of the event's inputs, passed on unchanged.
def after_start_js(n: int) -> str:
    return ("async (...args) => { if (document.body.dataset.session !== 'ready') await new Promise((done) => {"
            " document.addEventListener('chatharuhi-ready', done, {once: true}); setTimeout(done, 8000); });"
            f" return args.slice(0, {n}); }}")


SESSION_READY_JS = ("() => { document.body.dataset.session = 'ready';"
                    " document.dispatchEvent(new Event('chatharuhi-ready')); }")


def tiles_html(entries: list[PickerEntry]) -> str:
    """The picker's tiles as plain buttons (portrait and name): lighter on the page's first paint than a
    gallery widget. A click sends the tile's ref (PICKER_JS)."""
    tiles = []
    for e in entries:
        ref, name = html.escape(e.ref, quote=True), html.escape(e.caption, quote=True)
        image = f'<img src="{file_url(e.image)}" alt="" loading="lazy">' if e.image else ""
        tiles.append(f'<button type="button" class="thumbnail-item" data-ref="{ref}" aria-label="{name}" '
                     f'title="{html.escape(e.label, quote=True)}">{image}<span class="caption-label">{name}</span></button>')
    return '<div class="tiles-label">Characters · 角色</div><div class="tiles">' + "".join(tiles) + "</div>"


def picker_choices(entries: list[PickerEntry]) -> list[tuple[str, str]]:
    """(label, ref) pairs for the searchable list."""
    return [(e.label, e.ref) for e in entries]


def add_character(hub_id: str, upload: str | None, name: str, settings: Settings,
                  progress: Progress | None = None) -> Role:
    """The 'add a character' tab: a Hub id or an uploaded file becomes a role for this visitor."""
    hub_id = (hub_id or "").strip()
    if upload:
        path = Path(upload)
        return open_role(str(path), settings, progress,
                         ImportOptions(name=(name or "").strip() or None, display_name=path.name))
    if hub_id:
        from ..roles.hub import parse_hub_id

        if parse_hub_id(hub_id) is None:
            raise InputError(f"'{hub_id}' is not a Hub id. Use owner/name, or owner/name/role for a ChatHaruhi dataset.")
        return open_role(hub_id, settings, progress, ImportOptions(name=(name or "").strip() or None))
    raise InputError("Give a Hub id or choose a file to upload first.")
