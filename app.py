"""ChatHaruhi: the Gradio page. It builds the page from its parts (page/) and launches it; the work is in
chatharuhi_core."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home from a Space or laptop

import gradio as gr  # noqa: E402

from chatharuhi_core.chat.engines.local.model import on_gpu, warm_at_start  # noqa: E402
from chatharuhi_core.config import Settings, gpu_runtime  # noqa: E402
from chatharuhi_core.i18n import N_, both_spans  # noqa: E402
from chatharuhi_core.roles.safety import DEFAULT_LIMITS  # noqa: E402
from chatharuhi_core.roles.sources import bundled_ids, load_role  # noqa: E402
from chatharuhi_core.web.chat import Conversation  # noqa: E402
from chatharuhi_core.web.frames import card_frame_head  # noqa: E402
from page import api  # noqa: E402
from page.add_tab import AddTab  # noqa: E402
from page.chat_tab import ChatTab  # noqa: E402
from page.events import run_every_change, set_up_queue  # noqa: E402
from page.group_scene import GroupSceneTab  # noqa: E402
from page.language import L, language_js, language_switch, page_i18n, speak_the_visitors_language  # noqa: E402
from page.session import Session  # noqa: E402
from page.switches import Switches  # noqa: E402
from page.turns import Turns, reveal_player  # noqa: E402
from page.visit import Visit, role_view  # noqa: E402

ASSETS = Path(__file__).resolve().parent / "assets"
log = logging.getLogger("chatharuhi.app")
# Gradio runs each step of a streaming event in a worker thread; a visitor waiting in an engine's lane (chat/lanes.py)
# holds one while it waits, so 32 visitors in line on the local model would leave Gradio's default 40 too few for
# everyone else's clicks. A waiting thread costs little (it sleeps on a condition).
WORKER_THREADS = 128
INTRO = N_("Talk to a character who stays in character: every reply draws on the character's own classic scenes.")


class Page:
    """The page's parts, each with its components as attributes: one visitor's states, this browser's storage,
    the chat tab (with the settings panel and memory), the group-scene tab and the add tab. `settings`: the app's
    one Settings, read from the environment once when the app starts; every part's events use it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # the first character is drawn into the page itself, so its greeting is on screen before any
        # event has run; the load event then brings the engine and, for a returning browser, its last pick
        first = load_role(bundled_ids()[0])
        first_view = role_view(Conversation(first.id))
        speak_the_visitors_language()  # a sentence an event writes is in the language of that event's visitor
        with gr.Blocks(title="ChatHaruhi") as self.demo:
            self.visit = Visit()
            self.session = Session(settings).render()
            with gr.Row(elem_id="masthead"):
                gr.Markdown("# ChatHaruhi\n" + both_spans(INTRO), elem_id="intro")
                self.language = language_switch()
            with gr.Tabs(elem_id="tabs") as self.tabs, gr.Tab(L("Chat"), id="chat-tab"):
                self.chat = ChatTab(settings).render(first, first_view)
            with self.tabs, gr.Tab(L("Group"), id="scene-tab") as self.scene_tab:
                self.group = GroupSceneTab(settings).render()
            with self.tabs, gr.Tab(L("Add a character"), id="add-tab"):
                self.add = AddTab(settings).render()
            self.wire()

    def wire(self) -> None:
        """The events, in the order their API names depend on."""
        self.reveal = (reveal_player, self.chat.voice_audio, self.chat.voice_audio)
        self.turns = Turns(self.settings)
        self.session.wire(self)
        self.chat.wire(self)
        self.group.wire(self)
        stops = self.turns.wire(self)
        Switches(self.settings).wire(self, stops)
        self.chat.controls.wire(self, stops)
        api.wire(self.demo, self.settings)
        run_every_change(self.demo)  # Gradio 6.31's always_last could run an event again without end


def build_demo(settings: Settings | None = None) -> gr.Blocks:
    """The page over `settings` (the environment's, read now, when not given)."""
    return Page(settings or Settings.from_env()).demo


def _warm_up(settings: Settings) -> None:
    """Load the embedder and open every bundled store in the background, not at import."""
    from chatharuhi_core.chat.chatbot import ChatHaruhi

    try:
        for rid in bundled_ids():
            _ = ChatHaruhi(role_name=rid, settings=settings).store
        log.info("warm-up done: %d bundled stores open", len(bundled_ids()))
    except Exception:
        log.exception("warm-up failed; stores will be built on first use")


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = Settings.from_env()  # once: the page's events and the tools all use this one
    demo = build_demo(settings)
    set_up_queue(demo, 32)
    host = os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1")
    port = int(os.environ.get("GRADIO_SERVER_PORT", "7860"))
    on_gpu()  # where the `spaces` package is installed (ZeroGPU), the local engine's GPU function exists at start
    if settings.zero_gpu and not gpu_runtime():
        log.warning("this is a ZeroGPU Space, but torch and transformers are not installed: visitors start on the "
                    "offline engine. requirements.txt's ZeroGPU runtime installs them, for %s on the GPU.",
                    settings.gpu_model)
    # Gradio serves only files under these (and its temp folder and the working folder): the bundled
    # characters, the page's assets, imported characters and the spoken replies, which all live in the
    # cache (~/.cache/chatharuhi when started as README says). Never the whole cache: the feedback file is there.
    for folder in (settings.roles_dir, settings.spoken_dir):
        folder.mkdir(parents=True, exist_ok=True)
    allowed = [str(Path(__file__).resolve().parent / "characters"), str(ASSETS), str(settings.roles_dir),
               str(settings.spoken_dir)]
    demo.launch(server_name=host, server_port=port, css_paths=[ASSETS / "style.css"], theme=gr.themes.Soft(),
                allowed_paths=allowed, max_file_size=DEFAULT_LIMITS.max_file_bytes, prevent_thread_lock=True,
                mcp_server=settings.mcp, max_threads=WORKER_THREADS, i18n=page_i18n(),
                js=language_js(), head=card_frame_head())
    # warm up once the page answers: started earlier, it competed with the launch for the CPU
    threading.Thread(target=_warm_up, args=(settings,), daemon=True).start()
    warm_at_start(settings)  # the local model and its one-time checks, at a lower priority
    demo.block_thread()


if __name__ == "__main__":
    main()
