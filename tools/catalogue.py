"""The catalogue's upkeep: find every message the code marks (_, N_, ngettext in the package; L in the page) and
keep chatharuhi_core/locale/zh/LC_MESSAGES/*.po in step with them.

    python tools/catalogue.py check    # what is missing, empty, unused or has other placeholders (exit 1 if any)
    python tools/catalogue.py update [part]  # add the missing messages, with an empty Chinese, to their part's
                                             # file (only that part's, when named: page, web, cli or library)

A message goes to the file of the part that first uses it: page.po (page/, app.py), web.po (chatharuhi_core/web),
cli.po (the command line) and library.po (the rest). The Chinese is written by a person and read in review.
"""

from __future__ import annotations

import string
import sys
from dataclasses import dataclass, field
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
ZH = ROOT / "chatharuhi_core" / "locale" / "zh" / "LC_MESSAGES"
KEYWORDS = {"_": None, "N_": None, "L": None, "ngettext": (1, 2)}
SOURCES = [ROOT / "app.py", *sorted((ROOT / "page").glob("*.py")), *sorted((ROOT / "chatharuhi_core").rglob("*.py"))]


@dataclass
class Marked:
    """One message as the code marks it: its English (and English plural) and where it is used."""

    id: str
    plural: str | None = None
    places: list[str] = field(default_factory=list)


def part_of(place: str) -> str:
    """The catalogue file a message first used at `place` belongs to."""
    if place.startswith(("page/", "app.py")):
        return "page"
    if place.startswith("chatharuhi_core/web/"):
        return "web"
    if place.startswith(("chatharuhi_core/cli", "chatharuhi_core/__main__")):
        return "cli"
    return "library"


def marked() -> dict[str, Marked]:
    """Every marked message in the code, by its English."""
    found: dict[str, Marked] = {}
    for path in SOURCES:
        if "__pycache__" in path.parts:
            continue
        place = str(path.relative_to(ROOT))
        for _line, text, _comments, _context in extract_from_file("python", path, keywords=KEYWORDS):
            singular, plural = (text[0], text[1]) if isinstance(text, tuple) else (text, None)
            if not singular:
                continue
            entry = found.setdefault(singular, Marked(singular, plural))
            entry.places.append(place)
    return found


def catalogues() -> dict[str, Catalog]:
    """The Chinese catalogue files, by part."""
    out = {}
    for path in sorted(ZH.glob("*.po")):
        with path.open("rb") as fh:
            out[path.stem] = read_po(fh, locale="zh")
    return out


def fields(text: str) -> set[str]:
    """The {placeholders} of a message."""
    try:
        return {name for _lit, name, _spec, _conv in string.Formatter().parse(text) if name}
    except ValueError:
        return {"<unbalanced braces>"}


def problems() -> list[str]:
    """Every way the catalogue and the code disagree, as sentences."""
    code, files = marked(), catalogues()
    out, seen = [], {}
    for part, catalog in files.items():
        for message in catalog:
            if not message.id:
                continue
            key = message.id[0] if isinstance(message.id, tuple) else message.id
            if key in seen:
                out.append(f"{key!r} is in both {seen[key]}.po and {part}.po")
            seen[key] = part
            strings = message.string if isinstance(message.string, tuple) else (message.string,)
            if not all(strings) or message.fuzzy:
                out.append(f"{part}.po: {key!r} has no Chinese")
                continue
            ids = message.id if isinstance(message.id, tuple) else (message.id,)
            want = set().union(*(fields(i) for i in ids))
            for text in strings:
                if fields(text) != want:
                    out.append(f"{part}.po: {key!r} has placeholders {sorted(want)}, its Chinese {sorted(fields(text))}")
            if key not in code:
                out.append(f"{part}.po: {key!r} is used nowhere in the code")
    for key, entry in code.items():
        if key not in seen:
            out.append(f"{key!r} ({entry.places[0]}) is not in the catalogue")
    return out


def update(only: str | None = None) -> int:
    """Add every missing message, with an empty Chinese, to its part's file (only `only`'s, when given: two people
    writing two parts never rewrite each other's file); return how many."""
    code, files = marked(), catalogues()
    known = {m.id[0] if isinstance(m.id, tuple) else m.id for c in files.values() for m in c if m.id}
    added = 0
    for key, entry in code.items():
        if key in known:
            continue
        part = part_of(entry.places[0])
        if only and part != only:
            continue
        catalog = files.setdefault(part, Catalog(locale="zh", project="chatharuhi", charset="utf-8"))
        msgid = (entry.id, entry.plural) if entry.plural else entry.id
        catalog.add(msgid, ("",) if entry.plural else "", locations=[(p, None) for p in sorted(set(entry.places))])
        added += 1
    ZH.mkdir(parents=True, exist_ok=True)
    for part, catalog in files.items():
        if only and part != only:
            continue
        with (ZH / f"{part}.po").open("wb") as fh:
            write_po(fh, catalog, width=0, include_lineno=False)
    return added


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "check"
    if command == "update":
        print(f"added {update(argv[1] if len(argv) > 1 else None)} messages; write their Chinese in {ZH.relative_to(ROOT)}/*.po")
        return 0
    found = problems()
    for line in found:
        print(line)
    print(f"{len(found)} problems" if found else "the catalogue matches the code")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
