"""The local engine on this machine: time to first token for an ordinary turn, and fine-tuning speed.

    .venv/bin/python bench/local_engine.py                          # first token, library and page
    .venv/bin/python bench/local_engine.py --finetuned runs/all-lora # also that run's training speed

First token, bundled SmolLM2-135M on the CPU, an ordinary turn (a conversation's second message),
in English (Sherlock Holmes) and Chinese (孙悟空), median of the rounds:
  - before (baseline, same run): the paper's budgets 1,500/1,200 and no prompt cache, as shipped before;
  - now: the engine's own budgets (256/192, in its tokens) and the system prompt's attention cache;
  - page: the same through app.py and gradio_client, from submit to the first frame with text.
Training: tokens per second of `finetune` (LoRA, TRL SFTTrainer) in a short run on one role, and, when
given, the figures a finished run wrote to its manifest. Prints the figures and writes them into
bench/RESULTS.md between the markers below.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from common import ROOT, app_process, first_piece_s, machine, median, write_section  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
START, END = "<!-- local-engine -->", "<!-- /local-engine -->"
TURNS = {"sherlock": ("Good morning, Mr. Holmes.", "What do you make of the mud on my boots?"),
         "sunwukong": ("大圣，早上好。", "师父又被妖怪抓走了，你打算怎么办？")}
GOAL_S = 1.5



def library(settings, rounds: int) -> dict:
    """Median first-token seconds of an ordinary turn, before and now, per role."""
    from chatharuhi_core import ChatHaruhi
    from chatharuhi_core.chat.backends import local_model
    from chatharuhi_core.config import Budgets

    out = {}
    for role_id, (opening, question) in TURNS.items():
        for label, budgets, cached in (("before", Budgets(), False), ("now", None, True)):
            local_model._PREFIXES.enabled = cached
            times, prompt = [], 0
            for i in range(rounds + 1):
                bot = ChatHaruhi(role_name=role_id, llm="local", settings=settings, budgets=budgets)
                bot.chat(opening)
                prompt = sum(bot.count_tokens(m["content"]) for m in bot.prepare(question).messages)
                t = first_piece_s(bot.stream(question))
                if i:  # the first round loads the model and fills the cache
                    times.append(t)
            out[(role_id, label)] = {"first_token_s": median(times), "prompt_tokens": prompt}
            print(f"  {role_id:10} {label:6} first token {median(times):.2f} s, prompt {prompt} tokens", flush=True)
    local_model._PREFIXES.enabled = True
    return out


def page(cache: Path, rounds: int) -> dict:
    """The same ordinary turn through app.py (gradio_client), the engine's defaults."""
    from gradio_client import Client

    out = {}
    with app_process(cache) as (url, _, _):
        for role_id, (opening, question) in TURNS.items():
            times = []
            for i in range(rounds + 1):
                client = Client(url, verbose=False)
                client.predict(role_id, api_name="/switch_role")
                list(client.submit(opening, "", "local", "", "", "", 256, 192, api_name="/send"))
                start = time.perf_counter()
                job = client.submit(question, "", "local", "", "", "", 256, 192, api_name="/send")
                first = float("nan")
                while not job.done():
                    frames = job.outputs()
                    if frames and frames[-1][0] and len(frames[-1][0]) >= 4 and _text(frames[-1][0][-1]) \
                            and _text(frames[-1][0][-2]) == question:
                        first = time.perf_counter() - start
                        break
                    time.sleep(0.01)
                job.result()
                if i:
                    times.append(first)
            out[role_id] = median(times)
            print(f"  page {role_id:10} first token {out[role_id]:.2f} s", flush=True)
    return out


def _text(message) -> str:
    content = message.get("content") if isinstance(message, dict) else ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def training(settings, steps: int) -> dict:
    """A short real `finetune` on one role: its tokens per second."""
    from chatharuhi_core.data.finetune import TrainSettings, finetune
    from chatharuhi_core.roles.sources import load_role

    with tempfile.TemporaryDirectory() as tmp:
        result = finetune([load_role("sherlock")], Path(tmp) / "bench-lora", train=TrainSettings(max_steps=steps),
                          settings=settings, progress=False)
    t = result.manifest["training"]
    print(f"  training: {t['steps']} steps in {t['seconds']:.0f} s, {t['tokens_per_s']} tokens/s", flush=True)
    return t


def main() -> int:
    from chatharuhi_core.config import Settings

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--train-steps", type=int, default=3, help="steps of the short training run (0: none)")
    parser.add_argument("--finetuned", type=Path, help="a finished finetune output whose manifest to report")
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    settings = Settings.from_env({"CHATHARUHI_CACHE": str(args.cache)})
    print("local engine, first token of an ordinary turn", flush=True)
    lib = library(settings, args.rounds)
    print("the same through the page", flush=True)
    pg = page(args.cache, args.rounds)
    short = training(settings, args.train_steps) if args.train_steps else None
    full = json.loads((args.finetuned / "chatharuhi-finetune.json").read_text()) if args.finetuned else None

    lines = [START, "## Local engine (bundled SmolLM2-135M, CPU)", "",
             f"Taken {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC with `.venv/bin/python bench/local_engine.py"
             f"{' --finetuned ' + str(args.finetuned) if args.finetuned else ''}` on: {machine()}.", "",
             "| figure | measured | baseline (same run) | goal | |", "|---|---|---|---|---|"]
    for role_id in TURNS:
        now, before = lib[(role_id, "now")], lib[(role_id, "before")]
        ok = now["first_token_s"] <= GOAL_S
        lines.append(f"| first token, ordinary turn, `{role_id}` (library) | {now['first_token_s']:.2f} s "
                     f"({now['prompt_tokens']} prompt tokens) | paper budgets, no cache: {before['first_token_s']:.2f} s "
                     f"({before['prompt_tokens']} tokens) | ≤ {GOAL_S} s | {'met' if ok else '**missed**'} |")
    for role_id, t in pg.items():
        lines.append(f"| first token, ordinary turn, `{role_id}` (page, gradio_client) | {t:.2f} s | | ≤ {GOAL_S} s | "
                     f"{'met' if t <= GOAL_S else '**missed**'} |")
    if short:
        lines.append(f"| fine-tuning speed, LoRA r=16, {short['steps']} steps on `sherlock` | "
                     f"{short['tokens_per_s']} tokens/s | full fine-tuning measured 123-176 tokens/s | | |")
    if full:
        t, d = full["training"], full["data"]
        lines.append(f"| fine-tuning run `{args.finetuned.name}`: {d['rows']} rows, {d['tokens']:,} tokens, "
                     f"{full['hyperparameters']['epochs']:g} epoch(s) | {t['seconds'] / 60:.1f} min, {t['tokens_per_s']} "
                     f"tokens/s | | ≤ 45 min | {'met' if t['seconds'] <= 45 * 60 else '**missed**'} |")
    lines += ["", "The prompt is what costs: SmolLM2 prefills about 400 tokens/s on these 2 cores, so the engine's "
              "budgets are sized to it and the system prompt's keys and values are computed once per role and "
              "reused. An ordinary turn here is the second message of a conversation: the first one with a role "
              "pays for the system prompt once.", END]
    section = "\n".join(lines)
    write_section(RESULTS, START, END, section)
    print("\n" + section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
