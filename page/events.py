"""One rule for every event of the page: none waits to run again as Gradio's `always_last` mode would.

In Gradio 6.31 an event listener in `always_last` mode (the default for `.change`) that is set off while it is
still running runs again when it ends, and again after that, without end: typing a name, a model or a server's
address, or the session's load setting several fields at once, started 6 to 13 round trips a second for as long as
the page stayed open (a core busy in the browser; the app busy for every visitor). `multiple` runs each change in
the order sent instead, which is what the page's change listeners need: each reads the fields as they are then.
tests/browser/test_browser.py types into the fields and counts what the page sends."""

from __future__ import annotations

import gradio as gr
from gradio.utils import LRUCache


def run_every_change(demo: gr.Blocks) -> int:
    """Every `always_last` listener of `demo` runs each time instead (`multiple`); returns how many there were."""
    changed = 0
    for fn in demo.fns.values():
        if fn.trigger_mode == "always_last":
            fn.trigger_mode = "multiple"
            changed += 1
    return changed


class _Sessions(LRUCache):
    """Gradio's message queues per page session, where forgetting a session twice forgets it once.

    In Gradio 6.31, when a page's event stream is cut (a tab closed while a reply streams), `sse_stream` deletes
    the session's queue; when two of its streams are cut at once, the second `del` raised KeyError, which uvicorn
    logged as "Exception in ASGI application" (the browser lane saw it once, when a scene test closed its page).
    Nothing else changes: what was there goes as before."""

    def __delitem__(self, key) -> None:
        if key in self:
            super().__delitem__(key)


def set_up_queue(demo: gr.Blocks, concurrency: int) -> None:
    """Gradio's queue, with `concurrency` events of a kind at once, and its sessions' queues forgiving (_Sessions);
    left as Gradio makes it where a later Gradio keeps them otherwise."""
    demo.queue(default_concurrency_limit=concurrency)
    queue = getattr(demo, "_queue", None)
    sessions = getattr(queue, "pending_messages_per_session", None)
    if type(sessions) is LRUCache:
        forgiving = _Sessions(sessions.max_size)
        forgiving.update(sessions)
        queue.pending_messages_per_session = forgiving
