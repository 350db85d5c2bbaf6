"""Which scenes are kept for evaluation, shared by `eval` and `finetune` so the test never trains.

For each role, scenes whose last line is a long answer of the role are candidates; a seeded
sample of them is held out. `eval` asks the model for that last line; `finetune` keeps those
scenes out of every training row, as targets, as history and as retrieved context.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..roles.role import Role
from ..tokens import count_tokens
from .metrics import lcs_length, tokens
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
    """Compared as letters and digits only: a copy with other punctuation, spacing or case is the same line."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalnum())


MIN_LEAK_CHARS = 12  # shorter lines ("Yes, sir.") may well recur in other scenes by chance
NEAR_COPY_ROUGE = 0.8  # a line this close to a held-out one (ROUGE-L F1) is that line, reworded a little
_PIECE = re.compile(r"[\n「」“”\"]+")


def _near_copy(reference: str, pieces: list[tuple[list[str], set[str]]]) -> bool:
    ref = tokens(reference)
    if len(ref) < 4:
        return False
    ref_set = set(ref)
    for toks, toks_set in pieces:
        if not (0.5 * len(ref) <= len(toks) <= 2 * len(ref)) or len(ref_set & toks_set) < 0.6 * len(ref_set):
            continue  # cannot reach the bar: skip the quadratic part
        lcs = lcs_length(toks, ref)
        if lcs and 2 * lcs / (len(toks) + len(ref)) >= NEAR_COPY_ROUGE:
            return True
    return False


def leaked_lines(cases: Iterable[Case], text: str) -> list[Case]:
    """The held-out cases whose reference line (or cue) appears in `text`: verbatim once punctuation, spacing
    and case are set aside, or as a near copy (a line of the text with ROUGE-L F1 of 0.8 or more to it)."""
    hay = _norm(text)
    pieces = [(t, set(t)) for t in (tokens(piece) for piece in _PIECE.split(text)) if t]
    found = []
    for case in cases:
        needles = [_norm(case.reference), _norm(case.turn.text)]
        if any(len(n) >= MIN_LEAK_CHARS and n in hay for n in needles) or _near_copy(case.reference, pieces):
            found.append(case)
    return found


def trained_on(model: str | Path, cases: Iterable[Case]) -> list[Case]:
    """The cases whose scene a model from `finetune` trained on, read from its manifest: every scene of a
    role it trained, except the ones it held out. A model without a manifest (not made by `finetune`) has
    nothing to check, and returns none; a damaged manifest is a sentence naming it."""
    from ..chat.backends.local_model import FINETUNE_MANIFEST
    from ..errors import InputError

    path = Path(model).expanduser() / FINETUNE_MANIFEST
    if not path.is_file():
        return []
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        roles = set(manifest["roles"])
        held = {rid: set(ids) for rid, ids in manifest["hold_out"]["scenes"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise InputError(f"{path} is damaged: it does not say which roles the model trained on and which scenes it "
                         "held out. Train the model again with `finetune`.") from None
    return [c for c in cases if c.role.id in roles and c.turn.scene_id not in held.get(c.role.id, set())]
