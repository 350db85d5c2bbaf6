"""Group scenes: who answers a line that names a present character, and whom the answers call (issue 50).

    python bench/group_naming.py                   # the lines the group-scene rules were written against
    python bench/group_naming.py --split heldout   # written later and apart: unnamed lines, visitors of their own

bench/data/group_naming.jsonl holds 64 visitor lines written by hand, apart from the engine: 8 for each bundled
character, each calling it by a name, title or epithet its book uses ("Count", "Miss Bennet", "军师", "林姑娘",
and harder ones the role lists nowhere: "Voivode", "弼马温", "相父"). Each is said in a scene of that character and
two characters of other books (drawn per line, seeded), the visitor playing the named character's partner. It
counts how often the named one answers first (natural order), then lets every present character answer once
with the offline engine and counts, by the hand labels of bench/data/addressing-*.jsonl, the answers that call
someone who is not in the scene, and how many different lines (and greetings) they say: a scene that calls
no one absent by falling back on greetings would show it there.

The wide net for calls (roles/vocatives.py) was written while reading the first set's misses, so that set is a
tuning set for it. bench/data/group_heldout.jsonl was written after, differently: 32 lines said to the whole
group (26 name no one, 6 name one member by a name its role lists), in casts drawn apart, by a visitor with a
name of their own ("Tom", "小王") whom no book knows. Every held-out run is added to
docs/eval/group-heldout-log.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import append_row  # noqa: E402
from bench.questions import commit  # noqa: E402
from chatharuhi_core.data.metrics import clopper_pearson  # noqa: E402
from chatharuhi_core.roles.sources import load_role  # noqa: E402
from chatharuhi_core.scene.scene import Scene, SceneSetup  # noqa: E402

DATA = ROOT / "bench" / "data"
CAST = ["alice", "dracula", "elizabeth", "sherlock", "lindaiyu", "luzhishen", "sunwukong", "zhugeliang"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=["tuning", "heldout"], default="tuning")
    parser.add_argument("--no-log", action="store_true", help="a held-out run not added to the log")
    args = parser.parse_args()
    heldout = args.split == "heldout"
    source = "group_heldout.jsonl" if heldout else "group_naming.jsonl"
    lines = [json.loads(x) for x in (DATA / source).read_text(encoding="utf-8").splitlines() if x]
    labels = {(r["role"], r["line"]): r for f in sorted(DATA.glob("addressing-*.jsonl"))
              for r in map(json.loads, f.read_text(encoding="utf-8").splitlines()) if r}
    first = {"en": [0, 0], "zh": [0, 0]}
    absent = said = unlabelled = greeted = 0
    distinct: set[tuple[str, str]] = set()
    misses = []
    for row in lines:
        addressed = row.get("addressed") or row.get("named") or ""
        if heldout:
            rng = random.Random(f"heldout:{row['id']}")
            cast = rng.sample([r for r in CAST if r != addressed], 3 if not addressed else 2)
            cast = [*cast, addressed] if addressed else cast
            rng.shuffle(cast)
            visitor = "小王" if row["language"] == "zh" else "Tom"
        else:
            rng = random.Random(row["id"])
            others = rng.sample([r for r in CAST if r != addressed], 2)
            cast = [*others, addressed]
            rng.shuffle(cast)
            visitor = load_role(addressed).visitor_name
        scene = Scene(cast, engine="script", user_role=visitor, setup=SceneSetup(seed=0))
        scene.say(row["message"])
        who = scene.responders()
        if addressed:
            ok = bool(who) and who[0].role_id == addressed
            first[row["language"]][0] += ok
            first[row["language"]][1] += 1
            if not ok:
                misses.append(f"  {row['id']}: {row['message']!r} -> {who[0].name if who else 'nobody'}")
        present = {visitor, *(m.name for m in scene.members)}
        for member in list(scene.members):
            line = scene.turn(member)
            said += 1
            distinct.add((member.role_id, line.text))
            greeted += line.text in load_role(member.role_id).greetings
            label = labels.get((member.role_id, line.text))
            if label is None:
                unlabelled += 1
                continue
            role = load_role(member.role_id)
            if any(role.addressing.speaker(c) not in {role.addressing.speaker(p) for p in present}
                   for c in label["calls"]):
                absent += 1
                misses.append(f"  {row['id']}: {member.name} calls someone absent: {line.text[:80]}")
    out = [f"{lang}: the named character answers first {k}/{n} {clopper_pearson(k, n).text('{:.1%}')}"
           for lang, (k, n) in first.items() if n]
    out.append(f"answers calling someone absent from the scene, by the hand labels: {absent}/{said - unlabelled} "
               f"{clopper_pearson(absent, said - unlabelled).text('{:.1%}')} ({unlabelled} answers not among the "
               "labelled lines)")
    out.append(f"what they say: {len(distinct)} different lines in {said} answers; a greeting {greeted} times")
    print("\n".join(out))
    if heldout and not args.no_log:
        append_row(ROOT / "docs" / "eval" / "group-heldout-log.md",
                   "# Group scenes, held-out runs\n\nEach run of `python bench/group_naming.py --split heldout`"
                   " (bench/data/group_heldout.jsonl), newest last.\n\n| date | commit | figures |\n"
                   "|---|---|---|\n", (str(datetime.date.today()), commit(), " · ".join(out)))
    print("\n".join(misses))


if __name__ == "__main__":
    main()
