"""How often a model's replies to the Chinese roles are readable Chinese (issue 54's first test of a local model):
at least 70% of a reply's characters (spaces left out) are CJK, and no three punctuation marks or symbols in a row
("什义！你是唐家大像！！；；！．．！" fails both). Read from eval's cases.csv, per system, with an exact interval.

    .venv/bin/python bench/readable_chinese.py docs/eval/candidates/cases.csv
"""

from __future__ import annotations

import csv
import re
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chatharuhi_core.data.metrics import clopper_pearson  # noqa: E402

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
MIN_CJK_SHARE = 0.7
MAX_MARKS_IN_A_ROW = 2


def _mark(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def readable_chinese(text: str) -> bool:
    """At least 70% CJK among the reply's characters that are not spaces, and no run of three marks."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return False
    run = longest = 0
    for c in chars:
        run = run + 1 if _mark(c) else 0
        longest = max(longest, run)
    return sum(bool(CJK.match(c)) for c in chars) / len(chars) >= MIN_CJK_SHARE and longest <= MAX_MARKS_IN_A_ROW


def main(path: str) -> None:
    rows = list(csv.DictReader(open(path, encoding="utf-8")))
    zh_roles = {r["role_id"] for r in rows if CJK.search(r["role_name"])}
    by_system: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        if r["role_id"] in zh_roles and not r["error"]:
            by_system[r["system"]].append(readable_chinese(r["reply"]))
    print("| system | readable Chinese replies | 95% interval |\n|---|---:|---|")
    for system, marks in by_system.items():
        iv = clopper_pearson(sum(marks), len(marks))
        print(f"| {system} | {sum(marks)} of {len(marks)} ({sum(marks) / len(marks):.0%}) | "
              f"{iv.low:.0%}-{iv.high:.0%} |")


if __name__ == "__main__":
    main(sys.argv[1])
