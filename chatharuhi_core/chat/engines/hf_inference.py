"""Hugging Face Inference: a Hub model id through the Inference Providers router, or the URL of an
Inference Endpoint or a TGI server, with huggingface_hub's InferenceClient.

Failures become the same plain sentences as the openai engine's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from ...config import DEFAULT_HF_MODELS
from ...errors import EngineError
from ...i18n import N_, _
from ..lanes import LaneSpec
from ..languages import family_languages
from .base import ChatRequest, EngineBase, EngineOptions, api_sampling, register_engine
from .openai_compat import CUT_MESSAGE, ChunkReader, bad_request
from .server_slots import server_lane

log = logging.getLogger(__name__)
DEFAULT_MODEL = DEFAULT_HF_MODELS[0]
# what the Inference Providers router says when no provider serves a model (HTTP 400, or 404 from some)
NOT_SERVED = ("not supported by any provider", "model_not_supported", "is not a chat model", "does not exist")


def _http_errors(kind: str) -> tuple[type[BaseException], ...]:
    """One httpx error class from every HTTP library in play: huggingface_hub 2 talks through
    `httpx2`, older releases through `httpx`."""
    import importlib

    found = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(getattr(importlib.import_module(name), kind))
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def translate_error(exc: BaseException, options: EngineOptions) -> EngineError:
    """Map huggingface_hub and transport errors to a sentence a visitor understands."""
    from huggingface_hub.errors import HfHubHTTPError, InferenceTimeoutError, OfflineModeIsEnabled

    where = options.base_url or "Hugging Face Inference"  # a product's name
    model = options.model or DEFAULT_MODEL
    if isinstance(exc, OfflineModeIsEnabled):  # huggingface_hub then refuses every URL, loopback too
        return EngineError(_("Hugging Face Inference is switched off here (HF_HUB_OFFLINE is set). For a TGI or "
                             "llama.cpp server at a URL, choose the OpenAI-compatible engine: they speak its API."))
    if isinstance(exc, (InferenceTimeoutError, *_http_errors("TimeoutException"))):
        return EngineError(_("{where} did not answer within {seconds} seconds.", where=where,
                             seconds=format(options.timeout_s, "g")))
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        code = exc.response.status_code
        if code == 401:
            return EngineError(_("Hugging Face refused the token (401): a sign-in expires after a while, so sign "
                                 "out and in again, or check the HF token in Settings."))
        if code == 402:
            return EngineError(_("Your Hugging Face account is out of Inference Providers credits (402). Add credits "
                                 "or a payment method at huggingface.co/settings/billing, or choose the offline "
                                 "engine."))
        if code == 403:
            return EngineError(_("This token may not use {model} (403).", model=model))
        if code == 404:
            return EngineError(_("{where} has no model named '{model}' (404). Check the model id.", where=where,
                                 model=model))
        if code == 429:
            return EngineError(_("Hugging Face Inference is busy or the quota is used up (429). Wait a moment and "
                                 "try again."))
        said = _hf_message(exc)
        if code in (400, 404) and any(words in said.lower() for words in NOT_SERVED):
            return EngineError(_("No Inference Provider serves {model} for chat now. Choose another model in "
                                 "Settings.", model=model))
        if code == 400:
            return bad_request(said)
        if code in (413, 422):
            return EngineError(_("{where} rejected the request ({code}): the conversation may be too long for the "
                                 "model, or the model may not chat.", where=where, code=code))
        if code >= 500:
            return EngineError(_("{where} failed ({code}). The model may be loading; try again in a moment.",
                                 where=where, code=code))
        return EngineError(_("{where} answered with an error ({code}).", where=where, code=code))
    if isinstance(exc, _http_errors("ConnectError")):
        return EngineError(_("Could not reach {where}. Is it running, and is the URL right?", where=where))
    if isinstance(exc, _http_errors("HTTPError")):
        return EngineError(_(CUT_MESSAGE))
    return EngineError(_("{where} gave an unexpected answer ({why}).", where=where, why=type(exc).__name__))


def _hf_message(exc) -> str:
    """The server's own short explanation from an OpenAI-style error body, if any."""
    try:
        error = exc.response.json().get("error")
    except Exception:
        return ""
    text = error.get("message") if isinstance(error, dict) else error
    return str(text or "").strip().splitlines()[0][:160] if text else ""


def _defaults(settings) -> dict:
    return {"api_key": settings.hf_token, "router": settings.hf_router, "model": settings.hf_models[0]}


def suggested_hf_models(settings) -> list[tuple[str, str]]:
    """The models offered in Settings: chat models that answer in Chinese and English (CHATHARUHI_HF_MODELS)."""
    return [(name, name) for name in settings.hf_models]


@register_engine(
    "hf",
    N_("Hugging Face Inference"),
    N_("A chat model on the Hugging Face Hub through Inference Providers, billed to the account of the HF token "
       "(or of the visitor signed in with Hugging Face), or the URL of an Inference Endpoint or a TGI server."),
    defaults=_defaults, signs_in=True,
)
class HFInferenceEngine(EngineBase):
    def model_label(self) -> str:
        return self.options.model or DEFAULT_MODEL

    def languages(self) -> frozenset[str] | None:
        return family_languages(self.model_label())

    def lane(self) -> LaneSpec | None:
        """A server of the visitor's own at base_url with a fixed number of slots (llama.cpp) takes visitors in
        order; the Hub's router queues for itself."""
        return server_lane(self.options.base_url, self.options.api_key)

    def _client(self):
        from huggingface_hub import InferenceClient

        o = self.options
        if not o.base_url and not o.api_key:
            raise EngineError(_("No HF token: sign in with Hugging Face or enter a token in Settings (on the command "
                                "line: --api-key or HF_TOKEN), or choose the offline engine."))
        return InferenceClient(base_url=o.base_url or o.router or None, token=o.api_key or None, timeout=o.timeout_s)

    def stream(self, request: ChatRequest) -> Iterator[str]:
        client = self._client()
        model = self.options.model or DEFAULT_MODEL
        reader = ChunkReader()
        try:
            with client:
                yield from reader.deltas(client.chat_completion(request.messages, model=model, stream=True,
                                                                max_tokens=self.options.max_tokens,
                                                                **api_sampling(self.options)))
        except EngineError:
            raise
        except Exception as exc:
            log.info("hf backend failed: %s", type(exc).__name__)
            if reader.started and isinstance(exc, _http_errors("TransportError")):
                raise EngineError(_(CUT_MESSAGE)) from None
            raise translate_error(exc, self.options) from None
        if not reader.finished:
            raise EngineError(_(CUT_MESSAGE))
