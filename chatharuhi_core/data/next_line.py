"""Next-line choice: a test that sounding like the character cannot pass.

For each held-out case the system is shown the same prompt it answers from, and ranks the original
line against K distractors (issue 26):
- *who says it*: lines of other characters in the same language. A system that knows whose voice
  this is picks the character's own line; a fluent imitation of "a character" does not.
- *what comes next*: lines of the same character from other scenes. Every candidate sounds right;
  only one answers what was just said.
A local model ranks by the mean log-probability of each line as its reply, the script engine by its
own line ranking. Chance is 1/(K+1). Distractors come from scenes that are not held out, drawn with a
seed per case, and as close in length to the original line as the pool allows (so length is no clue).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..roles.role import Role
from ..tokens import count_tokens
from .baselines import role_lines
from .holdout import Case, HoldOut

VARIANTS = {"who": "who says it", "next": "what comes next"}
DISTRACTORS = 4
POOL_FACTOR = 5  # distractors are the K closest in length among this many random draws


@dataclass
class ChoiceResult:
    """One case under one variant: the lines shown (the original among them) and how the system ranked them."""

    system: str
    role_id: str
    scene_id: str
    variant: str
    lines: list[str]
    answer: int  # the original line's place in `lines`
    scores: list[float] = field(default_factory=list)
    correct: float = float("nan")  # 1 when the original ranked first; 1/n when n lines tie for first
    error: str = ""
    depth: int = 1  # the case's depth (see holdout.Case.depth)


def _language(role: Role) -> str:
    return (role.language or "").lower()[:2]


def distractors(case: Case, variant: str, others: Sequence[Role], holdout: HoldOut, k: int = DISTRACTORS,
                seed: int = 0) -> list[str]:
    """K lines for the case under the variant, from scenes not held out, seeded per case."""
    role = case.role
    if variant == "next":
        pool = role_lines(role, holdout.scene_ids(role) | {case.turn.scene_id}, holdout.min_tokens)
    elif variant == "who":
        pool = [line for other in others if other.id != role.id and _language(other) == _language(role)
                for line in role_lines(other, holdout.scene_ids(other), holdout.min_tokens)]
    else:
        raise ValueError(f"unknown variant {variant!r}")
    pool = sorted({line for line in pool if line.strip() and line != case.reference})
    rng = random.Random(f"{seed}:{variant}:{role.id}:{case.turn.scene_id}")
    drawn = rng.sample(pool, min(len(pool), k * POOL_FACTOR))
    target = count_tokens(case.reference)
    drawn.sort(key=lambda line: abs(count_tokens(line) - target))
    return drawn[:k]


@dataclass(frozen=True)
class ChoicePool:
    """Where a run's distractors come from and how many each case gets: the same for every case of a run, so
    it is made once and handed whole to `choice_for`."""

    others: tuple[Role, ...]  # roles whose lines may serve as another character's
    holdout: HoldOut
    k: int = DISTRACTORS
    seed: int = 0


def choice_for(case: Case, variant: str, pool: ChoicePool, system: str) -> ChoiceResult:
    """The lines to rank, the original at a seeded place among the distractors."""
    seed = pool.seed
    lines = distractors(case, variant, pool.others, pool.holdout, pool.k, seed)
    at = random.Random(f"{seed}:place:{variant}:{case.role.id}:{case.turn.scene_id}").randrange(len(lines) + 1)
    lines.insert(at, case.reference)
    return ChoiceResult(system, case.role.id, case.turn.scene_id, variant, lines, at, depth=case.depth)


def credit(scores: Sequence[float], answer: int) -> float:
    """1 when the original scored highest, 1/n when it shares the top with n-1 others, else 0."""
    top = max(scores)
    if scores[answer] < top:
        return 0.0
    return 1.0 / sum(1 for s in scores if s == top)
