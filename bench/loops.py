"""How often a system's replies loop (issue 65: at most 2%), per system and language, read from eval's cases.csv.

A loop is data/loops.py's: one phrase said three times close together, or a reply whose word pairs are under 60%
distinct. The characters' own lines (the reference column) are counted beside, as a check of the test itself.

    .venv/bin/python bench/loops.py docs/eval/shipped/cases.csv [more cases.csv ...]
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chatharuhi_core.data.loops import loop_reason  # noqa: E402
from chatharuhi_core.data.metrics import clopper_pearson  # noqa: E402

CJK_ROLES = {"sunwukong", "lindaiyu", "zhugeliang", "luzhishen"}


def rates(path: Path) -> list[str]:
    rows = [r for r in csv.DictReader(path.open(encoding="utf-8")) if not r.get("error")]
    found: dict[tuple[str, str], list[str | None]] = defaultdict(list)
    seen_refs: set[tuple[str, str]] = set()
    for r in rows:
        lang = "zh" if r["role_id"] in CJK_ROLES else "en"
        found[(r["system"], lang)].append(loop_reason(r["reply"]))
        if (r["scene_id"], r["condition"]) not in seen_refs and r["condition"] == "full":
            seen_refs.add((r["scene_id"], r["condition"]))
            found[("the original lines (check)", lang)].append(loop_reason(r["reference"]))
    out = [f"### {path}", "", "| system | language | loops | 95% interval | examples |", "|---|---|---:|---|---|"]
    for (system, lang), reasons in sorted(found.items()):
        k, n = sum(r is not None for r in reasons), len(reasons)
        iv = clopper_pearson(k, n)
        examples = "; ".join(sorted({r for r in reasons if r})[:3])
        out.append(f"| {system} | {lang} | {k} of {n} ({k / n:.1%}) | {iv.low:.1%}-{iv.high:.1%} | {examples} |")
    return out


def main(paths: list[str]) -> None:
    for p in paths:
        print("\n".join(rates(Path(p))) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
