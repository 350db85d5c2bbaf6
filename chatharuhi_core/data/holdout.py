"""Which scenes are kept for evaluation, shared by `eval` and `finetune` so the test never trains.

For each role, scenes whose last line is a long answer of the role are candidates; a seeded
sample of them is held out. `eval` asks the model for that last line; `finetune` keeps those
scenes out of every training row, as targets, as history and as retrieved context.

Of each role's cases, some are drawn from scenes where the character has already answered earlier
(depth 2 or more), so that the prompt also carries the scene's earlier turns as history; the rest
from scenes where that line is its first answer (depth 1). They are drawn apart, so that a role
with many short scenes still gets its cases with history.
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
DEEP_CASES_PER_ROLE = 3  # of those, cases with history (the bundled roles have five such scenes each)


@dataclass(frozen=True)
class Case:
    """A held-out scene: the role answers its last cue; the original line is the reference."""

    role: Role
    turn: Turn

    @property
    def reference(self) -> str:
        return self.turn.reply

    @property
    def depth(self) -> int:
        """Which answer of the character in its scene the case asks for: 1 for the first, when the prompt
        has no history of the scene; 2 or more when the scene's earlier turns come before it."""
        return self.turn.index + 1


@dataclass(frozen=True)
class HoldOut:
    """The selection rule: the same four numbers give the same scenes in eval and in finetune."""

    per_role: int = CASES_PER_ROLE
    min_tokens: int = MIN_REPLY_TOKENS
    seed: int = 0
    deep: int = DEEP_CASES_PER_ROLE  # how many of the `per_role` are at depth 2 or more, where a role has them

    def __post_init__(self) -> None:
        from ..errors import InputError

        for what, n in (("held-out cases per role", self.per_role), ("held-out cases with history", self.deep)):
            if n < 0:
                raise InputError(f"The number of {what} must be 0 or more, not {n}.")

    def cases(self, role: Role) -> list[Case]:
        """Up to `per_role` scenes ending in a long answer of the role: `deep` of them (or as many as there are)
        ending in a later answer, the rest in a first one; fixed samples for the seed, in the scenes' order."""
        found = []
        for story in role.stories:
            turns = scene_turns(role, story)
            if turns and turns[-1].last and count_tokens(turns[-1].reply) >= self.min_tokens:
                found.append(Case(role, turns[-1]))
        later = [c for c in found if c.depth > 1]
        picked = {id(c) for c in self._sample(later, min(self.deep, self.per_role), f"{self.seed}:{role.id}:deep")}
        first = [c for c in found if c.depth == 1]
        picked |= {id(c) for c in self._sample(first, self.per_role - len(picked), f"{self.seed}:{role.id}")}
        return [c for c in found if id(c) in picked]

    @staticmethod
    def _sample(found: list[Case], n: int, key: str) -> list[Case]:
        if len(found) <= n:
            return found
        keep = set(random.Random(key).sample(range(len(found)), n))
        return [c for i, c in enumerate(found) if i in keep]

    def scene_ids(self, role: Role) -> set[str]:
        return {c.turn.scene_id for c in self.cases(role)}

    def as_dict(self) -> dict:
        return {"per_role": self.per_role, "min_tokens": self.min_tokens, "seed": self.seed, "deep": self.deep}


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
    from ..chat.engines.local.model import FINETUNE_MANIFEST
    from ..errors import InputError

    path = _shipped_manifest(model) or Path(model).expanduser() / FINETUNE_MANIFEST
    if not path.is_file():
        return []
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        key = "held_out" if "held_out" in manifest else "hold_out"  # a shipped adapter's manifest, or finetune's
        held = {rid: set(ids) for rid, ids in manifest[key]["scenes"].items()}
        roles = set(manifest.get("roles") or held)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise InputError(f"{path} is damaged: it does not say which roles the model trained on and which scenes it "
                         "held out. Train the model again with `finetune`.") from None
    return [c for c in cases if c.role.id in roles and c.turn.scene_id not in held.get(c.role.id, set())]


def _shipped_manifest(model: str | Path) -> Path | None:
    """The manifest of an adapter the project ships, when `model` names one: blank (the local engine's default), its
    name, or its folder."""
    from ..chat.engines.local.packaged import DEFAULT, PACKAGED
    from ..chat.engines.local.shipped import MANIFEST, MODELS_DIR

    name = str(model).strip().lower()
    packaged = DEFAULT if not name else PACKAGED.get(name)
    if packaged is not None and packaged.adapter:
        return MODELS_DIR / packaged.adapter / MANIFEST
    folder = Path(str(model)).expanduser()
    return folder / MANIFEST if name and (folder / MANIFEST).is_file() else None
