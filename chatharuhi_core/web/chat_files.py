"""A chat as a file: exported with its lines of the story, imported back exactly as it was (its memory indexed in
the background when it is long)."""

from __future__ import annotations

from pathlib import Path

from ..chat.conversation import from_transcript, transcript_of
from ..chat.memory import in_background
from ..chat.persona import persona
from ..chat.transcript import dump_chat, load_chat
from ..config import Settings
from ..errors import ChatHaruhiError, InputError
from ..i18n import _
from ..roles.sources import load_role
from .chat import Conversation
from .common import export_file


def export_chat(conv: Conversation, user_role: str, folder: Path | None = None) -> Path:
    """The conversation, with its other lines, as a .jsonl file for download."""
    role = load_role(conv.role_id)
    name = user_role or role.visitor_name
    text = dump_chat(transcript_of(conv, role.name, name, persona(name, conv.persona) if conv.persona else None))
    return export_file(text, f"chat-{conv.role_id}", folder)


def import_chat(path: str | Path, settings: Settings | None = None) -> tuple[Conversation, str]:
    """(conversation, the visitor's name in it) from an exported file, with its other lines; InputError with a
    sentence."""
    t = load_chat(Path(path).read_bytes())
    try:
        load_role(t.role_id)
    except ChatHaruhiError:
        raise InputError(_("This chat is with '{name}', who is not available here. Add the character in the "
                           "'Add a character' tab first, then import the chat again.",
                           name=t.role_name or t.role_id)) from None
    conv = from_transcript(t)
    index_in_background(conv, settings or Settings.from_env())
    return conv, t.user_role


def index_in_background(conv: Conversation, settings: Settings) -> None:
    """Index every exchange of a chat just imported for recall, in the background: its first message waits for
    at most memory.WAIT_S, searching the rest by words, and the Memories panel shows how far it got."""
    if len(conv.history) < 2:
        return
    from ..embedding import get_embedder

    name, history, memory = load_role(conv.role_id).name, list(conv.history), conv.memory
    in_background(lambda: memory.index_older(history, name, get_embedder(settings.embedder)),
                  "indexing an imported chat")
