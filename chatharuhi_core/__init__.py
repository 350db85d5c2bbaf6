"""ChatHaruhi: role-play chat grounded in a character's own classic scenes.

The house, by floor (every import points down; `python tools/import_graph.py` checks it):
ground (config, errors, tokens, embedding, jsonl) → roles/ (what a character is) → chat/ (one character
answering) → scene/ (group scenes) → data/ (eval, synthesis, fine-tuning, feedback) → web/ (the page's
functions) → cli. A visitor's message goes web/turn → chat/chatbot → chat/engines (the engine) and back
as one Reply record.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .chat.chatbot import ChatHaruhi
    from .chat.conversation import Conversation
    from .chat.persona import AuthorsNote, Persona, read_persona
    from .chat.prompt import Exchange
    from .chat.speech import Heard, SpeechError, transcribe
    from .chat.tree import ChatTree
    from .config import Budgets, Settings
    from .errors import BackendError, ChatHaruhiError, EngineError, InputError, RoleFormatError, RoleNotFoundError
    from .roles.role import Role, Story, load_role_package, write_role_package
    from .roles.sources import bundled_ids, load_role

# where each top-level name lives: loaded on first use (PEP 562), so `import chatharuhi_core.errors` or the CLI's
# `--help` does not pay for the embedder, Chroma and numpy
_HOME = {
    "ChatHaruhi": ".chat.chatbot",
    "Conversation": ".chat.conversation",
    "AuthorsNote": ".chat.persona", "Persona": ".chat.persona", "read_persona": ".chat.persona",
    "Exchange": ".chat.prompt",
    "Heard": ".chat.speech", "SpeechError": ".chat.speech", "transcribe": ".chat.speech",
    "ChatTree": ".chat.tree",
    "Budgets": ".config", "Settings": ".config",
    "BackendError": ".errors", "ChatHaruhiError": ".errors", "EngineError": ".errors", "InputError": ".errors",
    "RoleFormatError": ".errors", "RoleNotFoundError": ".errors",
    "Role": ".roles.role", "Story": ".roles.role", "load_role_package": ".roles.role",
    "write_role_package": ".roles.role",
    "bundled_ids": ".roles.sources", "load_role": ".roles.sources",
}


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])


__all__ = [
    "AuthorsNote",
    "BackendError",
    "Budgets",
    "ChatHaruhi",
    "ChatHaruhiError",
    "ChatTree",
    "Conversation",
    "EngineError",
    "Exchange",
    "Heard",
    "InputError",
    "Persona",
    "Role",
    "RoleFormatError",
    "RoleNotFoundError",
    "Settings",
    "SpeechError",
    "Story",
    "bundled_ids",
    "load_role",
    "load_role_package",
    "read_persona",
    "transcribe",
    "write_role_package",
]
__version__ = "0.1.0"
