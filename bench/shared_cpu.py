"""The local engine on a shared CPU: decode speed and first token with 0, 1 and 2 cores kept busy by other
processes (`yes > /dev/null`, one per core), the engine choosing its threads from the cores free before each
reply (chat/engines/cpu_share.py) against the same engine on all its threads, in the same run.

    .venv/bin/python bench/shared_cpu.py [--rounds 3]

Each reply is a fresh question to Sherlock Holmes through ChatHaruhi (the app's path), never asked before in
the run (so its prompt is read, not restored), greedy, 160 tokens at most. Medians of the rounds; the
section goes into bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import ROOT, machine, median, publish  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
START, END = "<!-- shared-cpu -->", "<!-- /shared-cpu -->"
QUESTIONS = ["Tell me about your method.", "What do you make of Moriarty?", "How did you know I was in Afghanistan?",
             "What is the most dangerous case you ever had?", "Why do you play the violin at night?"]


def measure(rounds: int, busy: int, choose: bool) -> tuple[float, float, int]:
    """(decode tokens/s, first token s, threads used) medians with `busy` cores kept busy."""
    from chatharuhi_core.chat.chatbot import ChatHaruhi
    from chatharuhi_core.chat.engines import cpu_share, local_llamacpp, open_engine
    from chatharuhi_core.config import Settings

    original = cpu_share.free_cores
    settings = Settings.from_env()
    engine = open_engine("local", settings, temperature=0.0)  # greedy, unseeded: a visitor's reply
    batch = engine.load().handle.batch  # a visitor's reply is written in the batch, which watches the cores
    look = batch._watch.look if batch is not None else None
    if not choose:  # every thread, whatever else runs: the engine as it was
        local_llamacpp.free_cores = lambda *a, **k: len(cpu_share.our_cores())
        if batch is not None:
            batch._watch.look = lambda: len(cpu_share.our_cores())
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(busy)]
    try:
        time.sleep(0.5)
        speeds, firsts, threads = [], [], []
        for i in range(rounds):
            bot = ChatHaruhi(role_name="sherlock", llm=engine, settings=settings)
            # a question never asked before in this process: its prompt is read afresh (the system prompt aside),
            # as a visitor's is, not restored from an earlier round's saved state
            said = bot.answer(f"{QUESTIONS[i % len(QUESTIONS)]} (case {busy}{int(choose)}{i}{time.time_ns() % 997})")
            speeds.append(said.stats.tokens_per_s)
            firsts.append(said.stats.first_token_s)
            threads.append(batch.threads if batch is not None else getattr(engine.load().handle, "threads", 0))
        return median(speeds), median(firsts), int(median(threads))
    finally:
        for hog in hogs:
            hog.kill()
        local_llamacpp.free_cores = original
        if batch is not None:
            batch._watch.look = look


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    measure(1, 0, True)  # load the model and take its one-time checks out of the timings
    rows = {}
    for busy in (0, 1, 2):
        for choose in (False, True):
            rows[busy, choose] = measure(args.rounds, busy, choose)
            print(f"busy {busy}, {'free cores' if choose else 'all threads'}: {rows[busy, choose]}", flush=True)
    quiet = rows[0, False][0]
    lines = [START, "## The local engine on a shared CPU", "",
             f"Taken {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} with `.venv/bin/python bench/shared_cpu.py "
             f"--rounds {args.rounds}` on: {machine()}.", "",
             "| cores kept busy | threads | decode, tokens/s | × quiet | first token | baseline (same run): all threads | |",
             "|---|---:|---:|---:|---:|---|---|"]
    for busy in (0, 1, 2):
        all_speed, all_first, all_threads = rows[busy, False]
        speed, first, threads = rows[busy, True]
        goal = "" if busy != 1 else ("met" if speed >= 0.5 * quiet and first <= 2 * rows[0, True][1] else "**missed**")
        lines.append(f"| {busy} | {threads} | {speed:.1f} | {speed / quiet:.2f} | {first:.2f} s | {all_speed:.1f} "
                     f"tokens/s ({all_speed / quiet:.2f}×), first token {all_first:.2f} s on {all_threads} threads | "
                     f"{goal} |")
    lines += ["", "Goal with one of two cores busy: decode ≥ 0.5× the quiet speed, first token ≤ 2× (issue 43). "
              "With every core busy there is no free one; the engine keeps one thread.", END]
    publish(RESULTS, START, END, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
