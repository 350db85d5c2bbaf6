"""Which scenes are kept for evaluation, shared by `eval` and `finetune` so the test never trains.

For each role, scenes whose last line is a long answer of the role are candidates; a seeded
sample of them is held out. `eval` asks the model for that last line; `finetune` keeps those
scenes out of every training row, as targets, as history and as retrieved context.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from ..roles.role import Role
from ..tokens import count_tokens
from .scene_turns import Turn, scene_turns

MIN_REPLY_TOKENS = 20  # "a long reply": shorter lines ("Yes.") say little about a character
CASES_PER_ROLE = 10  # enough per role for an interval that means something


@dataclass(frozen=True)
class Case:
    """A held-out scene: the role answers its last cue; the original line is the reference."""

    role: Role
    turn: Turn

    @property
    def reference(self) -> str:
        return self.turn.reply


@dataclass(frozen=True)
class HoldOut:
    """The selection rule: the same three numbers give the same scenes in eval and in finetune."""

    per_role: int = CASES_PER_ROLE
    min_tokens: int = MIN_REPLY_TOKENS
    seed: int = 0

    def cases(self, role: Role) -> list[Case]:
        """Up to `per_role` scenes ending in a long answer of the role, a fixed sample for the seed."""
        found = []
        for story in role.stories:
            turns = scene_turns(role, story)
            if turns and turns[-1].last and count_tokens(turns[-1].reply) >= self.min_tokens:
                found.append(Case(role, turns[-1]))
        if len(found) > self.per_role:
            keep = set(random.Random(f"{self.seed}:{role.id}").sample(range(len(found)), self.per_role))
            found = [c for i, c in enumerate(found) if i in keep]
        return found

    def scene_ids(self, role: Role) -> set[str]:
        return {c.turn.scene_id for c in self.cases(role)}

    def as_dict(self) -> dict:
        return {"per_role": self.per_role, "min_tokens": self.min_tokens, "seed": self.seed}


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


MIN_LEAK_CHARS = 12  # shorter lines ("Yes, sir.") may well recur in other scenes by chance


def leaked_lines(cases: Iterable[Case], text: str) -> list[Case]:
    """The held-out cases whose reference line (or cue) appears in `text`."""
    hay = _norm(text)
    found = []
    for case in cases:
        needles = [_norm(case.reference), _norm(case.turn.text)]
        if any(len(n) >= MIN_LEAK_CHARS and n in hay for n in needles):
            found.append(case)
    return found
