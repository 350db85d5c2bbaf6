"""One rule for every event of the page: none waits to run again as Gradio's `always_last` mode would.

In Gradio 6.31 an event listener in `always_last` mode (the default for `.change`) that is set off while it is
still running runs again when it ends, and again after that, without end: typing a name, a model or a server's
address, or the session's load setting several fields at once, started 6 to 13 round trips a second for as long as
the page stayed open (a core busy in the browser; the app busy for every visitor). `multiple` runs each change in
the order sent instead, which is what the page's change listeners need: each reads the fields as they are then.
tests/browser/test_browser.py types into the fields and counts what the page sends."""

from __future__ import annotations

import gradio as gr


def run_every_change(demo: gr.Blocks) -> int:
    """Every `always_last` listener of `demo` runs each time instead (`multiple`); returns how many there were."""
    changed = 0
    for fn in demo.fns.values():
        if fn.trigger_mode == "always_last":
            fn.trigger_mode = "multiple"
            changed += 1
    return changed
