"""OpenAI and every OpenAI-compatible server (vLLM, TGI, Ollama, llama.cpp server) by base URL.

Every failure becomes an EngineError whose text is one plain sentence for the chat.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

from ...errors import EngineError
from ...i18n import N_, _
from ..lanes import LaneSpec
from .base import ChatRequest, EngineBase, EngineOptions, api_sampling, register_engine
from .server_slots import server_lane

log = logging.getLogger(__name__)
CONNECT_TIMEOUT_S = 10.0
CUT_MESSAGE = N_("The connection to the model server broke off in the middle of the reply. Try again.")


_HTTP = None
_HTTP_LOCK = threading.Lock()


def shared_http_client():
    """One connection pool for every conversation's calls (the key travels per request, never here).

    A fresh client per reply cost about 20 ms of TLS set-up before the first token. Cookies are
    refused, so nothing one visitor's server sets is sent on another visitor's behalf.
    """
    global _HTTP
    with _HTTP_LOCK:
        if _HTTP is None:
            from http.cookiejar import CookieJar, DefaultCookiePolicy

            import httpx

            no_cookies = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
            _HTTP = httpx.Client(cookies=no_cookies, follow_redirects=True,
                                 limits=httpx.Limits(max_connections=256, max_keepalive_connections=64))
        return _HTTP


def _where(options: EngineOptions) -> str:
    return options.base_url or "api.openai.com"


FOLD_HINT = N_("If this server rejects a system message or two user messages in a row, tick "
               "\"Fold the prompt\" in Settings.")
_ROLE_WORDS = ("system", "alternate", "role")


def _server_message(exc) -> str:
    """The server's own short explanation, if it gave one (first line, at most 160 characters)."""
    body = getattr(exc, "body", None)
    text = body.get("message") if isinstance(body, dict) else None
    text = str(text or "").strip().splitlines()[0] if text else ""
    return text[:160]


def bad_request(server_says: str) -> EngineError:
    """A 400: quote the server, and point at the fold option when it complains about roles."""
    if any(w in server_says.lower() for w in _ROLE_WORDS):
        text = _("The model server rejected the prompt's layout (400).")
        return EngineError(_("{sentence} {hint}", sentence=_said(text, server_says), hint=_(FOLD_HINT)))
    return EngineError(_said(_("The model server rejected the request (400): the conversation may be too long for it."),
                             server_says))


def _said(sentence: str, server_says: str) -> str:
    """A sentence, then what the server said about it, when it said something."""
    if not server_says:
        return sentence
    return _("{sentence} {said}", sentence=sentence, said=_("It said: \"{text}\"", text=server_says))


def translate_error(exc: BaseException, options: EngineOptions) -> EngineError:
    """Map SDK and transport errors to a sentence a visitor understands."""
    import httpx
    import openai

    where = _where(options)
    model = options.model or _("the model")
    if isinstance(exc, openai.AuthenticationError):
        return EngineError(_("The model server refused the API key (401). Check the key in Settings."))
    if isinstance(exc, openai.PermissionDeniedError):
        return EngineError(_("This API key may not use {model} (403).", model=model))
    if isinstance(exc, openai.RateLimitError):
        return EngineError(_("The model server is busy or the quota is used up (429). Wait a moment and try again."))
    if isinstance(exc, openai.NotFoundError):
        return EngineError(_("The server at {where} has no model named '{model}' (404). Check the model name.",
                             where=where, model=model))
    if isinstance(exc, openai.BadRequestError):
        return bad_request(_server_message(exc))
    if isinstance(exc, (openai.APITimeoutError, httpx.TimeoutException)):
        return EngineError(_("The model server at {where} did not answer within {seconds} seconds.", where=where,
                             seconds=format(options.timeout_s, "g")))
    if isinstance(exc, openai.InternalServerError) or (
        isinstance(exc, openai.APIStatusError) and exc.status_code >= 500
    ):
        return EngineError(_("The model server at {where} failed ({code}). Try again in a moment.", where=where,
                             code=exc.status_code))
    if isinstance(exc, openai.APIStatusError):
        return EngineError(_("The model server at {where} answered with an error ({code}).", where=where,
                             code=exc.status_code))
    if isinstance(exc, openai.APIConnectionError):
        return EngineError(_("Could not reach the model server at {where}. Is it running, and is the URL right?",
                             where=where))
    if isinstance(exc, (httpx.HTTPError, openai.APIError)):
        return EngineError(_(CUT_MESSAGE))
    return EngineError(_("The model server gave an unexpected answer ({why}).", why=type(exc).__name__))


class ChunkReader:
    """Text deltas from OpenAI-shaped stream chunks (the openai SDK's, and huggingface_hub's, which
    mirror them), remembering whether text arrived and whether the server finished the reply."""

    def __init__(self) -> None:
        self.started = False
        self.finished = False

    def deltas(self, chunks) -> Iterator[str]:
        for chunk in chunks:
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            if choice.delta and choice.delta.content:
                self.started = True
                yield choice.delta.content
            if choice.finish_reason:
                self.finished = True


def _defaults(settings) -> dict:
    return {"model": settings.openai_model, "base_url": settings.openai_base_url,
            "api_key": settings.openai_api_key}


@register_engine(
    "openai",
    N_("OpenAI-compatible server"),
    N_("OpenAI, or any server that speaks its chat API (vLLM, TGI, Ollama, llama.cpp) at a base URL."),
    defaults=_defaults,
)
class OpenAIEngine(EngineBase):
    def model_label(self) -> str:
        return self.options.model or "gpt-4o-mini"

    def lane(self) -> LaneSpec | None:
        """A server that generates a fixed number of replies at once (llama.cpp) takes visitors in order
        (chat/lanes.py); one that queues for itself, or OpenAI's own, has no lane."""
        return server_lane(self.options.base_url, self.options.api_key)

    def _client(self):
        import httpx
        from openai import OpenAI

        o = self.options
        if not o.api_key and not o.base_url:
            raise EngineError(
                _("No API key: enter one in Settings, or choose the offline engine.")
            )
        timeout = httpx.Timeout(o.timeout_s, connect=min(CONNECT_TIMEOUT_S, o.timeout_s))
        return OpenAI(api_key=o.api_key or "not-needed", base_url=o.base_url or None,
                      timeout=timeout, max_retries=0, http_client=shared_http_client())

    def stream(self, request: ChatRequest) -> Iterator[str]:
        import httpx
        import openai

        client = self._client()
        model = self.options.model or "gpt-4o-mini"
        reader = ChunkReader()
        try:
            stream = client.chat.completions.create(model=model, messages=request.messages, stream=True,
                                                    max_tokens=self.options.max_tokens, **api_sampling(self.options))
            with stream:
                yield from reader.deltas(stream)
        except EngineError:
            raise
        except Exception as exc:
            log.info("openai backend failed: %s", type(exc).__name__)
            if reader.started and isinstance(exc, (httpx.TransportError, openai.APIConnectionError)):
                raise EngineError(_(CUT_MESSAGE)) from None
            raise translate_error(exc, self.options) from None
        if not reader.finished:
            raise EngineError(_(CUT_MESSAGE))
