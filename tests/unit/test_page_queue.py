"""The page's queue (page/events.set_up_queue): Gradio's own, except that a page session whose event streams are cut
twice at once is forgotten once, without the KeyError that reached the app's log as "Exception in ASGI
application" when a browser test closed its page mid-stream."""

from __future__ import annotations

import gradio as gr
from gradio.utils import LRUCache

from page.events import set_up_queue


def test_the_queue_is_gradios_with_sessions_forgotten_once():
    with gr.Blocks() as demo:
        gr.Textbox()
    set_up_queue(demo, 7)
    sessions = demo._queue.pending_messages_per_session
    assert isinstance(sessions, LRUCache) and sessions.max_size == 2000
    assert demo._queue.default_concurrency_limit == 7
    sessions["page-1"] = "its messages"
    del sessions["page-1"]
    del sessions["page-1"]  # the second stream of the same page, cut at the same moment
    assert "page-1" not in sessions
    for n in range(2001):  # still a cache of the newest 2,000
        sessions[f"page-{n}"] = n
    assert len(sessions) == 2000 and "page-0" not in sessions
