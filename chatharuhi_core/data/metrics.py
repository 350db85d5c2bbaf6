"""Reference-based role-play metrics that run offline, and the intervals that make them comparable.

- ROUGE-L F1 against the original line (RoleBench/RoleLLM's metric): the longest common
  subsequence of tokens, where Chinese, Japanese and Korean text counts character by character and
  other text word by word, so a Chinese reply is not one giant "word".
- Out of character: the reply speaks as an AI, assistant or language model, or runs on into
  another speaker's line (the model writing the visitor's part, or a third person's).
- distinct-2: unique bigrams over all bigrams of a set of replies; low means the model repeats itself.
- A 95% bootstrap interval for any of them, so that a difference can be told from noise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
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
_SPEAKER_START = re.compile(r"(?:^|\n)\s*([^\s:：「」\n]{1,24})\s*[:：]\s*「")


def out_of_character(raw: str, speakers: Iterable[str]) -> str:
    """Why a reply breaks character ("" when it does not); `raw` is the model's text before clean-up."""
    m = _AS_A_MODEL.search(raw or "")
    if m:
        return f"speaks as a model ({m.group(0)!r})"
    own = set(speakers)
    for m in _SPEAKER_START.finditer(raw or ""):
        if m.group(1) not in own:
            return f"speaks as {m.group(1)}"
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
        return f"{fmt.format(self.value)} [{fmt.format(self.low)}, {fmt.format(self.high)}]"


NAN_INTERVAL = Interval(0, math.nan, math.nan, math.nan)
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
