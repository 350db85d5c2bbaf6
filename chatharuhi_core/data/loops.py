"""Does a reply loop? Issue 65's reading test, apart from any engine's own guard against repeating itself.

A reply loops when it says one phrase three times or more ("太平，太平，太平！", "I know, I know, I know"), or when
under 60% of its word pairs are distinct (distinct-2 of the reply alone: "你，你，你！你，你！！" is 0.25). Words are
eval's tokens: CJK characters one by one, other scripts word by word, punctuation dropped. A phrase is two
tokens or more, its three sayings not overlapping and close together (within eight times its length: a character
who says "洒家" three times in a long line is speaking of himself, "洒家是洒家，洒家不许" is a loop). This is a
measurement for the tables (bench/loops.py): the local engine's sampling never reads it, so it cannot grade its
own guard (a frequency penalty on the reply's words, llamacpp.word_penalty).
"""

from __future__ import annotations

from .metrics import tokens

MIN_DISTINCT_2 = 0.6
PHRASE_TIMES = 3
PHRASE_MIN = 2  # tokens
WINDOW_PER_TOKEN = 8  # the sayings lie within this many tokens per token of the phrase


def distinct_2(words: list[str]) -> float | None:
    """Unique word pairs over all word pairs of one reply (None under two words)."""
    pairs = list(zip(words, words[1:]))
    return len(set(pairs)) / len(pairs) if pairs else None


def repeated_phrase(words: list[str], times: int = PHRASE_TIMES, shortest: int = PHRASE_MIN) -> str | None:
    """The shortest phrase of `shortest` tokens or more said `times` times close together without overlapping;
    None if none is."""
    for n in range(shortest, len(words) // times + 1):
        starts: dict[tuple[str, ...], list[int]] = {}  # phrase -> where its non-overlapping sayings start
        for i in range(len(words) - n + 1):
            gram = tuple(words[i:i + n])
            said = starts.setdefault(gram, [])
            if said and i < said[-1] + n:
                continue  # overlaps the last saying counted
            said.append(i)
            if len(said) >= times and i + n - said[-times] <= WINDOW_PER_TOKEN * n:
                return ("" if all(len(w) == 1 for w in gram) else " ").join(gram)
    return None


def loop_reason(text: str) -> str | None:
    """Why a reply counts as a loop ("phrase '太平' ×3", "distinct-2 0.25"); None when it does not."""
    words = tokens(text)
    phrase = repeated_phrase(words)
    if phrase is not None:
        return f"phrase '{phrase}' x{PHRASE_TIMES}+"
    d2 = distinct_2(words)
    if d2 is not None and d2 < MIN_DISTINCT_2:
        return f"distinct-2 {d2:.2f}"
    return None


def loops(text: str) -> bool:
    return loop_reason(text) is not None
