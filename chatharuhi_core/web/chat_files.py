"""A chat as a file: exported with its lines of the story, imported back exactly as it was (its memory indexed in
the background when it is long)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..chat.memory import Memory, in_background
from ..chat.notes import valid_notes
from ..chat.persona import persona
from ..chat.transcript import Branch, Transcript, dump_chat, load_chat
from ..config import Settings
from ..errors import ChatHaruhiError, InputError
from ..i18n import _
from ..roles.sources import load_role
from .chat import Conversation
from .common import export_file


def _line_of(conv: Conversation) -> Branch:
    """A conversation as a line of the chat file (its exchanges, metadata and memory with its place in the tree)."""
    full = conv.copy()
    return Branch(conv.line.id, conv.line.name, conv.line.parent, conv.line.at, full.history, full.meta,
                  list(conv.memory.pins), valid_notes(conv.memory.notes, full.history))


def export_chat(conv: Conversation, user_role: str, folder: Path | None = None) -> Path:
    """The conversation, with its other lines, as a .jsonl file for download."""
    role = load_role(conv.role_id)
    name = user_role or role.visitor_name
    line = _line_of(conv)
    text = dump_chat(Transcript(conv.role_id, role.name, name, line.history, line.meta, line.pins, line.notes,
                                replace(line, history=[], meta=[], pins=[], notes=[]),
                                [_line_of(o) for o in conv.others], persona(name, conv.persona) if conv.persona
                                else None, conv.note))
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
    about = t.persona.description if t.persona else ""

    def conversation(b: Branch) -> Conversation:
        return Conversation(t.role_id, b.history, b.meta, memory=Memory(b.pins, notes=b.notes), persona=about,
                            note=t.note, line=replace(b, history=[], meta=[], pins=[], notes=[]))
    conv = conversation(replace(t.line, history=t.history, meta=t.meta, pins=t.pins, notes=t.notes))
    conv.others = [conversation(b) for b in t.branches]
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
