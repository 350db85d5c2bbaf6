"""Which of the project's files one Send crosses, and how often it enters each: the page launched on loopback in
this process, one message sent to the offline engine with gradio_client, every Python call in every thread
recorded while it runs. A measure of how far a Send travels through the code (issue 66's figure), not a test.

    .venv/bin/python tools/send_walk.py            # files crossed, then entries per file, most first
    .venv/bin/python tools/send_walk.py --browser  # the same for a Send clicked in Chromium

Entries count calls into functions defined in a file from a function defined in another (a call within a file is
not an entry). The API walk covers /send and the /after_turn that follows it. The browser walk covers everything
the server runs from the click on Send until the page has been quiet for two seconds after the reply: the send,
its follow-ups and every listener a changed value sets off (the export file, the browser's record, the picture).
Both print the count for the whole project and for the page's own layers (page/ and chatharuhi_core/web/), then
the page's handlers Gradio called meanwhile.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = (str(ROOT / "chatharuhi_core") + os.sep, str(ROOT / "page") + os.sep, str(ROOT / "app.py"))


def _ours(filename: str) -> str | None:
    return str(Path(filename).relative_to(ROOT)) if filename.startswith(OURS) else None


def walk(browser: bool = False) -> tuple[Counter, Counter, float]:
    """The files entered, the page's handlers Gradio called (a streaming handler once per frame), and the CPU
    seconds this process spent meanwhile (an upper bound: the recording itself costs some)."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    import gradio.blocks

    import app

    entries: Counter = Counter()
    calls: Counter = Counter()
    recording = threading.Event()
    process_api = gradio.blocks.Blocks.process_api

    async def counted(self, block_fn, *args, **kwargs):
        if recording.is_set():
            fn = getattr(block_fn, "fn", None)
            calls[getattr(fn, "__qualname__", "a step with no Python function")] += 1
        return await process_api(self, block_fn, *args, **kwargs)

    gradio.blocks.Blocks.process_api = counted

    def profile(frame, event, _arg):
        if event != "call" or not recording.is_set():
            return
        here = _ours(frame.f_code.co_filename)
        if here is None:
            return
        caller = frame.f_back
        if caller is None or _ours(caller.f_code.co_filename) != here:
            entries[here] += 1

    threading.setprofile(profile)  # before the server starts: every thread it makes is followed
    demo = app.build_demo()
    app.set_up_queue(demo, 4)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        cpu = (_in_browser if browser else _by_api)(demo.local_url, recording)
    finally:
        recording.clear()
        threading.setprofile(None)
        gradio.blocks.Blocks.process_api = process_api
        demo.close()
    return entries, calls, cpu


def _by_api(url: str, recording: threading.Event) -> float:
    from gradio_client import Client

    client = Client(url, verbose=False)
    args = ("", "script", "", "", "", 1500, 1200, False, 300, 400, "", "", 4)
    client.predict("Who are you?", *args, api_name="/send")  # once unrecorded: the stores open, the imports run
    client.predict(False, api_name="/after_turn")
    recording.set()
    start = time.process_time()
    client.predict("What is your method?", *args, api_name="/send")
    client.predict(False, api_name="/after_turn")
    return time.process_time() - start


def _in_browser(url: str, recording: threading.Event) -> float:
    """Debian's Chromium: one message sent unrecorded (the stores open, the imports run), then one recorded."""
    from playwright.sync_api import sync_playwright

    def send(page, text: str, replies: int) -> None:
        page.fill("#message textarea", text)
        page.click("#send")
        page.wait_for_function("n => document.querySelectorAll('#chat .message.bot').length >= n", arg=replies,
                               timeout=120_000)
        page.wait_for_selector("#send:not([disabled])", timeout=120_000)
        time.sleep(2)  # the follow-ups and listeners end

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = b.new_page(viewport={"width": 1366, "height": 768})
        page.goto(url)
        page.wait_for_selector("#engine-note strong", timeout=120_000)
        time.sleep(2)
        send(page, "Who are you?", 2)
        recording.set()
        start = time.process_time()
        send(page, "What is your method?", 3)
        recording.clear()
        spent = time.process_time() - start
        b.close()
    return spent


def main() -> int:
    entries, calls, cpu = walk(browser="--browser" in sys.argv[1:])
    page = [f for f in entries if f.startswith(("page/", "chatharuhi_core/web/", "app.py"))]
    print(f"files a Send crosses: {len(entries)}; of them the page's own layers (page/, web/): {len(page)}")
    for path, n in entries.most_common():
        print(f"{n:6d}  {path}")
    print(f"handler calls: {sum(calls.values())} (a streaming handler once per frame); CPU {cpu:.2f} s")
    for name, n in calls.most_common():
        print(f"{n:6d}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
