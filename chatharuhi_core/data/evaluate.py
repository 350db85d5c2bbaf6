"""The paper's automatic evaluation (sec. 6), with the comparison its Figure 9 drew and never published.

For each role, scenes whose last line is a long answer of the role are held out (data/holdout.py):
the model gets everything before that line (the scene's earlier turns as history, the last cue as
the message), and its reply is scored against the original line. Each system (an engine and a
model) answers under two prompts:

- `system`: the system prompt only (no retrieval), the paper's baseline;
- `full`:   the full ChatHaruhi prompt, with the held-out scene removed from retrieval, so the
            answer cannot simply be copied from the store.

Scores: cosine similarity of sentence embeddings (the paper's), ROUGE-L F1 (RoleBench's), an
out-of-character rate, the share of replies in the role's language and distinct-2 over the whole set
of replies (data/metrics.py), each with a 95% interval. Beside the systems, baselines that read
nothing of the conversation (data/baselines.py: the greeting, a random line of the character) are
scored on the same cases, and every head-to-head is a paired bootstrap of per-case differences,
stratified by role.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..chat.engines import Engine, EngineChoice, as_choice, default_budgets, engine_info, engine_names, writes
from ..config import Budgets, Settings
from ..deprecated import old_keyword
from ..embedding import Embedder, get_embedder
from ..errors import ChatHaruhiError, InputError
from ..roles.address import said_to
from ..roles.role import Role
from ..tokens import count_tokens
from .baselines import BASELINES
from .eval_report import (
    BASELINE_ORDER,
    CONDITIONS,
    CaseResult,
    Comparison,
    Report,
)
from .holdout import DEEP_CASES_PER_ROLE, MIN_REPLY_TOKENS, Case, HoldOut, trained_on
from .metrics import (
    distinct_n,
    out_of_character,
    rouge_l,
    wrong_language,
)
from .next_line import DISTRACTORS, VARIANTS, ChoicePool, choice_for, credit

log = logging.getLogger(__name__)

__all__ = ["MIN_REPLY_TOKENS", "Case", "Comparison", "EvalOptions", "Report", "SystemSpec", "compare",
           "cosine_scores", "held_out_cases", "parse_system", "rescore", "run_eval"]


def held_out_cases(role: Role, per_role: int, min_tokens: int = MIN_REPLY_TOKENS, seed: int = 0,
                   deep: int = DEEP_CASES_PER_ROLE) -> list[Case]:
    """Up to `per_role` scenes ending in a long answer of the role, `deep` of them in a later answer than its
    first; a fixed sample for a seed."""
    return HoldOut(per_role, min_tokens, seed, deep).cases(role)


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


@dataclass(frozen=True)
class SystemSpec:
    """An engine and its model, as `eval --compare` names it: `local`, `local:runs/x`, `openai:gpt-4o-mini`."""

    engine: str
    model: str = ""

    @property
    def text(self) -> str:
        return f"{self.engine}:{self.model}" if self.model else self.engine


def parse_system(text: str) -> SystemSpec:
    """`engine` or `engine:model` (the engine a registered one), or a baseline's name (`greeting`, `random-line`)."""
    engine, _, model = text.strip().partition(":")
    if engine in BASELINES and not model:
        return SystemSpec(engine)
    if engine not in engine_names():
        raise InputError(f"'{text}' does not start with an engine name; use one of {', '.join(engine_names())}, "
                         "optionally followed by :model (e.g. local:runs/all-lora), or a baseline: "
                         f"{', '.join(BASELINES)}.")
    return SystemSpec(engine, model.strip())


Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class EvalOptions:
    """What an eval run is asked for besides its roles and system: one value that the command line builds and
    compare, rescore and run_eval hand on whole, instead of a dozen keywords passed along."""

    conditions: tuple[str, ...] = ("system", "full")
    per_role: int = HoldOut.per_role  # the hold-out: these four numbers select the cases (data/holdout.py)
    min_tokens: int = MIN_REPLY_TOKENS
    seed: int = 0  # also the seed of the samples, the baselines' draws and the next-line distractors
    deep: int = DEEP_CASES_PER_ROLE
    next_line: tuple[str, ...] = tuple(VARIANTS)  # next-line variants to rank; () for none
    distractors: int = DISTRACTORS  # lines ranked beside the original one
    others: tuple[Role, ...] | None = None  # roles whose lines may serve as another character's; None: compare
    # adds every bundled role, run_eval none
    allow_trained: bool = False  # score a fine-tuned model on scenes it trained on (marked)
    samples: int = 1  # answers per case from an engine that samples, each with its own seed
    greedy: bool = False  # one answer per case at temperature 0, the same on every run
    budgets: Budgets | None = None  # counted with one ruler for every system; None: each engine's own
    baselines: bool = True  # compare and rescore: the baselines beside the systems
    server: EngineChoice = EngineChoice()  # compare: what every system is opened with besides its engine and model
    # (a server's URL and key)

    def __post_init__(self) -> None:
        for name in ("conditions", "next_line", "others"):  # a list given is kept as a tuple: the value stays fixed
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    @property
    def holdout(self) -> HoldOut:
        return HoldOut(self.per_role, self.min_tokens, self.seed, self.deep)


@old_keyword("llm", "engine")  # the paper's name for it
def run_eval(roles: Sequence[Role], engine: str | Engine | EngineChoice = "script",
             options: EvalOptions = EvalOptions(), *, settings: Settings | None = None, scorer: Embedder | None = None,
             progress: Progress | None = None) -> Report:
    """Answer every held-out case under every condition with one engine (`engine`: a name, an Engine, or an
    EngineChoice with its model, server and key; or a baseline's name), and score the replies;
    then, for each next-line variant, let the engine rank the original line among `options.distractors`
    others (`options.others`: roles whose lines may serve as another character's, besides `roles`). An engine
    that samples answers each case `options.samples` times, each with its own seed, or once with the most likely
    tokens (`options.greedy`: temperature 0, the same reply on every run); `options.budgets`, when given, are
    counted for every system with one ruler (cl100k_base), so that systems compared see the same scenes and
    history."""
    settings = settings or Settings.from_env()
    conditions = options.conditions
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown or not conditions:
        raise InputError(f"Unknown condition(s) {', '.join(unknown) or '(none)'}; use {', '.join(CONDITIONS)}.")
    holdout = options.holdout
    cases = [c for role in roles for c in holdout.cases(role)]
    if not cases:
        raise InputError(f"No scene ends in a reply of {options.min_tokens}+ tokens by these roles; "
                         "lower --min-tokens.")
    embedder = get_embedder(settings.embedder)
    scorer = scorer or embedder
    if isinstance(engine, str) and engine in BASELINES:
        return _baseline_report(engine, cases, options, scorer, progress)
    choice = as_choice(engine)
    trained = _trained(choice, cases, options.allow_trained)
    run = _Run(choice, settings, embedder, options.budgets)
    draws, greedy = run.draws(options.seed, options.samples, options.greedy)
    report = Report(run.probe_label(roles[0]), "", scorer.name, list(conditions), system=run.system,
                    distractors=options.distractors, trained_cases=len(trained), samples=len(draws), greedy=greedy,
                    budgets=run.budgets)
    ranks = getattr(run.engine, "score", None)
    if options.next_line and ranks is None:
        report.choice_note = "cannot rank given lines"
    variants = list(options.next_line) if ranks is not None else []
    pool = ChoicePool((*roles, *(r for r in options.others or () if r.id not in {x.id for x in roles})), holdout,
                      options.distractors, options.seed)
    count = _Counted(len(cases) * (len(conditions) * len(draws) + len(variants)), progress)
    raw: dict[int, str] = {}
    for case in cases:
        for cond in conditions:
            for i, draw in enumerate(draws):
                report.results.append(run.answer(case, cond, i, draw, report, raw))
                count.one()
        if len(report.failures) == len(report.results):  # the engine is down or misconfigured: stop now
            raise _failed(report.failures[0].error)
        for variant in variants:
            choice = choice_for(case, variant, pool, run.system)
            run.rank(case, conditions[-1], choice, ranks)
            report.choices.append(choice)
            count.one()
    if not any(not r.error for r in report.results):
        raise _failed(report.failures[0].error)
    return _scored(report, cases, scorer, raw)


def _trained(choice: EngineChoice, cases: Sequence[Case], allow_trained: bool) -> list[Case]:
    """The cases whose scenes a fine-tuned local model trained on: refused with a sentence unless allowed."""
    model = choice.model
    trained = trained_on(model or "", cases) if choice.name == "local" else []  # blank: the shipped fine-tune
    if trained and not allow_trained:
        roles_hit = sorted({c.role.id for c in trained})
        raise InputError(f"The model {model} trained on the scenes of {len(trained)} of these {len(cases)} cases "
                         f"({', '.join(roles_hit)}): its score would be on lines it has learned. Evaluate with the "
                         "hold-out it was trained with (its chatharuhi-finetune.json: --cases, --deep-cases, --min-tokens, "
                         "--seed), or add --allow-trained to show that score, marked.")
    return trained


class _Counted:
    """The progress callback, told each step done out of `total` (told 0 of `total` at once)."""

    def __init__(self, total: int, progress: Progress | None):
        self.total, self.done, self.progress = total, 0, progress
        if progress:
            progress(0, total)

    def one(self) -> None:
        self.done += 1
        if self.progress:
            self.progress(self.done, self.total)


def _baseline_report(name: str, cases: Sequence[Case], options: EvalOptions, scorer: Embedder,
                     progress: Progress | None) -> Report:
    """A baseline's line for every case: it reads no prompt, so it is the same under every condition."""
    baseline = BASELINES[name]
    holdout = options.holdout
    report = Report(baseline.label, "", scorer.name, list(options.conditions), system=name)
    for case in cases:
        reply = baseline.answer(case, holdout, options.seed)
        for cond in options.conditions:
            report.results.append(CaseResult(name, case.role.id, case.role.name, case.turn.scene_id, cond,
                                             case.turn.query, case.reference, reply=reply, depth=case.depth))
    if progress:
        progress(len(report.results), len(report.results))
    return _scored(report, cases, scorer)


class _Run:
    """One system's run: its engine (one per seeded draw), its budgets and ruler, and each case's conversation."""

    def __init__(self, choice: EngineChoice, settings: Settings, embedder: Embedder, budgets: Budgets | None):
        self.choice, self.settings, self.embedder = choice, settings, embedder
        self.engine = choice.open(settings)
        self.ruler = count_tokens if budgets is not None else None
        self.budgets = budgets or default_budgets(self.engine.name, settings)
        self.system = self.engine.name + (f":{choice.model}" if choice.model else "")
        self.engines: dict[int | None, Engine] = {None: self.engine}

    def probe_label(self, role: Role) -> str:
        """The engine's label, once its model is loaded (so loading is not part of any case's timing)."""
        from ..chat.chatbot import ChatHaruhi

        probe = ChatHaruhi(role=role, engine=self.engine, settings=self.settings, embedder=self.embedder)
        probe.load()
        return probe.engine_label

    def draws(self, seed: int, samples: int, greedy: bool) -> tuple[list[int | None], bool]:
        """The seeds each case is answered with: one reply from an engine that does not sample (or an object as
        is), one greedy reply, or `samples` seeded draws; and whether the run is greedy."""
        sampled = isinstance(self.choice.engine, str) and writes(self.engine)
        greedy = greedy and sampled
        draws: list[int | None] = [None]
        if greedy:  # seeded as well: the local engine then reads each prompt afresh, the same way on every run
            draws = [sample_seed(seed, 0)]
        elif samples > 1 and sampled:
            draws = [sample_seed(seed, i) for i in range(samples)]
        temperature = 0.0 if greedy else None
        for d in draws:
            if d is not None:
                self.engines[d] = self.choice.open(self.settings, seed=d, temperature=temperature)
        return draws, greedy

    def bot(self, case: Case, answering: Engine, cond: str):
        """The conversation a case is asked in: the scene's earlier turns as history, its own scene out of reach."""
        from ..chat.chatbot import ChatHaruhi

        # the scene is out of retrieval and out of what the engine learns (nicknames, word rarity) and quotes
        return ChatHaruhi(role=case.role.holding_out([case.turn.scene_id]), engine=answering, settings=self.settings,
                          embedder=self.embedder,
                          history=list(case.turn.context), user_role=case.turn.user_role,
                          budgets=CONDITIONS[cond].budgets(self.budgets), exclude_scenes=[case.turn.scene_id],
                          ruler=self.ruler, read_ahead=False)

    def answer(self, case: Case, cond: str, sample: int, draw: int | None, report: Report,
               raw: dict[int, str]) -> CaseResult:
        result = CaseResult(self.system, case.role.id, case.role.name, case.turn.scene_id, cond, case.turn.query,
                            case.reference, sample=sample, seed=draw, depth=case.depth)
        bot = self.bot(case, self.engines[draw], cond)
        try:
            said = bot.answer(case.turn.text, role=case.turn.user_role)
            result.reply = said.text
            result.scenes = said.packed
            result.prompt_tokens = bot.count_tokens("\n".join(m["content"] for m in said.messages))
            raw[id(result)] = said.raw
            report.model = report.model or bot.model_label
        except ChatHaruhiError as exc:
            result.error = str(exc)
        return result

    def rank(self, case: Case, cond: str, choice, ranks) -> None:
        """Next-line choice: the engine's scores for the original line and the others, and its credit."""
        bot = self.bot(case, self.engine, cond)
        try:
            choice.scores = list(ranks(bot.prepare(case.turn.text, role=case.turn.user_role), choice.lines))
            choice.correct = credit(choice.scores, choice.answer)
        except ChatHaruhiError as exc:
            choice.error = str(exc)


def sample_seed(seed: int, sample: int) -> int:
    """The engine's seed for one sample of an eval run: fixed by the run's seed, different per sample."""
    return 1000 * seed + sample


def shared_budgets(systems: Sequence[SystemSpec], settings: Settings) -> Budgets:
    """One set of budgets every compared system can read: the smallest of their own (a small local model's,
    when one is compared), so each is shown the same scenes and history."""
    own = [default_budgets(s.engine, settings) for s in systems if s.engine not in BASELINES] or [settings.budgets]
    return Budgets(story_tokens=min(b.story_tokens for b in own), history_tokens=min(b.history_tokens for b in own),
                   top_k=min(b.top_k for b in own))


def _scored(report: Report, cases: Sequence[Case], scorer: Embedder, raw: dict[int, str] | None = None) -> Report:
    """Every answered reply scored against its reference; `raw` (by result id): the model's text before
    clean-up, which the out-of-character check reads (a baseline's line is its own raw text)."""
    roles = {c.role.id: c.role for c in cases}
    said_to_by = {(c.role.id, c.turn.scene_id): said_to(c.turn.text, c.turn.user_role) for c in cases}
    answered = [r for r in report.results if not r.error]
    scores = cosine_scores([r.reply for r in answered], [r.reference for r in answered], scorer)
    for r, s in zip(answered, scores):
        role = roles[r.role_id]
        text = (raw or {}).get(id(r), r.reply)
        r.cosine = float(s)
        r.rouge_l = rouge_l(r.reply, r.reference)
        r.ooc_reason = out_of_character(text, role.speaker_names, role.language)
        r.ooc = 1.0 if r.ooc_reason else 0.0
        r.in_language = 0.0 if wrong_language(r.reply, role.language) else 1.0
        r.elsewhere_to = role.addressing.elsewhere(r.reply, said_to_by.get((r.role_id, r.scene_id), ""))
        r.elsewhere = 1.0 if r.elsewhere_to else 0.0
        r.distinct_2 = distinct_n([r.reply])
    return report


def compare(roles: Sequence[Role], systems: Sequence[SystemSpec | str], options: EvalOptions = EvalOptions(), *,
            settings: Settings | None = None, progress_for: Callable[[str], Progress] | None = None,
            scorer: Embedder | None = None) -> Comparison:
    """The same held-out cases answered by several systems, each under every condition; the baselines
    (greeting, random line) beside them unless `options.baselines` is False or they were named. Each system is
    opened with `options.server` (a server's URL and key) besides its engine and model."""
    settings = settings or Settings.from_env()
    specs = [s if isinstance(s, SystemSpec) else parse_system(s) for s in systems]
    if options.baselines:
        specs = [SystemSpec(b) for b in BASELINE_ORDER if SystemSpec(b) not in specs] + specs
    for spec in specs:
        if spec.engine not in BASELINES:
            engine_info(spec.engine)
    if options.budgets is None and sum(s.engine not in BASELINES for s in specs) > 1:
        # equal footing: the same packed prompt for each system
        options = replace(options, budgets=shared_budgets(specs, settings))
    if options.others is None:  # another character's lines for next-line choice: every bundled role too
        from ..roles.sources import bundled_roles

        options = replace(options, others=tuple(bundled_roles()))
    reports = []
    for spec in specs:
        progress = progress_for(spec.text) if progress_for and spec.engine not in BASELINES else None
        system = spec.engine if spec.engine in BASELINES else replace(options.server, engine=spec.engine,
                                                                        model=spec.model or None)
        reports.append(run_eval(roles, system, options, settings=settings, scorer=scorer, progress=progress))
    return Comparison(reports)


CASE_COLUMNS = ("system", "role_id", "scene_id", "condition", "reply")


def rescore(cases_csv: Path, roles: Sequence[Role], options: EvalOptions = EvalOptions(), *,
            settings: Settings | None = None, scorer: Embedder | None = None,
            labels: dict[str, str] | None = None) -> Comparison:
    """A past run's replies (its cases.csv) scored again with today's metrics, with the baselines answered on
    the same held-out cases (unless `options.baselines` is False): no model runs again. The hold-out settings
    (`options`' per_role, min_tokens, seed, deep) must be the run's (the cases are matched by scene id); next-line
    choice needs the models and is not part of a rescore. `labels` names systems for the tables (by their spec
    in the file)."""
    settings = settings or Settings.from_env()
    try:
        with cases_csv.open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"Could not read {cases_csv} ({exc}).") from None
    if not rows or not set(CASE_COLUMNS) <= set(rows[0]):
        raise InputError(f"{cases_csv} is not an eval cases.csv (it needs the columns {', '.join(CASE_COLUMNS)}).")
    by_role = {r.id: r for r in roles}
    rows = [r for r in rows if r["system"] not in BASELINES and r["role_id"] in by_role]
    def selected(holdout: HoldOut) -> dict[tuple[str, str], Case]:
        return {(c.role.id, c.turn.scene_id): c for role in roles for c in holdout.cases(role)}

    holdout = options.holdout
    cases = selected(holdout)
    answered = {(r["role_id"], r["scene_id"]) for r in rows}
    if options.deep and not any(c.depth > 1 and k in answered for k, c in cases.items()):
        # a run from before cases with history (or one with --deep-cases 0): its cases are the depth-1 sample
        holdout = replace(holdout, deep=0)
        cases = selected(holdout)
    missing = sorted({f"{r['role_id']}/{r['scene_id']}" for r in rows} - {f"{k[0]}/{k[1]}" for k in cases})
    if missing or not rows:
        raise InputError(f"{cases_csv} holds cases these hold-out settings do not select ({', '.join(missing[:3]) or 'none'}"
                         f"…): give the run's --cases, --deep-cases, --min-tokens and --seed, and its roles.")
    scorer = scorer or get_embedder(settings.embedder)
    conditions = list(dict.fromkeys(r["condition"] for r in rows))
    reports = []
    if options.baselines:
        run_roles = [r for r in roles if any(k[0] == r.id for k in cases)]
        on_these = replace(options, conditions=tuple(conditions), deep=holdout.deep)
        reports += [run_eval(run_roles, b, on_these, settings=settings, scorer=scorer) for b in BASELINE_ORDER]
    for system in dict.fromkeys(r["system"] for r in rows):
        report = Report((labels or {}).get(system, system), "", scorer.name, conditions, system=system,
                        choice_note="not rescored (needs the model)")
        for r in (r for r in rows if r["system"] == system):
            case = cases[(r["role_id"], r["scene_id"])]
            report.results.append(CaseResult(system, case.role.id, case.role.name, case.turn.scene_id, r["condition"],
                                             case.turn.query, case.reference, reply=r["reply"], error=r.get("error", ""),
                                             depth=case.depth))
        reports.append(_scored(report, list(cases.values()), scorer))
    return Comparison(reports)


def _failed(first: str) -> ChatHaruhiError:
    return ChatHaruhiError(f"Every reply failed, so there is nothing to score. The first error: {first}")
