"""Does the offline engine answer the visitor? Free-form visitor questions, labelled by hand (issue 50).

    python bench/questions.py                       # the held-out split: figures, docs/eval/questions/, the log
    python bench/questions.py --split tuning --sweep  # the tuning split, and the threshold that fits it best

The questions (bench/data/questions/) were written for this by hand, apart from the engine, in two splits
written separately and differently: `tuning` (plain one-sentence questions; the engine's ANSWERS_AT is chosen
on it) and `heldout` (chat-box questions of many styles; only measured). Each lists every line of the
character that answers it, or none. Whom each of the characters' lines calls, whom it speaks of, and whether
it can deflect a question were labelled by hand too, apart from the engine's rules (bench/data/addressing-*.jsonl):
those labels, not the engine's own detector, say whether a reply calls someone else.

A reply is right when it is one of the answering lines, or, where none answers, a line labelled as a
deflection. Against the same questions: the fitting greeting and a random line of the character (seeded per
question), each with a paired interval. Every held-out run is added to docs/eval/questions/heldout-log.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import random
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import append_row  # noqa: E402
from chatharuhi_core.chat.chatbot import ChatHaruhi  # noqa: E402
from chatharuhi_core.chat.engines import script  # noqa: E402
from chatharuhi_core.data.metrics import clopper_pearson, paired_bootstrap  # noqa: E402
from chatharuhi_core.roles.lines import parse_scene_lines  # noqa: E402
from chatharuhi_core.roles.sources import load_role  # noqa: E402

DATA = ROOT / "bench" / "data"
OUT = ROOT / "docs" / "eval" / "questions"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def questions(split: str) -> list[dict]:
    files = sorted((DATA / "questions").glob(f"{split}*.jsonl"))
    if not files:
        raise SystemExit(f"No question files for the split {split!r} in {DATA / 'questions'}.")
    return [q for f in files for q in read_jsonl(f)]


def labels() -> dict[tuple[str, str], dict]:
    """(role id, line) -> the hand label of that line (calls, mentions, deflects)."""
    out: dict[tuple[str, str], dict] = {}
    for f in sorted(DATA.glob("addressing-*.jsonl")):
        for row in read_jsonl(f):
            key = (row["role"], row["line"])
            if key in out:  # a line said in two scenes: it calls whom either calls, deflects if both do
                old = out[key]
                row = {**row, "calls": sorted({*old["calls"], *row["calls"]}),
                       "mentions": sorted({*old.get("mentions", []), *row.get("mentions", [])}),
                       "deflects": old.get("deflects", False) and row.get("deflects", False)}
            out[key] = row
    deflects = DATA / "deflects.jsonl"  # one consistent labelling of deflections, both languages
    if deflects.exists():
        by_line: dict[tuple[str, str], bool] = {}
        for row in read_jsonl(deflects):
            key = (row["role"], row["line"])
            by_line[key] = by_line.get(key, True) and bool(row["deflects"])
        for key, value in by_line.items():
            if key in out:
                out[key] = {**out[key], "deflects": value}
    return out


def own_lines(role) -> list[str]:
    return [t for s in role.stories for spk, t in parse_scene_lines(s.text) if spk in role.speaker_names and t]


def same_person(label_name: str, visitor: str, role) -> bool:
    """The labels name people as the scenes do; the visitor may be given by a short form ("Darcy")."""
    a, b = role.addressing.speaker(label_name), role.addressing.speaker(visitor)
    return a == b or label_name == visitor


def judge(q: dict, reply: str, label: dict | None, role) -> dict:
    answers = q["answers"]
    calls = [c for c in (label or {}).get("calls", []) if not same_person(c, q["visitor"], role)]
    mentions = [m for m in (label or {}).get("mentions", []) if same_person(m, q["visitor"], role)]
    deflects = bool((label or {}).get("deflects"))
    if answers:
        right = reply in answers
        kind = "answers" if right else ("deflects" if deflects else "another line")
    else:
        right = deflects and not calls and not mentions
        kind = "deflects" if deflects else "another line"
    if calls:
        kind = "calls someone else"
        right = False
    elif mentions:
        kind = "speaks of the visitor"
        right = False
    return {"right": right, "kind": kind, "calls_else": bool(calls), "unlabelled": label is None}


@contextlib.contextmanager
def threshold(value: float):
    old = script.ANSWERS_AT
    script.ANSWERS_AT = value
    try:
        yield
    finally:
        script.ANSWERS_AT = old


def engine_replies(qs: list[dict], at: float | None) -> tuple[list[str], list[float], list[str]]:
    """Each question's reply with the threshold `at` (None: the engine's own); also the best line's score and the
    deflection, so a sweep can try thresholds without asking again."""
    scored: list[float] = []
    real_rank = script._rank

    def spy(request, cands, to):
        out = real_rank(request, cands, to)
        scored.append(max(out) if out else -math.inf)
        return out

    replies, bests, deflections = [], [], []
    roles = {}
    script._rank = spy
    try:
        for q in qs:
            role = roles.setdefault(q["role"], load_role(q["role"]))
            scored.clear()
            with threshold(at) if at is not None else contextlib.nullcontext():
                bot = ChatHaruhi(role=role, engine="script", user_role=q["visitor"])
                replies.append(bot.chat(q["question"]))
            bests.append(scored[-1] if scored else -math.inf)
            request_to = role.addressing.speaker(q["visitor"])
            deflections.append(script.deflection(bot_request(bot, q["question"]), request_to, set()))
    finally:
        script._rank = real_rank
    return replies, bests, deflections


def bot_request(bot: ChatHaruhi, text: str):
    """The request the engine would get for `text` (for the deflection alone)."""
    from chatharuhi_core.chat.engines.base import ChatRequest

    return ChatRequest(messages=[], role=bot.role, user_role=bot.user_role, text=text, embedder=bot.embedder)


def baselines(qs: list[dict]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"greeting": [], "random line": []}
    for q in qs:
        role = load_role(q["role"])
        out["greeting"].append(role.fitting_greeting(q["visitor"]) or role.greeting)
        lines = own_lines(role)
        out["random line"].append(random.Random(f"{q['id']}").choice(lines))
    return out


def score(qs: list[dict], replies: list[str], lab: dict) -> list[dict]:
    roles = {}
    return [judge(q, r, lab.get((q["role"], r)), roles.setdefault(q["role"], load_role(q["role"])))
            for q, r in zip(qs, replies)]


def language(q: dict) -> str:
    return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in q["question"]) else "en"


def summary(qs: list[dict], judged: list[dict]) -> dict[str, str]:
    out = {}
    for lang in ("en", "zh", "all"):
        idx = [i for i, q in enumerate(qs) if lang == "all" or language(q) == lang]
        if not idx:
            continue
        k = sum(judged[i]["right"] for i in idx)
        ans = [i for i in idx if qs[i]["answers"]]
        none = [i for i in idx if not qs[i]["answers"]]
        out[lang] = (f"{k}/{len(idx)} {clopper_pearson(k, len(idx)).text('{:.1%}')}"
                     f" · answerable {sum(judged[i]['right'] for i in ans)}/{len(ans)}"
                     f" · none answers {sum(judged[i]['right'] for i in none)}/{len(none)}"
                     f" · calls someone else {sum(judged[i]['calls_else'] for i in idx)}")
    return out


def paired(qs: list[dict], a: list[dict], b: list[dict]) -> str:
    diffs: dict[str, list[float]] = defaultdict(list)
    for q, x, y in zip(qs, a, b):
        diffs[q["role"]].append(float(x["right"]) - float(y["right"]))
    iv = paired_bootstrap(diffs)
    return f"{iv.value:+.1%} [{iv.low:+.1%}, {iv.high:+.1%}]"


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="heldout", choices=["heldout", "tuning"])
    ap.add_argument("--sweep", action="store_true", help="try thresholds on this split (the tuning split only)")
    ap.add_argument("--no-log", action="store_true", help="do not add this held-out run to the log")
    args = ap.parse_args()
    if args.sweep and args.split != "tuning":
        raise SystemExit("Sweep the threshold on the tuning split only: the held-out split is for measuring.")
    qs, lab = questions(args.split), labels()
    if args.sweep:
        replies, bests, deflections = engine_replies(qs, -math.inf)
        for at in [-1.0, *(x / 40 for x in range(12, 41))]:
            chosen = [d if b < at else r for r, b, d in zip(replies, bests, deflections)]
            s = summary(qs, score(qs, chosen, lab))
            print(f"ANSWERS_AT={at:+.3f}  " + "  |  ".join(f"{k}: {v}" for k, v in s.items() if k == "all") +
                  "  |  " + "  ".join(f"{k} {v.split(' ')[0]}" for k, v in s.items() if k != "all"))
        return
    replies, _, _ = engine_replies(qs, None)
    judged = score(qs, replies, lab)
    base = {name: score(qs, rs, lab) for name, rs in baselines(qs).items()}
    lines = [f"# Visitor questions, {args.split} split", "",
             f"{len(qs)} questions, commit {commit()}, ANSWERS_AT={script.ANSWERS_AT}, "
             f"{datetime.date.today().isoformat()}. Made by `python bench/questions.py --split {args.split}`.", "",
             "| system | right (all) | English | Chinese |", "|---|---|---|---|"]
    for name, j in [("offline engine", judged), *base.items()]:
        s = summary(qs, j)
        lines.append(f"| {name} | {s['all']} | {s.get('en', '')} | {s.get('zh', '')} |")
    lines += ["", "Paired, the engine minus each baseline (per question, resampled within each role):", ""]
    for name, j in base.items():
        lines.append(f"- against the {name}: {paired(qs, judged, j)}")
    kinds = Counter(j["kind"] for q, j in zip(qs, judged) if not q["answers"])
    lines += ["", "Where no line answers, what the engine says: " +
              ", ".join(f"{k} {n}" for k, n in kinds.most_common()) + ".", ""]
    unl = sum(j["unlabelled"] for j in judged)
    if unl:
        lines.append(f"{unl} replies are not among the labelled lines.")
    print("\n".join(lines))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{args.split}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with (OUT / f"{args.split}.csv").open("w", encoding="utf-8") as f:
        f.write("id,role,kind,right,question,reply\n")
        for q, r, j in zip(qs, replies, judged):
            cells = [q["id"], q["role"], j["kind"], str(int(j["right"])), q["question"], r]
            f.write(",".join('"' + c.replace('"', '""') + '"' for c in cells) + "\n")
    if args.split == "heldout" and not args.no_log:
        s = summary(qs, judged)
        append_row(OUT / "heldout-log.md", "# Held-out runs of bench/questions.py\n\n| date | commit | all | English "
                   "| Chinese |\n|---|---|---|---|---|\n",
                   (datetime.date.today().isoformat(), commit(), s["all"], s.get("en", ""), s.get("zh", "")))


if __name__ == "__main__":
    main()
