"""Which engine answers a visitor more: the offline engine or the shipped fine-tuned model, labelled blind (issue 65).

    python bench/answers_blind.py collect script   # each engine answers the held-out questions (runs/answers-*.jsonl)
    python bench/answers_blind.py collect local
    python bench/answers_blind.py shuffle          # the replies shuffled into docs/eval/answers/blind.csv, the key
                                                   # to runs/answers-key.csv
    (label docs/eval/answers/blind.csv into docs/eval/answers/labels.csv, commit, and only then)
    python bench/answers_blind.py unblind     # the key is copied beside the labels (its SHA-256 checked against
                                              # the one recorded at collection) and results.md is written

The questions are bench/questions.py's held-out split (176 chat-box questions written by hand, apart from both
engines, 88 per language). Each engine answers each question once, in a fresh conversation, as a visitor of the page
would get it: the offline engine as it is, the local model with its default model and sampling, seeded by the
question's id. The replies are shuffled together under random ids with no engine named, and the key (which id is
which engine) stays out of the repository, its SHA-256 recorded in docs/eval/answers/README.md, until the labels are
committed.

Labels (docs/eval/answers/README.md has the rubric the labeller read): `answers` (the reply responds to what the
visitor asked or said, in character), `deflects` (in character, it turns the question aside), `misses` (anything
else: another subject, nonsense, not the character, unreadable). An engine "answers" a question when its reply is
labelled `answers`; the tables also give `answers or deflects`. Rates carry exact intervals; the difference between
the engines is paired by question (bootstrap within each role).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import hashlib
import random
import shutil
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.questions import commit, language, questions  # noqa: E402
from chatharuhi_core.chat.chatbot import ChatHaruhi  # noqa: E402
from chatharuhi_core.chat.engines import open_engine  # noqa: E402
from chatharuhi_core.config import Settings  # noqa: E402
from chatharuhi_core.data.metrics import clopper_pearson, paired_bootstrap  # noqa: E402
from chatharuhi_core.roles.sources import load_role  # noqa: E402

OUT = ROOT / "docs" / "eval" / "answers"
KEY = ROOT / "runs" / "answers-key.csv"
ENGINES = ("script", "local")
LABELS = ("answers", "deflects", "misses")


def _seed(qid: str) -> int:
    return int(hashlib.sha256(qid.encode()).hexdigest()[:8], 16)


def collect(name: str, model: str) -> None:
    """One engine's replies to every held-out question, kept in runs/ (not committed until the labels are)."""
    import json

    settings = Settings.from_env()
    out = KEY.parent / f"answers-{name}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for q in questions("heldout"):
            options = {"model": model, "seed": _seed(q["id"])} if name == "local" else {}
            engine = open_engine(name, settings, **options)
            bot = ChatHaruhi(role=load_role(q["role"]), engine=engine, user_role=q["visitor"], settings=settings)
            try:
                reply = bot.chat(q["question"])
            except Exception as exc:  # a failed reply is a miss, kept visible in the key
                reply = f"[no reply: {type(exc).__name__}]"
            f.write(json.dumps({"engine": name, "qid": q["id"], "role": q["role"], "visitor": q["visitor"],
                                "question": q["question"], "reply": reply}, ensure_ascii=False) + "\n")
            print(name, q["id"], reply[:60].replace("\n", " "), flush=True)


def shuffle() -> None:
    """Both engines' replies shuffled under random ids into blind.csv; which is which into the key, in runs/."""
    import json

    rows = [json.loads(line) for name in ENGINES
            for line in (KEY.parent / f"answers-{name}.jsonl").read_text(encoding="utf-8").splitlines()]
    rng = random.Random(65)
    rng.shuffle(rows)
    for i, row in enumerate(rows):
        row["id"] = f"r{i + 1:03d}"
    with KEY.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, ["id", "engine", "qid"])
        w.writeheader()
        w.writerows({k: r[k] for k in ("id", "engine", "qid")} for r in rows)
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "blind.csv").open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, ["id", "role", "visitor", "question", "reply"])
        w.writeheader()
        w.writerows({k: r[k] for k in ("id", "role", "visitor", "question", "reply")} for r in rows)
    digest = hashlib.sha256(KEY.read_bytes()).hexdigest()
    print(f"{len(rows)} replies in {OUT / 'blind.csv'}; key {KEY} (SHA-256 {digest}), commit {commit()}")


def _read(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def unblind(key_sha256: str) -> None:
    digest = hashlib.sha256(KEY.read_bytes()).hexdigest()
    if digest != key_sha256:
        raise SystemExit(f"{KEY} is not the key recorded at collection (SHA-256 {digest}).")
    labels = {r["id"]: r["label"].strip() for r in _read(OUT / "labels.csv")}
    bad = {v for v in labels.values() if v not in LABELS}
    if bad:
        raise SystemExit(f"Unknown labels: {sorted(bad)}")
    key = _read(KEY)
    shutil.copyfile(KEY, OUT / "key.csv")
    qs = {q["id"]: q for q in questions("heldout")}
    by = {(k["engine"], k["qid"]): labels[k["id"]] for k in key}
    lines = ["# Does the engine answer? Held-out visitor questions, labelled blind\n",
             f"{len(qs)} questions, {len(key)} replies; labels: [labels.csv](labels.csv) (committed before the key, "
             f"[key.csv](key.csv)); made by `python bench/answers_blind.py unblind`, commit {commit()}, "
             f"{datetime.date.today()}.\n",
             "| engine | language | answers | answers or deflects | misses |", "|---|---|---|---|---|"]
    for name in ENGINES:
        for lang in ("en", "zh", "all"):
            ids = [q for q in qs if lang == "all" or language(qs[q]) == lang]
            got = [by[(name, q)] for q in ids]
            n = len(got)
            cells = []
            for test in (lambda x: x == "answers", lambda x: x in ("answers", "deflects"), lambda x: x == "misses"):
                k = sum(test(x) for x in got)
                cells.append(f"{k}/{n} {clopper_pearson(k, n).text('{:.1%}')}")
            lines.append(f"| {name} | {lang} | " + " | ".join(cells) + " |")
    lines += ["", "Paired by question, the local model minus the offline engine (bootstrap within each role):", ""]
    for lang in ("en", "zh", "all"):
        for what, test in (("answers", lambda x: x == "answers"),
                           ("answers or deflects", lambda x: x in ("answers", "deflects"))):
            diffs: dict[str, list[float]] = defaultdict(list)
            for qid, q in qs.items():
                if lang == "all" or language(q) == lang:
                    diffs[q["role"]].append(float(test(by[("local", qid)])) - float(test(by[("script", qid)])))
            iv = paired_bootstrap(diffs)
            lines.append(f"- {lang}, {what}: {iv.value:+.1%} [{iv.low:+.1%}, {iv.high:+.1%}]")
    (OUT / "results.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    c = sub.add_parser("collect")
    c.add_argument("engine", choices=ENGINES)
    c.add_argument("--model", default="", help="the local engine's model (blank: its default)")
    sub.add_parser("shuffle")
    u = sub.add_parser("unblind")
    u.add_argument("key_sha256", help="the key's SHA-256 recorded at collection")
    args = p.parse_args(argv)
    if args.what == "collect":
        collect(args.engine, args.model)
    elif args.what == "shuffle":
        shuffle()
    else:
        unblind(args.key_sha256)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
