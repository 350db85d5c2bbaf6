"""The app driven as a visitor's page and a user's shell drive it: its API through gradio_client, its CLI in a
child process, the page's turn function in-process. Shared by the unit and integration lanes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .loopback import ROOT


def text_of(message: dict) -> str:
    """A chat message's text, whether Gradio sent it as a string or as a list of parts."""
    content = message["content"]
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content


def send(client: Any, text: str, user_role: str = "", engine: str = "script", model: str = "", base_url: str = "",
         key: str = "") -> tuple[list, tuple]:
    """One message through the page's /send event (a gradio_client Client), then what the page runs after a reply;
    returns (the streamed frames, (chat, message box, scenes panel))."""
    job = client.submit(text, user_role, engine, model, base_url, key, 1500, 1200, False, 300, 400, "", "", 4,
                        api_name="/send")
    frames = list(job)
    chat, box, _stats = job.result()
    scenes = client.predict(False, api_name="/after_turn")[0]  # what the page runs once the reply is done
    return frames, (chat, box, scenes)


def run_cli(*args: str, cache: Path, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m chatharuhi_core ARGS` from the repository, with its own cache and none of the operator's settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHATHARUHI_"))}
    env["CHATHARUHI_CACHE"] = str(cache)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "chatharuhi_core", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def page_turn(settings: Any, conv: Any, text: str, user_role: str = "") -> Any:
    """One turn through the page's own function (no app): the conversation after the reply, which must not fail."""
    from chatharuhi_core.web.common import EnginePanel
    from chatharuhi_core.web.turn import stream_turn

    *_, last = stream_turn(conv, text, user_role, EnginePanel(), settings)
    assert last.error is None
    return last.conversation
