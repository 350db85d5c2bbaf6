"""Does memory change the answer? The local model asked about facts planted early in long conversations.

    .venv/bin/python bench/recall_answers.py              # 200 exchanges, 3 conversations (~6 minutes)
    .venv/bin/python bench/recall_answers.py --seeds 1    # a shorter run

bench/recall.py measures whether a planted fact reaches the prompt; this asks whether the reply then uses it.
The conversations are bench/recall.py's (Sherlock Holmes, facts planted at seeded random turns); each question
("What is my sister's name?") is answered by the local engine (llama.cpp in-process, the bundled
SmolLM2-135M; English only, so the Chinese conversations are left out: its Chinese means nothing) three ways
on the same conversation: memory off (recall budget 0, no pins), recall on (the engine's budgets), and the
facts pinned with recall on. An answer counts when it contains the planted value ("Violet"). Paired
differences per question with 95% bootstrap intervals. The scripted test server echoes its prompt, so an
answer from it says nothing about memory and is not measured.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from common import ROOT, cached_settings, publish, taken  # noqa: E402
from recall import conversation  # noqa: E402

ROLE = "sherlock"


def answers(size: int, seed: int, settings, embedder, engine) -> list[dict]:
    from chatharuhi_core import ChatHaruhi
    from chatharuhi_core.chat.engines.local.model import LOCAL_BUDGETS
    from chatharuhi_core.chat.memory import Memory
    from chatharuhi_core.roles.sources import load_role

    role = load_role(ROLE)
    history, probes = conversation(role, size, seed)
    rows = []
    for _turn, statement, question, value in probes:
        out = {"question": question, "value": value}
        for name, budgets, pins in (("off", replace(LOCAL_BUDGETS, recall_tokens=0), False),
                                    ("recall", LOCAL_BUDGETS, False), ("pinned", LOCAL_BUDGETS, True)):
            memory = Memory()
            if pins:
                for _, fact, _, _ in probes:
                    memory.remember(fact)
            bot = ChatHaruhi(role=role, engine=engine, settings=settings, embedder=embedder, budgets=budgets,
                             history=list(history), memory=memory, read_ahead=False)
            reply = bot.answer(question)
            said = "\n".join(m["content"] for m in reply.messages)
            out[name] = value.lower() in reply.text.lower()
            out[name + "_in_prompt"] = statement in said
            out[name + "_text"] = reply.text
        rows.append(out)
        print(f"  {question:40} {value:12} off {out['off']:d} recall {out['recall']:d} pinned {out['pinned']:d}"
              f"   | {out['recall_text'][:70]!r}", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=200, help="exchanges per conversation")
    parser.add_argument("--seeds", type=int, default=3, help="conversations (ten questions each)")
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench")
    args = parser.parse_args()
    from chatharuhi_core.chat.engines import open_engine
    from chatharuhi_core.data.metrics import paired_bootstrap

    settings, embedder = cached_settings(args.cache)
    engine = open_engine("local", settings)
    engine.load()
    started = time.perf_counter()
    rows = [r for seed in range(args.seeds) for r in answers(args.size, seed, settings, embedder, engine)]
    took = time.perf_counter() - started
    n = len(rows)

    def share(key: str) -> str:
        k = sum(r[key] for r in rows)
        return f"{k}/{n} ({k / n:.0%})"

    def diff(a: str, b: str) -> str:
        iv = paired_bootstrap({ROLE: [float(r[a]) - float(r[b]) for r in rows]})
        return f"{iv.value:+.0%} [{iv.low:+.0%}, {iv.high:+.0%}]"

    lines = ["## Conversation memory: does the answer use the fact?", "",
             taken("bench/recall_answers.py", f" ({took / 60:.0f} min)"), "",
             f"{args.seeds} of bench/recall.py's Sherlock Holmes conversations of {args.size} exchanges, ten questions "
             "each, answered by the local engine (llama.cpp, bundled SmolLM2-135M, its own budgets: 192 history / "
             "128 recall / 192 pinned tokens) three ways on the same conversation. An answer counts when it "
             "holds the planted value. In the prompt: the planted fact was in the prompt the model read.", "",
             "| memory | answers with the fact | fact in the prompt | against memory off (paired, 95% interval) |",
             "|---|---:|---:|---:|",
             f"| off (recall 0, no pins) | {share('off')} | {share('off_in_prompt')} | |",
             f"| recall | {share('recall')} | {share('recall_in_prompt')} | {diff('recall', 'off')} |",
             f"| pinned and recall | {share('pinned')} | {share('pinned_in_prompt')} | {diff('pinned', 'off')} |",
             "", "Chinese is not measured: the bundled model writes no meaningful Chinese."]
    publish("recall-answers", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
