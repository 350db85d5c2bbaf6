"""First token and decode speed of local models on this machine, through the local engine as a visitor meets it
(issue 54): each model answers the same questions to 孙悟空 and Sherlock Holmes, one conversation per question (no
history, the prompt's start not read ahead), replies one at a time (CHATHARUHI_LOCAL_SLOTS=1, the path every model
takes), one model after the other in one process, two rounds each; medians over the replies, speeds in each model's
own tokens. The first reply of each model, which loads it, is not counted.

    CHATHARUHI_LOCAL_SLOTS=1 .venv/bin/python bench/candidate_speed.py [GGUF ...]   # default: the bundled model
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chatharuhi_core.chat.chatbot import ChatHaruhi  # noqa: E402

QUESTIONS = {"sunwukong": ["你是谁？", "你觉得八戒怎么样？", "今天吃什么？", "你会不会七十二变？"],
             "sherlock": ["Who are you?", "What do you think of Moriarty?", "Do you play the violin?",
                          "What is in the Persian slipper?"]}


def measure(model: str | None, rounds: int) -> dict[str, list[float]]:
    """First-token seconds and tokens/s of each reply (the reply's own stats), after one warm-up reply."""
    ChatHaruhi(role_name="sherlock", engine="local", model=model, read_ahead=False).answer("Good morning.")
    first, rate = [], []
    for _ in range(rounds):
        for role, questions in QUESTIONS.items():
            for q in questions:
                stats = ChatHaruhi(role_name=role, engine="local", model=model, read_ahead=False).answer(q).stats
                first.append(stats.first_token_s)
                if stats.tokens_per_s:
                    rate.append(stats.tokens_per_s)
    return {"first": first, "rate": rate}


def main(models: list[str | None]) -> None:
    if os.environ.get("CHATHARUHI_LOCAL_SLOTS") != "1":
        sys.exit("run with CHATHARUHI_LOCAL_SLOTS=1: replies one at a time, the path every model takes")
    print("| model | replies | first token, median | decode, median tokens/s |\n|---|---:|---:|---:|")
    for model in models:
        got = measure(model, rounds=2)
        print(f"| {Path(model).name if model else 'bundled SmolLM2-135M'} | {len(got['first'])} | "
              f"{statistics.median(got['first']):.2f} s | {statistics.median(got['rate']):.1f} |")


if __name__ == "__main__":
    main([None, *sys.argv[1:]])
