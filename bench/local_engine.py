"""The local engine on this machine: llama.cpp in-process against llama.cpp's server on the same
model, transformers (the engine's previous path) beside them, and fine-tuning speed.

    .venv/bin/python bench/local_engine.py                          # speeds, page, a short training run
    .venv/bin/python bench/local_engine.py --adapter runs/all-lora  # a real adapter (else a random one of finetune's shape)

For an English (Sherlock Holmes) and a Chinese (孙悟空) role, the same prompts (the engine's packed
prompt, its chat template and the opened script line) go to each system in one run, interleaved:
  - first message: nothing of the prompt cached (the engine's prompt states are dropped first; the
    server last read another role's prompt), as `chat ROLE "message"` on the command line meets it;
  - first message, character opened: the same, after the prompt's start (the system prompt) was read ahead,
    as the page does when a visitor opens a character and the interactive `chat` does before the first
    message is typed; the server is given that start as a one-token request;
  - ordinary turn: the conversation's fourth message: the history is at its budget (as in any conversation
    past its first exchanges) and the scenes are new. The engine puts the scenes after the history and reads
    the prompt's start (system prompt, history) while the visitor types; the server is given the same start
    as a one-token request before, so it holds it in its prompt cache too. The conversation's replies are the
    engine's own, drawn with a fixed seed;
  - decode: tokens/s after the first token, on a 128-token continuation with no stop strings, counted in
    the tokens each system generated (not the text re-tokenised).
Systems: the engine's llama.cpp runtime in this process, llama.cpp's server (.venv-llama) from the same
GGUF file (its calls into llama.cpp kept on one worker thread, tests/llama_server_one_worker.py: as shipped it
runs them on any free thread of its pool and falls from about 80 to 24 tokens/s after a few requests),
and the transformers runtime (one round: it is the slow path); beside them, in the same rounds,
the same three with a LoRA adapter (merged into the engine's copies, `--lora_path` for the server, merged
for transformers), so the fine-tuned model is compared with the base round by round. Sampling is the
engine's (temperature 0.3, top-p 0.9, top-k 50, repetition penalty 1.15); the server is not given the
engine's ban on repeated 4-grams. Median of the rounds; figures and ratios into bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from common import ROOT, app_process, machine, median, publish, verdict  # noqa: E402

# per role: the conversation before the timed turn (its first message opens it), then the timed questions
TURNS = {"sherlock": (("Good morning, Mr. Holmes.", "I have come about my brother, who has vanished.",
                       "He left his rooms on Tuesday night and has not been seen since."),
                      ("What do you make of the mud on my boots?", "Will you take the case?",
                       "Who was the woman at the window?", "Should I go to the police?",
                       "What did the letter in his desk mean?", "Is my brother in danger?")),
         "sunwukong": (("大圣，早上好。", "师父又被妖怪抓走了。", "那妖怪住在山后的洞里，手下有几百个小妖。"),
                       ("你打算怎么办？", "八戒又在偷懒，你管不管？", "你怕不怕那个妖怪？", "你的金箍棒有多重？",
                        "观音菩萨会来帮忙吗？", "师父为什么总是相信妖怪？"))}
GOALS = {"first": 1.5, "opened": 1.5, "ordinary": 1.0}  # seconds to the first token
FIGURES = (("first", "first token, first message"), ("opened", "first token, first message, character opened"),
           ("ordinary", "first token, ordinary turn"), ("decode", "decode"))
DECODE_GOAL = 0.8  # of the server's tokens/s
DECODE_TOKENS = 128
TYPING_S = 2.0  # the page's ordinary turn: the visitor sends the question this long after the last reply


def prompts(settings) -> dict:
    """Per role: the first message's and the ordinary turn's messages, as the engine would send them, and how
    each starts (what is read ahead while the visitor types)."""
    from chatharuhi_core import ChatHaruhi
    from chatharuhi_core.chat.engines import options_for
    from chatharuhi_core.chat.engines.local.model import LocalModelEngine

    out = {}
    for role_id, (before, questions) in TURNS.items():
        engine = LocalModelEngine(replace(options_for("local", settings), seed=0))  # the same history each run
        bot = ChatHaruhi(role_name=role_id, engine=engine, settings=settings)
        opened, first = bot.next_prompt_start(), bot.prepare(before[0]).messages
        assert first[:len(opened)] == opened
        for text in before:
            bot.chat(text)
        start, ordinary = bot.next_prompt_start(), bot.prepare(questions[0]).messages
        assert ordinary[:len(start)] == start
        out[role_id] = (bot.role.name, first, ordinary, start, opened)
    return out


def _timed(pieces) -> tuple[float, float, str]:
    """(first piece s, last piece s, text) of an iterator of text pieces."""
    start = time.perf_counter()
    first = last = float("nan")
    text = []
    for piece in pieces:
        if not piece:
            continue
        last = time.perf_counter() - start
        first = last if not text else first
        text.append(piece)
    return first, last, "".join(text)


def _rate(first: float, last: float, tokens: int) -> float:
    return (tokens - 1) / (last - first) if tokens > 1 and last > first else float("nan")


class InProcess:
    """A runtime of the engine, driven as the engine drives it (the worker thread aside)."""

    def __init__(self, lm):
        from chatharuhi_core.chat.engines.local.runtime import runtime_named

        self.lm, self.runtime = lm, runtime_named(lm.runtime)

    def forget(self) -> None:
        handle = self.lm.handle
        if self.lm.runtime == "llama.cpp":
            from chatharuhi_core.chat.engines.local.llamacpp import PromptStates

            handle.states = PromptStates()
            for llm in (handle.llm, handle.prefill):
                if llm is not None:
                    llm.reset()
        else:
            self.runtime.prefixes = type(self.runtime.prefixes)()

    def warm(self, messages) -> None:
        """What the engine does after a reply, while the visitor types (the llama.cpp runtime only), on a
        thread of its own as the engine reads ahead: llama.cpp's work on this long-lived thread would leave an
        OpenMP pool beside every reply's and slow their decoding (chat/engines/local/model.py, on_own_thread)."""
        from chatharuhi_core.chat.engines.local.model import on_own_thread

        read_ahead = getattr(self.runtime, "warm", None)
        if read_ahead:
            on_own_thread(read_ahead, self.lm, messages)

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

    def generated(self, messages, opening, text: str) -> int:
        """Tokens the last reply generated: llama.cpp's own count (its context ends one short of the last
        token); transformers' reply re-tokenised."""
        if self.lm.runtime != "llama.cpp":
            return self.lm.count_tokens(text)
        llm = self.lm.handle.llm
        prompt = llm.tokenize((self.lm.template(messages) + opening).encode("utf-8"), add_bos=False, special=True)
        return llm.n_tokens - len(prompt) + 1


class Server:
    """llama.cpp's server, given the same text (template and opening applied) and the same sampling."""

    def __init__(self, url: str, lm):
        import httpx

        self.url, self.lm, self.http = url, lm, httpx.Client(timeout=300)
        self.eos = lm.handle.llm.token_eos() if lm.runtime == "llama.cpp" else None

    def forget(self) -> None:  # the server keeps the last prompt only; the other role's came last
        pass

    def warm(self, messages) -> None:
        """The same read-ahead for the server: a one-token request leaves the start in its prompt cache."""
        self.http.post(f"{self.url}/completions", json={"model": "smollm2", "prompt": self.lm.template(messages),
                                                        "max_tokens": 1, "temperature": 0.0}).raise_for_status()

    def run(self, messages, opening, sampling):
        body = {"model": "smollm2", "prompt": self.lm.template(messages) + opening, "stream": True,
                "max_tokens": sampling.max_tokens, "temperature": sampling.temperature, "top_p": sampling.top_p,
                "top_k": 50, "min_p": 0.0, "repeat_penalty": sampling.repetition_penalty,
                "stop": list(sampling.stop) or None}
        if not sampling.stop and self.eos is not None:  # decode: exactly max_tokens, so counted without doubt
            body["logit_bias"] = {str(self.eos): -1e9}
        with self.http.stream("POST", f"{self.url}/completions", json=body) as reply:
            for line in reply.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    yield json.loads(line[6:])["choices"][0]["text"]

    def generated(self, messages, opening, text: str) -> int:
        return DECODE_TOKENS if self.eos is not None else self.lm.count_tokens(text)


def measure(systems: dict, turns: dict, rounds: int) -> dict:
    """{(system, role, figure): [value per round]} for figure in first, opened, ordinary (seconds), decode
    (tokens/s)."""
    from chatharuhi_core.chat.engines.local.model import LocalModelEngine
    from chatharuhi_core.chat.engines.local.runtime import Sampling

    line = LocalModelEngine.sampling
    closed = Sampling(max_tokens=line.max_tokens, stop=("」", "\n\n"))
    free = Sampling(max_tokens=DECODE_TOKENS)
    samples: dict = {}
    for r in range(rounds + 1):  # round 0 warms each system up
        for role_id, (name, first, ordinary, ahead, opened) in turns.items():
            opening = f"{name}:「"
            for label, (system, its_rounds) in systems.items():
                if r > its_rounds:
                    continue
                system.forget()
                f = _timed(system.run(first, opening, closed))[0]
                system.forget()
                system.warm(opened)  # the character opened on the page: the visitor types the first message
                c = _timed(system.run(first, opening, closed))[0]
                system.warm(ahead)  # the visitor reads the reply and types
                o = _timed(system.run(ordinary, opening, closed))[0]
                start, end, text = _timed(system.run(ordinary, opening, free))
                d = _rate(start, end, system.generated(ordinary, opening, text))
                if r:
                    for figure, value in (("first", f), ("opened", c), ("ordinary", o), ("decode", d)):
                        samples.setdefault((label, role_id, figure), []).append(value)
                print(f"  round {r} {label:42} {role_id:10} first {f:.2f} s, opened {c:.2f} s, ordinary {o:.2f} s, "
                      f"decode {d:.1f} tokens/s", flush=True)
    return samples


def random_adapter(folder: Path) -> Path:
    """A LoRA adapter of finetune's shape (r=16, alpha 32, every linear layer) with random weights: speed
    does not depend on what the weights are. Made once into the bench cache."""
    if (folder / "adapter_model.safetensors").is_file():
        return folder
    import torch
    from peft import LoraConfig, get_peft_model

    from chatharuhi_core.chat.engines.local.model import FINETUNE_MANIFEST
    from chatharuhi_core.chat.engines.local.packaged import SMOLLM2, packaged_spec
    from chatharuhi_core.chat.engines.local.transformers_model import read_model

    _, base = read_model(packaged_spec(SMOLLM2))
    torch.manual_seed(0)
    model = get_peft_model(base, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear",
                                             init_lora_weights=False))
    model.save_pretrained(folder)
    (folder / FINETUNE_MANIFEST).write_text(json.dumps({"base_model": ""}))
    return folder


def speeds(settings, rounds: int, adapter: Path, log: Path) -> dict:
    from loopback import llama_server

    from chatharuhi_core.chat.engines.local.gguf_lora import lora_for
    from chatharuhi_core.chat.engines.local.llama_cpu import in_use
    from chatharuhi_core.chat.engines.local.llamacpp import FLASH_ATTENTION
    from chatharuhi_core.chat.engines.local.model import load_model, resolve_model

    base, tuned = (replace(resolve_model(m), cache=str(settings.cache_dir)) for m in ("smollm2", str(adapter)))
    gguf = Path(base.source) / base.gguf_file
    turns = prompts(settings)
    engine, tuned_engine = InProcess(load_model(base, "cpu")), InProcess(load_model(tuned, "cpu"))
    threads = len(os.sched_getaffinity(0))
    lora = lora_for(adapter, gguf, settings.cache_dir / "lora-gguf")
    # each server runs llama.cpp on one worker thread: on any free one, its pools pile up and it falls from about
    # 80 to 24 tokens/s after a few requests (tests/llama_server_one_worker.py); the engine meets it at its best
    # the servers run the engine's build of llama.cpp's CPU kernels and its flash attention: the same computation
    same = {"threads": threads, "one_worker": True, "libs": in_use(), "flash_attn": FLASH_ATTENTION}
    with llama_server(gguf, log, **same) as url, \
            llama_server(gguf, log.with_suffix(".lora.log"), lora=lora, **same) as tuned_url:
        systems = {"llama.cpp in-process (engine)": (engine, rounds),
                   "llama.cpp server": (Server(url, engine.lm), rounds),
                   "fine-tuned, llama.cpp in-process (engine)": (tuned_engine, rounds),
                   "fine-tuned, llama.cpp server": (Server(tuned_url, tuned_engine.lm), rounds),
                   "transformers (engine before)": (InProcess(load_model(base, "cpu", "transformers")), 1),
                   "fine-tuned, transformers": (InProcess(load_model(tuned, "cpu", "transformers")), 1)}
        return measure(systems, turns, rounds)


_BUILD_CHILD = r"""
import json, statistics, sys, time
from llama_cpp import Llama
path, threads, flash, text = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
llm = Llama(model_path=path, n_ctx=2048, n_threads=threads, n_threads_batch=threads, n_ubatch=256, flash_attn=flash,
            verbose=False)
tokens = llm.tokenize(text.encode("utf-8"), add_bos=False)[:600]
reads = []
for _ in range(5):
    llm.reset()
    started = time.perf_counter()
    llm.eval(tokens)
    reads.append(len(tokens) / (time.perf_counter() - started))
rates = []
for _ in range(3):
    llm.reset()
    llm.eval(tokens[:300])
    started, n = time.perf_counter(), 0
    for _token in llm.generate(tokens[:300], temp=0.0, reset=False):
        n += 1
        if n == 1:
            started = time.perf_counter()
        if n == 101:
            break
    rates.append(100 / (time.perf_counter() - started))
print(json.dumps({"read": statistics.median(reads), "decode": statistics.median(rates)}))
"""


def builds(settings, tuned_narrow: Path | None) -> list[dict]:
    """Each build of llama.cpp's CPU kernels this CPU can run (the wheel's, and the variants in .venv/llama-cpu)
    on each copy of the weights the engine uses, with and without flash attention, each in a child process:
    600 tokens of Holmes's scenes read (median of 5) and 100 tokens written after 300 (median of 3)."""
    import subprocess

    from chatharuhi_core.chat.engines.local.llama_cpu import ENV, WHEEL, runnable
    from chatharuhi_core.chat.engines.local.llamacpp import eight_bit_copy, prefill_copy
    from chatharuhi_core.chat.engines.local.model import resolve_model

    base = resolve_model("smollm2")
    gguf = Path(base.source) / base.gguf_file
    f16 = prefill_copy(gguf, settings.cache_dir / "gguf-f16")
    files = {"Q4_1 (as shipped)": gguf, "F16 copy": f16, "Q8_0 copy": eight_bit_copy(f16) if f16 else None,
             "Q8_0, fine-tuned merge": tuned_narrow}
    text = "\n".join(json.loads(line).get("text", "") for line in
                     (ROOT / "characters" / "sherlock" / "stories.jsonl").read_text(encoding="utf-8").splitlines()[:40])
    threads = len(os.sched_getaffinity(0))
    rows = []
    for name, folder in [(WHEEL, None), *((v.name, f) for v, f in runnable())]:
        env = {k: v for k, v in os.environ.items() if k != ENV} | ({ENV: str(folder)} if folder else {})
        for label, path in files.items():
            if path is None:
                continue
            for flash in (False, True):
                done = subprocess.run([sys.executable, "-c", _BUILD_CHILD, str(path), str(threads), str(int(flash)),
                                       text], env=env, capture_output=True, text=True, timeout=600)
                got = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {}
                rows.append({"build": name, "weights": label, "flash": flash, **got})
                print(f"  {name:14s} {label:24s} flash={int(flash)} {got}", flush=True)
    return rows


def page(cache: Path, rounds: int) -> dict:
    """An ordinary turn through app.py (gradio_client), the engine's defaults: the fourth message of a
    conversation, a different question each round (so its scenes are new, as in a real conversation), sent
    TYPING_S after the last reply."""
    from gradio_client import Client

    from chatharuhi_core.chat.engines.local.model import LOCAL_BUDGETS as b

    # the settings panel as it stands once a visitor picks the local engine (its sliders follow the engine)
    budgets = (b.story_tokens, b.history_tokens, False, b.memory_tokens, b.recall_tokens, "", "", 4)  # then the Story boxes
    out = {}
    with app_process(cache) as (url, _, _):
        for role_id, (before, questions) in TURNS.items():
            times = []
            for i in range(rounds + 1):
                client = Client(url, verbose=False)
                client.predict(role_id, api_name="/switch_role")
                for text in before:
                    list(client.submit(text, "", "local", "", "", "", *budgets, api_name="/send"))
                question = questions[i % len(questions)]
                time.sleep(TYPING_S)  # the visitor reads the last reply and types
                start = time.perf_counter()
                job = client.submit(question, "", "local", "", "", "", *budgets, api_name="/send")
                first = float("nan")
                while not job.done():
                    frames = job.outputs()
                    if frames and frames[-1][0] and len(frames[-1][0]) >= 2 * len(before) + 2 \
                            and _text(frames[-1][0][-1]) and _text(frames[-1][0][-2]) == question:
                        first = time.perf_counter() - start
                        break
                    time.sleep(0.01)
                job.result()
                if i:
                    times.append(first)
            out[role_id] = times
            print(f"  page {role_id:10} first token {median(times):.2f} s ({', '.join(f'{t:.2f}' for t in times)})",
                  flush=True)
    return out


def _text(message) -> str:
    content = message.get("content") if isinstance(message, dict) else ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def training(settings, steps: int) -> dict:
    """A short real `finetune` on one role: its tokens per second."""
    from chatharuhi_core.data.finetune import FinetuneOptions, TrainSettings, finetune
    from chatharuhi_core.roles.sources import load_role

    with tempfile.TemporaryDirectory() as tmp:
        options = FinetuneOptions(train=TrainSettings(max_steps=steps), progress=False)
        result = finetune([load_role("sherlock")], Path(tmp) / "bench-lora", options, settings=settings)
    t = result.manifest["training"]
    print(f"  training: {t['steps']} steps in {t['seconds']:.0f} s, {t['tokens_per_s']} tokens/s", flush=True)
    return t


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}" if len(values) > 1 else ""


def _rows(samples: dict) -> list[str]:
    """Table rows: the engine against the server (ratio, medians of the rounds), transformers beside, the goal."""
    rows = []
    fig = {k: median(v) for k, v in samples.items()}
    for role_id in TURNS:
        for figure, what in FIGURES:
            mine, theirs, before = (fig.get((k, role_id, figure), float("nan")) for k in (
                "llama.cpp in-process (engine)", "llama.cpp server", "transformers (engine before)"))
            if figure == "decode":
                ratio = mine / theirs
                goal, ok = f"≥ {DECODE_GOAL}x server", ratio >= DECODE_GOAL
                cells = f"{mine:.1f} tokens/s | {theirs:.1f} tokens/s | **{ratio:.2f}x** | {before:.1f} tokens/s"
            else:
                ratio = theirs / mine  # >1: the engine is faster
                goal, ok = f"≤ {GOALS[figure]} s", mine <= GOALS[figure]
                cells = f"{mine:.2f} s | {theirs:.2f} s | {ratio:.2f}x | {before:.2f} s"
            rows.append(f"| {what}, `{role_id}` | {cells} | {goal} | {verdict(ok)} |")
    return rows


def _tuned_rows(samples: dict) -> list[str]:
    """The fine-tuned engine against the base engine, round by round (both ran in each round): the median
    of the per-round ratios and their range; the fine-tuned server against the base server beside."""
    rows = []
    for role_id in TURNS:
        for figure, what in FIGURES:
            cells = []
            for prefix in ("llama.cpp in-process (engine)", "llama.cpp server"):
                base, tuned = samples[(prefix, role_id, figure)], samples[(f"fine-tuned, {prefix}", role_id, figure)]
                # above 1: the fine-tuned model is faster (tokens/s up, or seconds down)
                paired = [t / b if figure == "decode" else b / t for b, t in zip(base, tuned)]
                spread = f" ({_spread(paired)})" if len(paired) > 1 else ""
                value = f"{median(tuned):.1f} tokens/s" if figure == "decode" else f"{median(tuned):.2f} s"
                cells += [value, f"{median(paired):.2f}x{spread}"]
                if prefix.startswith("llama.cpp in"):
                    ok = median(paired) >= 0.95
            rows.append(f"| fine-tuned, {what}, `{role_id}` | {' | '.join(cells)} | ≥ 0.95x the base | "
                        f"{verdict(ok)} |")
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
    from chatharuhi_core.chat.engines.local.model import on_own_thread

    # torch's work on this long-lived thread would slow every later llama.cpp reply (they share libgomp)
    adapter = args.adapter or on_own_thread(random_adapter, args.cache / "random-lora")
    print("local engine against llama.cpp's server, same model, same prompts", flush=True)
    fig = speeds(settings, args.rounds, adapter, args.cache / "llama-server.log")
    pg = {} if args.no_page else page(args.cache, args.rounds)
    print("llama.cpp's builds and weight formats, each in a child process", flush=True)
    merged = sorted((args.cache / "lora-gguf").glob("*merged-q8_0*.gguf"), key=lambda p: p.stat().st_mtime)
    kernels = builds(settings, merged[-1] if merged else None)
    short = training(settings, args.train_steps) if args.train_steps else None
    full = json.loads((args.finetuned / "chatharuhi-finetune.json").read_text()) if args.finetuned else None

    command = " ".join(["`.venv/bin/python bench/local_engine.py", *sys.argv[1:]]) + "`"
    lines = ["## Local engine (bundled SmolLM2-135M, CPU)", "",
             f"Taken {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC with {command} on: {machine()}.", "",
             "Same GGUF file (Q4_1), same prompts, same sampling, interleaved in one run; median of "
             f"{args.rounds} rounds (transformers: 1). Ratio: the engine against the server (above 1: the engine "
             "is faster). First message: nothing read before, as a one-shot `chat ROLE \"message\"` meets it; character "
             "opened: the system prompt read ahead, as the page does when a character is opened. Ordinary turn: "
             "the prompt's start (system prompt, history) read ahead, as while the visitor types. The server is "
             "given what is read ahead as a one-token request; transformers reads it all.", "",
             "| figure | engine (llama.cpp in-process) | llama.cpp server | ratio | transformers (engine before) "
             "| goal | |", "|---|---|---|---|---|---|---|"]
    lines += _rows(fig)
    which = f"`{args.adapter}`" if args.adapter else ("a random adapter of finetune's shape (LoRA r=16 on every "
                                                       "linear layer; speed does not depend on the weights)")
    lines += ["", f"Fine-tuned: {which}, merged by the engine into 16- and 8-bit copies of the base "
              "(`chatharuhi_core/chat/engines/local/gguf_lora.py`), converted to llama.cpp's adapter format for the "
              "server (`--lora_path`). Both ran in every round beside the base; the ratio is the fine-tuned "
              "model's against the base's in the same round (median, range; above 1: faster).", "",
              "| figure | engine, fine-tuned | against the base engine | server, fine-tuned | against the base "
              "server | goal | |", "|---|---|---|---|---|---|---|"]
    lines += _tuned_rows(fig)
    lines += [""]
    if kernels:
        from chatharuhi_core.chat.engines.local.llama_cpu import build_name

        lines += ["llama.cpp's CPU kernels: the wheel's build (AVX2) and the variants built at set-up for this CPU's "
                  f"instructions (`chatharuhi_core/chat/engines/local/llama_cpu.py`; the engine ran **{build_name()}** in "
                  "this run), on each copy of the weights, each in a child process: 600 tokens of Holmes's scenes "
                  "read (median of 5), 100 tokens written after 300 (median of 3), greedy, 256 tokens a batch.", "",
                  "| build | weights | read, tokens/s | with flash attention | write, tokens/s | with flash attention |",
                  "|---|---|---:|---:|---:|---:|"]
        cells = {(r["build"], r["weights"], r["flash"]): r for r in kernels}
        for build, weights in dict.fromkeys((r["build"], r["weights"]) for r in kernels):
            off, on = cells.get((build, weights, False), {}), cells.get((build, weights, True), {})
            lines.append(f"| {build} | {weights} | {off.get('read', float('nan')):.0f} | {on.get('read', float('nan')):.0f} "
                         f"| {off.get('decode', float('nan')):.1f} | {on.get('decode', float('nan')):.1f} |")
        lines += [""]
    if pg or short or full:
        lines += ["| figure | measured | baseline (same run) | goal | |", "|---|---|---|---|---|"]
    for role_id, times in pg.items():
        t = median(times)
        lines.append(f"| first token, ordinary turn (4th message, new question each round, sent {TYPING_S:g} s after "
                     f"the last reply), `{role_id}` (page, "
                     f"gradio_client) | {t:.2f} s ({_spread(times)}) | | ≤ {GOALS['ordinary']} s | "
                     f"{verdict(t <= GOALS['ordinary'])} |")
    if short:
        lines.append(f"| fine-tuning speed, LoRA r=16, {short['steps']} steps on `sherlock` | "
                     f"{short['tokens_per_s']} tokens/s | full fine-tuning measured 123-176 tokens/s | | |")
    if full:
        t, d = full["training"], full["data"]
        lines.append(f"| fine-tuning run `{args.finetuned.name}`: {d['rows']} rows, {d['tokens']:,} tokens, "
                     f"{full['hyperparameters']['epochs']:g} epoch(s) | {t['seconds'] / 60:.1f} min, {t['tokens_per_s']} "
                     f"tokens/s | | ≤ 45 min | {verdict(t['seconds'] <= 45 * 60)} |")
    publish("local-engine", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
