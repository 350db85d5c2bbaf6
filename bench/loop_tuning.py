"""The local engine's word penalty chosen on a tuning set (issue 65): how often the shipped model's replies loop,
and how often they read as Chinese, for each penalty, on bench/questions.py's *tuning* questions (plain one-sentence
questions, apart from the held-out split and from eval's held-out scenes, which judge the choice afterwards).

    .venv/bin/python bench/loop_tuning.py 0 0.5 1.0 [--lang zh]

One reply per question and penalty, seeded by the question's id (the same draw for every penalty), through the
library as a visitor gets it. Loops: data/loops.py; reads as Chinese: bench/readable_chinese.py's jieba judge.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.questions import language, questions  # noqa: E402
from bench.readable_chinese import reads_as_chinese  # noqa: E402
from chatharuhi_core.chat.chatbot import ChatHaruhi  # noqa: E402
from chatharuhi_core.chat.engines import open_engine  # noqa: E402
from chatharuhi_core.chat.engines.local.model import LocalModelEngine  # noqa: E402
from chatharuhi_core.config import Settings  # noqa: E402
from chatharuhi_core.data.loops import loop_reason  # noqa: E402
from chatharuhi_core.data.metrics import clopper_pearson  # noqa: E402
from chatharuhi_core.roles.sources import load_role  # noqa: E402


def replies(penalty: float, qs: list[dict], settings: Settings) -> list[str]:
    LocalModelEngine.sampling = replace(LocalModelEngine.sampling, frequency_penalty=penalty)
    out = []
    for q in qs:
        seed = int(hashlib.sha256(q["id"].encode()).hexdigest()[:8], 16)
        engine = open_engine("local", settings, seed=seed)
        out.append(ChatHaruhi(role=load_role(q["role"]), engine=engine, user_role=q["visitor"],
                              settings=settings).chat(q["question"]))
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("penalties", nargs="+", type=float)
    p.add_argument("--lang", choices=["zh", "en", "all"], default="zh")
    args = p.parse_args(argv)
    settings = Settings.from_env()
    qs = [q for q in questions("tuning") if args.lang == "all" or language(q) == args.lang]
    print(f"{len(qs)} tuning questions ({args.lang}), the shipped model, one seeded reply each\n")
    print("| word penalty | loops | reads as Chinese | mean length (characters) | examples of loops |")
    print("|---:|---|---|---:|---|")
    for penalty in args.penalties:
        said = replies(penalty, qs, settings)
        loops = [loop_reason(s) for s in said]
        k = sum(r is not None for r in loops)
        zh = [reads_as_chinese(s) for s, q in zip(said, qs) if language(q) == "zh"]
        read = f"{sum(zh)} of {len(zh)}" if zh else "–"
        iv = clopper_pearson(k, len(said))
        print(f"| {penalty:g} | {k} of {len(said)} [{iv.low:.1%}, {iv.high:.1%}] | {read} | "
              f"{statistics.mean(len(s) for s in said):.0f} | {'; '.join(sorted({r for r in loops if r})[:3])} |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
