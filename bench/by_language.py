"""Head to head per language from eval's cases.csv (issue 54's goal is per language: beat the random line in one,
lose to SmolLM2 in neither): each system against each other system, on the English roles and on the Chinese
roles apart, per prompt condition, the per-case difference of cosine and ROUGE-L with eval's paired bootstrap
(resampled within each role). A system's several replies to a case (--samples) are averaged first. Several
files (runs on the same cases and seeds: the baselines read the same in each) are read as one.

    .venv/bin/python bench/by_language.py docs/eval/candidates/step2/*/cases.csv [--against random-line local]
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chatharuhi_core.data.metrics import paired_bootstrap  # noqa: E402
from chatharuhi_core.roles.sources import load_role  # noqa: E402

METRICS = ("cosine", "rouge_l")


def read(path: Path) -> dict[str, dict[tuple[str, str, str], dict[str, float]]]:
    """system -> (role, scene, condition) -> metric -> the mean over the system's replies to that case."""
    sums: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    with path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row.get("error"):
                continue
            case = (row["role_id"], row["scene_id"], row["condition"])
            for metric in METRICS:
                sums[row["system"]][case][metric].append(float(row[metric]))
    return {system: {case: {m: sum(v) / len(v) for m, v in metrics.items()} for case, metrics in cases.items()}
            for system, cases in sums.items()}


def language_of(role_id: str, known: dict[str, str] = {}) -> str:  # noqa: B006 (a cache on purpose)
    if role_id not in known:
        known[role_id] = (load_role(role_id).language or "en").split("-")[0]
    return known[role_id]


def compare(a: dict, b: dict, language: str, condition: str, metric: str):
    """A minus B on the cases both answered, for one language and condition, strata by role."""
    differences: dict[str, list[float]] = defaultdict(list)
    for case, scores in a.items():
        role, _scene, cond = case
        if cond == condition and case in b and language_of(role) == language:
            differences[role].append(scores[metric] - b[case][metric])
    return paired_bootstrap(differences)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", type=Path, nargs="+")
    ap.add_argument("--against", nargs="+", default=["random-line", "greeting"],
                    help="systems every other system is set against (default: the two baselines)")
    args = ap.parse_args(argv)
    systems = {}
    for path in args.cases:
        systems.update(read(path))
    baselines = {"random-line", "greeting"}
    print("| system | against | prompt | language | cases | cosine | ROUGE-L |")
    print("|---|---|---|---|---:|---:|---:|")
    for against in args.against:
        for system in sorted(s for s in systems if s != against and s not in baselines):
            for condition in ("full", "system"):
                for language in ("en", "zh"):
                    found = [compare(systems[system], systems[against], language, condition, m) for m in METRICS]
                    if not found[0].n:
                        continue
                    cells = [f"{'**' if iv.low > 0 else ''}{iv.value:+.3f} [{iv.low:+.3f}, {iv.high:+.3f}]"
                             f"{'**' if iv.low > 0 else ''}" for iv in found]
                    print(f"| {system} | {against} | {condition} | {language} | {found[0].n} | {' | '.join(cells)} |")
    print("\nBold: the paired 95% interval is above 0.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
