"""Words that look like someone being called, whoever it is: the wide net a group scene needs.

roles/address.py knows whom a line calls when the word is the name of someone in the character's scenes or a word
said to one of them twice. That is precise, and enough for a chat with someone of the character's own book. A
group scene puts characters of different books together, so every line of a member's scenes was said to someone
who is not there, and a call the learned words miss ("嫂子过奖了", "三将军，…", "Your ladyship") reaches the visitor or
another member by a name that is not theirs. Here the net is wide: a capitalised word set off by commas, a
respectful form of address, kin called by what they are ("my dear sister"), a short Chinese word at the start of a
sentence before a comma or before "你", "你这…", and the words Chinese uses to call kin and rank. A group scene
leaves out a member's line holding such a word unless it names someone present; a chat does not use this (it would
lose good lines to words that only look like calls).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from .address import NOT_IN_A_NAME
from .lines import parse_scene_lines

_HAN = "\u3400-\u9fff"
_STOP = "，,。！!？?；;…—、：:"
_SENTENCE = "。！!？?；;…"
# the characters a word that calls someone hardly holds: pronouns ("洒家", "咱"), demonstratives, particles,
# "is", "not", laughter, and the words that put "你" after them as an object ("替你", "给你", "跟你")
_FUNCTION = NOT_IN_A_NAME | frozenset("洒咱是不就也都还很哈嘿呵嘻哼唉哎嗯替给把被让叫对和跟与者")
# how Chinese calls kin and rank: said at the start of a sentence, these call someone
_KIN_AND_RANK = (
    "哥哥|姐姐|妹妹|弟弟|嫂子|嫂嫂|大嫂|兄弟|兄长|贤弟|贤兄|大哥|二哥|三哥|四哥|大姐|姐夫|妹夫|外祖母|外祖父|祖母|"
    "祖父|奶奶|爷爷|老太太|老爷|太太|夫人|娘子|相公|官人|公子|小姐|姑娘|丫头|老儿|老人家|老丈|老伯|大娘|大爷|"
    "将军|大人|主公|陛下|丞相|元帅|都督|先生|师父|师傅|师兄|师弟|师妹|长老|施主|道长|大王|娘娘|舅舅|舅母|姨妈|"
    "婶婶|叔叔|伯伯|表哥|表妹|二爷|宝玉|恩人|客官|贤侄|孩儿|徒弟|众位|诸位|列位"
)
_KIN_AT = re.compile(rf"(?:^|(?<=[{_STOP}「]))(?:[一二三四五六七八九十大小老]?)(?:{_KIN_AND_RANK})")
# before a comma only: a short word and "！" is as often an exclamation ("好酒！", "放肆！"); kin and rank words
# called out ("嫂嫂！") are caught as such
_OPENING = re.compile(rf"(?:^|(?<=[{_SENTENCE}]))([{_HAN}]{{2,3}})(?=[，,])")
_BEFORE_YOU = re.compile(rf"(?:^|(?<=[{_STOP}]))([{_HAN}]{{2,3}})(?=[你您])")
_YOU_THIS = re.compile(rf"你们?这(?:伙|帮|群|些)?([{_HAN}]{{1,3}})(?=[{_STOP}])")  # "你这土地，" "你们这伙鸟人，"
_RESPECT = re.compile(r"\b(?:[Yy]our (?:[Ll]adyship|[Ll]ordship|[Mm]ajesty|[Hh]ighness|[Gg]race|[Ee]xcellency|"
                      r"[Hh]onou?r|[Ww]orship|[Rr]everence)|[Mm]y (?:[Ll]ord|[Ll]ady|[Ll]iege|[Kk]ing|[Qq]ueen))\b")
_TITLED = r"(?:(?:[Mm]y |[Dd]ear(?:est)? |Mr\.? |Mrs\.? |Miss |Dr\.? |Lady |Lord |Sir )*)[A-Z][a-z]{2,}(?:\s+[A-Z][a-z]+)*"
_CALLED = re.compile(rf"[,;—]\s*({_TITLED})(?=\s*[,.!?;:—…]|\s*$)")  # "…, Jane." "…, your ladyship"
_OPENS = re.compile(rf"(?:^|(?<=[.?!]\s))(?:Oh,?\s+|Ah,?\s+)?({_TITLED})(?=\s*,)")  # "Jane, he looks at you…"
_YOU_ARE = re.compile(rf"\b[Yy]ou are ({_TITLED})")  # "I know you are Lady Catherine de Bourgh"
# kin called by what they are to the speaker ("…, my dear sister.", "Mamma, …"): no one in a group of strangers is
_KIN_EN = (r"(?:[Mm]y\s+)?(?:[Dd]ear(?:est)?\s+)?(?:[Ss]ister|[Bb]rother|[Cc]ousin|[Aa]unt|[Uu]ncle|[Mm]other|[Ff]ather|"
           r"[Pp]apa|[Mm]amma|[Mm]ama|[Nn]iece|[Nn]ephew|[Dd]aughter|[Hh]usband|[Ww]ife)")
_KIN_CALLED = re.compile(rf"(?:[,;—]\s*({_KIN_EN})(?=\s*[,.!?;:—…]|\s*$)|(?:^|(?<=[.?!]\s))({_KIN_EN})(?=\s*,))")
_NOT_A_CALL_EN = frozenset({
    "Yes", "Yet", "Well", "Now", "Then", "Still", "Indeed", "Quite", "Certainly", "Perhaps", "Nothing", "Never",
    "Alas", "Oh", "Ah", "No", "Not", "And", "But", "Why", "What", "How", "Come", "Look", "Listen", "Please",
    "Thank", "Thanks", "True", "Very", "Good", "Hush", "Enough", "Tonight", "Today", "Tomorrow", "There", "Here",
    "Surely", "Exactly", "Precisely", "Naturally", "Of", "So", "Madam", "Sir",
})


def openers(scenes: Iterable[str], own: Iterable[str]) -> frozenset[str]:
    """Words of the character's scenes that call no one: Chinese words it opens its answers with towards two or
    more people (interjections, "好啊"), and every English word the scenes write in lower case ("eat", so
    "Eat, my friend" is no call; "jane" never is)."""
    own = frozenset(own)
    towards: defaultdict[str, Counter[str]] = defaultdict(Counter)
    lower: set[str] = set()
    for scene in scenes:
        lower.update(re.findall(r"(?<![\w'’])[a-z][a-z'’-]+", scene))
        spoken = [(s, t) for s, t in parse_scene_lines(scene) if s]
        for (cue_by, _), (by, line) in zip(spoken, spoken[1:]):
            if by in own and cue_by not in own:
                if m := _OPENING.match(line):
                    towards[m.group(1)][cue_by] += 1
    return frozenset(w for w, c in towards.items() if len(c) >= 2) | lower


def said_to(scenes: Iterable[str], own: Iterable[str], general: frozenset[str] = frozenset()) -> dict[str, frozenset[str]]:
    """For each word of the net in the character's answers, the people it answered when it said it ("主公，…" to
    刘备): such a word may be said to them again, to no one else."""
    own = frozenset(own)
    out: defaultdict[str, set[str]] = defaultdict(set)
    for scene in scenes:
        spoken = [(s, t) for s, t in parse_scene_lines(scene) if s]
        for (cue_by, _), (by, line) in zip(spoken, spoken[1:]):
            if by in own and cue_by not in own:
                for word in vocatives(line, general):
                    out[word].add(cue_by)
    return {w: frozenset(who) for w, who in out.items()}


def _a_word(word: str) -> bool:
    """A Chinese word that may be someone's name or title: no function characters, no "X是X" echo."""
    return not _FUNCTION & set(word) and not (len(word) == 3 and word[0] == word[2])


def vocatives(line: str, general: frozenset[str] = frozenset()) -> list[str]:
    """The words in `line` that look like calling someone (the wide net), in order; `general` are the
    character's interjections (`openers`), which call no one."""
    found: list[tuple[int, str]] = []
    if re.search(f"[{_HAN}]", line):
        for m in _KIN_AT.finditer(line):
            found.append((m.start(), m.group(0)))
        for pattern in (_OPENING, _BEFORE_YOU):
            for m in pattern.finditer(line):
                if _a_word(m.group(1)) and m.group(1) not in general:
                    found.append((m.start(1), m.group(1)))
        for m in _YOU_THIS.finditer(line):
            found.append((m.start(), m.group(0)))
    for m in _RESPECT.finditer(line):
        found.append((m.start(), m.group(0)))
    for m in _KIN_CALLED.finditer(line):
        word = m.group(1) or m.group(2)
        found.append((line.index(word, m.start()), word))
    for m in [*_CALLED.finditer(line), *_OPENS.finditer(line), *_YOU_ARE.finditer(line)]:
        word = m.group(1)
        if (word.split()[-1] not in _NOT_A_CALL_EN and word.split()[0] not in _NOT_A_CALL_EN
                and not (" " not in word and word.lower() in general)):
            found.append((m.start(1), word))
    return list(dict.fromkeys(w for _, w in sorted(found)))
