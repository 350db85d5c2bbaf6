"""Which of the project's files one Send crosses, and how often it enters each: the page launched on loopback in
this process, one message sent to the offline engine with gradio_client, every Python call in every thread
recorded while it runs. A measure of how far a Send travels through the code (issue 66's figure), not a test.

    .venv/bin/python tools/send_walk.py            # files crossed, then entries per file, most first

Entries count calls into functions defined in a file from a function defined in another (a call within a file is
not an entry); the walk covers /send and the /after_turn that follows it, as the page runs them.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = (str(ROOT / "chatharuhi_core") + os.sep, str(ROOT / "page") + os.sep, str(ROOT / "app.py"))


def _ours(filename: str) -> str | None:
    return str(Path(filename).relative_to(ROOT)) if filename.startswith(OURS) else None


def walk() -> Counter:
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    from gradio_client import Client

    import app

    entries: Counter = Counter()
    recording = threading.Event()

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
    client = Client(demo.local_url, verbose=False)
    args = ("", "script", "", "", "", 1500, 1200, False, 300, 400, "", "", 4)
    client.predict("Who are you?", *args, api_name="/send")  # once unrecorded: the stores open, the imports run
    client.predict(False, api_name="/after_turn")
    recording.set()
    try:
        client.predict("What is your method?", *args, api_name="/send")
        client.predict(False, api_name="/after_turn")
    finally:
        recording.clear()
        threading.setprofile(None)
        demo.close()
    return entries


def main() -> int:
    entries = walk()
    print(f"files a Send crosses: {len(entries)}")
    for path, n in entries.most_common():
        print(f"{n:6d}  {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
