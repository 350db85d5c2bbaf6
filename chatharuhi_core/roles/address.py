"""Whom a line of the character speaks to, learned from the character's own scenes.

孙悟空 calls 唐僧 "师父" and 猪八戒 "呆子"; Holmes ends a sentence with ", Watson." A line that calls someone
by name or by such a word is said to that someone, and quoting it to anybody else puts the visitor in the
wrong role ("呆子" to the master). The words are found, not listed: every speaker of the scenes is called
by their name and the names that follow from it (roles/names.py), with a title or an endearment before it
("Mr Harker", "dearest Jane") and the rest of a longer name after it ("Lady Catherine de Bourgh, madam").
A short Chinese word that opens two or more of the character's answers to one speaker, and never an answer
to another, is that speaker's ("呆子，…" twice to 猪八戒), and so is a capitalised English word set off by
commas (", Papa,"). Repeated syllables ("哈哈", "嘿嘿") are laughter, not names.

Two speakers who are one person ("Lestrade" and "Inspector Lestrade", "宝钗" and "薛宝钗") are one: the
longer name. A word that may call either of two people ("Harker": Jonathan or Mina) calls whichever of
them the line is said to, else the first.

The other way round, `called_by` finds the words the others call the character itself ("Count, …",
"军师，…"), so a group scene knows whom a visitor's line names.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from .lines import NARRATOR_ROLES, parse_scene_lines
from .names import derived_names, is_cjk
from .placeholders import USER

MIN_LEARNED = 2  # a word seen this often, always towards one speaker, is that speaker's
_PUNCT = "，,。.！!？?；;：:…—、"
_OPENING = re.compile(rf"^[\u3400-\u9fff]{{2,3}}(?=[{_PUNCT}])")
_CALLED_EN = re.compile(r"[,;—]\s*([A-Z][a-z]{2,})(?=\s*[,.!?;—…]|\s*$)")  # "I did, Papa, and…"
_OPENING_EN = re.compile(r"^((?:(?:Mr|Mrs|Ms|Dr|St)\.?\s+|[A-Z][a-z]+\s+){0,2}[A-Z][a-z]{2,})(?=\s*,)")  # "Miss Bennet, …"
# words that may stand before a name that calls: "my dear Watson", "Mr Harker", "dearest Jane"
_FOND = (r"(?:(?:[Mm]y|[Dd]ear(?:est)?|[Dd]arling|[Ss]weet|[Gg]ood|[Pp]oor|[Ll]ittle|[Oo]ld|[Yy]oung|[Kk]ind|"
         r"Mr\.?|Mrs\.?|Ms\.?|Miss|Dr\.?|Lady|Lord|Sir|Master|Mistress|Madam|Professor|Inspector|Captain|"
         r"Colonel|Doctor|Uncle|Aunt|Cousin|Brother|Sister|Father|Mother)\s+)*")
_TAIL = r"(?:\s+(?:de|van|von|of|the|[A-Z][\w'’-]+))*"  # "Lady Catherine de Bourgh", "Van Helsing"
_CJK_BEFORE = rf"(?:^|(?<=[{_PUNCT}「“\"'\s]))"
_CJK_AFTER = rf"(?=[{_PUNCT}」”\"']|$)"
# a kin or rank word after a name, before the comma: "杨志兄弟，", "云长兄，", "宝玉哥哥，" call 杨志, 云长, 宝玉
_CJK_KIN = r"(?:兄弟|贤弟|哥哥|大哥|兄长|兄|哥|贤侄|先生|将军|姑娘|妹妹|姐姐|师兄|师弟)?"


@dataclass(frozen=True)
class Addressing:
    """The words that call each speaker of a role's scenes, and the role's own names (never a vocative)."""

    terms: dict[str, str]  # a way of calling someone -> the speaker it calls
    learned: frozenset[str] = frozenset()  # opening words found in the scenes (they call even unpunctuated)
    shared: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a word that may call several speakers
    people: dict[str, str] = field(default_factory=dict)  # a speaker's other name -> the one they go by

    def speaker(self, name: str) -> str:
        """The scenes' name for a visitor who gave one of its short forms ("八戒" -> "猪八戒")."""
        name = (name or "").strip()
        found = self.terms.get(name, name)
        return self.people.get(found, found)

    def called(self, line: str, towards: str = "") -> list[str]:
        """The speakers a line calls, in the order they are called; a word two people share calls the one
        it is said to (`towards`) when it may."""
        towards = self.speaker(towards) if towards else ""
        found: list[tuple[int, str]] = []
        for term, whos in [*((t, (w,)) for t, w in self.terms.items()), *self.shared.items()]:
            if term not in line:  # most terms are absent: a substring test before the pattern
                continue
            at = _vocative_at(line, term, term in self.learned)
            if at is not None:
                found.append((at, towards if towards in whos else whos[0]))
        return list(dict.fromkeys(who for _, who in sorted(found)))

    def elsewhere(self, line: str, user_role: str) -> str:
        """The first speaker other than the visitor that a line calls; "" when it calls nobody else, or when it is
        said to no one in particular (`user_role` "")."""
        if not user_role:
            return ""
        user_role = self.speaker(user_role)
        return next((who for who in self.called(line, user_role) if who != user_role), "")

    def mentions(self, line: str, user_role: str) -> bool:
        """Whether a line speaks of the visitor in the third person ("探明师父关在哪儿" said to 师父 himself): one of
        the words for them is in it without calling them."""
        user_role = self.speaker(user_role)
        if not user_role:
            return False
        words = [t for t, w in self.terms.items() if w == user_role or self.people.get(w) == user_role]
        return any(_named_at(line, t) and _vocative_at(line, t, t in self.learned) is None for t in words)

    def wrong_for(self, line: str, user_role: str) -> bool:
        """Whether a line is not to be said to `user_role`: it calls someone else, or speaks of them in the third
        person; never for a line said to no one in particular (`user_role` "")."""
        return bool(user_role) and bool(self.elsewhere(line, user_role) or self.mentions(line, user_role))


def said_to(message: str, user_role: str) -> str:
    """Who a reply to `message` is said to: the visitor, or, when the message is a bit of scene ("赵云:「军师，…」"),
    the last one speaking in it; "" when only a narrator spoke (a line may then be said to anyone)."""
    speakers = [s for s, _ in parse_scene_lines(message) if s and s.lower() not in NARRATOR_ROLES]
    if speakers:
        return speakers[-1]
    return "" if (user_role or "").strip().lower() in NARRATOR_ROLES else (user_role or "").strip()


def _named_at(line: str, term: str) -> bool:
    """Whether `term` stands in `line` as a word (a Latin name whole and capitalised; a Chinese one anywhere)."""
    if is_cjk(term):
        return term in line
    return re.search(rf"(?<![\w]){re.escape(term)}(?![\w])", line) is not None


def _vocative_at(line: str, term: str, learned: bool) -> int | None:
    """Where `term` is used to call someone in `line`: set off by punctuation (", Watson." / "师父，", with a kin
    or rank word: "杨志兄弟，"), after "你这" ("你这呆子"), or, for a learned Chinese opening word, at the start of the
    line ("呆子听好了")."""
    if is_cjk(term):
        if learned and line.startswith(term):
            return 0
        m = re.search(_CJK_BEFORE + re.escape(term) + _CJK_KIN + _CJK_AFTER, line)
        if m is None:  # "你这呆子半夜打呼噜": "you, this …" calls whoever the word is, whatever follows it
            m = re.search("你们?这(?:个|伙|帮|群|些)?" + re.escape(term), line)
        return m.start() if m else None
    name = re.escape(term)
    # an opening name asked back is an echo of what was said, not a call ("Mycroft? Officially he audits…")
    opening = re.match(rf"\s*(?:[Oo]h,?\s+|[Aa]h,?\s+)?{_FOND}{name}{_TAIL}(?=\s*[,.!;—]|\s*$)", line)
    if opening:
        return 0
    m = re.search(rf"[,;—]\s*{_FOND}{name}{_TAIL}(?=\s*[,.!?;—…]|\s*$)", line)
    return m.start() if m else None


def _opening_word(line: str) -> str:
    """A short Chinese word set off at the start of a line ("呆子，"), not laughter ("哈哈"); else ""."""
    m = _OPENING.match(line)
    return m.group(0) if m and m.group(0)[0] != m.group(0)[1] else ""


def _same_people(speakers: Iterable[str]) -> dict[str, str]:
    """A speaker whose name follows from exactly one other's full name is that one ("Lestrade" -> "Inspector
    Lestrade", "宝钗" -> "薛宝钗")."""
    speakers = list(speakers)
    out = {}
    for s in speakers:
        fuller = [t for t in speakers if t != s and s in derived_names(t)]
        if len(fuller) == 1:
            out[s] = fuller[0]
    return out


def _spoken(scene: str) -> list[tuple[str, str]]:
    return [(s, t) for s, t in parse_scene_lines(scene) if s]


def _is_other(speaker: str, own: frozenset[str]) -> bool:
    """A speaker who is someone else: not the character, a narrator or the visitor's placeholder."""
    return bool(speaker) and speaker not in own and speaker.lower() not in NARRATOR_ROLES and not USER.fullmatch(speaker)


def learn(scenes: Iterable[str], own: Iterable[str]) -> Addressing:
    """The addressing of a character (named `own`) in its scenes."""
    own = frozenset(n.strip() for n in own if n and n.strip())
    speakers: Counter[str] = Counter()
    openings: defaultdict[str, Counter[str]] = defaultdict(Counter)
    called_en: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for scene in scenes:
        spoken = _spoken(scene)
        # `{{user}}` speaking in a card's example is the visitor, whatever name they give: never someone else
        speakers.update(s for s, _ in spoken if _is_other(s, own))
        for (cue_by, _), (by, line) in zip(spoken, spoken[1:]):
            if by not in own or not _is_other(cue_by, own):
                continue
            if word := _opening_word(line):
                openings[word][cue_by] += 1
            for word in set(_CALLED_EN.findall(line)):
                called_en[word][cue_by] += 1
    people = _same_people(speakers)
    claims: defaultdict[str, set[str]] = defaultdict(set)
    for who in speakers:
        for term in (who, *derived_names(who)):
            if term not in own:
                claims[term].add(people.get(who, who))
    learned = set()
    for word, towards in [*openings.items(), *called_en.items()]:
        (who, n), = towards.most_common(1)
        if len(towards) == 1 and n >= MIN_LEARNED and word not in own and word not in claims:
            claims[word].add(people.get(who, who))
            learned.add(word)
    # one term, one speaker; a speaker's own full name stays theirs ("Lestrade" beside "Inspector Lestrade")
    terms = {term: term if term in whos else next(iter(whos)) for term, whos in claims.items()
             if len(whos) == 1 or term in whos}
    shared = {term: tuple(sorted(whos)) for term, whos in claims.items() if term not in terms}
    return Addressing(terms, frozenset(w for w in learned if w in terms), shared, people)


# Characters a Chinese word that calls someone hardly holds: pronouns, demonstratives and particles ("你好，",
# "这泼猴，", "谁能去，" open a line without naming anyone)
NOT_IN_A_NAME = frozenset("你您我俺他她它谁这那哪的了吗呢吧啊么呀哦嘛")
# A character saying what it is called: "My people called me Voivode"
_CALLS_ITSELF = re.compile(r"\b(?:call(?:ed|s)?|name[ds]?) me (?:the )?([A-Z][a-z]{2,})\b")


def called_by(scenes: Iterable[str], own: Iterable[str], addressing: Addressing | None = None) -> tuple[str, ...]:
    """The words the others call the character by, from the lines it answers ("Count, …", "…, Count?",
    "军师，…", "Miss Bennet, …", "相父，…", the most used first) and the names it says it is called by ("called
    me Voivode"); never a word the character opens its own lines with (an interjection), one that calls someone
    else in its scenes, or a Chinese opening made of pronouns and particles ("你好"). An English word must also
    stand as a name somewhere (capitalised inside a sentence: "the Count"), so "Yes, …" and "Well, …" are not
    names. A word heard once counts: a group scene only asks whether a line names someone present."""
    own = frozenset(n.strip() for n in own if n and n.strip())
    scenes = list(scenes)
    addressing = addressing or learn(scenes, own)
    counts: Counter[str] = Counter()
    own_words: set[str] = set()
    text = "\n".join(scenes)
    for scene in scenes:
        spoken = _spoken(scene)
        for s, t in spoken:
            if s in own:
                own_words.update(_callers_words(t))
                counts.update(set(_CALLS_ITSELF.findall(t)))
        for (cue_by, cue), (by, _) in zip(spoken, spoken[1:]):
            if by in own and _is_other(cue_by, own):
                counts.update(set(_callers_words(cue)))
    others = set(addressing.terms) | set(addressing.shared)
    return tuple(w for w, _ in counts.most_common() if w not in own and w not in own_words and w not in others
                 and (not is_cjk(w) or not NOT_IN_A_NAME & set(w)) and (is_cjk(w) or _a_name_in(w, text)))


def _callers_words(line: str) -> set[str]:
    words = {_opening_word(line), *_CALLED_EN.findall(line)}
    m = _OPENING_EN.match(line)
    if m:
        words.add(m.group(1))
    return {w for w in words if w}


def _a_name_in(word: str, text: str) -> bool:
    """Whether an English word is written as a name inside a sentence somewhere (after a lower-case word)."""
    return re.search(rf"\b[a-z]+\s+{re.escape(word)}\b", text) is not None
