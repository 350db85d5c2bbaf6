"""Time to first token: what the app adds over a direct openai SDK call to the same local
OpenAI-compatible server (the scripted one, with a fixed delay per token), measured three ways:

  sdk      the openai SDK alone, with the messages ChatHaruhi would send
  library  ChatHaruhi.stream (retrieval and prompt assembly included) with the openai engine
  page     app.py through gradio_client, against a bare Gradio app that streams the same SDK call
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from common import app_process, first_piece_s, median

ROUNDS = 30



def _sdk_pieces(client, messages):
    with client.chat.completions.create(model="plain", messages=messages, stream=True) as stream:
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                yield chunk.choices[0].delta.content


def measure(cache: Path) -> dict:
    from fake_openai import GOOD_KEY, FakeOpenAI
    from gradio_client import Client
    from openai import OpenAI

    from chatharuhi_core import ChatHaruhi
    from chatharuhi_core.config import Budgets, Settings

    settings = Settings.from_env({"CHATHARUHI_CACHE": str(cache)})
    out: dict = {}
    with FakeOpenAI(token_delay_s=0.01) as srv:  # "plain": no Name:「 wrapper for the library to hold back
        bot = ChatHaruhi(role_name="sherlock", engine="openai", model="plain", base_url=srv.base_url, api_key=GOOD_KEY,
                         settings=settings)
        bot.chat("warm up")
        bot.reset()
        messages = bot.prepare("What is your method?").messages
        sdk = OpenAI(base_url=srv.base_url, api_key=GOOD_KEY, max_retries=0)
        first_piece_s(_sdk_pieces(sdk, messages))
        sdk_t, lib_t = [], []
        for _ in range(ROUNDS):  # interleaved, so drift on the machine hits both alike
            sdk_t.append(first_piece_s(_sdk_pieces(sdk, messages)))
            lib_t.append(first_piece_s(bot.stream("What is your method?")))
            bot.reset()
        out["sdk_ms"], out["library_ms"] = median(sdk_t) * 1000, median(lib_t) * 1000
        print(f"  sdk {out['sdk_ms']:.1f} ms, library {out['library_ms']:.1f} ms "
              f"(+{out['library_ms'] - out['sdk_ms']:.1f} ms)", flush=True)

        env = {"BENCH_MESSAGES": json.dumps(messages), "BENCH_BASE_URL": srv.base_url, "BENCH_KEY": GOOD_KEY}
        with app_process(cache, "bench/streaming_app.py", **env) as (bare_url, _, _), \
                app_process(cache, "app.py") as (app_url, _, _):
            bare, app = Client(bare_url, verbose=False), Client(app_url, verbose=False)
            b = Budgets()  # the page's /send: message, name, engine, model, base URL, key, the budgets and fold, the
            # Story boxes (persona, author's note, its depth)
            app_args = ("What is your method?", "Watson", "openai", "plain", srv.base_url, GOOD_KEY, b.story_tokens,
                        b.history_tokens, False, b.memory_tokens, b.recall_tokens, "", "", 4, "/send")
            bare_args = ("What is your method?", "/send")
            for _ in range(3):  # warm both
                _timed_submit(bare, bare_args)
                _timed_submit(app, app_args)
            bare_t, app_t = [], []
            for _ in range(ROUNDS):
                bare_t.append(_timed_submit(bare, bare_args))
                app_t.append(_timed_submit(app, app_args))
        out["bare_page_ms"], out["app_page_ms"] = median(bare_t) * 1000, median(app_t) * 1000
        print(f"  page: bare Gradio {out['bare_page_ms']:.1f} ms, app {out['app_page_ms']:.1f} ms "
              f"(+{out['app_page_ms'] - out['bare_page_ms']:.1f} ms)", flush=True)
    return out


def _timed_submit(client, args) -> float:
    """Seconds from submit to the first frame whose last chat message is the model's text."""
    start = time.perf_counter()
    job = client.submit(*args[:-1], api_name=args[-1])
    seen = 0
    while True:
        frames = job.outputs()
        for frame in frames[seen:]:
            chat = frame[0] if isinstance(frame, (list, tuple)) else frame
            if isinstance(chat, list) and len(chat) >= 2 and chat[-1].get("role") == "assistant" \
                    and chat[-1].get("content"):
                first = time.perf_counter() - start
                job.result()
                return first
        seen = len(frames)
        if job.done():
            return time.perf_counter() - start
        time.sleep(0.0005)
