"""The names a character answers to, and finding them in a line.

A visitor calls Sherlock Holmes "Sherlock", "Holmes", "Mr Holmes" or "福尔摩斯", and 林黛玉 "黛玉",
"林姑娘" or "Lin Daiyu". A role package lists these in role.json (`aliases`, format 3); for a
package written before format 3, and for every import (a card, a script, a ChatHaruhi dataset),
the obvious ones are derived from the name: the given and family names of a Latin name, the given
name of a Chinese one, the parts of a name written with "·".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

TITLES = frozenset({
    "mr", "mrs", "ms", "miss", "dr", "doctor", "sir", "lady", "lord", "count", "countess", "captain",
    "professor", "king", "queen", "prince", "princess", "master", "madam", "madame", "saint", "st",
    "general", "colonel", "major", "inspector", "father", "mother", "uncle", "aunt", "the", "of", "de",
    "van", "von", "la", "le", "du", "da", "di", "del", "al", "el", "and",
})
# Latin names that are also everyday words: they call the character only when written with a capital
EVERYDAY_WORDS = frozenset({
    "will", "grace", "hope", "mark", "rose", "may", "joy", "faith", "bill", "pat", "sue", "frank", "count",
    "rich", "young", "art", "sky", "star", "summer", "river", "august", "king", "queen", "lady", "master",
})
COMPOUND_SURNAMES = frozenset({
    "诸葛", "欧阳", "司马", "上官", "慕容", "令狐", "东方", "皇甫", "尉迟", "长孙", "宇文", "公孙", "独孤", "南宫",
    "西门", "夏侯", "轩辕", "端木", "司徒", "澹台", "百里", "呼延", "完颜", "耶律", "段干", "钟离",
})
HAN = "\u3400-\u4dbf\u4e00-\u9fff"  # the Han characters of names and role ids
_HAN = re.compile(rf"^[{HAN}]+$")


def is_cjk(text: str) -> bool:
    return any("\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" for ch in text)


def derived_names(name: str) -> list[str]:
    """The names that follow from the full name alone: "Sherlock Holmes" → Sherlock, Holmes;
    "Count Dracula" → Dracula; 林黛玉 → 黛玉; 诸葛孔明 → 孔明; 夏洛克·福尔摩斯 → 夏洛克, 福尔摩斯."""
    name = (name or "").strip()
    out: list[str] = []
    if "·" in name or "・" in name:
        out += [p.strip() for p in re.split(r"[·・]", name) if len(p.strip()) >= 2]
    elif _HAN.match(name):
        if len(name) == 3 and name[:2] not in COMPOUND_SURNAMES:
            out.append(name[1:])  # 林黛玉 → 黛玉
        elif len(name) == 4 and name[:2] in COMPOUND_SURNAMES:
            out.append(name[2:])  # 诸葛孔明 → 孔明
    elif not is_cjk(name):
        words = [w for w in re.split(r"\s+", name) if w]
        if len(words) > 1:
            out += [w for w in words if len(w) >= 2 and w.strip(".").lower() not in TITLES and re.search("[A-Za-z]", w)]
    return [n for n in dict.fromkeys(out) if n != name]


def with_derived(name: str, aliases: Iterable[str]) -> list[str]:
    """The listed aliases, then the derived names not already among them (order kept, no repeats)."""
    listed = [a.strip() for a in aliases if a and a.strip() and a.strip() != name]
    return list(dict.fromkeys([*listed, *derived_names(name)]))


@functools.lru_cache(maxsize=2048)  # every line of a scene is checked against every cast member's names
def _latin_pattern(name: str) -> re.Pattern:
    """A Latin name as whole words. One word keeps its first letter's case ("Sherlock" and "SHERLOCK",
    never "will" for Will or "old" for Old); several words match in any case when one of them is a
    proper name ("mr. holmes", "count dracula"), so "the count of votes" does not call the Count."""
    words = name.split()
    if len(words) == 1:
        w = words[0]
        return re.compile(rf"(?<![\w]){re.escape(w[0])}(?i:{re.escape(w[1:])})(?![\w])")
    parts = [re.escape(p.rstrip(".")) + (r"\.?" if p.rstrip(".").lower() in TITLES else "") for p in words]
    proper = any(p.strip(".").lower() not in TITLES | EVERYDAY_WORDS for p in words)
    if not proper:  # "the Count": the sentence may open with it ("The Count is here")
        parts[0] = f"(?i:{parts[0][:1]}){parts[0][1:]}"
    body = r"\s+".join(parts)
    return re.compile(rf"(?<![\w]){body}(?![\w])", re.IGNORECASE if proper else 0)


def written_small(names: Iterable[str], texts: Iterable[str]) -> list[str]:
    """The lower-case forms of one-word Latin names that call the character typed in a hurry ("alice",
    "lizzie"): only a name whose lower-case form `texts` (the cast's scenes) never use as a word ("will", "rose",
    "count" are words there, or in EVERYDAY_WORDS and TITLES, and keep needing a capital)."""
    words = {w for t in texts for w in re.findall(r"(?<![\w'’])[a-z][a-z'’-]+", t)}
    out = []
    for name in names:
        low = (name or "").strip().lower()
        if (" " not in low and re.fullmatch(r"[a-z][a-z'’-]+", low) and low != name.strip()
                and low not in words and low not in EVERYDAY_WORDS and low not in TITLES):
            out.append(low)
    return list(dict.fromkeys(out))


def find_name(text: str, names: Iterable[str]) -> int | None:
    """Where any of `names` first occurs in `text`, or None. Chinese names match anywhere but need two
    characters ("亮" alone is too common); Latin names match as whole words."""
    best: int | None = None
    for name in names:
        name = (name or "").strip()
        if not name:
            continue
        if is_cjk(name):
            if len(name) < 2:
                continue
            pos = text.find(name)
        else:
            m = _latin_pattern(name).search(text)
            pos = m.start() if m else -1
        if pos >= 0 and (best is None or pos < best):
            best = pos
    return best
