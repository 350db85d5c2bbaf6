"""A call of five spoken turns per engine (issue 68): how long from the end of the visitor's speech to the first
sound of the character's reply.

    python bench/call_latency.py                 # the offline engine and the local model; writes docs/eval/speech-call.md
    python bench/call_latency.py --engine script # one engine
    python bench/call_latency.py --no-write

The app is started as README says (one per engine, CHATHARUHI_ENGINE chooses it), and Debian's Chromium calls
孙悟空 with a recording of a person as its microphone (a LibriVox clip with a pause after it, looped). For each
turn the app reports how long after the speech ended its first sentence's audio was ready (the end of speech is
where Silero VAD put it: the pause that ends a turn is counted in); the browser reports how long after it sent
the words it started playing that audio. The first counts everything on the server: the pause, hearing the
words, the reply's first sentence, its voice.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from common import app_process, machine  # noqa: E402

OUT = ROOT / "docs" / "eval" / "speech-call.md"
ENGINES = {"script": "offline engine (quotes the script)", "local": "local model (Gemma 3 270M ChatHaruhi)"}
TURNS = 5
LOAD = [0.0]  # the load average before the bench's own work
CHROMIUM = "/usr/bin/chromium"


def turn_recording(folder: Path) -> Path:
    """Half a second of silence, a person's sentence, three seconds of pause: one turn, as the microphone loops it."""
    import numpy as np
    from faster_whisper.audio import decode_audio
    from support.speech import PERSON_EN, write_wav

    speech = decode_audio(str(PERSON_EN), sampling_rate=16_000)
    return write_wav(folder / "turn.wav", np.concatenate([np.zeros(8000), speech, np.zeros(16_000 * 3)]))


def call(engine: str, recording: Path, folder: Path) -> list[dict]:
    """Five turns of a call with `engine`: per turn, the server's and the browser's figures."""
    from playwright.sync_api import sync_playwright

    turns: list[dict] = []
    with app_process(folder / engine, log=folder / f"{engine}.log", CHATHARUHI_ENGINE=engine) as (url, _, _):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-audio-capture={recording}"])
            page = browser.new_page(viewport={"width": 1366, "height": 768})
            page.goto(url)
            page.wait_for_selector("#engine-note strong", timeout=180_000)
            time.sleep(5 if engine == "local" else 1)  # the local model's warm-up
            page.click("#call")
            deadline = time.time() + 120 * TURNS
            while len(turns) < TURNS and time.time() < deadline:
                state = page.evaluate("() => window.chCall && {turn: window.chCall.turn, timings: window.chCall.timings}")
                voiced = json.loads(page.input_value("#call-voice textarea") or "{}")
                if state and len(state["timings"]) > len(turns):
                    t = state["timings"][len(turns)]
                    if t.get("firstSound") is not None and voiced.get("first_sound_s") is not None:
                        turns.append({"server_s": voiced["first_sound_s"], "browser_s": t["firstSound"] / 1000})
                        print(f"{engine} turn {len(turns)}: {turns[-1]}", file=sys.stderr, flush=True)
                time.sleep(0.1)
            page.click("#call")
            browser.close()
    return turns


def report(found: dict[str, list[dict]]) -> str:
    out = [f"# A call: end of speech to the first sound of the reply ({datetime.date.today()})", "",
           f"`python bench/call_latency.py` on {machine()}; load average {LOAD[0]:.1f} as it began.", "",
           f"{TURNS} turns per engine, 孙悟空 called with a LibriVox clip as the microphone (3.0 s of speech, then a",
           "pause). *Server*: from the end of the speech (where the VAD put it) to the first sentence's audio being",
           "ready: the pause that ends the turn (0.8 s), hearing the words, the reply's first sentence and its voice",
           "(espeak-ng here: edge-tts is offline). *Browser*: from sending the words to the first sound playing.", "",
           "| engine | turns | server: median (max) s | browser, send to sound: median (max) s |", "|---|---|---|---|"]
    for engine, turns in found.items():
        if not turns:
            out.append(f"| {ENGINES[engine]} | 0 | no turn completed | |")
            continue
        server = [t["server_s"] for t in turns]
        browser = [t["browser_s"] for t in turns]
        out.append(f"| {ENGINES[engine]} | {len(turns)} | {statistics.median(server):.2f} ({max(server):.2f}) | "
                   f"{statistics.median(browser):.2f} ({max(browser):.2f}) |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=list(ENGINES), action="append")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    LOAD[0] = os.getloadavg()[0]
    folder = Path(tempfile.mkdtemp(prefix="call-bench-"))
    recording = turn_recording(folder)
    found = {engine: call(engine, recording, folder) for engine in (args.engine or list(ENGINES))}
    text = report(found)
    print(text)
    if not args.no_write:
        OUT.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
