"""Reference-based role-play metrics that run offline, and the intervals that make them comparable.

- ROUGE-L F1 against the original line (RoleBench/RoleLLM's metric): the longest common
  subsequence of tokens, where Chinese, Japanese and Korean text counts character by character and
  other text word by word, so a Chinese reply is not one giant "word".
- Out of character: the reply speaks as an AI, assistant or language model, runs on into another
  speaker's line (the model writing the visitor's part, or a third person's), writes a markdown or scene
  separator, answers in the wrong language for the role, or runs on far past a line's length. A rate of
  such replies carries an exact (Clopper-Pearson) interval, so that 0 of 80 reads "at most 4.5%".
- distinct-2: unique bigrams over all bigrams of a set of replies; low means the model repeats itself.
- A 95% bootstrap interval for any of them, so that a difference can be told from noise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}_]+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """CJK characters one by one, other scripts as lowercase words; punctuation dropped."""
    return _TOKEN.findall((text or "").lower())


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (two rows of the usual table)."""
    if not a or not b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(reply: str, reference: str) -> float:
    """ROUGE-L F1 of a reply against the reference line; 0 when either has no tokens."""
    cand, ref = tokens(reply), tokens(reference)
    lcs = lcs_length(cand, ref)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(cand), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


_AS_A_MODEL = re.compile(
    r"\b(as an? (ai|artificial intelligence|language model|large language model|assistant|chatbot|virtual assistant)"
    r"|i(?: am|'m) (?:just |only )?an? (ai|artificial intelligence|language model|assistant|chatbot|bot)\b"
    r"|i(?: am|'m) not (?:a )?(real|human|a real person)"
    r"|openai|chatgpt)"
    r"|作为(一个|一名)?(人工智能|AI|ai|语言模型|助手|聊天机器人)"
    r"|我(只)?是(一个|一名)?(人工智能|AI|ai|语言模型|(AI|智能)?助手|聊天机器人)",
    re.IGNORECASE,
)
_QUOTE_OPEN = "「『“\"'‘"
_LATIN_NAME = r"[A-Z][\w.'’-]*(?:[ \t]+[A-Z][\w.'’-]*){0,3}"
_CJK_NAME = rf"[{_CJK}·]{{1,8}}"
# a speaker tag at a line's start: a Latin or CJK name, an ASCII or full-width colon, then an opening quote
_TAG_QUOTED = re.compile(rf"^[ \t]*(?:\*\*)?({_LATIN_NAME}|{_CJK_NAME})(?:\*\*)?[ \t]*[:：][ \t]*[{_QUOTE_OPEN}]", re.M)
# ...or a capitalised Latin name and a colon with no quote, on any line but the first (the line itself may be
# the character's "Elementary: …"; a later one is a script the model is writing on)
_TAG_BARE = re.compile(rf"\n[ \t]*(?:\*\*)?({_LATIN_NAME})(?:\*\*)?[ \t]*[:：][ \t]*\S")
# a line that is only a markdown rule or heading marks, or the scene separator of the prompt (###)
_SEPARATOR = re.compile(r"^\s*(?:#{2,}|-{3,}|\*{3,}|_{3,}|={3,})\s*$|#{3,}", re.M)
_LATIN_LETTER = re.compile(r"[A-Za-z]")
_CJK_LETTER = re.compile(rf"[{_CJK}]")
RUNAWAY_TOKENS = 400  # a character's line, not a chapter: more tokens than this is a model running on


def _quoting(name: str, quote: str) -> bool:
    """A character quoting a saying in its own line, not a tag: `孔子曰：「…」`, `他的名言是：‘…’`."""
    return bool(_CJK_LETTER.match(name)) and (quote in "‘'" or name[-1] in "曰说道云是讲问答")


def language_share(text: str) -> float:
    """The share of CJK characters among CJK characters and Latin letters (NaN when there are neither)."""
    cjk, latin = len(_CJK_LETTER.findall(text or "")), len(_LATIN_LETTER.findall(text or ""))
    return cjk / (cjk + latin) if cjk + latin else math.nan


def wrong_language(text: str, language: str) -> str:
    """Why a reply is not in the role's language ("" when it is): a Chinese role answering mostly in Latin
    letters, or an English one with a fifth or more CJK characters."""
    share = language_share(text)
    if math.isnan(share) or not language:
        return ""
    if language.lower().startswith(("zh", "ja", "ko")) and share < 0.5:
        return "answers in Latin letters, not the role's language"
    if language.lower().startswith("en") and share >= 0.2:
        return "answers in CJK characters, not the role's English"
    return ""


def out_of_character(raw: str, speakers: Iterable[str], language: str = "") -> str:
    """Why a reply breaks character ("" when it does not); `raw` is the model's text before clean-up.

    Checked in turn: speaking as an AI or assistant (English and Chinese); a line that opens with another
    speaker's tag (Latin names of up to four words and CJK names; 「」, “”, "" or none; ASCII or full-width
    colon); a markdown rule or the prompt's scene separator; a reply in the wrong language for the role
    (`language`, e.g. "zh" or "en"; skipped when empty); a runaway length.
    """
    text = raw or ""
    m = _AS_A_MODEL.search(text)
    if m:
        return f"speaks as a model ({m.group(0)!r})"
    own = {name.casefold() for name in speakers}
    for pattern in (_TAG_QUOTED, _TAG_BARE):
        for m in pattern.finditer(text):
            name = m.group(1).strip()
            if name.casefold() in own or _quoting(name, m.group(0)[-1]):
                continue
            return f"speaks as {name}"
    m = _SEPARATOR.search(text)
    if m:
        return f"writes a separator ({m.group(0).strip()!r})"
    reason = wrong_language(text, language)
    if reason:
        return reason
    count = len(tokens(text))
    if count > RUNAWAY_TOKENS:
        return f"runs on ({count} tokens)"
    return ""


def distinct_n(replies: Iterable[str], n: int = 2) -> float:
    """Unique n-grams over all n-grams in a set of replies (NaN when there are none)."""
    grams: list[tuple[str, ...]] = []
    for reply in replies:
        toks = tokens(reply)
        grams += [tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)]
    return len(set(grams)) / len(grams) if grams else math.nan


@dataclass(frozen=True)
class Interval:
    """A statistic with its 95% bootstrap interval over n items."""

    n: int
    value: float
    low: float
    high: float

    def overlaps(self, other: Interval) -> bool:
        return not (self.high < other.low or other.high < self.low)

    def text(self, fmt: str = "{:.3f}") -> str:
        if math.isnan(self.value):
            return "–"
        if math.isnan(self.low) or math.isnan(self.high):  # a figure of the whole set, with no interval
            return fmt.format(self.value)
        return f"{fmt.format(self.value)} [{fmt.format(self.low)}, {fmt.format(self.high)}]"


NAN_INTERVAL = Interval(0, math.nan, math.nan, math.nan)


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in logs so that n in the thousands stays exact enough."""
    if p <= 0:
        return 1.0
    if p >= 1:
        return 1.0 if k >= n else 0.0
    lp, lq = math.log(p), math.log1p(-p)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq
            for i in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(x - top) for x in logs))


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> Interval:
    """The exact binomial interval of a rate of k in n: never [0, 0] for 0 of n (0 of 80: at most 4.5%)."""
    if n <= 0:
        return NAN_INTERVAL
    tail = (1 - confidence) / 2

    def solve(f: Callable[[float], float]) -> float:  # f rises from below 0 to above 0 on [0, 1]
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        return (lo + hi) / 2

    low = 0.0 if k == 0 else solve(lambda p: (1 - tail) - _binomial_cdf(k - 1, n, p))
    high = 1.0 if k == n else solve(lambda p: tail - _binomial_cdf(k, n, p))
    return Interval(n, k / n, low, high)
BOOTSTRAP_SAMPLES = 1000


def bootstrap(items: Sequence, statistic: Callable[[Sequence], float] | None = None, *,
              samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> Interval:
    """Percentile bootstrap: resample the items with replacement and take the 2.5th and 97.5th
    percentiles of the statistic (the mean of numbers by default). NaN items are left out."""
    rng = np.random.default_rng(seed)
    if statistic is None:
        xs = np.asarray([x for x in items if not math.isnan(x)], dtype=np.float64)
        if not len(xs):
            return NAN_INTERVAL
        means = xs[rng.integers(0, len(xs), (samples, len(xs)))].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5]) if len(xs) > 1 else (xs[0], xs[0])
        return Interval(len(xs), float(xs.mean()), float(low), float(high))
    if not items:
        return NAN_INTERVAL
    value = statistic(items)
    n = len(items)
    if n == 1:
        return Interval(1, value, value, value)
    stats = [statistic([items[i] for i in rng.integers(0, n, n)]) for _ in range(samples)]
    stats = [s for s in stats if not math.isnan(s)]
    low, high = (np.percentile(stats, [2.5, 97.5]) if stats else (math.nan, math.nan))
    return Interval(n, value, float(low), float(high))


def paired_bootstrap(differences: Mapping[str, Sequence[float]], *, samples: int = BOOTSTRAP_SAMPLES,
                     seed: int = 0) -> Interval:
    """The mean of per-case differences (system A minus system B on the same case) with a 95% percentile
    interval, resampling cases with replacement within each stratum (role), so every resample keeps the
    roles' weights: a role with easy cases cannot fill a resample by chance. NaN differences are left out."""
    strata = [np.asarray([d for d in ds if not math.isnan(d)], dtype=np.float64) for ds in differences.values()]
    strata = [s for s in strata if len(s)]
    n = sum(len(s) for s in strata)
    if not n:
        return NAN_INTERVAL
    rng = np.random.default_rng(seed)
    totals = np.zeros(samples)
    for s in strata:
        totals += s[rng.integers(0, len(s), (samples, len(s)))].sum(axis=1)
    value = float(sum(s.sum() for s in strata) / n)
    low, high = np.percentile(totals / n, [2.5, 97.5])
    return Interval(n, value, float(low), float(high))
