"""The engine's addressing detector against hand labels made apart from it (issue 50).

    python bench/addressing.py            # precision and recall, per language, and the lines it gets wrong
    python bench/addressing.py --quiet    # the figures alone

bench/data/addressing-*.jsonl label every line of the bundled characters (and their greetings) with the people
it calls by name, title or nickname, written by people who did not read roles/address.py. Here the detector
(`Role.addressing.called`) reads each line and its calls are compared, person by person, with the labels.
A call to the one the line is said to in its scene counts like any other: what the engine needs is to see
every call, so it never says a line calling someone else to the visitor.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chatharuhi_core.data.metrics import clopper_pearson  # noqa: E402
from chatharuhi_core.roles.sources import load_role  # noqa: E402
from chatharuhi_core.roles.vocatives import vocatives  # noqa: E402

DATA = ROOT / "bench" / "data"


def rows() -> list[dict]:
    return [json.loads(x) for f in sorted(DATA.glob("addressing-*.jsonl"))
            for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    roles: dict = {}
    tally = defaultdict(lambda: [0, 0, 0])  # language -> [both, detector only, labels only]
    wrong = []
    net = defaultdict(lambda: [0, 0, 0, 0])  # language -> lines [calls and caught, caught only, calls only, neither]
    for row in rows():
        role = roles.setdefault(row["role"], load_role(row["role"]))
        a = role.addressing
        lang = "zh" if role.language.startswith("zh") else "en"
        said_to = row.get("said_to") or ""
        found = {a.speaker(w) for w in a.called(row["line"], said_to)}
        truth = {a.speaker(w) for w in row["calls"]}
        both = found & truth
        for key in (lang, "all"):
            tally[key][0] += len(both)
            tally[key][1] += len(found - truth)
            tally[key][2] += len(truth - found)
        caught = bool(vocatives(row["line"], role.openers)) or bool(found)
        net[lang][(0 if truth else 1) if caught else (2 if truth else 3)] += 1
        net["all"][(0 if truth else 1) if caught else (2 if truth else 3)] += 1
        if found != truth:
            wrong.append((row["role"], row["scene"], sorted(found - truth), sorted(truth - found), row["line"][:90]))
    for lang in ("en", "zh", "all"):
        tp, fp, fn = tally[lang]
        p, r = clopper_pearson(tp, tp + fp), clopper_pearson(tp, tp + fn)
        print(f"{lang}: precision {tp}/{tp + fp} {p.text('{:.1%}')}, recall {tp}/{tp + fn} {r.text('{:.1%}')}")
    print("The wide net of group scenes (roles/vocatives.py, or a learned call), per line: does it call anyone?")
    for lang in ("en", "zh", "all"):
        tp, fp, fn, _ = net[lang]
        p, r = clopper_pearson(tp, tp + fp), clopper_pearson(tp, tp + fn)
        print(f"{lang}: precision {tp}/{tp + fp} {p.text('{:.1%}')}, recall {tp}/{tp + fn} {r.text('{:.1%}')}")
    if not args.quiet:
        for role, scene, extra, missed, line in wrong:
            print(f"  {role} {scene}: detector only {extra}, labels only {missed}: {line}")


if __name__ == "__main__":
    main()
