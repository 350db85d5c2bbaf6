"""ChatHaruhi: role-play chat grounded in a character's own classic scenes."""

from .chat.chatbot import ChatHaruhi
from .chat.prompt import Exchange
from .config import Budgets, Settings
from .errors import BackendError, ChatHaruhiError, InputError, RoleFormatError, RoleNotFoundError
from .roles.role import Role, Story, load_role_package, write_role_package
from .roles.sources import bundled_ids, load_role

__all__ = [
    "BackendError",
    "Budgets",
    "ChatHaruhi",
    "ChatHaruhiError",
    "Exchange",
    "InputError",
    "Role",
    "RoleFormatError",
    "RoleNotFoundError",
    "Settings",
    "Story",
    "bundled_ids",
    "load_role",
    "load_role_package",
    "write_role_package",
]
__version__ = "0.1.0"
