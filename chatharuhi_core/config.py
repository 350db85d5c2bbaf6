"""Settings read from the environment when asked, never at import time."""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from .deprecated import renamed

DEFAULT_STORY_TOKENS = 1500
DEFAULT_HISTORY_TOKENS = 1200
DEFAULT_TOP_K = 19
DEFAULT_MEMORY_TOKENS = 300  # pinned memories (chat/memory.py): a dozen short facts
# earlier exchanges recalled from beyond the history window: with the pinned memories, 1,500 tokens of memory,
# a small share of any API model's context (bench/memory_public.py, all its sets: the evidence of 67% of the
# questions reached the prompt with meaning alone at 400 tokens and 6 exchanges, 94% with these and fusion)
DEFAULT_RECALL_TOKENS = 1200
DEFAULT_RECALL_K = 24  # at most this many of them (the token budget is what usually stops it)
DEFAULT_NOTE_TOKENS = 400  # of the recall budget, what notes condensing older stretches may take (chat/notes.py)
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
# Chat models on Hugging Face Inference Providers that hold a conversation in Chinese and in English (the
# bundled roles' languages); the first is the default. CHATHARUHI_HF_MODELS (comma-separated) replaces them.
DEFAULT_HF_MODELS = (
    "Qwen/Qwen3-235B-A22B-Instruct-2507",
    "deepseek-ai/DeepSeek-V3.1",
    "moonshotai/Kimi-K2-Instruct-0905",
    "zai-org/GLM-4.6",
)
# The local engine's model on a ZeroGPU Space when CHATHARUHI_GPU_MODEL names none: speaks Chinese and English.
DEFAULT_GPU_MODEL = "Qwen/Qwen2.5-7B-Instruct"


def _default_cache_dir(env: Mapping[str, str]) -> Path:
    """A Space with persistent storage mounts /data; elsewhere use the user cache."""
    if env.get("CHATHARUHI_CACHE"):
        return Path(env["CHATHARUHI_CACHE"]).expanduser()
    data = Path("/data")
    if data.is_dir() and os.access(data, os.W_OK):
        return data / "chatharuhi"
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chatharuhi"


def _feedback_setting(value: str | None) -> tuple[Path | None, bool]:
    """CHATHARUHI_FEEDBACK as (a path or None for the default, whether feedback is off)."""
    value = (value or "").strip()
    if value.lower() in {"off", "0", "no", "false"}:
        return None, True
    return (Path(value).expanduser() if value else None), False


def _user_chats(env: Mapping[str, str], sign_in: bool) -> Path | None:
    """CHATHARUHI_USER_CHATS (a folder, or "off"); by default, on a Space with sign-in and persistent storage
    (/data), /data/chatharuhi/users. Only signed-in visitors' chats go there; without sign-in, None."""
    if not sign_in:
        return None
    value = (env.get("CHATHARUHI_USER_CHATS") or "").strip()
    if value.lower() in {"off", "0", "no", "false"}:
        return None
    if value:
        return Path(value).expanduser()
    data = Path("/data")
    return data / "chatharuhi" / "users" if data.is_dir() and os.access(data, os.W_OK) else None


def _renamed_env(env: Mapping[str, str], name: str, old: str) -> str | None:
    """A setting by its name, else by its old name (which still works for one release and warns once)."""
    if env.get(name):
        return env[name]
    if env.get(old):
        renamed(old, name)
        return env[old]
    return None


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def _names(value: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated list; blank: the default."""
    names = tuple(n.strip() for n in (value or "").split(",") if n.strip())
    return names or default


def _mcp(env: Mapping[str, str]) -> bool:
    """Serve the tools over MCP: the project's switch (CHATHARUHI_MCP) first, then Gradio's own
    (GRADIO_MCP_SERVER, what `launch(mcp_server=True)` users set), else on a Space and off elsewhere."""
    for name in ("CHATHARUHI_MCP", "GRADIO_MCP_SERVER"):
        if env.get(name):
            return _flag(env[name])
    return bool(env.get("SPACE_ID"))


@functools.lru_cache(maxsize=1)
def gpu_runtime() -> bool:
    """Whether the local engine's GPU runtime (torch, transformers) is installed: on a ZeroGPU Space it then
    answers every visitor with the GPU model (looked up once per process, not at import)."""
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))


@dataclass(frozen=True)
class Budgets:
    """Token budgets of the paper (sec. 3.3 and 3.4), counted with cl100k_base."""

    story_tokens: int = DEFAULT_STORY_TOKENS
    history_tokens: int = DEFAULT_HISTORY_TOKENS
    top_k: int = DEFAULT_TOP_K
    memory_tokens: int = DEFAULT_MEMORY_TOKENS  # not the paper's: what the character was asked to remember
    recall_tokens: int = DEFAULT_RECALL_TOKENS  # not the paper's: its earlier exchanges, by similarity
    recall_k: int = DEFAULT_RECALL_K
    note_tokens: int = DEFAULT_NOTE_TOKENS  # not the paper's: how much of recall_tokens dated notes may take (0: none)


@dataclass(frozen=True)
class Settings:
    """Deployment settings: where caches live, which Chroma, which default engine."""

    cache_dir: Path
    chroma_host: str | None = None
    chroma_port: int = 8000
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    openai_model: str = DEFAULT_OPENAI_MODEL
    hf_token: str | None = field(default=None, repr=False)
    hf_endpoint: str | None = None  # HF_ENDPOINT, e.g. a mirror
    hub_cache: Path | None = None  # HF_HUB_CACHE; None leaves huggingface_hub's default
    hub_offline: bool = False  # HF_HUB_OFFLINE: serve only what is cached
    default_engine: str = "script"
    embedder: str = "use-multilingual-v3"
    # CHATHARUHI_MEMORY_EMBEDDER (e.g. "multilingual-e5-small"): memory searches a long chat by this one's meaning
    # as well; off by default: it costs ~20 ms a turn, over the 20 ms memory may add (bench/RESULTS.md)
    memory_embedder: str = "off"
    timeout_s: float = DEFAULT_TIMEOUT_S
    fold_prompt: bool = False  # CHATHARUHI_FOLD_PROMPT: no system message, no two user messages in a row
    budgets: Budgets = Budgets()
    feedback_file: Path | None = None  # CHATHARUHI_FEEDBACK: where ratings and edits go ("off": nowhere)
    feedback_off: bool = False
    engine_chosen: bool = False  # the operator chose the engine (CHATHARUHI_ENGINE) or gave a key for one
    sign_in: bool = False  # a Space with `hf_oauth: true`: visitors may sign in with Hugging Face
    hf_router: str | None = None  # CHATHARUHI_HF_ROUTER: where the hf engine sends a Hub model id (None: huggingface_hub's)
    hf_models: tuple[str, ...] = DEFAULT_HF_MODELS  # CHATHARUHI_HF_MODELS: the hf engine's suggested models
    zero_gpu: bool = False  # SPACES_ZERO_GPU: a ZeroGPU Space
    gpu_model: str | None = None  # CHATHARUHI_GPU_MODEL: the local engine's model on a GPU Space
    mcp: bool = False  # CHATHARUHI_MCP or Gradio's GRADIO_MCP_SERVER: serve the tools over MCP (default: on a Space)
    user_chats: Path | None = None  # where signed-in visitors' chats are kept (None: in each visitor's browser)
    warm_local: bool = True  # CHATHARUHI_WARM_LOCAL ("0": off): the app loads the local model as it starts

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        key = env.get("OPENAI_API_KEY") or None
        base_url = env.get("OPENAI_BASE_URL") or None
        zero_gpu = _flag(env.get("SPACES_ZERO_GPU"))
        gpu_ready = zero_gpu and gpu_runtime()  # a ZeroGPU Space whose requirements carry the model's runtime
        chosen = _renamed_env(env, "CHATHARUHI_ENGINE", "CHATHARUHI_BACKEND")
        engine = chosen or ("openai" if (key or base_url) else "local" if gpu_ready else "script")
        host = env.get("CHROMA_HOST") or None
        port = int(env.get("CHROMA_PORT") or 8000)
        feedback_file, feedback_off = _feedback_setting(env.get("CHATHARUHI_FEEDBACK"))
        # Gradio's own rule for real sign-in routes: on a Space (SYSTEM=spaces) whose metadata asked for OAuth
        sign_in = env.get("SYSTEM") == "spaces" and bool(env.get("SPACE_ID")) and bool(env.get("OAUTH_CLIENT_ID"))
        return cls(
            cache_dir=_default_cache_dir(env),
            chroma_host=host,
            chroma_port=port,
            openai_api_key=key,
            openai_base_url=base_url,
            openai_model=env.get("OPENAI_MODEL") or DEFAULT_OPENAI_MODEL,
            hf_token=env.get("HF_TOKEN") or None,
            hf_endpoint=env.get("HF_ENDPOINT") or None,
            hub_cache=Path(env["HF_HUB_CACHE"]).expanduser() if env.get("HF_HUB_CACHE") else None,
            hub_offline=_flag(env.get("HF_HUB_OFFLINE")),
            default_engine=engine,
            embedder=env.get("CHATHARUHI_EMBEDDER") or "use-multilingual-v3",
            memory_embedder=env.get("CHATHARUHI_MEMORY_EMBEDDER") or "off",
            timeout_s=float(env.get("CHATHARUHI_TIMEOUT") or DEFAULT_TIMEOUT_S),
            fold_prompt=_flag(env.get("CHATHARUHI_FOLD_PROMPT")),
            feedback_file=feedback_file,
            feedback_off=feedback_off,
            engine_chosen=bool(chosen or key or base_url or env.get("HF_TOKEN") or gpu_ready),
            sign_in=sign_in,
            hf_router=env.get("CHATHARUHI_HF_ROUTER") or None,
            hf_models=_names(env.get("CHATHARUHI_HF_MODELS"), DEFAULT_HF_MODELS),
            zero_gpu=zero_gpu,
            gpu_model=env.get("CHATHARUHI_GPU_MODEL") or (DEFAULT_GPU_MODEL if zero_gpu else None),
            mcp=_mcp(env),
            user_chats=_user_chats(env, sign_in),
            warm_local=(env.get("CHATHARUHI_WARM_LOCAL") or "1").strip().lower() not in ("0", "false", "no", "off"),
        )

    @property
    def roles_dir(self) -> Path:
        """Imported roles live here as role packages, one folder per id."""
        return self.cache_dir / "roles"

    @property
    def spoken_dir(self) -> Path:
        """Where each spoken reply's audio is written for the page to play: the page must be allowed
        to serve files from here (app.py passes it to Gradio's allowed paths)."""
        return self.cache_dir / "audio" / "out"

    @property
    def feedback_path(self) -> Path | None:
        """The page's ratings and corrections (JSON Lines), or None when the operator turned them off."""
        if self.feedback_off:
            return None
        return self.feedback_file or self.cache_dir / "feedback.jsonl"

    def with_(self, **changes) -> Settings:
        return replace(self, **changes)
