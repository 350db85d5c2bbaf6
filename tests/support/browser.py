"""Driving the app's page in Debian's Chromium (Playwright): opening it at a size, sending a message, waiting for
replies and scene lines, the settings and the upload tab. Shared by the browser lane's modules, so that none
imports another; the `browser` fixture itself is in tests/browser/conftest.py."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from .loopback import ROOT

ARTIFACTS = ROOT / "test-artifacts"  # screenshots, kept by CI
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 768}

Page = Any  # playwright.sync_api.Page: imported only where the browser lane runs


@contextmanager
def chromium(microphone: Path | None = None, refuse_microphone: bool = False) -> Iterator[Any]:
    """Debian's Chromium launched by Playwright (skipped without Playwright; a failure without Chromium, which
    scripts/test.sh installs). With `microphone`, a WAV file is the microphone (played in a loop), allowed
    without asking; with `refuse_microphone`, a microphone the browser refuses to the page."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not shutil.which("chromium") and not shutil.which(CHROMIUM):
        pytest.fail("Debian's chromium is missing: run scripts/test.sh, which installs it")
    with sync_api.sync_playwright() as p:
        mic = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
               f"--use-file-for-fake-audio-capture={microphone}"] if microphone else []
        mic += ["--use-fake-device-for-media-stream", "--deny-permission-prompts"] if refuse_microphone else []
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS + mic)
        yield b
        b.close()


# ------------------------------------------------------------ the chat page


def open_page(browser: Any, url: str) -> Page:
    """A new page at a desktop size, once the greeting is shown and the session has loaded."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url)
    page.wait_for_selector("#chat .message", timeout=60_000)  # the greeting is shown
    page.wait_for_selector("#engine-note strong", timeout=60_000)  # and the session has loaded
    drawing(page)
    return page


def open_at(context_or_browser: Any, url: str, viewport: dict[str, int]) -> Page:
    """A new page at `viewport` (a context carries its own), once the greeting and the session are there."""
    is_context = hasattr(context_or_browser, "cookies")  # a context carries its own viewport
    page = context_or_browser.new_page() if is_context else context_or_browser.new_page(viewport=viewport)
    page.goto(url)
    page.wait_for_selector("#chat .message.bot", timeout=60_000)  # the greeting
    page.wait_for_selector("#engine-note strong", timeout=60_000)  # and the session has loaded
    drawing(page)
    time.sleep(0.5)
    return page


FRAMES = """(ms) => new Promise((done) => {
  requestAnimationFrame(() => requestAnimationFrame(() => done(true)));
  setTimeout(() => done(false), ms);
})"""


def drawing(page: Page, within_s: float = 10.0) -> None:
    """Wait until the page draws frames. Playwright's click waits for two animation frames to see a button stand
    still; once in CI a freshly opened page drew none for 30 s and the first click timed out with nothing said.
    A page that draws nothing is brought to the front once (untested guess: that may wake its compositor; the stall
    was never reproduced here) and, failing that, named."""
    for _ in range(2):
        if page.evaluate(FRAMES, within_s * 1000):
            return
        page.bring_to_front()
    pytest.fail(f"the browser drew no frame in {2 * within_s:.0f} s for {page.url}: Chromium's compositor stalled")


def resize(page: Page, viewport: dict[str, int]) -> None:
    """Give an open page another size and wait until it draws at it (see `drawing`)."""
    page.set_viewport_size(viewport)
    drawing(page)


def inside_viewport(page: Page, selector: str, settle_s: float = 5.0) -> bool:
    """Whether `selector` is on the screen once the page has settled: looked at again for up to `settle_s`, since
    on a busy machine a panel filled in by the session's start may still be moving things for a moment (at 320 px
    the box's bottom is 19 px above the screen's)."""
    deadline = time.time() + settle_s
    while True:
        box = page.locator(selector).first.bounding_box()
        view = page.viewport_size
        inside = bool(box) and box["y"] >= 0 and box["y"] + box["height"] <= view["height"] and box["x"] >= 0 \
            and box["x"] + box["width"] <= view["width"] + 1
        if inside or time.time() > deadline:
            return inside
        time.sleep(0.25)


def bot_texts(page: Page) -> list[str]:
    """The character's messages in the chat, as shown."""
    return [t.strip() for t in page.locator("#chat .message.bot").all_inner_texts()]


def user_texts(page: Page) -> list[str]:
    """The visitor's messages in the chat, as shown."""
    return [t.strip() for t in page.locator("#chat .message.user").all_inner_texts()]


def settled_bot_texts(page: Page, timeout_ms: int = 30_000, quiet_ms: int = 1_500) -> list[str]:
    """The bot messages once the chat has been quiet for `quiet_ms`: no pending bubble and no change.

    Gradio's chatbot shows a "Loading content" bubble (`.message.bot.pending`) for any event writing to
    the chat, even a hidden one, while it waits in the queue. An event fired by a click may be queued a
    moment after the click returns, so one look at "no pending bubble" can come too early; the chat
    must stay the same, with nothing pending, across the whole quiet window."""
    deadline, quiet_since, last = time.time() + timeout_ms / 1000, None, None
    while time.time() < deadline:
        pending = page.locator("#chat .message.bot.pending").count() > 0
        texts = bot_texts(page)
        if pending or texts != last:
            quiet_since, last = (None if pending else time.time()), texts
        elif quiet_since is not None and (time.time() - quiet_since) * 1000 >= quiet_ms:
            return texts
        if quiet_since is None and not pending:
            quiet_since = time.time()
        page.wait_for_timeout(150)
    raise AssertionError(f"the chat did not settle within {timeout_ms} ms; last seen: {last}")


def say(page: Page, text: str) -> None:
    """Type a message and send it, as a visitor does."""
    page.fill("#message textarea", text)
    page.click("#send")


def wait_reply(page: Page, count: int, timeout: float = 30, changed_from: str | None = None) -> tuple[list[str], list[str]]:
    """Wait until there are `count` bot messages and the last one has stopped changing."""
    deadline, seen, stable = time.time() + timeout, [], 0
    while time.time() < deadline:
        texts = [t for t in bot_texts(page) if t and t != "Loading content"]
        if len(texts) >= count and texts[-1] != changed_from:
            stable = stable + 1 if seen and seen[-1] == texts[-1] else 0
            seen.append(texts[-1])
            if stable >= 4:
                return texts, seen
        time.sleep(0.2)
    raise AssertionError(f"no reply: {bot_texts(page)}")


def pick(page: Page, ref: str, name: str) -> None:
    """Click a character in the picker and wait until the page is about them."""
    page.locator(f"#picker [data-ref={ref}]").click()
    page.wait_for_function(f"() => document.querySelector('#about')?.innerText.includes('{name}')")


def search(page: Page, words: str) -> list[str]:
    """Type `words` in the character search; the options it then lists."""
    box = page.locator("#role-choice input")
    box.click()
    box.fill(words)
    box.press("Shift")  # Gradio filters on a key event; an IME sends one when a word is composed, fill() does not
    time.sleep(0.6)
    return [t.strip() for t in page.locator("[role=option]").all_inner_texts()]


# ------------------------------------------------------------ settings and the upload tab


def choose_engine(page: Page, label: str) -> None:
    """Settings: pick the engine shown as `label`."""
    page.click("#settings button")
    page.locator("#engine input").click()
    page.get_by_role("option", name=label).click()


def use_server(page: Page, base_url: str, key: str, model: str = "echo") -> Any:
    """Settings: the OpenAI-compatible engine at base_url with key and model; returns a field finder
    (a settings field's input by its element id)."""
    choose_engine(page, "OpenAI-compatible server")
    field = lambda elem: page.locator(f"#{elem}").locator("input, textarea").first  # noqa: E731
    field("model").fill(model)
    field("base-url").fill(base_url)
    field("api-key").fill(key)
    return field


def add_file(page: Page, path: Path, name: str = "", expect: str = "Added", tab: str = "Add a character") -> str:
    """Upload a file in the 'add a character' tab (`tab`: its name in the page's language); return the status it
    shows."""
    # the tab is clicked again when its upload never appears: a click on a page still filling in was lost once
    # in a full suite (the input was waited for 30 s), as a visitor would click a tab that did not open
    for attempt in range(3):
        page.get_by_role("tab", name=tab).click()
        try:
            page.locator("#upload input[type=file]").wait_for(state="attached", timeout=15_000)
            break
        except Exception as exc:  # playwright's TimeoutError
            if type(exc).__name__ != "TimeoutError" or attempt == 2:
                raise
    # the file input can be set before the tab's upload component has wired it up (seen once in the full suite
    # on 2 busy cores: the name never showed); then the file is given again, as a visitor would pick it again
    # on 2 busy cores the upload itself can outlast the wait: the input is then gone (the component shows the file
    # or its progress), so the file is given again only while the input is still there, else the name is waited for
    # the name is looked for in the upload's rendered text, spaces and line breaks left out: Gradio draws a file's
    # stem and suffix in two boxes, which the text gives as "gull-rock\n.json" at some widths and as one word at others
    shown = ("([sel, name]) => (document.querySelector(sel)?.innerText || '').replace(/\\s+/g, '')"
             ".includes(name.replace(/\\s+/g, ''))")
    for attempt in range(3):
        picker = page.locator("#upload input[type=file]")
        if picker.count():
            picker.set_input_files(str(path))
        try:
            page.wait_for_function(shown, arg=["#upload", path.name], timeout=20_000)
            break
        except Exception as exc:  # playwright's TimeoutError (imported only where the browser tests run)
            if type(exc).__name__ != "TimeoutError" or attempt == 2:
                raise
    page.locator("#script-name").locator("input, textarea").first.fill(name)
    page.click("#add-role")
    page.wait_for_function(
        "(want) => (document.querySelector('#add-status')?.innerText || '').includes(want)", arg=expect,
        timeout=60_000)
    return page.locator("#add-status").inner_text()


def throwaway_settings(tmp_path: Path) -> Any:
    """Settings with a cache of their own under tmp_path, for making a file to upload outside the app."""
    from chatharuhi_core.config import Settings

    return Settings.from_env({"CHATHARUHI_CACHE": str(tmp_path / "cache")})


# ------------------------------------------------------------ group scenes


def cast_scene(page: Page, names: list[str]) -> None:
    """Add characters to the scene by typing their names in the cast picker (the Scene tab is open) and clicking
    the first choice that names them and is not picked yet (the bundled role; a Hub role of the same name comes
    later). Enter was pressed before: on a busy machine the list had not filtered yet, and Enter toggled the first
    choice of the old list, which took an already cast character out of the scene again (CI, twice)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = page.locator("#scene-cast input")
    for name in names:
        present = page.locator(f"#scene-present li:has-text('{name}')").first
        choice = page.locator(f"#scene-cast li[role=option][aria-selected=false][aria-label^='{name} ']").first
        for _ in range(3):
            if page.locator(f"#scene-cast .token:has-text('{name}')").count():
                break  # picked by the last try after all: another click would take them out again
            box.evaluate("e => e.blur()")  # a click on the box while it has focus closes its list: open it afresh
            box.click()
            box.fill(name)
            try:
                choice.wait_for(state="visible", timeout=10_000)
                choice.click()
                present.wait_for(timeout=10_000)
                break
            except PlaywrightTimeout:
                page.keyboard.press("Escape")
        present.wait_for(timeout=30_000)
    page.keyboard.press("Escape")


def open_scene(context: Any, url: str, names: list[str], user_role: str | None = None) -> Page:
    """A new page in `context` on the Group tab with `names` cast (and the visitor's role, when given)."""
    page = context.new_page()
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(url)
    page.wait_for_selector("#chat .message", timeout=60_000)
    page.wait_for_selector("#engine-note strong", timeout=60_000)  # the session has loaded
    page.get_by_role("tab", name="Group").click()
    cast_scene(page, names)
    if user_role:
        page.fill("#scene-user textarea", user_role)
    return page


def lines(page: Page) -> list[tuple[str | None, str]]:
    """(role id or None for the visitor, text) of every bubble in the scene."""
    out = []
    for msg in page.locator("#scene-chat .message").all():
        role = msg.locator(".speaker").first
        classes = (role.get_attribute("class") or "").split() if role.count() else []
        rid = next((c[5:] for c in classes if c.startswith("role-")), None)
        text = msg.inner_text().strip()
        if rid:
            text = text.split("\n", 1)[1].strip() if "\n" in text else ""
        out.append((rid, text))
    return out


def wait_lines(page: Page, count: int, timeout: float = 60) -> list[tuple[str | None, str]]:
    """At least `count` bubbles once the event is over (the status line leaves its busy mark, ⏳ in either language)."""
    deadline = time.time() + timeout
    time.sleep(0.3)
    while time.time() < deadline:
        now = lines(page)
        if len(now) >= count and "⏳" not in page.locator("#scene-status").inner_text():
            return lines(page)
        time.sleep(0.25)
    raise AssertionError(f"the scene has {len(lines(page))} lines, expected {count}: {lines(page)}; "
                         f"status: {page.locator('#scene-status').inner_text()}")
