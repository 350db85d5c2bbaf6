"""Search by words beside search by meaning: a small BM25 index that grows one unit at a time.

An embedder finds a paraphrase, but ranks "the support group" on day 3 below ten chats about feelings; words
find the rare one ("Caroline", "Xiamen", "绿禾公园") wherever it was said. Memory fuses both (memory.py).

Tokens: English (and any Latin script) as lower-case words with a light suffix stemmer ("recommended",
"recommends" -> "recommend"), minus function words; Chinese, Japanese and Korean as character bigrams plus
single characters (no dictionary to load, and no word boundary to guess wrong). The index is per conversation,
held in plain dicts: 1,000 exchanges are searched in well under a millisecond.
"""

from __future__ import annotations

import math
import re
import struct
from collections import Counter as Tally
from collections.abc import Iterable, Sequence

import numpy as np

K1 = 1.2
_INT = struct.Struct("<i")
B = 0.75

_WORD = re.compile(r"[0-9]+(?:[.,:][0-9]+)*|[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
CJK_RUN = re.compile(  # Chinese, Japanese and Korean script
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")

STOPWORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before being below between both
but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for from further
had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his how how's
i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off on
once only or other ought our ours ourselves out over own same shan't she she'd she'll she's should shouldn't so some
such than that that's the their theirs them themselves then there there's these they they'd they'll they're they've
this those through to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when
when's where where's which while who who's whom why why's will with won't would wouldn't you you'd you'll you're
you've your yours yourself yourselves also just really yes oh okay ok well like get got tell told say said know
remember ever once mention mentioned
""".split())
# characters too common in Chinese to tell exchanges apart on their own (they still count inside a bigram)
CJK_STOP = frozenset("的了是我你他她它们在和也就都吗呢吧啊呀嘛么这那个有没不很还过给对说到会要让把被上下里")


def _stem(word: str) -> str:
    """A light English stemmer: plural and tense endings, then a final e or y, never below three letters
    ("movies", "movie" -> "movi"; "hiking", "hikes" -> "hik"; "stopped" -> "stop")."""
    if not word.isalpha() or len(word) < 4:
        return word
    for suffix, keep in (("ies", "i"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) + len(keep) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                break
            if suffix == "es" and not word.endswith(("ches", "shes", "xes", "oes", "sses")):
                continue
            stem = word[: len(word) - len(suffix)] + keep
            if suffix in ("ing", "ed") and len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]
            word = stem
            break
    if len(word) > 3 and word[-1] in "ey":
        word = word[:-1] + ("i" if word[-1] == "y" else "")
    return word


def tokens(text: str) -> list[str]:
    """The words BM25 counts: stemmed Latin words and CJK bigrams and characters, minus function words."""
    out: list[str] = []
    for run in CJK_RUN.split(text.lower()):
        for word in _WORD.findall(run):
            word = word.replace("'s", "") if word.endswith("'s") else word
            if word not in STOPWORDS and (len(word) > 1 or word.isdigit()):
                out.append(_stem(word))
    for run in CJK_RUN.findall(text):
        out.extend(ch for ch in run if ch not in CJK_STOP)
        out.extend(run[i:i + 2] for i in range(len(run) - 1))
    return out


class LexicalIndex:
    """BM25 over units added in order (an exchange, a witnessed line); a unit can be dropped from the end on
    (the history was rewritten there). Each word keeps the units it occurs in (ascending) and how often, packed
    in bytes, so a query is scored with a few numpy operations per word and the garbage collector has nothing
    to walk (with a list or an array per word, a scene's six indexes of 1,000 lines made every full collection
    take 34-54 ms, a visible stall in a turn). Not thread-safe on its own: RecallIndex holds its lock."""

    def __init__(self) -> None:
        self._docs: list[tuple[str, ...]] = []  # each unit's distinct words
        self._lengths = b""  # int32 per unit
        self._units: dict[str, bytes] = {}  # word -> the units it occurs in, ascending, int32
        self._counts: dict[str, bytes] = {}  # word -> how often, unit by unit, int32

    def __len__(self) -> int:
        return len(self._docs)

    def add(self, texts: Iterable[str]) -> None:
        for text in texts:
            doc = Tally(tokens(text))
            n = len(self._docs)
            self._docs.append(tuple(doc))
            self._lengths += _INT.pack(sum(doc.values()))
            at = _INT.pack(n)
            for term, tf in doc.items():
                self._units[term] = self._units.get(term, b"") + at
                self._counts[term] = self._counts.get(term, b"") + _INT.pack(tf)

    def truncate(self, n: int) -> None:
        """Keep the first `n` units."""
        while len(self._docs) > n:
            doc = self._docs.pop()
            self._lengths = self._lengths[:-_INT.size]
            for term in doc:
                self._units[term] = self._units[term][:-_INT.size]
                self._counts[term] = self._counts[term][:-_INT.size]
                if not self._units[term]:
                    del self._units[term], self._counts[term]

    def scores(self, query: str | Sequence[str], limit: int | None = None) -> dict[int, float]:
        """BM25 of each unit among the first `limit` that shares a word with `query` (text or tokens)."""
        terms = tokens(query) if isinstance(query, str) else list(query)
        n = len(self._docs) if limit is None else min(limit, len(self._docs))
        if not n or not terms:
            return {}
        lengths = np.frombuffer(self._lengths, dtype="<i4", count=n).astype(np.float64)
        norm = K1 * (1 - B + B * lengths / (lengths.mean() or 1.0))
        total = np.zeros(n, dtype=np.float64)
        for term, repeats in Tally(terms).items():
            units = self._units.get(term)
            if not units:
                continue
            at = np.frombuffer(units, dtype="<i4")
            if at[0] >= n:
                continue
            tf = np.frombuffer(self._counts[term], dtype="<i4").astype(np.float64)
            if at[-1] >= n:
                keep = at < n
                at, tf = at[keep], tf[keep]
            idf = math.log(1 + (n - len(at) + 0.5) / (len(at) + 0.5))
            total[at] += idf * (1 + 0.5 * (repeats - 1)) * tf * (K1 + 1) / (tf + norm[at])
        hit = np.nonzero(total)[0]
        return {int(i): float(total[i]) for i in hit}

    def expansion(self, units: Sequence[int], exclude: Iterable[str], n: int, limit: int | None = None) -> list[str]:
        """The words the best `units` share that the query lacks (pseudo-relevance feedback): those in two or
        more of them, rarest in the conversation first, at most `n`."""
        total = len(self._docs) if limit is None else min(limit, len(self._docs))
        seen = Tally(term for i in units if i < total for term in self._docs[i])
        skip = set(exclude)
        scored = [(shared * math.log(1 + total / (len(self._units[term]) // _INT.size)), term)
                  for term, shared in seen.items() if shared >= 2 and term not in skip]
        return [term for _score, term in sorted(scored, reverse=True)[:n]]

