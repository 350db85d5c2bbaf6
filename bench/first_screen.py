"""The first screen as a visitor sees it: from opening the page to the greeting on screen, in Chromium
(Debian's, headless) on a warm server, at a phone's and a laptop's size.

    .venv/bin/python bench/first_screen.py            # 9 timed page loads per size, medians

Baseline in the same run: a bare Gradio Blocks app whose chat greets through a load event, as
app.py's does. Each load is a fresh browser context (no cache, no local storage), opened after one
untimed load warmed the server. Prints the figures and writes them into bench/RESULTS.md between
the markers below.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from common import app_process, machine, median, publish, verdict  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
SIZES = {"phone 390×844": (390, 844), "laptop 1366×768": (1366, 768)}
GOAL_S = 1.0


def greeting_times(browser, url: str, size: tuple[int, int], rounds: int) -> list[float]:
    """Seconds from goto() to a greeting bubble with text, one fresh context per load."""
    out = []
    for i in range(rounds + 1):
        context = browser.new_context(viewport={"width": size[0], "height": size[1]})
        page = context.new_page()
        start = time.perf_counter()
        page.goto(url, wait_until="commit")
        page.wait_for_function("() => { const b = document.querySelector('#chat .message.bot');"
                               " return b && b.innerText.trim().length > 0; }", timeout=60_000, polling="raf")
        seconds = time.perf_counter() - start
        if i:  # the first load of each size only warms the server's caches
            out.append(seconds)
        context.close()
    return out


def measure(rounds: int) -> dict[str, dict[str, float]]:
    from playwright.sync_api import sync_playwright

    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for name, script in (("bare", "bench/bare_greeting_app.py"), ("app", "app.py")):
            with app_process(Path(tmp) / name, script) as (url, _, _):
                time.sleep(5 if name == "app" else 1)  # let app.py's warm-up (stores opened) finish
                for label, size in SIZES.items():
                    t = median(greeting_times(browser, url, size, rounds))
                    results.setdefault(label, {})[name] = t
                    print(f"  {name:4} {label}: {t:.2f} s", flush=True)
        browser.close()
    return results


def write(results: dict[str, dict[str, float]], rounds: int) -> None:
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["## First screen (Chromium, warm server)", "",
             f"Taken {when} with `.venv/bin/python bench/first_screen.py` ({rounds} loads per size, medians) "
             f"on: {machine()}.", "",
             "| figure | measured | baseline (same run) | goal | |", "|---|---|---|---|---|"]
    for label, r in results.items():
        ok = r["app"] <= GOAL_S
        lines.append(f"| page opened to greeting on screen, {label} | {r['app']:.2f} s | bare Gradio app greeting "
                     f"through a load event {r['bare']:.2f} s | ≤ {GOAL_S:.1f} s | {verdict(ok)} |")
    lines += ["", "A fresh browser context per load: nothing cached, nothing in local storage. The cold start of the "
              "server itself is in the first table."]
    publish("first-screen", lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    write(measure(args.rounds), args.rounds)


if __name__ == "__main__":
    main()
