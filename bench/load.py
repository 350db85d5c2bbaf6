"""32 visitors at once through gradio_client, each with its own message, against app.py talking
to a local OpenAI-compatible server. With the scripted server (a fixed delay per token, threaded,
in its own process) the server's own time does not grow with load, so whatever grows is the app's
doing. The same is then run against llama.cpp's server, which generates one reply at a time:
reported as it is.

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


def _one_visitor(url: str, args: tuple, start_at: float, echo: bool) -> dict:
    """One visitor; args None means the bare baseline app (its /send takes the text alone)."""
    from gradio_client import Client

    nonce = uuid.uuid4().hex[:8]
    text = f"I ask about case {nonce}?"
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
                    first = time.perf_counter() - start
                    break
            seen = len(frames)
            time.sleep(0.005)
        chat = job.result() if args is None else job.result()[0]
        total = time.perf_counter() - start
        reply = chat[-1]["content"]
        reply = "".join(p.get("text", "") for p in reply) if isinstance(reply, list) else str(reply)
        asked = str(chat[-2]["content"])
        return {"first": first if first is not None else total, "total": total, "error": reply.startswith("⚠️"),
                "own": nonce in asked and (not echo or nonce in reply), "reply": reply}
    except Exception as exc:  # counted as an error
        return {"first": float("nan"), "total": float("nan"), "error": True, "own": False, "reply": repr(exc)}


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
                 pid: int | None = None) -> dict:
    """n visitors send at the same moment (settle_s from now, after every client has connected).
    With pid, the app's CPU seconds from that moment to the last reply are reported too."""
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
    return {
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


def measure(cache: Path, llama_url: str | None, visitors: int = 32) -> list[dict]:
    from fake_openai import GOOD_KEY

    rows = []
    server, base_url = scripted_server(0.02)
    try:
        rows.append(bare_baseline(cache, base_url, visitors))
        with app_process(cache, "app.py") as (url, app, _):
            scripted = ("Watson", "openai", "echo", base_url, GOOD_KEY, 1500, 1200, False, 300, 400)
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
            if llama_url:
                llama = ("Watson", "openai", "smollm2", llama_url, "", 1500, 1200, False, 300, 400)
                for n in (1, LLAMA_VISITORS):
                    row = run_visitors(url, llama, n, echo=False)
                    row["server"] = "llama.cpp server, SmolLM2-135M"
                    rows.append(row)
                    print(f"  llama.cpp, {n:>2} visitors: first token p50 {row['p50_s']:.2f} s, "
                          f"p95 {row['p95_s']:.2f} s, errors {row['errors']}", flush=True)
    finally:
        server.kill()
    return rows
