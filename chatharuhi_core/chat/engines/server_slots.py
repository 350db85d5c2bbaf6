"""How many replies an OpenAI-compatible server generates at once, asked of the server itself.

llama.cpp's own server says it in `/props` (`total_slots`); llama-cpp-python's server names itself in
its OpenAPI title and serves one request at a time (a second one even cuts the first short, by default).
Other servers (vLLM, TGI, Ollama, OpenAI) queue for themselves: None, and their visitors are not put in
a lane. The answer is kept a few minutes per server, so a turn asks at most once in that time.
"""

from __future__ import annotations

import threading
import time
from urllib.parse import urlsplit, urlunsplit

from ...i18n import N_
from ..lanes import LaneSpec

PROBE_TIMEOUT_S = 2.0
KEEP_S = 300.0
LLAMA_CPP_PYTHON_TITLE = "llama.cpp Python API"

_KNOWN: dict[str, tuple[float, int | None]] = {}  # server root → (when asked, slots); facts about servers, not visitors
_LOCK = threading.Lock()


def server_root(base_url: str) -> str:
    """The server's address without the API path (…:8080/v1 → …:8080)."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path
    for suffix in ("/v1", "/openai"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _ask(root: str, api_key: str | None) -> int | None:
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(timeout=PROBE_TIMEOUT_S, headers=headers) as client:
        try:
            props = client.get(f"{root}/props")
            if props.status_code == 200:
                slots = props.json().get("total_slots")
                if isinstance(slots, int) and slots > 0:
                    return slots
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
        try:
            spec = client.get(f"{root}/openapi.json")
            if spec.status_code == 200 and LLAMA_CPP_PYTHON_TITLE in str(spec.json().get("info", {}).get("title")):
                return 1
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
    return None


def server_slots(base_url: str, api_key: str | None = None) -> int | None:
    """The server's parallel slots when it says (llama.cpp) or is known to have one; None: it queues for itself."""
    root = server_root(base_url)
    now = time.monotonic()
    with _LOCK:
        known = _KNOWN.get(root)
    if known and now - known[0] < KEEP_S:
        return known[1]
    slots = _ask(root, api_key)
    with _LOCK:
        _KNOWN[root] = (now, slots)
    return slots


def server_lane(base_url: str | None, api_key: str | None = None) -> LaneSpec | None:
    """The lane of the server at base_url when it generates a fixed number of replies at once; None for no URL
    (a hosted API) or a server that queues for itself."""
    if not base_url:
        return None
    slots = server_slots(base_url, api_key)
    if not slots:
        return None
    where = urlsplit(base_url).netloc or base_url
    return LaneSpec(f"server {server_root(base_url)}", N_("the model server at {where}"), slots, where)


def forget_servers() -> None:
    """Ask again next time (tests that restart a server on the same port)."""
    with _LOCK:
        _KNOWN.clear()
