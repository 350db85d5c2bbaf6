"""What the chat and group-scene pages share: the settings panel as sent, portraits and file links, the frame
throttle, exports. The visitor's thumbs and edits are feedback.py's. Plain Python: the Gradio layout is in page/."""

from __future__ import annotations

import html
import logging
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

from ..chat.engines import EngineChoice, default_budgets, engine_info
from ..config import Budgets, Settings
from ..errors import UnknownNameError
from ..i18n import N_, _, language
from ..roles.role import Role

log = logging.getLogger(__name__)
ASSETS = Path(__file__).resolve().parents[2] / "assets"
WARNING_MARK = "⚠️ "
LIST_SEPARATOR = N_(", ")  # between the items of a short list in a sentence ("2 pinned facts, 1 note")
# At most ~25 page updates a second per reply: each one costs the server a diff and a message, and
# with 32 visitors per-token frames made the app, not the model, the bottleneck. The first token and
# any token after a pause go out at once.
FRAME_INTERVAL_S = 0.04
# ... and at most ~FRAMES_PER_S for all the replies streaming in this process together, so that many visitors'
# frames do not take the CPU from the model writing their replies (bench/crowd.py), up to MAX_FRAME_INTERVAL_S
# apart for each reply: a reply still moves several times a second.
FRAMES_PER_S = 40
MAX_FRAME_INTERVAL_S = 0.25


class Throttle:
    """Whether a streaming reply's next frame may go to the page now: the first frame at once, slow streams per
    token, fast ones in batches of FRAME_INTERVAL_S, or wider when many replies stream at once (the process's
    FRAMES_PER_S shared among them). The replies streaming are the throttles alive: one lives as long as its
    reply's generator."""

    _alive: ClassVar[weakref.WeakSet] = weakref.WeakSet()  # every visitor's, for the count alone

    def __init__(self, every_s: float = FRAME_INTERVAL_S):
        self.every_s = every_s
        self._last = 0.0
        Throttle._alive.add(self)

    def interval(self) -> float:
        """How far apart this reply's frames go now."""
        shared = len(Throttle._alive) / FRAMES_PER_S
        return max(self.every_s, min(shared, MAX_FRAME_INTERVAL_S))

    def due(self) -> bool:
        now = time.monotonic()
        if now - self._last < self.interval():
            return False
        self._last = now
        return True


PLACEHOLDER_IMAGE = ASSETS / "placeholder.png"


def portrait_of(role: Role) -> str:
    """The role's portrait, or the neutral placeholder for roles that came without one."""
    return str(role.image_path) if role.image_path else str(PLACEHOLDER_IMAGE)


def file_url(path: str | Path) -> str:
    """A file the server may send (bundled characters, imports, assets), as the page links it."""
    return "/gradio_api/file=" + html.escape(str(path), quote=True)


def lang_of(role: Role) -> str:
    """The page's lang attribute for the role's own text (zh for Chinese roles)."""
    return "zh" if (role.language or "").lower().startswith("zh") else "en"


def portrait_html(role: Role) -> str:
    """The portrait with alt text that says who is shown (Gradio's image viewer gives none)."""
    series = role.described(language()).series  # the work as the visitor's language names it, where given
    alt = html.escape(_("Portrait of {name}, from {series}", name=role.name, series=series) if series
                      else _("Portrait of {name}", name=role.name), quote=True)
    return f'<img class="portrait" src="{file_url(portrait_of(role))}" alt="{alt}">'


def scene_picture_html(path: str, caption: str) -> str:
    """A scene picture with its caption as both alt text and a visible caption."""
    text = html.escape(caption, quote=True)
    shown_caption = _("Scene: {caption}", caption=text)
    return (f'<figure class="scene-figure"><img src="{file_url(path)}" alt="{text}">'
            f"<figcaption>{shown_caption}</figcaption></figure>")


@dataclass(frozen=True)
class EnginePanel:
    """The visitor's settings panel, as sent with each event."""

    engine: str = "script"
    model: str = ""
    base_url: str = ""
    api_key: str = field(default="", repr=False)
    story_tokens: int = Budgets().story_tokens
    history_tokens: int = Budgets().history_tokens
    fold_prompt: bool = False
    memory_tokens: int | None = None  # pinned memories; None: the engine's own
    recall_tokens: int | None = None  # earlier exchanges recalled from beyond the history; None: the engine's own
    signed_in: str = field(default="", repr=False)  # the visitor's Hugging Face sign-in token, for engines it pays

    @classmethod
    def from_page(cls, fields: Mapping[str, object], signed_in: str = "") -> EnginePanel:
        """The panel from its fields as the page sends them, keyed by this class's field names (all of them, or
        without the key: as a browser keeps them), blanks as the defaults; the one place that reads what the
        settings panel sent."""
        given = {n: v for n, v in fields.items() if v is not None}
        for name in ("engine", "model", "base_url", "api_key"):
            if name in given:
                given[name] = str(given[name] or "")
        given["engine"] = given.get("engine") or "script"
        given["fold_prompt"] = bool(given.get("fold_prompt", False))
        return cls(**given, signed_in=signed_in or "")

    def kept(self) -> dict:
        """The settings as a browser keeps them for the next visit (browser_store): never the key."""
        return {"model": self.model, "base_url": self.base_url, "story_tokens": self.story_tokens,
                "history_tokens": self.history_tokens, "memory_tokens": self.memory_tokens,
                "recall_tokens": self.recall_tokens, "fold": bool(self.fold_prompt)}

    def budgets(self, settings: Settings) -> Budgets:
        """The panel's prompt budgets over the engine's own (how many scenes are retrieved stays the
        operator's choice)."""
        own = default_budgets(self.engine, settings)
        memory = own.memory_tokens if self.memory_tokens is None else int(self.memory_tokens)
        recall = own.recall_tokens if self.recall_tokens is None else int(self.recall_tokens)
        return replace(own, story_tokens=int(self.story_tokens), history_tokens=int(self.history_tokens),
                       top_k=settings.budgets.top_k, memory_tokens=max(0, memory), recall_tokens=max(0, recall))

    def options(self) -> dict[str, str | None]:
        """Model, server and key as typed; a blank is None, for the operator's settings to fill. With no key
        typed, a signed-in visitor's own token is the key of an engine that takes it (their account pays)."""
        given = {name: (getattr(self, name) or "").strip() or None for name in ("model", "base_url", "api_key")}
        if not given["api_key"] and self.signed_in and engine_info(self.engine).signs_in:
            given["api_key"] = self.signed_in
        return given

    def folds(self, settings: Settings) -> bool:
        return bool(self.fold_prompt) or settings.fold_prompt

    def choice(self, settings: Settings) -> EngineChoice:
        """The engine choice a ChatHaruhi or a Scene is opened with for this panel."""
        return EngineChoice(engine_info(self.engine).name, **self.options(), budgets=self.budgets(settings),
                            fold_prompt=self.folds(settings))


EXPORT_DIR_NAME = "chatharuhi-exports"
EXPORT_MAX_AGE_S = 3600


def export_dir() -> Path:
    """A fresh folder for an exported chat or scene; files older than an hour are removed (Gradio keeps its
    own copy)."""
    folder = Path(tempfile.gettempdir()) / EXPORT_DIR_NAME
    folder.mkdir(exist_ok=True)
    now = time.time()
    marker = folder / ".pruned"  # prune at most once a minute, not on every turn of every visitor
    if marker.exists() and now - marker.stat().st_mtime < 60:
        return Path(tempfile.mkdtemp(dir=folder))
    marker.touch()
    for old in folder.glob("*/*.jsonl"):
        try:
            if now - old.stat().st_mtime > EXPORT_MAX_AGE_S:
                old.unlink()
                old.parent.rmdir()
        except OSError:
            pass
    return Path(tempfile.mkdtemp(dir=folder))


def export_file(text: str, name: str, folder: Path | None = None) -> Path:
    """A chat or a group scene written for download as `name-DATE-TIME.jsonl` (in a fresh temporary folder
    unless given one)."""
    folder = folder or Path(tempfile.mkdtemp(prefix="chatharuhi-"))
    path = folder / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def engine_note(engine: str) -> str:
    try:
        info = engine_info(engine)
    except UnknownNameError as exc:
        return WARNING_MARK + str(exc)
    return _("**{engine}.** {description}", engine=_(info.label), description=_(info.description))


def while_running(work: Callable[[], object], every_s: float = 1.0) -> Iterator[int]:
    """Run `work` in a thread, yielding the whole seconds waited every `every_s` until it is done, so a
    page can show that a long load is alive; its exception, if any, is raised here."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    thread.start()
    while True:
        thread.join(every_s)
        if not thread.is_alive():
            break
        yield int(time.monotonic() - start)
    if failed:
        raise failed[0]


def message_text(value: object) -> str:
    """The text of a chat message as Gradio hands it back: a string, a dict or a list of parts."""
    if isinstance(value, dict):
        value = value.get("text") or value.get("content") or ""
    if isinstance(value, list):
        value = "".join(v.get("text", "") if isinstance(v, dict) else str(v) for v in value)
    return str(value or "")
