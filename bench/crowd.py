"""The Space as a crowd uses it (issue 43): many visitors at once on the local model, each from its own
gradio_client against app.py, with the model's batch (llama_batch.py) against the same app writing one reply at
a time (CHATHARUHI_LOCAL_SLOTS=1) in the same run; llama.cpp's server with the same file and the same budgets;
visitors of the offline engine while others use the local model; and the first local reply right after a start.

    .venv/bin/python bench/crowd.py [--quick]
    .venv/bin/python bench/crowd.py --part engine --model gemma-3-270m   # another model alone, printed
    .venv/bin/python bench/crowd.py --part local --model gemma-3-270m --quick   # its crowd on the page, printed

Visitors start together on a shared clock (bench/load.py's workers). First token is from submit, so it
includes any wait in line; a frame that is a place in line or the model's loading line is not a first token.
Decode is every visitor's reply tokens over the span from the first send to the last reply. The section goes
into bench/RESULTS.md. About 12 minutes on 2 cores (--quick: 8 visitors where 32, about 6).
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from common import ROOT, app_process, machine, median
from load import _one_visitor, llama_url, run_visitors, write_section

START, END = "<!-- crowd -->", "<!-- /crowd -->"
# the page's budgets for the local engine (LOCAL_BUDGETS): story, history, fold, memory, recall
LOCAL_BUDGETS = (256, 192, False, 192, 128)
ONE_ROUNDS = 4  # one visitor's row: four replies in turn, pooled (see `crowd`)
LOCAL = ("Watson", "local", "", "", "", *LOCAL_BUDGETS, "")  # then the persona box, left empty
OFFLINE = ("Watson", "script", "", "", "", *LOCAL_BUDGETS, "")


def _tokens(reply: str, model: str | None = None) -> int:
    """A reply's tokens by the model that wrote it (the bundled one unless `model`): the decode figures count
    what it wrote."""
    from chatharuhi_core.chat.engines.local.model import load_model, resolve_model

    return load_model(resolve_model(model or None)).count_tokens(reply)


def crowd(url: str, args: tuple, n: int, echo: bool = False, rounds: int = 1) -> dict:
    """n visitors at once; the row's figures, decode included (`args[2]`, the model field, names the model).
    With `rounds`, that many crowds one after another: decode pooled (all tokens over all spans), the times the
    rounds' medians; one visitor's decode is the ratio's denominator, and one reply's length (a model whose
    replies run from 5 to 150 tokens, as Gemma's) would decide it alone."""
    model = args[2] if args[1] == "local" else None
    rows, tokens, spans = [], 0, 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        row = run_visitors(url, args, n, echo=echo, settle_s=6.0, keep_replies=True)
        spans += time.perf_counter() - started - 6.0  # from the moment they sent
        tokens += sum(_tokens(r, model) for r in row.pop("replies"))
        rows.append(row)
    row = dict(rows[-1])
    for key in ("p50_s", "p95_s", "total_p95_s"):
        row[key] = median([r[key] for r in rows])
    row["errors"] = sum(r["errors"] for r in rows)
    row["decode_tps"] = tokens / max(spans, 1e-6)
    return row


def mix(url: str, local_n: int, offline_n: int, local: tuple = LOCAL) -> tuple[dict, dict]:
    """Visitors of the offline engine sending at the moment others send to the local model."""
    out: dict = {}
    jobs = [threading.Thread(target=lambda: out.__setitem__("local", run_visitors(url, local, local_n, echo=False))),
            threading.Thread(target=lambda: out.__setitem__("offline", run_visitors(url, OFFLINE, offline_n)))]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()
    return out["local"], out["offline"]


def first_reply_after_start(cache: Path, busy: int, **env: str) -> dict:
    """A fresh app process; the first local reply sent as soon as its page answers, with `busy` cores held."""
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(busy)]
    try:
        with app_process(cache, "app.py", **env) as (url, _app, up_s):
            visit = _one_visitor(url, LOCAL, time.time(), echo=False)
    finally:
        for hog in hogs:
            hog.kill()
    return {"up_s": up_s, "first": visit["first"], "total": visit["total"], "error": visit["error"],
            "warming": visit.get("loading", False)}


def _row(name: str, r: dict) -> str:
    decode = r.get("decode_tps")
    return (f"| {name} | {r['visitors']} | {r['errors']} | {r['p50_s']:.2f} s | {r['p95_s']:.2f} s | "
            f"{r['total_p95_s']:.2f} s | {'—' if decode is None else f'{decode:.0f}'} |")


def local_rows(cache: Path, big: int, model: str | None = None) -> tuple[list[str], list[str]]:
    """The local model (the default, or `model` chosen in each visitor's settings) with its batch, then one reply
    at a time (the baseline, same run); the mix on the batch."""
    rows, goals = [], []
    local = (*LOCAL[:2], model or "", *LOCAL[3:])
    for label, env in (("batch", {}), ("one at a time (baseline)", {"CHATHARUHI_LOCAL_SLOTS": "1"})):
        with app_process(cache, "app.py", CHATHARUHI_WARM_LOCAL="1", **env) as (url, _app, _):
            run_visitors(url, local, 1, echo=False, settle_s=4)  # the model loaded, the role's store open
            measured = {n: crowd(url, local, n, rounds=ONE_ROUNDS if n == 1 else 1) for n in (1, 8, big)}
            rows += [_row(f"local model, {label}", r) for r in measured.values()]
            if env:  # the baseline: its rows only
                print(*rows[-len(measured):], sep="\n", flush=True)
                continue
            eight, one = measured[8], measured[1]
            goals.append(f"8 visitors on the local model: {eight['errors']} errors, first token p95 "
                         f"{eight['p95_s']:.1f} s (goal ≤ 15 s), decode {eight['decode_tps'] / one['decode_tps']:.1f}× "
                         f"one visitor's (goal ≥ 2×)")
            if big == 32:
                goals.append(f"32 visitors: first token p95 {measured[32]['p95_s']:.1f} s (goal ≤ 40 s)")
            rows += mix_rows(url, goals, local)
        print(*rows, sep="\n", flush=True)
    return rows, goals


def mix_rows(url: str, goals: list[str], args: tuple = LOCAL) -> list[str]:
    alone = run_visitors(url, OFFLINE, 8)
    local, offline = mix(url, 8, 8, args)
    goals.append(f"offline visitors in the mix: first token p95 {offline['p95_s']:.2f} s (goal ≤ 1.5 s; alone "
                 f"{alone['p95_s']:.2f} s)")
    return [_row("offline engine alone (baseline)", alone), _row("mix: local model (batch)", local),
            _row("mix: offline engine, sent at the same moment", offline)]


def server_rows(cache: Path) -> list[str]:
    """llama-cpp-python's server on the same file, with the local engine's budgets."""
    rows: list[str] = []
    with ExitStack() as stack:
        server = llama_url(stack)
        if not server:
            return rows
        with app_process(cache, "app.py", CHATHARUHI_WARM_LOCAL="0") as (url, _app, _):
            llama = ("Watson", "openai", "smollm2", server, "", *LOCAL_BUDGETS, "")
            run_visitors(url, llama, 1, echo=False, settle_s=4)
            for n in (1, 8):
                rows.append(_row("llama-cpp-python's server (one slot: it has no batch), same file and budgets",
                                 crowd(url, llama, n)))
                print(rows[-1], flush=True)
    return rows


def start_rows() -> list[str]:
    rows = []
    for busy in (0, 1):
        for label, env in (("warmed at start", {"CHATHARUHI_WARM_LOCAL": "1"}), ("loaded by the first reply (before)",
                                                     {"CHATHARUHI_WARM_LOCAL": "0"})):
            with tempfile.TemporaryDirectory() as fresh:  # a first start ever: no copies, no verdicts in the cache
                for kind in ("first start ever", "a later start"):
                    r = first_reply_after_start(Path(fresh), busy, **env)
                    rows.append(f"| {busy} | {label} | {kind} | {r['up_s']:.1f} s | {r['first']:.2f} s | "
                                f"{'error' if r['error'] else 'ok'} |")
                    print(rows[-1], flush=True)
    return rows


def engine_rows(rounds: int = 3, model: str | None = None) -> tuple[list[str], list[str]]:
    """The model alone, in this process (no page): 1 and 8 replies at once through the llama.cpp runtime, with its
    batch and one at a time; tokens per second of all replies together, medians of `rounds`. `model`: another
    than the default (--model, with --part engine)."""
    import random

    from chatharuhi_core.chat.engines.local.llamacpp import LLAMA_CPP
    from chatharuhi_core.chat.engines.local.model import load_model, resolve_model
    from chatharuhi_core.chat.engines.local.runtime import Sampling

    lm = load_model(resolve_model(model))
    handle, batch = lm.handle, lm.handle.batch
    system = "You are Sherlock Holmes, the detective of Baker Street. Answer as he would, in one paragraph."
    sampling = Sampling(max_tokens=160)

    def together(n: int) -> float:
        counts: list[int] = []

        def one(i: int) -> None:
            pieces: list[str] = []
            messages = [{"role": "system", "content": system},
                        {"role": "user", "content": f"What do you make of case {random.randrange(10**6)}, number {i}?"}]
            LLAMA_CPP.generate(lm, messages, "Sherlock Holmes:「", sampling, pieces.append, lambda: False)
            counts.append(lm.count_tokens("".join(pieces)))

        started = time.perf_counter()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(counts) / (time.perf_counter() - started)

    together(1)  # the system prompt read once
    speeds = {}
    for label, using in (("batch", batch), ("one at a time", None)):
        handle.batch = using
        for n in (1, 8):
            speeds[label, n] = median([together(n) for _ in range(rounds)])
    handle.batch = batch
    rows = [f"| the model alone (no page), {label} | {n} | {speeds[label, n]:.0f} |" for label, n in speeds]
    ratio = speeds["batch", 8] / speeds["batch", 1]
    goal = (f"the model alone: 8 replies at once write {ratio:.1f}× the tokens per second of one "
            f"({speeds['one at a time', 8] / speeds['one at a time', 1]:.1f}× one at a time)")
    print(*rows, goal, sep="\n", flush=True)
    return rows, [goal]


PARTS = ("engine", "local", "server", "starts")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="8 visitors where the full run has 32")
    ap.add_argument("--part", choices=PARTS, help="one part alone, printed and not written to RESULTS.md")
    ap.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench")
    ap.add_argument("--model", help="with --part engine or local: this local model instead of the default (as "
                                    "--model takes it: gemma-3-270m, a .gguf file, a fine-tuned folder)")
    args = ap.parse_args()
    if args.model and args.part not in ("engine", "local"):
        ap.error("--model goes with --part engine or --part local")
    big = 8 if args.quick else 32
    args.cache.mkdir(parents=True, exist_ok=True)
    engine, engine_goal = engine_rows(model=args.model) if args.part in (None, "engine") else ([], [])
    rows, goals = local_rows(args.cache, big, args.model) if args.part in (None, "local") else ([], [])
    goals += engine_goal
    rows += server_rows(args.cache) if args.part in (None, "server") else []
    starts = start_rows() if args.part in (None, "starts") else []
    print(*goals, sep="\n")
    if args.part:
        return 0
    quick = " --quick" if args.quick else ""
    lines = [START, "## A crowd on the local model", "",
             f"Taken {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} with `.venv/bin/python bench/crowd.py{quick}` "
             f"on: {machine()}.", "",
             "All visitors of a row send at the same moment, each from its own gradio_client, with the local "
             "engine's budgets (256/192 tokens). First token is from submit (waits in line included). Decode: all "
             "replies' tokens over the span from the send to the last reply; a row of one visitor is four replies in "
             "turn, pooled (times: their medians). The baseline rows are the same app "
             "started with CHATHARUHI_LOCAL_SLOTS=1 (one reply at a time, in a lane, as before the batch).", "",
             "| engine | visitors | errors | first token p50 | p95 | whole reply p95 | decode, tokens/s |",
             "|---|---:|---:|---:|---:|---:|---:|", *rows, "",
             "Decode of the model alone, in the bench's own process (160 tokens at most a reply, tokens/s of all "
             "replies together):", "", "| runtime | replies at once | decode, tokens/s |", "|---|---:|---:|",
             *engine, "", *[f"- {g}" for g in goals], "",
             "### The first local reply after a start", "",
             "A new app process; one visitor sends to the local model as soon as the page answers. First start "
             "ever: an empty cache (the 16-bit copy is made then; which copy reads prompts faster is measured "
             "once the model has been idle 2 s, for the next start: `measure_when_idle`). Before that was put off "
             "(the 8-bit copy and the reader's timing in the load), a first start ever took 5.54 s quiet and "
             "10.33 s with a core busy, warmed at start (2026-11-26, same machine kind).", "",
             "| cores kept busy | the model | start | page up | first token | |", "|---:|---|---|---:|---:|---|",
             *starts, "", "Goal: ≤ 5 s quiet, ≤ 10 s with one core busy (issue 43).", END]
    section = "\n".join(lines) + "\n"
    print(section)
    write_section(ROOT / "bench" / "RESULTS.md", section, START, END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
