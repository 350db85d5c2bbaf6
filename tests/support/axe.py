"""axe-core in the browser tests: the blocking findings once a page has settled, and every panel unfolded."""

BLOCKING = ("critical", "serious")


SETTLED = """() => [...document.querySelectorAll('.reply-stats')].every(el => el.scrollHeight <= el.clientHeight + 1)
    && document.querySelectorAll('.pending').length === 0"""


OPAQUE = """(selector) => { const el = document.querySelector(selector); if (!el) return true;
    for (let e = el; e; e = e.parentElement) if (parseFloat(getComputedStyle(e).opacity) < 1) return false;
    return true; }"""


def blocking_violations(page) -> list[str]:
    """axe's critical and serious findings on the page once it has settled: while an event runs, Gradio's progress
    line can make a status block scroll for a moment, and an HTML block waiting for its update is drawn at 20%
    opacity (`.pending`; CI once caught the empty cast line so); a busy machine makes those moments long."""
    from axe_playwright_python.sync_playwright import Axe

    try:
        page.wait_for_function(SETTLED, timeout=15_000)
    except Exception:  # still scrolling: axe says so below
        pass
    return [f"{v['impact']} {v['id']}: {node['target']} {node['html'][:120]}"
            for v in Axe().run(page).response["violations"] if v["impact"] in BLOCKING for node in v["nodes"]]


def open_every_panel(page) -> int:
    """Unfold every folded panel in sight (Settings, Memories, the scenes used, the Hub's list…)."""
    opened = 0
    for _ in range(20):  # one at a time: each one opened changes which are left
        folded = [f for f in page.locator(".label-wrap:not(.open)").all() if f.is_visible()]
        if not folded:
            break
        folded[0].click()
        opened += 1
        page.wait_for_timeout(250)
    page.wait_for_timeout(600)
    return opened
