"""Reply engines, registered by name (in the order the page lists them). Importing this package
registers the built-in ones; none of them imports its SDK until it is used."""

# isort: off
from . import script as _script  # noqa: F401  (registers "script")
from .local import model as _local  # noqa: F401  (registers "local")
from . import openai_compat as _openai  # noqa: F401  (registers "openai")
from . import hf_inference as _hf  # noqa: F401  (registers "hf")
# isort: on
from .base import (
    ChatRequest,
    Engine,
    EngineChoice,
    EngineInfo,
    EngineOptions,
    as_choice,
    create_engine,
    default_budgets,
    engine_info,
    engine_names,
    layout_of,
    open_engine,
    options_for,
    register_engine,
    registered,
    writes,
)

__all__ = [
    "Engine",
    "EngineChoice",
    "as_choice",
    "EngineInfo",
    "EngineOptions",
    "ChatRequest",
    "engine_info",
    "engine_names",
    "layout_of",
    "create_engine",
    "default_budgets",
    "open_engine",
    "options_for",
    "register_engine",
    "registered",
    "writes",
]
