"""Replies that read nothing of the conversation, to measure the metrics against.

A metric that scores sounding like the character, not answering what was said, gives these high
marks: the role's greeting (the same line for every case) and a random line of the same character
(from scenes that are not held out). An engine's figure means something only where it beats them,
so `eval` scores them beside every system (issue 26: a random line scored as well as the best
fine-tuned model on cosine and ROUGE-L).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from ..roles.role import Role
from ..tokens import count_tokens
from .holdout import Case, HoldOut
from .scene_turns import scene_turns

# (case, the hold-out rule the eval uses, seed) -> the reply
Answer = Callable[[Case, HoldOut, int], str]


@dataclass(frozen=True)
class Baseline:
    name: str
    label: str
    description: str
    answer: Answer


BASELINES: dict[str, Baseline] = {}


def register_baseline(name: str, label: str, description: str) -> Callable[[Answer], Answer]:
    def add(answer: Answer) -> Answer:
        BASELINES[name] = Baseline(name, label, description, answer)
        return answer

    return add


def role_lines(role: Role, exclude: set[str] = frozenset(), min_tokens: int = 0) -> list[str]:
    """Every answer of the role in its scenes, in scene order, leaving out the scenes in `exclude`."""
    out = []
    for story in role.stories:
        if story.id in exclude:
            continue
        out += [t.reply for t in scene_turns(role, story) if count_tokens(t.reply) >= min_tokens]
    return out


@register_baseline("greeting", "greeting (baseline)", "the role's greeting, the same line for every case")
def greeting(case: Case, holdout: HoldOut, seed: int) -> str:
    lines = role_lines(case.role)
    return case.role.greeting or (lines[0] if lines else "")


@register_baseline("random-line", "random line (baseline)",
                   "a line of the same character drawn at random (seeded per case) from scenes that are not "
                   "held out, as long as the held-out lines")
def random_line(case: Case, holdout: HoldOut, seed: int) -> str:
    held = holdout.scene_ids(case.role) | {case.turn.scene_id}
    pool = role_lines(case.role, held, holdout.min_tokens) or role_lines(case.role, held)
    if not pool:
        return ""
    return random.Random(f"{seed}:{case.role.id}:{case.turn.scene_id}").choice(pool)


def baseline_names() -> list[str]:
    return list(BASELINES)
