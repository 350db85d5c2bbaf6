"""Reply engines, registered by name. Importing this package registers the built-in ones."""

from . import openai_compat as _openai  # noqa: F401  (registers "openai")
from . import script as _script  # noqa: F401  (registers "script")
from .base import (
    Backend,
    BackendInfo,
    BackendOptions,
    ChatRequest,
    backend_info,
    backend_names,
    create_backend,
    register_backend,
)

__all__ = [
    "Backend",
    "BackendInfo",
    "BackendOptions",
    "ChatRequest",
    "backend_info",
    "backend_names",
    "create_backend",
    "register_backend",
]
