"""32 visitors at once through gradio_client, each with its own message, against app.py talking
to a local OpenAI-compatible server. With the scripted server (a fixed delay per token, threaded)
the server's own time does not grow with load, so whatever grows is the app's doing. The same is
then run against llama.cpp's server, which generates one reply at a time: reported as it is.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

from common import app_process, median, percentile


def _visitor(url: str, args_for, results: list, index: int, barrier: threading.Barrier, echo: bool) -> None:
    from gradio_client import Client

    nonce = uuid.uuid4().hex[:8]
    try:
        client = Client(url, verbose=False)
        client.predict("sherlock", api_name="/switch_role")
        barrier.wait(timeout=120)
        start = time.perf_counter()
        job = client.submit(*args_for(f"Visitor {index} asks about case {nonce}?"), api_name="/send")
        first, seen = None, 0
        while first is None and not job.done():
            frames = job.outputs()
            for frame in frames[seen:]:  # only the new ones: the bench must not eat the app's CPU
                chat = frame[0]
                if len(chat) >= 2 and chat[-1].get("role") == "assistant" and chat[-1].get("content"):
                    first = time.perf_counter() - start
                    break
            seen = len(frames)
            time.sleep(0.002)
        chat = job.result()[0]
        total = time.perf_counter() - start
        text = "".join(p.get("text", "") for p in chat[-1]["content"]) if isinstance(chat[-1]["content"], list) \
            else chat[-1]["content"]
        asked = chat[-2]["content"] if isinstance(chat[-2]["content"], str) else str(chat[-2]["content"])
        results[index] = {"first": first if first is not None else total, "total": total,
                          "error": text.startswith("⚠️"), "own": nonce in asked and (not echo or nonce in text),
                          "reply": text, "nonce": nonce}
    except Exception as exc:  # counted as an error
        results[index] = {"first": float("nan"), "total": float("nan"), "error": True, "own": False,
                          "reply": repr(exc), "nonce": nonce}


def run_visitors(url: str, args_for, n: int, echo: bool = True) -> dict:
    results: list = [None] * n
    barrier = threading.Barrier(n)
    threads = [threading.Thread(target=_visitor, args=(url, args_for, results, i, barrier, echo)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    firsts = [r["first"] for r in results if not r["error"]]
    return {
        "visitors": n, "errors": sum(r["error"] for r in results),
        "wrong": sum(not r["own"] for r in results),
        "p50_s": percentile(firsts, 50), "p95_s": percentile(firsts, 95),
        "total_p95_s": percentile([r["total"] for r in results if not r["error"]], 95),
        "sample": results[0]["reply"][:80],
    }


def measure(cache: Path, llama_url: str | None, visitors: int = 32) -> list[dict]:
    from fake_openai import GOOD_KEY, FakeOpenAI

    rows = []
    with FakeOpenAI(token_delay_s=0.02) as srv, app_process(cache, "app.py") as (url, _, _):
        def scripted(text):  # echo server: the reply repeats the visitor's own words
            return (text, "Watson", "openai", "echo", srv.base_url, GOOD_KEY, 1500, 1200)

        run_visitors(url, scripted, 2)  # warm the app: the role's store and the engine's first use
        single = [run_visitors(url, scripted, 1) for _ in range(5)]
        one = {"visitors": 1, "errors": sum(s["errors"] for s in single), "wrong": sum(s["wrong"] for s in single),
               "p50_s": median([s["p50_s"] for s in single]), "p95_s": max(s["p95_s"] for s in single),
               "total_p95_s": max(s["total_p95_s"] for s in single), "sample": single[0]["sample"]}
        many = run_visitors(url, scripted, visitors)
        for row in (one, many):
            row["server"] = "scripted (20 ms per token)"
            rows.append(row)
            print(f"  scripted, {row['visitors']:>2} visitors: first token p50 {row['p50_s'] * 1000:.0f} ms, "
                  f"p95 {row['p95_s'] * 1000:.0f} ms, errors {row['errors']}, wrong {row['wrong']}", flush=True)
        if llama_url:
            def llama(text):
                return (text, "Watson", "openai", "smollm2", llama_url, "", 1500, 1200)

            for n in (1, visitors):
                row = run_visitors(url, llama, n, echo=False)
                row["server"] = "llama.cpp server, SmolLM2-135M"
                rows.append(row)
                print(f"  llama.cpp, {n:>2} visitors: first token p50 {row['p50_s']:.2f} s, p95 {row['p95_s']:.2f} s, "
                      f"errors {row['errors']}", flush=True)
    return rows
