"""The paper's automatic evaluation (sec. 6), which it described and never published.

For each role, scenes whose last line is a long answer of the role are held out: the model gets
everything before that line (the scene's earlier turns as history, the last cue as the message)
and its reply is scored by the cosine similarity between its embedding and the original line's,
with a multilingual sentence embedder. Two prompts are compared on the same engine:

- `system`: the system prompt only (no retrieval), the paper's baseline;
- `full`:   the full ChatHaruhi prompt, with the held-out scene removed from retrieval, so the
            answer cannot simply be copied from the store.
"""

from __future__ import annotations

import csv
import logging
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..chat.backends import Backend, create_backend, options_for
from ..chat.embedding import Embedder, get_embedder
from ..chat.tokens import count_tokens
from ..config import Budgets, Settings
from ..errors import ChatHaruhiError, InputError
from ..roles.role import Role
from .scene_turns import Turn, scene_turns

log = logging.getLogger(__name__)

MIN_REPLY_TOKENS = 20  # "a long reply": shorter lines ("Yes.") say little about a character


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


@dataclass(frozen=True)
class Case:
    """A held-out scene: the role answers its last cue; the original line is the reference."""

    role: Role
    turn: Turn

    @property
    def reference(self) -> str:
        return self.turn.reply


def held_out_cases(role: Role, per_role: int, min_tokens: int = MIN_REPLY_TOKENS, seed: int = 0) -> list[Case]:
    """Up to `per_role` scenes ending in a long answer of the role, a fixed sample for a seed."""
    found = []
    for story in role.stories:
        turns = scene_turns(role, story)
        if turns and turns[-1].last and count_tokens(turns[-1].reply) >= min_tokens:
            found.append(Case(role, turns[-1]))
    if len(found) > per_role:
        keep = set(random.Random(f"{seed}:{role.id}").sample(range(len(found)), per_role))
        found = [c for i, c in enumerate(found) if i in keep]
    return found


def cosine_scores(replies: Sequence[str], references: Sequence[str], embedder: Embedder) -> np.ndarray:
    """Row by row: cos(embed(reply_i), embed(reference_i)); an empty reply scores 0."""
    if len(replies) != len(references):
        raise ValueError("replies and references differ in length")
    if not replies:
        return np.zeros(0)
    vecs = np.asarray(embedder.embed([*replies, *references]), dtype=np.float64)
    a, b = vecs[: len(replies)], vecs[len(replies):]
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a, b)
    out = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return np.where([bool(r.strip()) for r in replies], out, 0.0)


@dataclass
class CaseResult:
    role_id: str
    role_name: str
    scene_id: str
    condition: str
    query: str
    reference: str
    reply: str = ""
    score: float = math.nan
    error: str = ""


@dataclass(frozen=True)
class Summary:
    """Mean score of one condition over some cases, with its standard error."""

    n: int
    mean: float
    stderr: float

    @classmethod
    def of(cls, scores: Sequence[float]) -> Summary:
        xs = [s for s in scores if not math.isnan(s)]
        if not xs:
            return cls(0, math.nan, math.nan)
        mean = sum(xs) / len(xs)
        var = sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) if len(xs) > 1 else 0.0
        return cls(len(xs), mean, math.sqrt(var / len(xs)))


@dataclass
class Report:
    engine: str
    model: str
    scorer: str
    conditions: list[str]
    results: list[CaseResult] = field(default_factory=list)

    def roles(self) -> list[tuple[str, str]]:
        seen: dict[str, str] = {}
        for r in self.results:
            seen.setdefault(r.role_id, r.role_name)
        return list(seen.items())

    def summary(self, condition: str, role_id: str | None = None) -> Summary:
        return Summary.of([r.score for r in self.results
                           if r.condition == condition and (role_id is None or r.role_id == role_id)])

    def wins(self, role_id: str | None = None) -> tuple[int, int]:
        """(cases where the last condition beat the first, cases scored under both)."""
        first, last = self.conditions[0], self.conditions[-1]
        by_case: dict[tuple[str, str], dict[str, float]] = {}
        for r in self.results:
            if (role_id is None or r.role_id == role_id) and not math.isnan(r.score):
                by_case.setdefault((r.role_id, r.scene_id), {})[r.condition] = r.score
        pairs = [d for d in by_case.values() if first in d and last in d]
        return sum(d[last] > d[first] for d in pairs), len(pairs)

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if r.error]

    # ------------------------------------------------------------ tables

    def rows(self) -> list[dict]:
        """One row per role, then the overall row (every case weighs the same)."""
        out = []
        for role_id, name in [*self.roles(), ("ALL", "all roles")]:
            rid = None if role_id == "ALL" else role_id
            row: dict = {"role": role_id, "name": name}
            sums = {c: self.summary(c, rid) for c in self.conditions}
            row["cases"] = max((s.n for s in sums.values()), default=0)
            for c, s in sums.items():
                row[f"{c}_mean"] = s.mean
                row[f"{c}_stderr"] = s.stderr
            first, last = self.conditions[0], self.conditions[-1]
            row["gain"] = sums[last].mean - sums[first].mean
            won, paired = self.wins(rid)
            row["win_rate"] = won / paired if paired else math.nan
            out.append(row)
        return out

    def markdown(self) -> str:
        labels = [CONDITIONS[c].label for c in self.conditions]
        head = ["role", "cases", *labels, "gain", f"{labels[-1]} wins"]
        lines = [
            f"# Role-play evaluation: {self.engine}" + (f" ({self.model})" if self.model else ""),
            "",
            f"Score: cosine similarity between the reply and the character's original line ({self.scorer}), "
            "on held-out scenes (the scene is removed from retrieval). Mean ± standard error.",
            "",
            "| " + " | ".join(head) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|",
        ]
        for row in self.rows():
            name = "**all roles**" if row["role"] == "ALL" else f"{row['name']} (`{row['role']}`)"
            cells = [name, str(row["cases"])]
            cells += [_pm(row[f"{c}_mean"], row[f"{c}_stderr"]) for c in self.conditions]
            cells += [_signed(row["gain"]), _percent(row["win_rate"])]
            lines.append("| " + " | ".join(cells) + " |")
        overall = Summary.of([self.summary(self.conditions[-1], rid).mean for rid, _ in self.roles()])
        base = Summary.of([self.summary(self.conditions[0], rid).mean for rid, _ in self.roles()])
        lines += ["", f"Mean over roles: {labels[0]} {base.mean:.3f}, {labels[-1]} {overall.mean:.3f}."]
        if self.failures:
            lines.append(f"{len(self.failures)} replies failed and are left out; the first: "
                         f"{self.failures[0].error}")
        return "\n".join(lines) + "\n"

    def write(self, out: Path) -> dict[str, Path]:
        """results.md, results.csv (per role and overall), cases.csv (every reply) and results.png."""
        out.mkdir(parents=True, exist_ok=True)
        paths = {"markdown": out / "results.md", "csv": out / "results.csv", "cases": out / "cases.csv"}
        paths["markdown"].write_text(self.markdown(), encoding="utf-8")
        rows = self.rows()
        with paths["csv"].open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows({k: (_round(v) if isinstance(v, float) else v) for k, v in r.items()} for r in rows)
        with paths["cases"].open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(CaseResult.__dataclass_fields__))
            w.writeheader()
            w.writerows({**r.__dict__, "score": _round(r.score)} for r in self.results)
        png = plot(self, out / "results.png")
        if png:
            paths["plot"] = png
        return paths


def _round(x: float) -> float | str:
    return "" if math.isnan(x) else round(x, 4)


def _pm(mean: float, err: float) -> str:
    return "–" if math.isnan(mean) else f"{mean:.3f} ± {err:.3f}"


def _signed(x: float) -> str:
    return "–" if math.isnan(x) else f"{(round(x, 3) or 0.0):+.3f}"  # no "-0.000"


def _percent(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:.0%}"


def plot(report: Report, path: Path) -> Path | None:
    """A bar per condition for each role and overall, with standard errors; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed; no plot (pip install -r requirements-local.txt)")
        return None
    rows = report.rows()
    labels = [r["role"] if r["role"] != "ALL" else "all roles" for r in rows]
    x = np.arange(len(rows))
    width = 0.8 / len(report.conditions)
    colours = ["#9aa5b1", "#d9480f", "#1971c2"]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(rows) + 2), 4.2), dpi=120)
    for i, c in enumerate(report.conditions):
        means = [r[f"{c}_mean"] for r in rows]
        errs = [0 if math.isnan(r[f"{c}_stderr"]) else r[f"{c}_stderr"] for r in rows]
        bars = ax.bar(x + (i - (len(report.conditions) - 1) / 2) * width, means, width, yerr=errs, capsize=3,
                      label=CONDITIONS[c].label, color=colours[i % len(colours)])
        ax.bar_label(bars, labels=[("" if math.isnan(m) else f"{m:.2f}") for m in means], fontsize=7, padding=2)
    ax.axvline(len(rows) - 1.5, color="#ccc", lw=1)
    ax.set_xticks(x, labels, rotation=30, ha="right")
    ax.set_ylabel("cosine similarity to the original line")
    ax.set_ylim(0, 1.05)
    title = f"{report.engine}" + (f" · {report.model}" if report.model else "")
    ax.set_title(f"Held-out scenes: {title}", fontsize=10)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


Progress = Callable[[int, int], None]


def run_eval(roles: Sequence[Role], llm: str | Backend = "script", *, settings: Settings | None = None,
             model: str | None = None, base_url: str | None = None, api_key: str | None = None,
             conditions: Sequence[str] = ("system", "full"), per_role: int = 5,
             min_tokens: int = MIN_REPLY_TOKENS, seed: int = 0, scorer: Embedder | None = None,
             progress: Progress | None = None) -> Report:
    """Answer every held-out case under every condition with one engine, and score the replies."""
    from ..chat.chatbot import ChatHaruhi

    settings = settings or Settings.from_env()
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown or not conditions:
        raise InputError(f"Unknown condition(s) {', '.join(unknown) or '(none)'}; use {', '.join(CONDITIONS)}.")
    backend = llm if not isinstance(llm, str) else create_backend(
        llm, options_for(llm, settings, model=model, base_url=base_url, api_key=api_key))
    cases = [c for role in roles for c in held_out_cases(role, per_role, min_tokens, seed)]
    if not cases:
        raise InputError(f"No scene ends in a reply of {min_tokens}+ tokens by these roles; lower --min-tokens.")
    embedder = get_embedder(settings.embedder)
    scorer = scorer or embedder
    probe = ChatHaruhi(role=roles[0], llm=backend, settings=settings, embedder=embedder)
    probe.load()
    report = Report(probe.engine_label, "", scorer.name, list(conditions))
    total, done = len(cases) * len(conditions), 0
    if progress:
        progress(0, total)
    for case in cases:
        for cond in conditions:
            result = CaseResult(case.role.id, case.role.name, case.turn.scene_id, cond, case.turn.query,
                                case.reference)
            bot = ChatHaruhi(role=case.role, llm=backend, settings=settings, embedder=embedder,
                             history=list(case.turn.context), user_role=case.turn.user_role,
                             budgets=CONDITIONS[cond].budgets(settings.budgets),
                             exclude_scenes=[case.turn.scene_id])
            try:
                result.reply = bot.chat(case.turn.text, role=case.turn.user_role)
                report.model = report.model or bot.model_label
            except ChatHaruhiError as exc:
                result.error = str(exc)
            report.results.append(result)
            done += 1
            if progress:
                progress(done, total)
        if len(report.failures) == len(report.results):  # the engine is down or misconfigured: stop now
            raise _failed(report.failures[0].error)
    answered = [r for r in report.results if not r.error]
    if not answered:
        raise _failed(report.failures[0].error)
    scores = cosine_scores([r.reply for r in answered], [r.reference for r in answered], scorer)
    for r, s in zip(answered, scores):
        r.score = float(s)
    return report


def _failed(first: str) -> ChatHaruhiError:
    return ChatHaruhiError(f"Every reply failed, so there is nothing to score. The first error: {first}")
