"""The local engine on this machine: llama.cpp in-process against llama.cpp's server on the same
model, transformers (the engine's previous path) beside them, and fine-tuning speed.

    .venv/bin/python bench/local_engine.py                          # speeds, page, a short training run
    .venv/bin/python bench/local_engine.py --adapter runs/all-lora  # a real adapter (else a random one of finetune's shape)

For an English (Sherlock Holmes) and a Chinese (孙悟空) role, the same prompts (the engine's packed
prompt, its chat template and the opened script line) go to each system in one run, interleaved:
  - first message: nothing of the prompt cached (the engine's prompt states are dropped first; the
    server last read another role's prompt);
  - ordinary turn: the conversation's second message, right after its first (the system prompt is shared);
  - decode: tokens/s after the first token, on a 128-token continuation with no stop strings.
Systems: the engine's llama.cpp runtime in this process, llama.cpp's server (.venv-llama) from the same
GGUF file, and the transformers runtime (one round: it is the slow path); then the same with a LoRA
adapter (merged into the engine's copies, `--lora_path` for the server, merged for transformers). Sampling is
the engine's (temperature 0.3, top-p 0.9, top-k 50, repetition penalty 1.15); the server is not given
the engine's ban on repeated 4-grams. Median of the rounds; figures and ratios into bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from common import ROOT, app_process, machine, median, write_section  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
START, END = "<!-- local-engine -->", "<!-- /local-engine -->"
TURNS = {"sherlock": ("Good morning, Mr. Holmes.", "What do you make of the mud on my boots?"),
         "sunwukong": ("大圣，早上好。", "师父又被妖怪抓走了，你打算怎么办？")}
GOALS = {"first": 1.5, "ordinary": 1.0}  # seconds to the first token
DECODE_GOAL = 0.8  # of the server's tokens/s
DECODE_TOKENS = 128


def prompts(settings) -> dict:
    """Per role: the first message's and the ordinary turn's messages, as the engine would send them."""
    from chatharuhi_core import ChatHaruhi

    out = {}
    for role_id, (opening, question) in TURNS.items():
        bot = ChatHaruhi(role_name=role_id, llm="local", settings=settings)
        first = bot.prepare(opening).messages
        bot.chat(opening)
        out[role_id] = (bot.role.name, first, bot.prepare(question).messages)
    return out


def _timed(pieces, count) -> tuple[float, float, int]:
    """(first piece s, decode tokens/s after it, tokens) of an iterator of text pieces."""
    start = time.perf_counter()
    first = last = None
    text = []
    for piece in pieces:
        if not piece:
            continue
        last = time.perf_counter()
        first = first or last
        text.append(piece)
    tokens = count("".join(text))
    rate = (tokens - 1) / (last - first) if first and last > first and tokens > 1 else float("nan")
    return (first - start if first else float("nan")), rate, tokens


class InProcess:
    """A runtime of the engine, driven as the engine drives it (the worker thread aside)."""

    def __init__(self, lm):
        from chatharuhi_core.chat.backends.local_runtime import runtime_named

        self.lm, self.runtime = lm, runtime_named(lm.runtime)

    def forget(self) -> None:
        handle = self.lm.handle
        if self.lm.runtime == "llama.cpp":
            from chatharuhi_core.chat.backends.local_llamacpp import PromptStates

            handle.states = PromptStates()
            for llm in (handle.llm, handle.prefill):
                if llm is not None:
                    llm.reset()
        else:
            self.runtime.prefixes = type(self.runtime.prefixes)()

    def run(self, messages, opening, sampling):
        import queue
        import threading

        q: queue.Queue = queue.Queue()
        worker = threading.Thread(target=lambda: (self.runtime.generate(self.lm, messages, opening, sampling,
                                                                        q.put, lambda: False), q.put(None)))
        worker.start()
        while (piece := q.get()) is not None:
            yield piece
        worker.join()


class Server:
    """llama.cpp's server, given the same text (template and opening applied) and the same sampling."""

    def __init__(self, url: str, lm):
        import httpx

        self.url, self.lm, self.http = url, lm, httpx.Client(timeout=300)

    def forget(self) -> None:  # the server keeps the last prompt only; the other role's came last
        pass

    def run(self, messages, opening, sampling):
        body = {"model": "smollm2", "prompt": self.lm.template(messages) + opening, "stream": True,
                "max_tokens": sampling.max_tokens, "temperature": sampling.temperature, "top_p": sampling.top_p,
                "top_k": 50, "min_p": 0.0, "repeat_penalty": sampling.repetition_penalty,
                "stop": list(sampling.stop) or None}
        with self.http.stream("POST", f"{self.url}/completions", json=body) as reply:
            for line in reply.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    yield json.loads(line[6:])["choices"][0]["text"]


def measure(systems: dict, turns: dict, rounds: int) -> dict:
    """{(system, role, figure): median} for figure in first, ordinary (seconds), decode (tokens/s)."""
    from chatharuhi_core.chat.backends.local_model import LocalModelEngine
    from chatharuhi_core.chat.backends.local_runtime import Sampling

    line = LocalModelEngine.sampling
    closed = Sampling(max_tokens=line.max_tokens, stop=("」", "\n\n"))
    free = Sampling(max_tokens=DECODE_TOKENS)
    samples: dict = {}
    for r in range(rounds + 1):  # round 0 warms each system up
        for role_id, (name, first, ordinary) in turns.items():
            opening = f"{name}:「"
            for label, (system, its_rounds) in systems.items():
                if r > its_rounds:
                    continue
                system.forget()
                f = _timed(system.run(first, opening, closed), system.lm.count_tokens)[0]
                o = _timed(system.run(ordinary, opening, closed), system.lm.count_tokens)[0]
                d = _timed(system.run(ordinary, opening, free), system.lm.count_tokens)[1]
                if r:
                    for figure, value in (("first", f), ("ordinary", o), ("decode", d)):
                        samples.setdefault((label, role_id, figure), []).append(value)
                print(f"  round {r} {label:32} {role_id:10} first {f:.2f} s, ordinary {o:.2f} s, "
                      f"decode {d:.1f} tokens/s", flush=True)
    return {k: median(v) for k, v in samples.items()}


def random_adapter(folder: Path) -> Path:
    """A LoRA adapter of finetune's shape (r=16, alpha 32, every linear layer) with random weights: speed
    does not depend on what the weights are. Made once into the bench cache."""
    if (folder / "adapter_model.safetensors").is_file():
        return folder
    import torch
    from peft import LoraConfig, get_peft_model

    from chatharuhi_core.chat.backends.local_model import FINETUNE_MANIFEST
    from chatharuhi_core.chat.backends.local_runtime import bundled_spec
    from chatharuhi_core.chat.backends.local_transformers import read_model

    _, base = read_model(bundled_spec())
    torch.manual_seed(0)
    model = get_peft_model(base, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear",
                                             init_lora_weights=False))
    model.save_pretrained(folder)
    (folder / FINETUNE_MANIFEST).write_text(json.dumps({"base_model": ""}))
    return folder


def speeds(settings, rounds: int, adapter: Path, log: Path) -> dict:
    from loopback import llama_server

    from chatharuhi_core.chat.backends.gguf_lora import lora_for
    from chatharuhi_core.chat.backends.local_model import load_model, resolve_model

    base, tuned = resolve_model(""), resolve_model(str(adapter))
    gguf = Path(base.source) / base.gguf_file
    turns = prompts(settings)
    engine = InProcess(load_model(base, "cpu"))
    threads = str(len(os.sched_getaffinity(0)))
    out = {}
    with llama_server(gguf, log, threads=int(threads)) as url:
        systems = {"llama.cpp in-process (engine)": (engine, rounds),
                   "llama.cpp server": (Server(url, engine.lm), rounds),
                   "transformers (engine before)": (InProcess(load_model(base, "cpu", "transformers")), 1)}
        out.update(measure(systems, turns, rounds))
    lora = lora_for(adapter, gguf)
    tuned_engine = InProcess(load_model(tuned, "cpu"))
    with llama_server(gguf, log, threads=int(threads), lora=lora) as url:
        systems = {"fine-tuned, llama.cpp in-process (engine)": (tuned_engine, rounds),
                   "fine-tuned, llama.cpp server": (Server(url, tuned_engine.lm), rounds),
                   "fine-tuned, transformers": (InProcess(load_model(tuned, "cpu", "transformers")), 1)}
        out.update(measure(systems, turns, rounds))
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


def _rows(fig: dict, prefix: str, base_prefix: str | None = None) -> list[str]:
    """Table rows: the engine against the server (ratio), transformers beside, the goal."""
    rows = []
    engine, server = f"{prefix}llama.cpp in-process (engine)", f"{prefix}llama.cpp server"
    slow = f"{prefix}transformers" + ("" if prefix else " (engine before)")
    for role_id in TURNS:
        for figure, what in (("first", "first token, first message"), ("ordinary", "first token, ordinary turn"),
                             ("decode", "decode")):
            mine, theirs, before = (fig.get((k, role_id, figure), float("nan")) for k in (engine, server, slow))
            if figure == "decode":
                ratio = mine / theirs
                goal, ok = f"≥ {DECODE_GOAL}x server", ratio >= DECODE_GOAL
                cells = f"{mine:.1f} tokens/s | {theirs:.1f} tokens/s | **{ratio:.2f}x** | {before:.1f} tokens/s"
            else:
                ratio = theirs / mine  # >1: the engine is faster
                goal, ok = f"≤ {GOALS[figure]} s", mine <= GOALS[figure]
                cells = f"{mine:.2f} s | {theirs:.2f} s | {ratio:.2f}x | {before:.2f} s"
            if base_prefix is not None:  # a fine-tuned adapter: no slower than the base engine
                base = fig[(f"{base_prefix}llama.cpp in-process (engine)", role_id, figure)]
                ok = (mine >= 0.95 * base) if figure == "decode" else (mine <= 1.05 * base + 0.05)
                goal = f"as the base ({base:.1f} tokens/s)" if figure == "decode" else f"as the base ({base:.2f} s)"
            rows.append(f"| {prefix}{what}, `{role_id}` | {cells} | {goal} | {'met' if ok else '**missed**'} |")
    return rows


def main() -> int:
    from chatharuhi_core.config import Settings

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train-steps", type=int, default=3, help="steps of the short training run (0: none)")
    parser.add_argument("--adapter", type=Path, help="a LoRA adapter from finetune (default: a random one of its shape)")
    parser.add_argument("--finetuned", type=Path, help="a finished finetune output whose manifest to report")
    parser.add_argument("--no-page", action="store_true", help="skip the page's first token (gradio_client)")
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    settings = Settings.from_env({"CHATHARUHI_CACHE": str(args.cache)})
    adapter = args.adapter or random_adapter(args.cache / "random-lora")
    print("local engine against llama.cpp's server, same model, same prompts", flush=True)
    fig = speeds(settings, args.rounds, adapter, args.cache / "llama-server.log")
    pg = {} if args.no_page else page(args.cache, args.rounds)
    short = training(settings, args.train_steps) if args.train_steps else None
    full = json.loads((args.finetuned / "chatharuhi-finetune.json").read_text()) if args.finetuned else None

    command = " ".join(["`.venv/bin/python bench/local_engine.py", *sys.argv[1:]]) + "`"
    lines = [START, "## Local engine (bundled SmolLM2-135M, CPU)", "",
             f"Taken {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC with {command} on: {machine()}.", "",
             "Same GGUF file (Q4_1), same prompts, same sampling, interleaved in one run; median of "
             f"{args.rounds} rounds (transformers: 1). Ratio: the engine against the server (above 1: the engine "
             "is faster).", "",
             "| figure | engine (llama.cpp in-process) | llama.cpp server | ratio | transformers (engine before) "
             "| goal | |", "|---|---|---|---|---|---|---|"]
    lines += _rows(fig, "")
    lines += _rows(fig, "fine-tuned, ", base_prefix="")
    which = f"`{args.adapter}`" if args.adapter else ("a random adapter of finetune's shape (LoRA r=16 on every "
                                                       "linear layer; speed does not depend on the weights)")
    lines += ["", f"Fine-tuned: {which}, "
              "merged by the engine into 16- and 8-bit copies of the base (`chatharuhi_core/chat/backends/"
              "gguf_lora.py`), converted to llama.cpp's adapter format for the server (`--lora_path`); "
              "transformers merges it into its copy.", ""]
    if pg or short or full:
        lines += ["| figure | measured | baseline (same run) | goal | |", "|---|---|---|---|---|"]
    for role_id, t in pg.items():
        lines.append(f"| first token, ordinary turn, `{role_id}` (page, gradio_client) | {t:.2f} s | | "
                     f"≤ {GOALS['ordinary']} s | {'met' if t <= GOALS['ordinary'] else '**missed**'} |")
    if short:
        lines.append(f"| fine-tuning speed, LoRA r=16, {short['steps']} steps on `sherlock` | "
                     f"{short['tokens_per_s']} tokens/s | full fine-tuning measured 123-176 tokens/s | | |")
    if full:
        t, d = full["training"], full["data"]
        lines.append(f"| fine-tuning run `{args.finetuned.name}`: {d['rows']} rows, {d['tokens']:,} tokens, "
                     f"{full['hyperparameters']['epochs']:g} epoch(s) | {t['seconds'] / 60:.1f} min, {t['tokens_per_s']} "
                     f"tokens/s | | ≤ 45 min | {'met' if t['seconds'] <= 45 * 60 else '**missed**'} |")
    lines += [END]
    section = "\n".join(lines)
    write_section(RESULTS, START, END, section)
    print("\n" + section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
