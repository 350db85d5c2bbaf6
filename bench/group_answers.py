"""Group scenes: what the characters say to a line said to the whole group, and whom they call when they talk
among themselves (issue 67, item 7).

    python bench/group_answers.py            # the held-out group lines (bench/data/group_heldout.jsonl)
    python bench/group_answers.py --no-log   # a run not added to docs/eval/group-answers-log.md
    python bench/group_answers.py --everyone # the volunteers answer whether or not they have a line that does

Each of the 26 held-out lines that names no one is said, in the seeded cast bench/group_naming.py gives it, by a
visitor with a name of their own ("Tom", "小王"), and answered as the page answers it: the scene's natural order
picks who answers (Scene.chat), with the offline engine. Each answer is one of:
- a greeting: one of the character's greetings (the role's own list);
- deflected: a line labelled as fitting any question (bench/data/deflects.jsonl, labelled before this bench);
- answered or off-topic: by hand, for this line to this message (bench/data/group-answers.jsonl, labelled
  blind to which version of the engine said it; a line not labelled yet is listed, and not counted).

Then the characters talk among themselves for LINES lines (Let them talk) after each visitor's line, and every
line is checked, by the hand labels of bench/data/addressing-*.jsonl, for calling someone who is not in the
scene (the check bench/group_naming.py makes of answers to the visitor, here of the lines between members).
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys
from collections import Counter
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
LINES = 4  # lines of Let them talk after each visitor's line
KINDS = ("answered", "deflected", "greeting", "off-topic")


def _records(name: str) -> list[dict]:
    return [json.loads(x) for x in (DATA / name).read_text(encoding="utf-8").splitlines() if x.strip()]


def _scene(row: dict) -> Scene:
    """The cast bench/group_naming.py draws for a held-out line, and the visitor's own name."""
    rng = random.Random(f"heldout:{row['id']}")
    cast = rng.sample(CAST, 3)
    rng.shuffle(cast)
    return Scene(cast, engine="script", user_role="小王" if row["language"] == "zh" else "Tom",
                 setup=SceneSetup(seed=0))


def _kind(role_id: str, line: str, row: dict, deflects: dict, labels: dict) -> str | None:
    if line in load_role(role_id).greetings:
        return "greeting"
    if deflects.get((role_id, line)):
        return "deflected"
    label = labels.get((row["id"], role_id, line))
    return None if label is None else ("answered" if label else "off-topic")


def _absent(scene: Scene, line, calls: dict) -> bool | None:
    """Whether a member's line calls someone not in the scene (None: the line is not among the labelled ones)."""
    label = calls.get((line.role_id, line.text))
    if label is None:
        return None
    role = load_role(line.role_id)
    present = {role.addressing.speaker(p) for p in (scene.user_role, *(m.name for m in scene.members if m.present))}
    return any(role.addressing.speaker(c) not in present for c in label)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-log", action="store_true", help="a run not added to the log")
    parser.add_argument("--everyone", action="store_true",
                        help="as before 2026-11-28: every volunteer answers (the engine is not asked who can)")
    args = parser.parse_args()
    if args.everyone:
        Scene.can_answer = lambda self, member: None
    rows = [r for r in _records("group_heldout.jsonl") if not r.get("named")]
    deflects = {(r["role"], r["line"]): r["deflects"] for r in _records("deflects.jsonl")}
    labels = {(r["id"], r["role"], r["line"]): r["answers"] for r in _records("group-answers.jsonl")}
    calls = {(r["role"], r["line"]): r["calls"] for f in sorted(DATA.glob("addressing-*.jsonl"))
             for r in _records(f.name)}
    kinds: Counter = Counter()
    unlabelled, talk, absent, talk_unlabelled, silent = [], 0, [], 0, 0
    for row in rows:
        scene = _scene(row)
        answers = scene.chat(row["message"])
        silent += not answers
        for line in answers:
            kind = _kind(line.role_id, line.text, row, deflects, labels)
            if kind is None:
                unlabelled.append({"id": row["id"], "message": row["message"], "role": line.role_id, "line": line.text})
            else:
                kinds[kind] += 1
        for line in scene.talk(LINES):
            talk += 1
            found = _absent(scene, line, calls)
            talk_unlabelled += found is None
            if found:
                absent.append(f"  {row['id']}: {line.speaker} calls someone absent: {line.text[:80]}")
    counted = sum(kinds.values())
    out = [("every volunteer: " if args.everyone else "") +
           f"answers to the whole group: {counted + len(unlabelled)} to {len(rows)} lines ({silent} with none)"]
    out += [f"{kind} {kinds[kind]}/{counted} {clopper_pearson(kinds[kind], counted).text('{:.1%}')}"
            for kind in KINDS if counted]
    out.append(f"not labelled yet: {len(unlabelled)}")
    judged = talk - talk_unlabelled
    out.append(f"Let them talk: lines calling someone absent, by the hand labels: {len(absent)}/{judged} "
               f"{clopper_pearson(len(absent), judged).text('{:.1%}')} ({talk_unlabelled} of {talk} not labelled)")
    print("\n".join(out))
    if not args.no_log:
        append_row(ROOT / "docs" / "eval" / "group-answers-log.md",
                   "# Group scenes, answers to the whole group\n\nEach run of `python bench/group_answers.py` "
                   "(bench/data/group_heldout.jsonl, the lines that name no one), newest last.\n\n"
                   "| date | commit | figures |\n|---|---|---|\n",
                   (str(datetime.date.today()), commit(), " · ".join(out)))
    print("\n".join(absent))
    for item in unlabelled:
        print(json.dumps(item, ensure_ascii=False))


if __name__ == "__main__":
    main()
