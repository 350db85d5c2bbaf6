"""32 visitors at once through gradio_client, each with its own message, against app.py talking
to a local OpenAI-compatible server. With the scripted server (a fixed delay per token, threaded,
in its own process) the server's own time does not grow with load, so whatever grows is the app's
doing.

Run alone (`.venv/bin/python bench/load.py`), it measures the engines that answer one visitor at a
time: 8 visitors against llama.cpp's server with one slot and 32 against the in-process local model,
each waiting in the engine's lane (chat/lanes.py) and shown their place; its section of
bench/RESULTS.md is its own.

Visitors run in 4 worker processes (8 threads each), so the bench's own Python does not become
the bottleneck it measures; they start together on a shared clock.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from common import ROOT, app_process, median, percentile

WORKERS = 4
# llama.cpp's server answers one request at a time, and each SmolLM2 prompt takes it ~8 s to read
# here: 8 visitors already show the queue (32 would take about 5 minutes)
LLAMA_VISITORS = 8
LOCAL_VISITORS = 32  # the in-process model: a reply in about 3 s here, so 32 are served in about 2 minutes


WAITING = "⏳"  # a waiting frame's line starts so (chat/lanes.py)


def _text(content) -> str:
    return "".join(p.get("text", "") for p in content) if isinstance(content, list) else str(content or "")


def _place(line: str) -> int | None:
    """The place in "⏳ 3rd in line for …"."""
    head = line.removeprefix(WAITING).strip().split(" ", 1)[0]
    digits = "".join(c for c in head if c.isdigit())
    return int(digits) if digits else None


def _about(line: str) -> float | None:
    """The estimate in "…, about 12 s." (None when the line gives none)."""
    if ", about " not in line:
        return None
    return float(line.split(", about ", 1)[1].split(" ", 1)[0])


def _one_visitor(url: str, args: tuple, start_at: float, echo: bool) -> dict:
    """One visitor; args None means the bare baseline app (its /send takes the text alone). Frames whose reply
    is a waiting line (a place in an engine's lane) or the local model's loading line are not the first token:
    they are counted as places shown."""
    from gradio_client import Client

    nonce = uuid.uuid4().hex[:8]
    text = f"I ask about case {nonce}?"
    places: list[int] = []
    about: float | None = None
    loading = False
    try:
        client = Client(url, verbose=False)
        if args is not None:
            client.predict("sherlock", api_name="/switch_role")
        time.sleep(max(0.0, start_at - time.time()))
        start = time.perf_counter()
        job = client.submit(text, *(args or ()), api_name="/send")
        first, seen = None, 0
        while first is None and not job.done():
            frames = job.outputs()
            for frame in frames[seen:]:
                chat = frame if args is None else frame[0]  # the baseline app has the chat as its one output
                if len(chat) >= 2 and chat[-1].get("role") == "assistant" and chat[-1].get("content"):
                    said = _text(chat[-1]["content"])
                    if said.startswith(WAITING):
                        place = _place(said)
                        if place is not None and (not places or places[-1] != place):
                            places.append(place)
                        if about is None:
                            about = _about(said)
                        continue
                    if said.startswith(("Loading the local model", "The local model")):  # loading, warming up
                        loading = True
                        continue
                    first = time.perf_counter() - start
                    break
            seen = len(frames)
            time.sleep(0.05)  # 32 visitors polling every 5 ms took a core from the app they measure
        chat = job.result() if args is None else job.result()[0]
        total = time.perf_counter() - start
        reply = _text(chat[-1]["content"])
        asked = str(chat[-2]["content"])
        return {"first": first if first is not None else total, "total": total,
                "error": reply.startswith(("⚠️", WAITING)), "own": nonce in asked and (not echo or nonce in reply),
                "reply": reply, "places": places, "about": about, "loading": loading}
    except Exception as exc:  # counted as an error
        return {"first": float("nan"), "total": float("nan"), "error": True, "own": False, "reply": repr(exc),
                "places": places, "about": about}


def _worker(url: str, args: tuple, count: int, start_at: float, echo: bool, out) -> None:
    results: list = [None] * count

    def run(i: int) -> None:
        results[i] = _one_visitor(url, args, start_at, echo)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(results)


def run_visitors(url: str, args: tuple, n: int, echo: bool = True, settle_s: float = 8.0,
                 pid: int | None = None, keep_replies: bool = False) -> dict:
    """n visitors send at the same moment (settle_s from now, after every client has connected).
    With pid, the app's CPU seconds from that moment to the last reply are reported too; with keep_replies,
    the replies' texts (those without an error) under "replies"."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    start_at = time.time() + settle_s
    cpu_at_start: list[float] = []
    if pid:
        threading.Timer(settle_s, lambda: cpu_at_start.append(_cpu_s(pid))).start()
    shares = [n // WORKERS + (1 if i < n % WORKERS else 0) for i in range(min(WORKERS, n))]
    procs = [ctx.Process(target=_worker, args=(url, args, k, start_at, echo, queue)) for k in shares if k]
    for p in procs:
        p.start()
    results = [r for _ in procs for r in queue.get()]
    for p in procs:
        p.join()
    firsts = [r["first"] for r in results if not r["error"]]
    cpu = (_cpu_s(pid) - cpu_at_start[0]) if pid and cpu_at_start else float("nan")
    waited = [r for r in results if r["places"]]
    # how far the first estimate a visitor was shown was from their real wait (submit to first token)
    misses = [r["about"] - r["first"] for r in waited if r["about"] is not None and not r["error"]]
    kept = {"replies": [r["reply"] for r in results if not r["error"]]} if keep_replies else {}
    return {
        **kept,
        "waited": len(waited), "first_place_max": max((r["places"][0] for r in waited), default=0),
        "places_in_order": sum(r["places"] == sorted(r["places"], reverse=True) for r in waited),
        "estimated": len(misses), "estimate_off_p50_s": median([abs(m) for m in misses]),
        "app_cpu_s": cpu,
        "visitors": n, "errors": sum(r["error"] for r in results), "wrong": sum(not r["own"] for r in results),
        "p50_s": percentile(firsts, 50), "p95_s": percentile(firsts, 95),
        "total_p95_s": percentile([r["total"] for r in results if not r["error"]], 95),
        "sample": results[0]["reply"][:80],
    }


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scripted_server(delay_s: float):
    """tests/fake_openai.py in its own process; returns (process, base URL)."""
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_openai.py"), str(delay_s)],
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def bare_baseline(cache: Path, base_url: str, visitors: int) -> dict:
    """The same visitors on bench/streaming_app.py: Gradio alone, streaming the same server."""
    import json

    from fake_openai import GOOD_KEY

    env = {"BENCH_MESSAGES": json.dumps([{"role": "user", "content": "-"}]), "BENCH_BASE_URL": base_url,
           "BENCH_KEY": GOOD_KEY, "BENCH_MODEL": "echo"}
    with app_process(cache, "bench/streaming_app.py", **env) as (url, app, _):
        run_visitors(url, None, 2, settle_s=4)
        row = run_visitors(url, None, visitors, pid=app.pid)
    row["server"] = "scripted, bare Gradio app (baseline)"
    print(f"  bare Gradio app, {visitors} visitors: first token p50 {row['p50_s'] * 1000:.0f} ms, "
          f"p95 {row['p95_s'] * 1000:.0f} ms, app CPU {row['app_cpu_s']:.2f} s", flush=True)
    return row


def measure(cache: Path, visitors: int = 32) -> list[dict]:
    from fake_openai import GOOD_KEY

    rows = []
    server, base_url = scripted_server(0.02)
    try:
        rows.append(bare_baseline(cache, base_url, visitors))
        with app_process(cache, "app.py") as (url, app, _):
            scripted = ("Watson", "openai", "echo", base_url, GOOD_KEY, 1500, 1200, False, 300, 400, "", "", 4)
            run_visitors(url, scripted, 2, settle_s=5)  # warm the app: the role's store, the engine's first use
            single = [run_visitors(url, scripted, 1, settle_s=4) for _ in range(3)]
            one = {"visitors": 1, "errors": sum(s["errors"] for s in single),
                   "wrong": sum(s["wrong"] for s in single), "p50_s": median([s["p50_s"] for s in single]),
                   "p95_s": max(s["p95_s"] for s in single), "total_p95_s": max(s["total_p95_s"] for s in single),
                   "sample": single[0]["sample"]}
            many = run_visitors(url, scripted, visitors, pid=app.pid)
            for row in (one, many):
                row["server"] = "scripted (20 ms per token)"
                rows.append(row)
                print(f"  scripted, {row['visitors']:>2} visitors: first token p50 {row['p50_s'] * 1000:.0f} ms, "
                      f"p95 {row['p95_s'] * 1000:.0f} ms, errors {row['errors']}, wrong {row['wrong']}", flush=True)
            print(f"  app CPU from the moment they sent to the last reply: {many['app_cpu_s']:.2f} s "
                  f"({many['app_cpu_s'] / visitors * 1000:.0f} ms per reply)", flush=True)
    finally:
        server.kill()
    return rows


def _queue_row(name: str, row: dict) -> dict:
    row["server"] = name
    print(f"  {name}, {row['visitors']:>2} visitors: errors {row['errors']}, waited {row['waited']}, "
          f"first token p50 {row['p50_s']:.2f} s, p95 {row['p95_s']:.2f} s, whole reply p95 {row['total_p95_s']:.2f} s, "
          f"first estimate off by {row['estimate_off_p50_s']:.1f} s (p50)", flush=True)
    return row


def measure_queues(cache: Path, llama_url: str | None, local_visitors: int = LOCAL_VISITORS,
                   llama_visitors: int = LLAMA_VISITORS) -> list[dict]:
    """Engines that answer one visitor at a time, many visitors at once: the llama.cpp server (one slot) and the
    in-process local model. Each row against one visitor alone in the same run."""
    rows = []
    with app_process(cache, "app.py") as (url, _app, _):
        if llama_url:
            llama = ("Watson", "openai", "smollm2", llama_url, "", 1500, 1200, False, 300, 400, "", "", 4)
            run_visitors(url, llama, 1, echo=False, settle_s=4)  # warm: the server's first prompt, the lane's probe
            for n in (1, llama_visitors):
                rows.append(_queue_row("llama.cpp server (one slot), SmolLM2-135M", run_visitors(url, llama, n, echo=False)))
        # the budgets the page gives the local engine (LOCAL_BUDGETS), as a visitor who picks it gets them
        local = ("Watson", "local", "", "", "", 256, 192, False, 192, 128)
        run_visitors(url, local, 1, echo=False, settle_s=4)  # warm: the model loads on first use
        for n in (1, local_visitors):
            rows.append(_queue_row("local model (in-process), SmolLM2-135M", run_visitors(url, local, n, echo=False)))
    return rows


def llama_url(stack) -> str | None:
    """Start llama.cpp's server with the bundled model when scripts/setup-llama-server.sh built it."""
    from loopback import LLAMA_PYTHON, llama_server

    from chatharuhi_core.chat.engines.local.packaged import SMOLLM2, packaged_spec

    if not LLAMA_PYTHON.exists():
        return None
    spec = packaged_spec(SMOLLM2)
    return stack.enter_context(llama_server(Path(spec.source) / spec.gguf_file))


QUEUE_START, QUEUE_END = "<!-- queues -->", "<!-- /queues -->"


def _seconds(value: float) -> str:
    return "—" if value != value else f"{value:.1f} s"  # NaN: nobody waited, so no estimate was shown


def queue_section(rows: list[dict], command: str) -> str:
    import datetime as dt

    from common import machine

    lines = [QUEUE_START, "## Engines that answer one visitor at a time", "",
             "(The local model writes up to 16 replies at once in its batch; `bench/crowd.py` compares it with one "
             "reply at a time.)", "",
             f"Taken {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC with `{command}` on: {machine()}.", "",
             "All visitors send at the same moment, each from its own gradio_client, to an engine with one slot, "
             "so all but one have to wait. \"Shown a place\": of those, how many were shown their place in line "
             "(with an estimate once the lane has served someone) before their reply; \"places counted down\": "
             "their places only ever went down. "
             "First token is from submit, so it includes the wait. The estimate's error is the first estimate a "
             "visitor was shown against their real wait. The two engines are not on equal footing, so their rows "
             "are not to be compared with each other: the server (llama-cpp-python's, stock build, one slot) is "
             "sent the API engines' prompt budgets, the local model its own small ones (256/192 tokens).", "",
             "| engine | visitors | errors | shown a place | places counted down | first token p50 | "
             "p95 | whole reply p95 | estimate off (p50) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        # all send at once to one slot: every visitor but the first has to wait
        lines.append(f"| {r['server']} | {r['visitors']} | {r['errors']} | {r['waited']}/{max(0, r['visitors'] - 1)} | "
                     f"{r['places_in_order']}/{r['waited']} | "
                     f"{r['p50_s']:.2f} s | {r['p95_s']:.2f} s | {r['total_p95_s']:.2f} s | "
                     f"{_seconds(r['estimate_off_p50_s'])} |")
    lines.append(QUEUE_END)
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str, start: str, end: str) -> None:
    """Replace (or add) one marked section of bench/RESULTS.md, leaving the rest as it is."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if start in old and end in old:
        new = old[:old.index(start)] + section.rstrip("\n") + old[old.index(end) + len(end):]
    else:
        new = old.rstrip("\n") + "\n\n" + section
    path.write_text(new, encoding="utf-8")


def main() -> int:
    """`.venv/bin/python bench/load.py`: the queue figures (about 4 minutes on 2 cores), into bench/RESULTS.md."""
    import argparse
    import os
    from contextlib import ExitStack

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--local-visitors", type=int, default=LOCAL_VISITORS)
    parser.add_argument("--llama-visitors", type=int, default=LLAMA_VISITORS)
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        llama = llama_url(stack)
        rows = measure_queues(args.cache, llama, args.local_visitors, args.llama_visitors)
    command = ".venv/bin/python bench/load.py"
    if (args.local_visitors, args.llama_visitors) != (LOCAL_VISITORS, LLAMA_VISITORS):
        command += f" --local-visitors {args.local_visitors} --llama-visitors {args.llama_visitors}"
    section = queue_section(rows, command)
    print(section)
    write_section(ROOT / "bench" / "RESULTS.md", section, QUEUE_START, QUEUE_END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
