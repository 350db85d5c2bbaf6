"""The shipped fine-tuned Gemma's speed (issue 65): the local engine against llama.cpp's own server on the same base
file and the same adapter, with Gemma as shipped beside, in one run.

    CHATHARUHI_LOCAL_SLOTS=1 .venv/bin/python bench/shipped_speed.py [--rounds 2]   # writes docs/eval/shipped/speed.md

bench/local_engine.py's method and prompts (an English and a Chinese role; the first message, the character opened,
an ordinary turn, and decode over 128 tokens), interleaved round by round. The engine merges the adapter into its
16- and 8-bit copies of the base once (gguf_lora.merged_for) and writes with the 8-bit merge; the server is given
the Q4_K_M base and the adapter file as it is shipped (`--lora_path`), llama.cpp applying it at every step. Sampling
is the engine's; the server is not given the engine's n-gram ban or word penalty.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from common import ROOT, machine, median  # noqa: E402
from local_engine import InProcess, Server, measure, prompts  # noqa: E402

FIGURES = (("first", "first token, first message (s)"), ("opened", "first token, character opened (s)"),
           ("ordinary", "first token, ordinary turn (s)"), ("decode", "decode (tokens/s)"))


def main() -> int:
    from loopback import llama_server

    from chatharuhi_core.chat.engines.local.llama_cpu import in_use
    from chatharuhi_core.chat.engines.local.llamacpp import FLASH_ATTENTION
    from chatharuhi_core.chat.engines.local.model import load_model, resolve_model
    from chatharuhi_core.config import Settings

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench")
    args = parser.parse_args()
    if os.environ.get("CHATHARUHI_LOCAL_SLOTS") != "1":
        sys.exit("run with CHATHARUHI_LOCAL_SLOTS=1: one reply at a time, one stream as the server writes it")
    settings = Settings.from_env({"CHATHARUHI_CACHE": str(args.cache)})
    shipped = replace(resolve_model(""), cache=str(args.cache))
    base = replace(resolve_model("gemma-3-270m"), cache=str(args.cache))
    assert shipped.adapter, shipped.note
    gguf = Path(base.source) / base.gguf_file
    tuned, plain = InProcess(load_model(shipped, "cpu")), InProcess(load_model(base, "cpu"))
    turns = prompts(settings)
    same = {"threads": len(os.sched_getaffinity(0)), "one_worker": True, "libs": in_use(), "flash_attn": FLASH_ATTENTION}
    log = args.cache / "shipped-server.log"
    with llama_server(gguf, log, lora=Path(shipped.adapter), **same) as tuned_url, \
            llama_server(gguf, log.with_suffix(".base.log"), **same) as url:
        systems = {"engine, fine-tuned (merged)": (tuned, args.rounds),
                   "server, fine-tuned (--lora_path)": (Server(tuned_url, tuned.lm), args.rounds),
                   "engine, Gemma as shipped": (plain, args.rounds),
                   "server, Gemma as shipped": (Server(url, plain.lm), args.rounds)}
        got = measure(systems, turns, args.rounds)
    lines = [f"Taken {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC with `.venv/bin/python bench/shipped_speed.py "
             f"--rounds {args.rounds}` (CHATHARUHI_LOCAL_SLOTS=1) on: {machine()}. Median of the rounds; ratio: engine "
             "against server.", "",
             "| figure | role | engine, fine-tuned | server, fine-tuned | ratio | engine, Gemma | server, Gemma |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for figure, label in FIGURES:
        for role_id in turns:
            cell = {name: median(got[(name, role_id, figure)]) for name in systems}
            e, s = cell["engine, fine-tuned (merged)"], cell["server, fine-tuned (--lora_path)"]
            ratio = e / s if figure == "decode" else s / e  # above 1: the engine is faster
            fmt = "{:.1f}" if figure == "decode" else "{:.2f}"
            plain_e, plain_s = cell["engine, Gemma as shipped"], cell["server, Gemma as shipped"]
            lines.append(f"| {label} | {role_id} | {fmt.format(e)} | {fmt.format(s)} | {ratio:.2f}x | "
                         f"{fmt.format(plain_e)} | {fmt.format(plain_s)} |")
    out = ROOT / "docs" / "eval" / "shipped" / "speed.md"
    out.write_text("# The shipped model's speed against llama.cpp's server\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines), file=sys.stderr)  # stdout may be closed by llama.cpp's quieting of its own output
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
