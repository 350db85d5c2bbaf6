"""The character picker: tiles for the bundled and added characters, the searchable list, and the
'Add a character' tab's import."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Settings
from ..errors import ChatHaruhiError, InputError
from ..i18n import N_, _, both_spans, language, ngettext
from ..roles.names import is_cjk
from ..roles.role import Role
from ..roles.sources import ImportOptions, bundled_ids, load_role, open_role
from ..roles.store import Progress
from .common import ASSETS, WARNING_MARK, file_url, portrait_of

if TYPE_CHECKING:
    from ..roles.hub import HubRole

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
    group: str = "Bundled · 内置"  # where it comes from (web/tools.py reads it); not shown
    subtitle: str = ""  # the work, in the visitor's language where the package gives it: the tile's tooltip


def in_script_of(lang: str):
    """Whether a name or title is written in `lang`'s script (Chinese characters for zh, else not): the picker's
    list shows one language at a time, as the rest of the page does (issue 67)."""
    chinese = lang.startswith("zh")
    return lambda text: is_cjk(text) == chinese


def search_label(role: Role, lang: str | None = None) -> str:
    """The role's line in the searchable list, in the page's language: its name as written, its name in the
    page's language where the package gives one, its work in that language, then its other names written in that
    language ("美猴王" on a Chinese page, "Monkey King" on an English one). The search box matches anywhere in it,
    and the selected line is what the box shows, so the other language's names come with the English | 中文
    switch, not beside these. A name found inside a longer one already there is left out."""
    lang = lang or language()
    fits = in_script_of(lang)
    written = [a for a in role.aliases if fits(a)]  # a full name in Chinese is written with "·": 夏洛克·福尔摩斯
    named = "" if fits(role.name) or not written else max(written, key=lambda a: "·" in a)
    head = list(dict.fromkeys(t.strip() for t in [role.name, named, role.described(lang).series] if t.strip()))
    aliases = list(dict.fromkeys(a.strip() for a in role.aliases if a.strip() and fits(a)))
    rest: list[str] = []
    for alias in sorted(aliases, key=len, reverse=True):
        if not any(alias.casefold() in kept.casefold() for kept in [*head, *rest]):
            rest.append(alias)
    rest.sort(key=aliases.index)
    return " · ".join(head) + (f" ({', '.join(rest)})" if rest else "")


def hub_label(hub_role: HubRole, lang: str) -> tuple[str, str]:
    """A Hub role's caption (its name as its scenes have it, and in the page's language) and its work in the
    page's language: the catalogue writes each work as "凉宫春日的忧郁 · The Melancholy of Haruhi Suzumiya"."""
    fits = in_script_of(lang)
    other = hub_role.name_zh if lang.startswith("zh") else hub_role.name_en
    names = [hub_role.name] + ([other] if other and other != hub_role.name and not fits(hub_role.name) else [])
    works = [w.strip() for w in hub_role.series.split(" · ") if w.strip()]
    work = next((w for w in works if fits(w)), hub_role.series)
    return " · ".join(names), work


def picker_entries(added: list[str] | None = None, lang: str | None = None) -> list[PickerEntry]:
    """Bundled roles first, then the ones this visitor added, then ChatHaruhi's catalogue on the Hub
    (online), grouped by source. A list label holds the names and the work in `lang` (the visitor's language at
    the time of the event), so a search finds a role by any of them (search_label); the tiles name the work in
    that language too."""
    from ..roles.hub import hub_roles

    lang = lang or language()
    entries = []
    bundled = bundled_ids()
    for rid in [*bundled, *(added or [])]:
        try:
            role = load_role(rid)
        except ChatHaruhiError:
            continue  # an added role whose files were cleaned away
        group = "Bundled · 内置" if rid in bundled else "Yours · 你添加的"
        entries.append(PickerEntry(rid, role.name, search_label(role, lang), portrait_of(role), group=group,
                                   subtitle=role.described(lang).series))
    for hub_role in hub_roles():
        names, work = hub_label(hub_role, lang)
        caption = f"{names} {ONLINE_MARK}"
        label = f"{caption} · {work} · Hub: {hub_role.source}"
        entries.append(PickerEntry(hub_role.ref, caption, label, str(ONLINE_IMAGE), online=True,
                                   group=f"Hub · {hub_role.group}", subtitle=work))
    return entries


# A tile clicked before the visit's start has filled the page (SESSION_READY_JS) waits for it: run beside it, the
# switch and the start each redraw the page, and whichever lands last would win, half of it or all. A click that
# lands on something drawn over the tiles (Gradio's loading overlay, for a moment while they are drawn again) acts
# on the tile under the pointer: the tile looked clickable, so it is (issue 67).
# The tiles' script runs again each time they are drawn again, and the block stays: the block listens once and
# hands each click to the newest drawing's handler (two listeners switched twice, and the second switch cancelled a
# message sent meanwhile).
PICKER_JS = ("let held = null; const go = (ref) => trigger('click', {ref});"
             " const box = element.closest('#picker') || element;"
             " const send = (ref) => { box.dataset.busy = ref; box.dataset.busyAt = String(Date.now()); go(ref); };"
             " box.chatharuhiSend = send;"
             " const busy = () => box.dataset.busy && Date.now() - Number(box.dataset.busyAt || 0) < 30000;"
             " document.addEventListener('chatharuhi-ready', () => { if (held) { send(held); held = null; } });"
             " const under = (e) => (e.clientX || e.clientY) ? document.elementsFromPoint(e.clientX, e.clientY)"
             ".find((x) => x.matches && x.matches('button[data-ref]') && box.contains(x)) : null;"
             " box.chatharuhiTiles = (e) => { const b = e.target.closest('button[data-ref]') || under(e);"
             " if (!b) return; if (document.body.dataset.session !== 'ready') { held = b.dataset.ref;"
             " b.setAttribute('aria-busy', 'true');"
             " setTimeout(() => { if (held) { send(held); held = null; } }, 8000); }"  # a start that failed
             " else if (busy()) box.dataset.queued = b.dataset.ref; else send(b.dataset.ref); };"
             " if (!box.dataset.tilesListen) { box.dataset.tilesListen = '1';"
             " box.addEventListener('click', (e) => box.chatharuhiTiles(e)); }")
# A tile clicked while another one's switch still runs waits for it (`queued` above): Gradio dropped such a click
# (a trigger's "once" mode), and the page stayed on the first character; run side by side, the two switches land in
# any order, and the server cannot tell which click came last. When a switch ends (however it ends), this opens the
# last tile clicked meanwhile, if it is not the one just opened. A switch that never reports back frees the tiles
# after 30 s.
CATCH_UP_JS = ("() => { const box = document.querySelector('#picker'); if (!box) return;"
               " const ran = box.dataset.busy; const next = box.dataset.queued;"
               " box.dataset.busy = ''; box.dataset.queued = '';"
               " if (next && next !== ran && box.chatharuhiSend) box.chatharuhiSend(next); }")


# The search box's pick waits the same way (the event's `js` runs before its function, and is awaited): `n` is
# the number of the event's inputs, passed on unchanged.
def after_start_js(n: int) -> str:
    return ("async (...args) => { if (document.body.dataset.session !== 'ready') await new Promise((done) => {"
            " document.addEventListener('chatharuhi-ready', done, {once: true}); setTimeout(done, 8000); });"
            f" return args.slice(0, {n}); }}")


SESSION_READY_JS = ("() => { document.body.dataset.session = 'ready';"
                    " document.dispatchEvent(new Event('chatharuhi-ready')); }")


def tiles_html(entries: list[PickerEntry]) -> str:
    """The picker's tiles as plain buttons (portrait and name, the work as their tooltip): lighter on the page's
    first paint than a gallery widget. A click sends the tile's ref (PICKER_JS)."""
    tiles = []
    for e in entries:
        ref, name = html.escape(e.ref, quote=True), html.escape(e.caption, quote=True)
        tip = html.escape(f"{e.caption} · {e.subtitle}" if e.subtitle else e.caption, quote=True)
        image = f'<img src="{file_url(e.image)}" alt="" loading="lazy">' if e.image else ""
        tiles.append(f'<button type="button" class="thumbnail-item" data-ref="{ref}" aria-label="{name}" '
                     f'title="{tip}">{image}<span class="caption-label">{name}</span></button>')
    heading = both_spans(N_("Characters"))  # drawn with the page, before its visitor is known
    return f'<div class="tiles-label">{heading}</div><div class="tiles">' + "".join(tiles) + "</div>"


def picker_choices(entries: list[PickerEntry]) -> list[tuple[str, str]]:
    """(label, ref) pairs for the searchable list."""
    return [(e.label, e.ref) for e in entries]


def added_status(role: Role) -> str:
    """What the Add tab says of a character just added, of the world linked to it, and of each of its card's regex
    scripts that was skipped (one sentence each)."""
    from ..roles.card_extras import script_problems

    skipped = "".join(f"\n\n{WARNING_MARK}{html.escape(p, quote=False)}" for p in script_problems(role))
    return _added(role) + skipped


def _added(role: Role) -> str:
    from ..roles.worlds import linked_world

    world = linked_world(role)
    if not world:
        return ngettext("Added **{name}** ({n} scene). It is in your picker now.",
                        "Added **{name}** ({n} scenes). It is in your picker now.", len(role.stories), name=role.name)
    lore = sum(e.enabled for e in role.lorebook.entries) if role.lorebook else 0  # as the heading counts them
    return ngettext("Added **{name}** with the world **{world}** linked ({n} entry in its lorebook). It is in your "
                    "picker now.", "Added **{name}** with the world **{world}** linked ({n} entries in its lorebook). "
                    "It is in your picker now.", lore, name=role.name, world=html.escape(world))


def add_character(hub_id: str, upload: str | None, name: str, settings: Settings,
                  progress: Progress | None = None, current: str | None = None) -> Role:
    """The 'add a character' tab: a Hub id or an uploaded file becomes a role for this visitor. A world-info file is
    linked to the character whose card names it, else to `current`, the one the visitor is talking to."""
    hub_id = (hub_id or "").strip()
    if upload:
        path = Path(upload)
        return open_role(str(path), settings, progress,
                         ImportOptions(name=(name or "").strip() or None, display_name=path.name,
                                       world_fallback=current))
    if hub_id:
        from ..roles.hub import parse_hub_id

        if parse_hub_id(hub_id) is None:
            raise InputError(_("'{hub_id}' is not a Hub id. Use owner/name, or owner/name/role for a ChatHaruhi "
                               "dataset.", hub_id=hub_id))
        return open_role(hub_id, settings, progress, ImportOptions(name=(name or "").strip() or None))
    raise InputError(_("Give a Hub id or choose a file to upload first."))
