"""Reply engines, registered by name (in the order the page lists them). Importing this package
registers the built-in ones; none of them imports its SDK until it is used."""

# isort: off
from . import script as _script  # noqa: F401  (registers "script")
from . import local_model as _local  # noqa: F401  (registers "local")
from . import openai_compat as _openai  # noqa: F401  (registers "openai")
from . import hf_inference as _hf  # noqa: F401  (registers "hf")
# isort: on
from .base import (
    Backend,
    BackendInfo,
    BackendOptions,
    ChatRequest,
    backend_info,
    backend_names,
    create_backend,
    default_budgets,
    open_backend,
    options_for,
    register_backend,
    registered,
)

__all__ = [
    "Backend",
    "BackendInfo",
    "BackendOptions",
    "ChatRequest",
    "backend_info",
    "backend_names",
    "create_backend",
    "default_budgets",
    "open_backend",
    "options_for",
    "register_backend",
    "registered",
]
