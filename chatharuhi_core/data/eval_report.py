"""How an evaluation is reported: each case's scores (CaseResult), one system's cases (Report) and several
systems side by side (Comparison: the markdown tables, the CSV files and the plot). data/evaluate.py runs the
cases and scores the replies; this module only reads what it found.

Every interval is 95%: a bootstrap of per-case means, an exact binomial interval for a rate, and for a head to
head a paired bootstrap of per-case differences, resampled within each role (data/metrics.py).
"""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..config import Budgets
from .baselines import BASELINES
from .metrics import Interval, bootstrap, clopper_pearson, distinct_n, paired_bootstrap
from .next_line import DISTRACTORS, VARIANTS, ChoiceResult

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Condition:
    """One way of prompting the model, compared with the others on the same cases."""

    name: str
    label: str
    budgets: Callable[[Budgets], Budgets]


CONDITIONS: dict[str, Condition] = {
    c.name: c
    for c in (
        Condition("system", "system prompt only", lambda b: replace(b, top_k=0, story_tokens=0)),
        Condition("full", "full ChatHaruhi", lambda b: b),
    )
}

# per-case metrics: name -> (column label, higher is better)
METRICS = {"cosine": ("cosine", True), "rouge_l": ("ROUGE-L", True), "ooc": ("out of character", False),
           "elsewhere": ("calls someone else", False),
           "in_language": ("in the role's language", True), "distinct_2": ("distinct-2", True)}
RATES = {"ooc", "in_language", "elsewhere"}  # 0/1 per case: an exact binomial interval
BASELINE_ORDER = ("greeting", "random-line")  # scored beside every comparison unless asked not to
Depth = int | None  # a filter on cases: None for all, 1 for depth 1, 2 for depth 2 or more
DEPTHS = {1: "depth 1", 2: "depth 2+"}  # the scene's first answer (no history of it); a later one


def at_depth(depth: int, wanted: Depth) -> bool:
    """Whether a case at `depth` is among the `wanted` ones (None: all; 1: the first answers; 2: the later)."""
    return wanted is None or (depth == 1 if wanted == 1 else depth >= 2)


def verdict(difference: Interval) -> str:
    """What a paired difference lets a table say: higher or lower only where its interval excludes 0."""
    return "higher" if difference.low > 0 else "lower" if difference.high < 0 else "no difference shown"


@dataclass
class CaseResult:
    system: str
    role_id: str
    role_name: str
    scene_id: str
    condition: str
    query: str
    reference: str
    reply: str = ""
    cosine: float = math.nan
    rouge_l: float = math.nan
    ooc: float = math.nan  # 1.0 when out of character
    ooc_reason: str = ""
    in_language: float = math.nan  # 1.0 when the reply is in the role's language
    elsewhere: float = math.nan  # 1.0 when the reply calls by name someone other than the one it answers
    elsewhere_to: str = ""  # whom it calls (roles/address.py)
    distinct_2: float = math.nan  # unique word pairs over all pairs in the reply (loops score low)
    error: str = ""
    sample: int = 0  # which of the case's samples (engines that sample answer each case several times)
    seed: int | None = None  # the engine's draw for this sample (None: it does not sample, or drew freely)
    scenes: int = 0  # classic scenes in the prompt
    prompt_tokens: int = 0  # the prompt's length, in the eval's ruler (cl100k_base) or the engine's tokens
    depth: int = 1  # the character's answer the case asks for in its scene: 2 or more, after history of it

    @property
    def score(self) -> float:  # the paper's metric, by its old name
        return self.cosine


def _paired(mine: dict[tuple[str, str], float], theirs: dict[tuple[str, str], float]) -> Interval:
    """Per-case differences on the (role, scene) cases both have, bootstrapped within each role."""
    by_role: dict[str, list[float]] = {}
    for key in sorted(mine.keys() & theirs.keys()):
        by_role.setdefault(key[0], []).append(mine[key] - theirs[key])
    return paired_bootstrap(by_role)


@dataclass
class Report:
    """Every case of one system under every condition."""

    engine: str
    model: str
    scorer: str
    conditions: list[str]
    results: list[CaseResult] = field(default_factory=list)
    system: str = ""  # the spec it was asked as
    choices: list[ChoiceResult] = field(default_factory=list)  # next-line choice (data/next_line.py)
    trained_cases: int = 0  # cases whose scene the model trained on (shown only when asked: --allow-trained)
    samples: int = 1  # replies per case and prompt
    greedy: bool = False  # one reply per case at temperature 0, not a seeded draw
    budgets: Budgets | None = None  # the prompt budgets every case was packed with
    choice_note: str = ""  # why there are none, when the system cannot rank lines
    distractors: int = DISTRACTORS

    @property
    def label(self) -> str:
        name = f"{self.engine} · {self.model}" if self.model else self.engine
        return f"{name} (trained on {self.trained_cases} of these cases)" if self.trained_cases else name

    def roles(self) -> list[tuple[str, str]]:
        seen: dict[str, str] = {}
        for r in self.results:
            seen.setdefault(r.role_id, r.role_name)
        return list(seen.items())

    def _pick(self, condition: str, role_id: str | None, depth: Depth = None) -> list[CaseResult]:
        return [r for r in self.results if r.condition == condition and (role_id is None or r.role_id == role_id)
                and not r.error and at_depth(r.depth, depth)]

    @property
    def is_baseline(self) -> bool:
        return self.system in BASELINES

    def language_shares(self, language_of: Callable[[str], str]) -> dict[str, float]:
        """The share of replies in the role's language, per language (by `language_of(role_id)`), under the
        full prompt: what a model is recorded to speak (the language guard reads it)."""
        by_language: dict[str, list[float]] = {}
        for r in self._pick(self.conditions[-1], None):
            if not math.isnan(r.in_language):
                by_language.setdefault(language_of(r.role_id), []).append(r.in_language)
        return {lang: sum(v) / len(v) for lang, v in by_language.items() if lang}

    def interval(self, metric: str, condition: str, role_id: str | None = None, depth: Depth = None) -> Interval:
        """Mean of a per-case metric with its 95% bootstrap interval; a rate (out of character, in the
        role's language) with its exact binomial interval (a bootstrap of 0 of 80 would say [0%, 0%]);
        distinct-2 over the whole set of replies (a greeting said 80 times is one reply's worth of word pairs,
        not 80 varied ones), with no interval: resampling replies repeats some, which lowers it by itself."""
        picked = self._pick(condition, role_id, depth)
        if metric == "distinct_2":
            return Interval(len(picked), distinct_n([r.reply for r in picked]), math.nan, math.nan)
        values = [getattr(r, metric) for r in picked]
        if metric in RATES:  # every reply a trial
            scored = [v for v in values if not math.isnan(v)]
            return clopper_pearson(int(sum(scored)), len(scored))
        return bootstrap(list(self.per_case(metric, condition, role_id, depth).values()))  # samples averaged

    def choice_accuracy(self, variant: str, role_id: str | None = None, depth: Depth = None) -> Interval:
        """The share of cases where the original line ranked first, with its exact binomial interval (a tie
        for first counts 1/n, rounded into the count)."""
        credits = [c.correct for c in self.choices if c.variant == variant and not c.error
                   and (role_id is None or c.role_id == role_id) and at_depth(c.depth, depth)]
        if not credits:
            return Interval(0, math.nan, math.nan, math.nan)
        iv = clopper_pearson(round(sum(credits)), len(credits))
        return Interval(iv.n, sum(credits) / len(credits), iv.low, iv.high)

    def choice_against(self, other: Report, variant: str) -> Interval:
        """Next-line credit, this report minus `other`, per case, with a paired bootstrap within each role."""
        def by_case(rep: Report) -> dict[tuple[str, str], float]:
            return {(c.role_id, c.scene_id): c.correct for c in rep.choices if c.variant == variant and not c.error}

        return _paired(by_case(self), by_case(other))

    def per_case(self, metric: str, condition: str, role_id: str | None = None,
                 depth: Depth = None) -> dict[tuple[str, str], float]:
        """{(role id, scene id): the metric} of every answered case (the mean where a case has several replies)."""
        found: dict[tuple[str, str], list[float]] = {}
        for r in self._pick(condition, role_id, depth):
            value = getattr(r, metric)
            if not math.isnan(value):
                found.setdefault((r.role_id, r.scene_id), []).append(value)
        return {k: float(np.mean(v)) for k, v in found.items()}

    def against(self, other: Report, metric: str, condition: str, depth: Depth = None) -> Interval:
        """This report minus `other` on the cases both answered: the mean per-case difference with a paired
        bootstrap interval, resampled within each role."""
        return _paired(self.per_case(metric, condition, depth=depth), other.per_case(metric, condition, depth=depth))

    def wins(self, role_id: str | None = None) -> tuple[int, int]:
        """(cases where the last condition beat the first on cosine, cases scored under both)."""
        first, last = self.conditions[0], self.conditions[-1]
        by_case: dict[tuple[str, str], dict[str, float]] = {}
        for r in self.results:
            if (role_id is None or r.role_id == role_id) and not math.isnan(r.cosine):
                by_case.setdefault((r.role_id, r.scene_id), {})[r.condition] = r.cosine
        pairs = [d for d in by_case.values() if first in d and last in d]
        return sum(d[last] > d[first] for d in pairs), len(pairs)

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if r.error]

    def rows(self) -> list[dict]:
        """One row per role, then the overall row (every case weighs the same)."""
        out = []
        for role_id, name in [*self.roles(), ("ALL", "all roles")]:
            rid = None if role_id == "ALL" else role_id
            row: dict = {"system": self.label, "role": role_id, "name": name}
            row["cases"] = max((len({(r.role_id, r.scene_id) for r in self._pick(c, rid)}) for c in self.conditions),
                               default=0)
            for c in self.conditions:
                for metric in METRICS:
                    iv = self.interval(metric, c, rid)
                    row[f"{c}_{metric}"] = iv.value
                    row[f"{c}_{metric}_low"] = iv.low
                    row[f"{c}_{metric}_high"] = iv.high
            first, last = self.conditions[0], self.conditions[-1]
            row["gain"] = row[f"{last}_cosine"] - row[f"{first}_cosine"]
            won, paired = self.wins(rid)
            row["win_rate"] = won / paired if paired else math.nan
            out.append(row)
        return out


@dataclass
class Comparison:
    """Several systems on the same held-out cases: the tables, the plots and every reply."""

    reports: list[Report]

    @property
    def conditions(self) -> list[str]:
        return self.reports[0].conditions

    def roles(self) -> list[tuple[str, str]]:
        return self.reports[0].roles()

    def markdown(self) -> str:
        scorer = self.reports[0].scorer
        lines = ["# Role-play evaluation", "",
                 f"Held-out scenes (removed from retrieval): the reply is compared with the character's original "
                 f"line. cosine: sentence-embedding similarity ({scorer}), the paper's metric; ROUGE-L: F1 of the "
                 "longest common subsequence (Chinese by character, other text by word), RoleBench's; out of "
                 "character: replies that speak as an AI or model, run into another speaker's line, write a "
                 "separator, answer in the wrong language or run on (lower is better); calls someone else: replies "
                 "that call by name or nickname someone other than the one they answer (\"呆子\" to 唐僧; "
                 "roles/address.py; lower is better); in the role's language: the share of replies written in it "
                 "(the three rates with an exact Clopper-Pearson interval); "
                 "distinct-2: unique word pairs over all word pairs of the system's replies together (low: "
                 "the replies repeat each other or loop; one figure for the set, no interval). Each other figure "
                 "is a mean with its 95% bootstrap interval." + self._baselines_said(), "",
                 "## Overall", "",
                 "| system | prompt | cases | cosine | ROUGE-L | out of character | calls someone else | "
                 "in the role's language | distinct-2 |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for rep in self.reports:
            for c in rep.conditions[-1:] if rep.is_baseline else rep.conditions:
                n = len(rep.per_case("cosine", c))
                prompt = "none (baseline)" if rep.is_baseline else CONDITIONS[c].label
                cells = [rep.label, prompt, f"{n} × {rep.samples}" if rep.samples > 1 else str(n),
                         rep.interval("cosine", c).text(),
                         rep.interval("rouge_l", c).text(), rep.interval("ooc", c).text("{:.1%}"),
                         rep.interval("elsewhere", c).text("{:.1%}"), rep.interval("in_language", c).text("{:.1%}"),
                         rep.interval("distinct_2", c).text()]
                lines.append("| " + " | ".join(cells) + " |")
        lines += self._what_each_saw()
        for metric in ("cosine", "rouge_l"):
            for c in reversed(self.conditions):
                lines += ["", f"## {METRICS[metric][0]} per role, {CONDITIONS[c].label}", "",
                          "| role | " + " | ".join(r.label for r in self.reports) + " |",
                          "|---|" + "---:|" * len(self.reports)]
                for role_id, name in [*self.roles(), ("ALL", "all roles")]:
                    rid = None if role_id == "ALL" else role_id
                    label = "**all roles**" if rid is None else f"{name} (`{role_id}`)"
                    ivs = [rep.interval(metric, c, rid) for rep in self.reports]
                    best = max((iv.value for iv in ivs if not math.isnan(iv.value)), default=math.nan)
                    cells = [(f"**{iv.text()}**" if iv.value == best and len(ivs) > 1 else iv.text()) for iv in ivs]
                    lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines += self._head_to_head()
        lines += self._next_line()
        lines += self._by_depth()
        for rep in self.reports:
            if rep.failures:
                lines += ["", f"{rep.label}: {len(rep.failures)} replies failed and are left out; the first: "
                              f"{rep.failures[0].error}"]
        return "\n".join(lines) + "\n"

    def _baselines_said(self) -> str:
        """The sentence on the baselines in this comparison (none when it was run without them)."""
        said = [f"{BASELINES[r.system].label}: {BASELINES[r.system].description}"
                for r in self.reports if r.is_baseline]
        return f" Baselines read nothing of the conversation: {'; '.join(said)}." if said else ""

    def _what_each_saw(self) -> list[str]:
        """The prompt each system answered from, so a reader can check the footing was equal."""
        systems = [r for r in self.reports if not r.is_baseline and r.results]
        if not systems:
            return []
        lines = ["", "## What each system saw", "",
                 "Scenes and prompt length are means over the answered cases (prompt tokens counted with the "
                 "budgets' ruler: cl100k_base when systems are compared, else the engine's own tokenizer).", "",
                 "| system | prompt | scene budget | history budget | scenes | prompt tokens | replies per case | seeds |",
                 "|---|---|---:|---:|---:|---:|---:|---|"]
        for rep in systems:
            for c in rep.conditions:
                picked = rep._pick(c, None)
                if not picked:
                    continue
                b = CONDITIONS[c].budgets(rep.budgets) if rep.budgets else None
                seeds = sorted({r.seed for r in picked if r.seed is not None})
                lines.append(f"| {rep.label} | {CONDITIONS[c].label} | {b.story_tokens if b else '–'} | "
                             f"{b.history_tokens if b else '–'} | {np.mean([r.scenes for r in picked]):.1f} | "
                             f"{np.mean([r.prompt_tokens for r in picked]):.0f} | {rep.samples} | "
                             f"{'greedy' if rep.greedy else ', '.join(map(str, seeds)) or '–'} |")
        return lines

    def head_to_head(self) -> list[tuple[Report, Report, str, Interval]]:
        """(system, other, metric, its per-case difference) for each system against each baseline and each
        system before it, full prompt; the interval is a paired bootstrap stratified by role."""
        last = self.conditions[-1]
        systems = [r for r in self.reports if not r.is_baseline]
        out = []
        for i, rep in enumerate(systems):
            others = [r for r in self.reports if r.is_baseline] + systems[:i]
            for other in others:
                for metric in ("cosine", "rouge_l"):
                    out.append((rep, other, metric, rep.against(other, metric, last)))
        return out

    def _head_to_head(self) -> list[str]:
        pairs = self.head_to_head()
        if not pairs:
            return []
        lines = ["", f"## Head to head, {CONDITIONS[self.conditions[-1]].label}", "",
                 "Per-case difference (the first system minus the second) on the cases both answered, with a "
                 "paired 95% bootstrap interval resampled within each role. \"higher\" or \"lower\" only where "
                 "the interval excludes 0.", "",
                 "| system | against | metric | difference | verdict |", "|---|---|---|---:|---|"]
        for rep, other, metric, iv in pairs:
            said = verdict(iv) if not math.isnan(iv.value) else "no shared cases"
            lines.append(f"| {rep.label} | {other.label} | {METRICS[metric][0]} | {iv.text('{:+.3f}')} | {said} |")
        return lines

    def _next_line(self) -> list[str]:
        ranked = [r for r in self.reports if r.choices]
        variants = [v for v in VARIANTS if any(c.variant == v for r in ranked for c in r.choices)]
        if not variants:
            return []
        k = ranked[0].distractors
        lines = ["", "## Next-line choice", "",
                 f"The original line among {k} others, ranked by the system from the same full prompt: who says it "
                 "(the others are lines of other characters in the same language) and what comes next (lines of "
                 "the same character from other scenes). A model ranks by the mean log-probability per token of "
                 "each line as its reply, the script engine by its own line ranking. Accuracy with its exact 95% "
                 f"interval; chance is 1/{k + 1} = {1 / (k + 1):.0%}.", "",
                 "| system | " + " | ".join(VARIANTS[v] for v in variants) + " |", "|---|" + "---:|" * len(variants),
                 "| chance | " + " | ".join(f"{1 / (k + 1):.1%}" for _ in variants) + " |"]
        for rep in ranked:
            lines.append(f"| {rep.label} | " + " | ".join(rep.choice_accuracy(v).text("{:.1%}") for v in variants)
                         + " |")
        for rep in self.reports:
            if rep.choice_note:
                lines.append(f"| {rep.label} | " + " | ".join(rep.choice_note for _ in variants) + " |")
        lines += ["", "Against chance (exact interval) and head to head (per-case difference in credit, paired "
                      "bootstrap within each role):", ""]
        for rep in ranked:
            for v in variants:
                iv = rep.choice_accuracy(v)
                to_chance = "above chance" if iv.low > 1 / (k + 1) else "below chance" if iv.high < 1 / (k + 1) \
                    else "not distinguishable from chance"
                lines.append(f"- {rep.label}, {VARIANTS[v]}: {iv.text('{:.1%}')}, {to_chance}.")
        for i, rep in enumerate(ranked):
            for other in ranked[:i]:
                for v in variants:
                    iv = rep.choice_against(other, v)
                    lines.append(f"- {rep.label} against {other.label}, {VARIANTS[v]}: {iv.text('{:+.1%}')}, "
                                 f"{verdict(iv)}.")
        return lines

    def _by_depth(self) -> list[str]:
        """Each system's figures on the cases without history of their scene and on those after it, and its
        paired difference from each baseline at each depth: whether the history helps or hurts."""
        last = self.conditions[-1]
        if not any(r.depth > 1 for rep in self.reports for r in rep.results):
            return []
        counts = {d: len(self.reports[0].per_case("cosine", last, depth=d)) for d in DEPTHS}
        variants = [v for v in VARIANTS if any(c.variant == v for rep in self.reports for c in rep.choices)]
        head = ["system"] + [f"{METRICS[m][0]}, {DEPTHS[d]}" for m in ("cosine", "rouge_l") for d in DEPTHS]
        head += [f"{VARIANTS[v]}, {DEPTHS[d]}" for v in variants for d in DEPTHS]
        lines = ["", f"## By depth, {CONDITIONS[last].label}", "",
                 f"A case at depth 1 asks for the character's first answer in its scene ({counts[1]} cases); at depth 2+ "
                 f"({counts[2]} cases) the character has answered before, and the prompt carries the scene's earlier "
                 "turns as history. Means with their 95% bootstrap interval; next-line accuracy with its exact one.",
                 "", "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
        for rep in self.reports:
            cells = [rep.label] + [rep.interval(m, last, depth=d).text() for m in ("cosine", "rouge_l") for d in DEPTHS]
            cells += [rep.choice_accuracy(v, depth=d).text("{:.1%}") if rep.choices else "–"
                      for v in variants for d in DEPTHS]
            lines.append("| " + " | ".join(cells) + " |")
        baselines = [r for r in self.reports if r.is_baseline]
        systems = [r for r in self.reports if not r.is_baseline]
        if baselines and systems:
            lines += ["", "Against each baseline at each depth (cosine; per-case difference, paired bootstrap within "
                          "each role):", ""]
            for rep in systems:
                for other in baselines:
                    parts = []
                    for d in DEPTHS:
                        iv = rep.against(other, "cosine", last, depth=d)
                        parts.append(f"{DEPTHS[d]} {iv.text('{:+.3f}')}, {verdict(iv)}")
                    lines.append(f"- {rep.label} against {other.label}: " + "; ".join(parts) + ".")
        return lines

    def write(self, out: Path) -> dict[str, Path]:
        """results.md, results.csv (per system, role and prompt), cases.csv (every reply), results.png. The
        replies and choices are written first: a run's hour of answers is never lost to its report's table
        (`eval --rescore` re-makes the rest from cases.csv)."""
        out.mkdir(parents=True, exist_ok=True)
        paths = {"markdown": out / "results.md", "csv": out / "results.csv", "cases": out / "cases.csv"}
        with paths["cases"].open("w", newline="", encoding="utf-8") as f:
            names = list(CaseResult.__dataclass_fields__)
            w = csv.DictWriter(f, fieldnames=names)
            w.writeheader()
            for rep in self.reports:
                for r in rep.results:
                    w.writerow({k: (_round(v) if isinstance(v, float) else v) for k, v in r.__dict__.items()})
        choices = [c for rep in self.reports for c in rep.choices]
        if choices:
            paths["choices"] = out / "choices.csv"
            with paths["choices"].open("w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["system", "role_id", "scene_id", "depth", "variant", "correct", "answer", "lines", "scores",
                            "error"])
                for c in choices:
                    w.writerow([c.system, c.role_id, c.scene_id, c.depth, c.variant, _round(c.correct), c.answer,
                                " ||| ".join(c.lines), " ".join(f"{x:.4f}" for x in c.scores), c.error])
        rows = [row for rep in self.reports for row in rep.rows()]
        with paths["csv"].open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows({k: (_round(v) if isinstance(v, float) else v) for k, v in r.items()} for r in rows)
        paths["markdown"].write_text(self.markdown(), encoding="utf-8")
        png = plot(self, out / "results.png")
        if png:
            paths["plot"] = png
        return paths


def _round(x: float) -> float | str:
    return "" if math.isnan(x) else round(x, 4)


COLOURS = ["#9aa5b1", "#d9480f", "#1971c2", "#2f9e44", "#ae3ec9", "#f08c00"]


def plot(comparison: Comparison, path: Path) -> Path | None:
    """Overall cosine and ROUGE-L per system and prompt, and cosine per role with the full prompt."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed; no plot (pip install -r requirements-local.txt)")
        return None
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), dpi=110, gridspec_kw={"width_ratios": [1, 1, 2.2]})
    for ax, metric in zip(axes[:2], ("cosine", "rouge_l")):
        _plot_overall(ax, comparison, metric)
    _plot_per_role(axes[2], comparison)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _plot_overall(ax, comparison: Comparison, metric: str) -> None:
    """One bar per system and prompt (a baseline: one bar), its interval, and the baselines drawn across."""
    reps, conds = comparison.reports, comparison.conditions
    labels, means, lows, highs, cols = [], [], [], [], []
    for i, rep in enumerate(reps):
        for j, c in enumerate(conds):
            if rep.is_baseline and j < len(conds) - 1:
                continue  # a baseline reads no prompt: one bar
            iv = rep.interval(metric, c)
            labels.append(rep.label if rep.is_baseline else f"{rep.label}\n{CONDITIONS[c].label}")
            means.append(iv.value)
            lows.append(0 if math.isnan(iv.low) else iv.value - iv.low)
            highs.append(0 if math.isnan(iv.high) else iv.high - iv.value)
            cols.append(COLOURS[i % len(COLOURS)] if j == len(conds) - 1 else "#d0d4d9")
    x = np.arange(len(labels))
    bars = ax.bar(x, means, yerr=[lows, highs], capsize=3, color=cols)
    ax.bar_label(bars, labels=[("" if math.isnan(m) else f"{m:.2f}") for m in means], fontsize=7, padding=2)
    ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
    for i, rep in enumerate(reps):  # what every bar has to beat, drawn across the panel
        if rep.is_baseline:
            ax.axhline(rep.interval(metric, conds[-1]).value, color=COLOURS[i % len(COLOURS)], lw=1, ls="--",
                       zorder=0)
    ax.set_title(f"{METRICS[metric][0]}, all roles (95% interval; dashed: baselines)", fontsize=9)
    ax.set_ylim(0, max([m for m in means if not math.isnan(m)] + [0.1]) * 1.35)
    ax.spines[["top", "right"]].set_visible(False)


def _plot_per_role(ax, comparison: Comparison) -> None:
    """Cosine per role (and over all roles) with the last prompt, one bar per system."""
    reps, roles, last = comparison.reports, comparison.roles(), comparison.conditions[-1]
    x = np.arange(len(roles) + 1)
    width = 0.8 / len(reps)
    top = 0.1
    for i, rep in enumerate(reps):
        ivs = [rep.interval("cosine", last, rid) for rid, _ in roles] + [rep.interval("cosine", last)]
        top = max([top] + [v for iv in ivs for v in (iv.value, iv.high) if not math.isnan(v)])
        means = [iv.value for iv in ivs]
        err = [[0 if math.isnan(iv.low) else iv.value - iv.low for iv in ivs],
               [0 if math.isnan(iv.high) else iv.high - iv.value for iv in ivs]]
        ax.bar(x + (i - (len(reps) - 1) / 2) * width, means, width, yerr=err, capsize=2,
               label=rep.label, color=COLOURS[i % len(COLOURS)])
    ax.axvline(len(roles) - 0.5, color="#ccc", lw=1)
    ax.set_xticks(x, [rid for rid, _ in roles] + ["all roles"], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("cosine to the original line")
    ax.set_title(f"Per role, {CONDITIONS[last].label}", fontsize=9)
    ax.set_ylim(0, top * 1.45)  # headroom above the highest interval, so the legend covers no bar
    ax.legend(loc="upper left", fontsize=7, frameon=False, ncol=2)
    ax.spines[["top", "right"]].set_visible(False)
