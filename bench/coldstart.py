"""Cold start: `python app.py` until its page answers, against a bare Gradio Blocks app started
the same way in the same run (one untimed start of each first, then timed starts in turn)."""

from __future__ import annotations

from pathlib import Path

from common import app_process, median


def measure(cache: Path, rounds: int = 3) -> dict:
    times: dict[str, list[float]] = {"bare": [], "app": []}
    scripts = {"bare": "bench/bare_app.py", "app": "app.py"}
    for i in range(rounds + 1):
        for name, script in scripts.items():
            with app_process(cache, script) as (_, _, seconds):
                if i:
                    times[name].append(seconds)
    out = {"bare_s": median(times["bare"]), "app_s": median(times["app"])}
    out["ratio"] = out["app_s"] / out["bare_s"]
    print(f"  bare Gradio {out['bare_s']:.2f} s, app {out['app_s']:.2f} s: {out['ratio']:.2f}x", flush=True)
    return out
