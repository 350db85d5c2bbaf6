"""Whom a line of the character speaks to, learned from the character's own scenes.

孙悟空 calls 唐僧 "师父" and 猪八戒 "呆子"; Holmes ends a sentence with ", Watson." A line that calls someone
by name or by such a word is said to that someone, and quoting it to anybody else puts the visitor in the
wrong role ("呆子" to the master). The words are found, not listed: every speaker of the scenes is called
by their name and the names that follow from it (roles/names.py), and a short Chinese word that opens two
or more of the character's answers to one speaker, and never an answer to another, is that speaker's
("呆子，…" twice to 猪八戒), and so is a capitalised English word set off by commas (", Papa,"). Repeated
syllables ("哈哈", "嘿嘿") are laughter, not names.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from .lines import NARRATOR_ROLES, parse_scene_lines
from .names import derived_names, is_cjk
from .placeholders import USER

MIN_LEARNED = 2  # an opening word seen this often, always towards one speaker, is that speaker's
_PUNCT = "，,。.！!？?；;：:…—、"
_OPENING = re.compile(rf"^[\u3400-\u9fff]{{2,3}}(?=[{_PUNCT}])")
_CALLED_EN = re.compile(r"[,;—]\s*([A-Z][a-z]{2,})(?=\s*[,.!?;—…]|\s*$)")  # "I did, Papa, and…"
_FOND = r"(?:(?:[Mm]y|[Dd]ear|[Ss]weet|[Gg]ood|[Pp]oor|[Ll]ittle|[Oo]ld|[Yy]oung)\s+)*"  # "my dear Watson", "sweet Lucy"
_CJK_BEFORE = rf"(?:^|(?<=[{_PUNCT}「“\"'\s]))"
_CJK_AFTER = rf"(?=[{_PUNCT}」”\"']|$)"


@dataclass(frozen=True)
class Addressing:
    """The words that call each speaker of a role's scenes, and the role's own names (never a vocative)."""

    terms: dict[str, str]  # a way of calling someone -> the speaker it calls
    learned: frozenset[str] = frozenset()  # opening words found in the scenes (they call even unpunctuated)

    def speaker(self, name: str) -> str:
        """The scenes' name for a visitor who gave one of its short forms ("八戒" -> "猪八戒")."""
        name = (name or "").strip()
        return self.terms.get(name, name)

    def called(self, line: str) -> list[str]:
        """The speakers a line calls, in the order they are called."""
        found: list[tuple[int, str]] = []
        for term, who in self.terms.items():
            if term not in line:  # most terms are absent: a substring test before the pattern
                continue
            at = _vocative_at(line, term, term in self.learned)
            if at is not None:
                found.append((at, who))
        return list(dict.fromkeys(who for _, who in sorted(found)))

    def elsewhere(self, line: str, visitor: str) -> str:
        """The first speaker other than the visitor that a line calls; "" when it calls nobody else, or when it is
        said to no one in particular (`visitor` "")."""
        if not visitor:
            return ""
        visitor = self.speaker(visitor)
        return next((who for who in self.called(line) if who != visitor), "")


def said_to(message: str, visitor: str) -> str:
    """Who a reply to `message` is said to: the visitor, or, when the message is a bit of scene ("赵云:「军师，…」"),
    the last one speaking in it; "" when only a narrator spoke (a line may then be said to anyone)."""
    speakers = [s for s, _ in parse_scene_lines(message) if s and s.lower() not in NARRATOR_ROLES]
    if speakers:
        return speakers[-1]
    return "" if (visitor or "").strip().lower() in NARRATOR_ROLES else (visitor or "").strip()


def _vocative_at(line: str, term: str, learned: bool) -> int | None:
    """Where `term` is used to call someone in `line`: set off by punctuation (", Watson." / "师父，"), or, for
    a learned Chinese opening word, at the start of the line ("呆子听好了")."""
    if is_cjk(term):
        if learned and line.startswith(term):
            return 0
        m = re.search(_CJK_BEFORE + re.escape(term) + _CJK_AFTER, line)
        return m.start() if m else None
    name = re.escape(term)
    opening = re.match(rf"\s*{_FOND}{name}(?=\s*[,!;—]|\s*$)", line)
    if opening:
        return 0
    m = re.search(rf"[,;—]\s*{_FOND}{name}(?=\s*[,.!?;—…]|\s*$)", line)
    return m.start() if m else None


def learn(scenes: Iterable[str], own: Iterable[str]) -> Addressing:
    """The addressing of a character (named `own`) in its scenes."""
    own = frozenset(n.strip() for n in own if n and n.strip())
    speakers: Counter[str] = Counter()
    openings: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for scene in scenes:
        spoken = [(s, t) for s, t in parse_scene_lines(scene) if s]
        # `{{user}}` speaking in a card's example is the visitor, whatever name they give: never someone else
        speakers.update(s for s, _ in spoken if s not in own and s.lower() not in NARRATOR_ROLES and not USER.fullmatch(s))
        for (cue_by, _), (by, line) in zip(spoken, spoken[1:]):
            if by not in own or cue_by in own or USER.fullmatch(cue_by):
                continue
            m = _OPENING.match(line)
            if m and m.group(0)[0] != m.group(0)[1]:
                openings[m.group(0)][cue_by] += 1
            for word in set(_CALLED_EN.findall(line)):
                openings[word][cue_by] += 1
    claims: defaultdict[str, set[str]] = defaultdict(set)
    for who in speakers:
        for term in (who, *derived_names(who)):
            if term not in own:
                claims[term].add(who)
    learned = set()
    for word, towards in openings.items():
        (who, n), = towards.most_common(1)
        if len(towards) == 1 and n >= MIN_LEARNED and word not in own and who.lower() not in NARRATOR_ROLES:
            claims[word].add(who)
            learned.add(word)
    # one term, one speaker; a speaker's own full name stays theirs ("Lestrade" beside "Inspector Lestrade")
    terms = {term: term if term in whos else next(iter(whos)) for term, whos in claims.items()
             if len(whos) == 1 or term in whos}
    return Addressing(terms, frozenset(w for w in learned if w in terms))
