"""The local engine on a shared CPU: decode speed and first token with 0, 1 and 2 cores kept busy by other
processes (`yes > /dev/null`, one per core), the engine choosing its threads from the cores free before each
reply (chat/engines/cpu_share.py) against the same engine on all its threads, in the same run.

    .venv/bin/python bench/shared_cpu.py [--rounds 3]
    .venv/bin/python bench/shared_cpu.py --model gemma-3-270m   # another local model (its own section)

Each reply is a question to Sherlock Holmes through ChatHaruhi (the app's path), greedy, 160 tokens at most.
Every reply of the run, the warm-up's included, asks a different question of QUESTIONS (one sentence of 7 to 10
words each), so no condition's prompt can be restored from the states an earlier condition saved: round i of
each condition takes the i-th block of six, one question a condition, so the conditions get questions of the
same kind. (Before 2026-11-27 every condition asked the same five questions with a numeric suffix, so the later
conditions' first tokens restored most of their prompts from saved states.) Medians of the rounds; the
section goes into bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import commit, machine, median, publish, verdict  # noqa: E402

# One question per reply of a run (the warm-up's first, then six a round, one for each condition), none alike:
# a question asked twice would have its prompt restored from the state the first one saved.
QUESTIONS = [
    "Tell me about your method of deduction.",
    "What do you make of Professor Moriarty?",
    "How did you know I had been in Afghanistan?",
    "What is the most dangerous case you ever had?",
    "Why do you play the violin at night?",
    "What do you think of Inspector Lestrade's work?",
    "Which of your cases do you remember best?",
    "What can you tell from a man's hat?",
    "Why do you keep your tobacco in a slipper?",
    "How do you spend a day without a case?",
    "What did you learn from the woman, Irene Adler?",
    "Why did you take rooms at Baker Street?",
    "What makes a crime truly interesting to you?",
    "How do you choose which cases to take?",
    "What do you think of Dr. Watson's stories?",
    "Do you ever fear that you are wrong?",
    "What would you do if Scotland Yard asked for help?",
    "How did you become a consulting detective?",
    "What is the use of your chemical experiments?",
    "Why do you refuse to learn about the solar system?",
    "What does a footprint in the mud tell you?",
    "How did you escape from the Reichenbach Falls?",
    "What is your opinion of your brother Mycroft?",
    "Which disguise has served you best so far?",
    "What do you think of the Baker Street Irregulars?",
    "How do you read a stranger at first sight?",
    "What was the curious incident of the dog?",
    "Why do you dislike being idle for long?",
    "What should a young detective study first?",
    "How would you catch a thief in London tonight?",
    "What is the most singular client you have met?",
    "Why does Mrs. Hudson put up with you?",
    "What do you look for in a handwritten letter?",
    "How long can you go without food on a case?",
    "What did the speckled band turn out to be?",
    "Is there any crime that you could not solve?",
    "What would you tell a man who doubts your methods?",
]
CONDITIONS = [(busy, choose) for busy in (0, 1, 2) for choose in (False, True)]


def question(condition: int, round_: int) -> str:
    """The question of one reply: the warm-up's (condition -1) is the first, then round i of each condition
    takes the i-th block of six, so every reply of a run asks one no other reply asked."""
    index = 0 if condition < 0 else 1 + round_ * len(CONDITIONS) + condition
    if index >= len(QUESTIONS):
        raise SystemExit(f"--rounds asks for more than the {len(QUESTIONS)} questions of bench/shared_cpu.py")
    return QUESTIONS[index]


def measure(rounds: int, busy: int, choose: bool, condition: int, model: str | None = None) -> tuple[float, float, int]:
    """(decode tokens/s, first token s, threads used) medians with `busy` cores kept busy; `condition` picks
    the questions (`question`; -1: the warm-up's); `model`: another local model than the default."""
    from chatharuhi_core.chat.chatbot import ChatHaruhi
    from chatharuhi_core.chat.engines import cpu_share, open_engine
    from chatharuhi_core.chat.engines.local import llamacpp as local_llamacpp
    from chatharuhi_core.config import Settings

    original = cpu_share.free_cores
    settings = Settings.from_env()
    chosen = {"model": model} if model else {}
    engine = open_engine("local", settings, temperature=0.0, **chosen)  # greedy, unseeded: a visitor's reply
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
            bot = ChatHaruhi(role_name="sherlock", engine=engine, settings=settings)
            # a question no other reply of this run asks: its prompt is read afresh (the system prompt aside),
            # as a visitor's is, not restored from the state an earlier round or condition saved
            said = bot.answer(question(condition, i))
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
    ap.add_argument("--model", help="another local model than the default, as --model takes it (gemma-3-270m)")
    args = ap.parse_args()
    question(len(CONDITIONS) - 1, args.rounds - 1)  # enough questions for every reply, before anything runs
    measure(1, 0, True, -1, args.model)  # load the model and take its one-time checks out of the timings
    rows = {}
    for condition, (busy, choose) in enumerate(CONDITIONS):
        rows[busy, choose] = measure(args.rounds, busy, choose, condition, args.model)
        print(f"busy {busy}, {'free cores' if choose else 'all threads'}: {rows[busy, choose]}", flush=True)
    quiet = rows[0, False][0]
    model = f" --model {args.model}" if args.model else ""
    heading = f"## {args.model} on a shared CPU" if args.model else "## The local engine on a shared CPU"
    lines = [heading, "",
             f"Taken {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} with `.venv/bin/python bench/shared_cpu.py "
             f"--rounds {args.rounds}{model}` at commit {commit()} on: {machine()}, no GPU. Every reply asks a question no "
             "other reply of the run asks (`QUESTIONS`, one sentence of 7-10 words each; round i of each condition "
             "takes the i-th block of six), so no first token below is a prompt restored from an earlier "
             "condition's saved state.", "",
             "| cores kept busy | threads | decode, tokens/s | × quiet | first token | baseline (same run): all threads | |",
             "|---|---:|---:|---:|---:|---|---|"]
    for busy in (0, 1, 2):
        all_speed, all_first, all_threads = rows[busy, False]
        speed, first, threads = rows[busy, True]
        goal = "" if busy != 1 else verdict(speed >= 0.5 * quiet and first <= 2 * rows[0, True][1])
        lines.append(f"| {busy} | {threads} | {speed:.1f} | {speed / quiet:.2f} | {first:.2f} s | {all_speed:.1f} "
                     f"tokens/s ({all_speed / quiet:.2f}×), first token {all_first:.2f} s on {all_threads} threads | "
                     f"{goal} |")
    lines += ["", "Goal with one of two cores busy: decode ≥ 0.5× the quiet speed, first token ≤ 2× (issue 43). "
              "With every core busy there is no free one; the engine keeps one thread."]
    publish("shared-cpu" + (f"-{args.model}" if args.model else ""), lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
