"""Between turns: what a conversation does after a reply, while the visitor reads and types, that needs no message:
embed the exchanges that left the history window, write the dated notes due, and hand an engine that reads ahead
(the local model, scenes last) how the next prompt starts. None of it ever fails a turn."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from .engines import ChatRequest, writes
from .lanes import process_lanes
from .memory import in_background
from .notes import MAX_NOTES, Note, due, valid_notes, write_note
from .prompt import PromptParts, prompt_start

if TYPE_CHECKING:
    from .core import ChatCore

log = logging.getLogger(__name__)


def after_reply(conv: ChatCore) -> threading.Thread | None:
    """After a complete reply: index, notes and reading ahead, in the background, never failing."""
    in_background(lambda: index_ahead(conv), "indexing the conversation")
    if makes_notes(conv):
        in_background(lambda: write_notes(conv), "writing a note")
    return warm(conv)


def index_ahead(conv: ChatCore) -> None:
    """Embed the exchanges that have left the history window now, after a reply, while the visitor types:
    the next message's recall is then a matrix product (else its `prepare` embeds them)."""
    if conv.budgets.recall_tokens <= 0:
        return
    in_window = conv.in_window()
    if len(conv.history) > in_window:
        conv.memory.index_older(conv.history[:len(conv.history) - in_window], conv.role.name, conv.embedder,
                                conv.memory_embedder)


def makes_notes(conv: ChatCore) -> bool:
    """Whether this conversation gets dated notes: an engine that writes, and budgets with room for them."""
    return conv.budgets.note_tokens > 0 and conv.budgets.recall_tokens > 0 and writes(conv.engine)


def write_notes(conv: ChatCore, limit: int = 1) -> list[Note]:
    """Write the notes still due (notes.due: a whole stretch out of the history window with none), at most
    `limit`, with the conversation's engine; notes whose exchanges were edited or deleted are dropped first.
    Called after a reply, in the background (never in a visitor's turn); returns the notes written."""
    if not makes_notes(conv) or process_lanes().for_engine(conv.engine) is not None:
        return []  # an engine that answers one visitor at a time (a one-slot server) is kept for replies
    memory = conv.memory
    memory.notes[:] = valid_notes(memory.notes, conv.history)
    older = conv.history[:len(conv.history) - conv.in_window()]
    label = " · ".join(p for p in (conv.engine_label, conv.model_label) if p)

    def ask(messages: list[dict]):
        return conv.engine.stream(ChatRequest(messages=messages, role=conv.role, user_role=conv.user_role,
                                              text="", embedder=conv.embedder, plain=True))
    made: list[Note] = []
    while len(made) < limit and (stretch := due(memory.notes, older)):
        note = write_note(ask, stretch, conv.role.name, stretch[-1].user_role or conv.user_role,
                          conv.role.language, label)
        if len(memory.notes) < MAX_NOTES:
            memory.notes.append(note)
        made.append(note)
    return made


def next_prompt_start(conv: ChatCore) -> list[dict]:
    """How the next turn's messages begin when the scenes come last: the system prompt (lore called up
    by the conversation so far), the history within its budget and the post-history text."""
    user_role = conv.history[-1].user_role if conv.history else conv.user_role
    system, after, _ = conv.system_message(user_role, [t for ex in conv.history for t in (ex.text, ex.reply)])
    return prompt_start(PromptParts(system, conv.history_part(), after))


def reads_ahead(conv: ChatCore) -> bool:
    """Whether the engine reads a prompt's start ahead of the message (the local model, scenes last)."""
    return getattr(conv.engine, "warm", None) is not None and conv.scenes_last and not conv.fold_prompt


def warm(conv: ChatCore) -> threading.Thread | None:
    """Hand the next turn's start to an engine that reads it ahead (`warm`; it returns the reading thread);
    this never fails a turn."""
    if not reads_ahead(conv):
        return None
    try:
        return conv.engine.warm(next_prompt_start(conv))
    except Exception as exc:  # only the time it would have saved is lost
        log.info("reading the next turn ahead failed: %r", exc)
        return None
