"""A scripted OpenAI-compatible server on loopback, speaking the real chat completions wire
protocol (JSON and SSE). Used only for what a real server cannot do on demand: the model name
picks the behaviour.

    echo        streams `Name:「Echo: <last user text>」` word by word
    fault-401   invalid key            fault-429   rate limited      fault-500  server error
    slow        waits longer than any test timeout before answering
    cut         sends two chunks, then drops the connection mid-stream
    plain       like echo, without the `Name:「」` wrapper (the first chunk is already visible text)
    strict      like echo, but rejects (400) a system message or two user messages in a row,
                as some servers do (the reason for the fold-prompt option)
    owner/name  a Hub model id, as the Inference Providers router takes it: like echo
    fault-402   out of credits (the router's answer when the account's Inference credits are spent)
    fault-not-served   400 as the router says it when no provider serves the model
Keys: GOOD_KEY, and any token in `srv.tokens` (signed-in visitors); every other key is refused with 401,
as the router refuses an expired sign-in.
A scene director's request (its system message opens "You direct") is answered with the
server's `director_answer`, so a test decides who the "model" picks.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GOOD_KEY = "sk-test-good"

# The scripted faults every engine that talks to this server must turn into a sentence, and words from it.
FAULTS = [("fault-429", "busy"), ("fault-500", r"failed \(500\)"),
          ("no-such-model", "no model named 'no-such-model'"), ("cut", "broke off")]


def fault_cases(wrong_key: str, refused: str) -> list[tuple[str, str, str]]:
    """(model, key, words) to parametrize an engine's fault test with: its kind of wrong key, then each fault."""
    return [("echo", wrong_key, refused), *((model, GOOD_KEY, words) for model, words in FAULTS)]


def told_and_kept(make_bot, model: str, key: str, words: str) -> None:
    """The check each engine's fault test makes, so they cannot drift apart: a fault in the second message is
    one plain sentence (matching `words`), the first exchange is all the history keeps, and with the engine
    set right again the next message is answered. make_bot(**kw) opens a bot on this server (model, key, history)."""
    import pytest

    from chatharuhi_core.errors import EngineError

    good = make_bot()
    good.chat("First message")
    before = list(good.history)
    broken = make_bot(model=model, key=key, history=list(before))
    with pytest.raises(EngineError, match=words) as err:
        broken.chat("Second message")
    assert "\n" not in str(err.value) and "Traceback" not in str(err.value)
    assert broken.history == before
    broken.engine = good.engine
    assert broken.chat("Third message").startswith("Echo:") and len(broken.history) == 2


def _chunk(model: str, content: str | None, finish: str | None = None) -> bytes:
    body = {
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": ({"content": content} if content is not None else {}),
                     "finish_reason": finish}],
    }
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _error(self, code: int, message: str, kind: str) -> None:
        body = json.dumps({"error": {"message": message, "type": kind, "code": None}}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            body = json.dumps({"object": "list", "data": [{"id": "echo", "object": "model"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self._error(404, "not found", "not_found")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        req = json.loads(self.rfile.read(length) or b"{}")
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.requests.append({"path": self.path, "headers": headers, "body": req, "t": time.time()})
        if not self.path.endswith("/chat/completions"):
            return self._error(404, "no such route", "not_found")
        if self.headers.get("Authorization") not in {f"Bearer {t}" for t in {GOOD_KEY, *self.server.tokens}}:
            return self._error(401, "Incorrect API key provided.", "invalid_request_error")
        model = req.get("model", "")
        if model == "fault-401":
            return self._error(401, "Incorrect API key provided.", "invalid_request_error")
        if model == "fault-429":
            return self._error(429, "Rate limit reached.", "rate_limit_error")
        if model == "fault-402":
            return self._error(402, "You have exceeded your monthly included credits for Inference Providers.",
                               "payment_required")
        if model == "fault-not-served":
            return self._error(400, f"The requested model '{model}' is not supported by any provider you have "
                               "enabled.", "model_not_supported")
        if model == "fault-500":
            return self._error(500, "The server had an error.", "server_error")
        if model == "slow":
            time.sleep(self.server.slow_s)
        if model == "strict":
            roles = [m["role"] for m in req["messages"]]
            if "system" in roles:
                return self._error(400, "System role not supported", "invalid_request_error")
            if any(a == b for a, b in zip(roles, roles[1:])) or roles[0] != "user":
                return self._error(400, "Conversation roles must alternate user/assistant/user/assistant/...",
                                   "invalid_request_error")
        if model not in {"echo", "slow", "cut", "strict", "plain"} and "/" not in model:
            return self._error(404, f"The model `{model}` does not exist.", "not_found")
        system = next((m["content"] for m in req["messages"] if m["role"] in ("system", "user")), "")
        m = re.search(r"act like (.+?) from", system)
        name = m.group(1) if m else "Someone"
        last = req["messages"][-1]["content"]
        reply = (self.server.director_answer if system.startswith("You direct")
                 else f"Echo: {last}" if model == "plain" else f"{name}:「Echo: {last}」")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        words = re.findall(r"\S+\s*", reply)
        for i, w in enumerate(words):
            self._write_chunk(_chunk(model, w))
            time.sleep(self.server.token_delay_s)
            if model == "cut" and i == 1:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)  # no terminating chunk: a broken stream
                self.close_connection = True
                return
        self._write_chunk(_chunk(model, None, "stop"))
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default 5 drops connections when 32 visitors call at once
    def handle_error(self, request, client_address):  # a client that hung up is expected here
        pass


class FakeOpenAI:
    """Start with `with FakeOpenAI() as srv:`; srv.base_url ends in /v1."""

    def __init__(self, token_delay_s: float = 0.005, slow_s: float = 5.0):
        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.token_delay_s = token_delay_s
        self.httpd.slow_s = slow_s
        self.httpd.director_answer = "END"
        # the handler reads and fills these on the server; the test holds the same list and set
        self.requests: list[dict] = []
        self.tokens: set[str] = set()  # tokens accepted besides GOOD_KEY: signed-in visitors'
        self.httpd.requests, self.httpd.tokens = self.requests, self.tokens
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


if __name__ == "__main__":  # by hand, or as a separate process: python tests/support/fake_openai.py [DELAY_S]
    import sys

    with FakeOpenAI(token_delay_s=float(sys.argv[1]) if len(sys.argv) > 1 else 0.005) as srv:
        print(srv.base_url, flush=True)
        threading.Event().wait()
