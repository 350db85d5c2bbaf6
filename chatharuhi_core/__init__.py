"""ChatHaruhi: role-play chat grounded in a character's own classic scenes.

The house, by floor (every import points down; `python tools/import_graph.py` checks it):
ground (config, errors, tokens, embedding, jsonl) → roles/ (what a character is) → chat/ (one character
answering) → scene/ (group scenes) → data/ (eval, synthesis, fine-tuning, feedback) → web/ (the page's
functions) → cli. A visitor's message goes web/chat → chat/chatbot → chat/engines (the engine) and back
as one Reply record.
"""

from .chat.chatbot import ChatHaruhi
from .chat.persona import AuthorsNote, Persona, read_persona
from .chat.prompt import Exchange
from .chat.tree import ChatTree
from .config import Budgets, Settings
from .errors import BackendError, ChatHaruhiError, EngineError, InputError, RoleFormatError, RoleNotFoundError
from .roles.role import Role, Story, load_role_package, write_role_package
from .roles.sources import bundled_ids, load_role

__all__ = [
    "AuthorsNote",
    "BackendError",
    "ChatTree",
    "EngineError",
    "Budgets",
    "ChatHaruhi",
    "ChatHaruhiError",
    "Exchange",
    "InputError",
    "Persona",
    "Role",
    "RoleFormatError",
    "RoleNotFoundError",
    "Settings",
    "Story",
    "bundled_ids",
    "load_role",
    "load_role_package",
    "read_persona",
    "write_role_package",
]
__version__ = "0.1.0"
