"""ChatHaruhi: one conversation with one character (the API of the paper's appendix).

    bot = ChatHaruhi(role_name="sunwukong", engine="script")
    bot.chat(text="你是谁？", role="唐僧")

One object is one conversation: it owns its history. Roles, stores and embedders behind it are
shared read-only caches, so creating many objects is cheap. The work is done by the conversation core
(core.py), what happens between turns (ahead.py) and the player's controls (controls.py); this class
is the paper's constructor over them, and the methods the page and the library call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..config import Budgets, Settings
from ..deprecated import renamed
from ..embedding import Embedder
from ..errors import InputError
from ..i18n import _
from ..roles.parts import role_from_parts, role_of
from ..roles.role import Role
from . import ahead, controls
from .core import ChatCore, Drawn, Seat
from .engines import Engine, EngineChoice, as_choice
from .memory import Memory, Pin
from .notes import Note
from .persona import AuthorsNote, Persona
from .prompt import Exchange, Layout
from .reply import MAX_INPUT_CHARS, Reply, ReplyStats, Streaming, check_input, ends_sentence, reply_cap

__all__ = ["MAX_INPUT_CHARS", "ChatHaruhi", "Drawn", "Reply", "ReplyStats", "Streaming", "check_input",
           "ends_sentence", "reply_cap", "role_from_parts"]


class ChatHaruhi(ChatCore):
    """A conversation: role + engine + history. Not shared between visitors.

    `engine` answers: a registered name (`engines` on the command line lists them), an Engine object, or an
    EngineChoice (the engine with its options, budgets and fold, as one value); model, base_url, api_key, budgets
    and fold_prompt beside it still work. `llm=`, the paper's name for it, works until the next release.
    """

    def __init__(  # the paper's constructor: every way a conversation was ever given, turned into the core's three
        self,
        system_prompt: str | Path | None = None,
        story_db: str | Path | None = None,
        engine: str | Engine | EngineChoice = "script",
        *,
        role_name: str | None = None,
        role: Role | None = None,
        name: str | None = None,
        user_role: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        budgets: Budgets | None = None,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        history: list[Exchange] | None = None,
        fold_prompt: bool | None = None,
        exclude_scenes: Sequence[str] = (),
        ruler: Callable[[str], int] | None = None,
        memory: Memory | None = None,
        read_ahead: bool = True,
        layout: Layout | None = None,
        persona: Persona | None = None,
        note: AuthorsNote | None = None,
        llm: str | Engine | EngineChoice | None = None,
    ):
        if llm is not None:
            renamed("ChatHaruhi(llm=...)", "ChatHaruhi(engine=...)")
            engine = llm
        choice = as_choice(engine, model=model, base_url=base_url, api_key=api_key, budgets=budgets,
                           fold_prompt=fold_prompt)
        seat = Seat(user_role, persona, note, embedder, exclude_scenes, ruler, read_ahead, layout)
        super().__init__(role or role_of(role_name, system_prompt, story_db, name), choice, memory, history or (),
                         settings=settings, seat=seat)

    # ------------------------------------------------------------ memory

    def remember(self, text: str) -> Pin:
        """Pin a fact the character keeps for the rest of the conversation ("my sister is Anna")."""
        return self.memory.remember(text, made_at=len(self.history))

    def pin(self, turn: int, which: str = "user") -> Pin:
        """Pin what was said in exchange `turn` (1-based): the visitor's message ("user") or the reply."""
        if not 1 <= turn <= len(self.history):
            raise InputError(_("There is no exchange {turn} to pin; the conversation has {count}.", turn=turn,
                                 count=len(self.history)))
        ex = self.history[turn - 1]
        said = f"{ex.user_role}: {ex.text}" if which == "user" else f"{self.role.name}: {ex.reply}"
        return self.memory.remember(said, turn, len(self.history))

    def forget(self, number: int) -> Pin:
        """Drop pinned memory `number` (1-based, as `memory.pins` lists them)."""
        return self.memory.forget(number)

    # ------------------------------------------------------------ between turns (ahead.py)

    def after_reply(self) -> threading.Thread | None:
        """Index, notes and reading ahead, in the background, after each complete reply (never failing)."""
        return ahead.after_reply(self)

    @property
    def makes_notes(self) -> bool:
        return ahead.makes_notes(self)

    def write_notes(self, limit: int = 1) -> list[Note]:
        return ahead.write_notes(self, limit)

    def index_ahead(self) -> None:
        ahead.index_ahead(self)

    def next_prompt_start(self) -> list[dict]:
        return ahead.next_prompt_start(self)

    @property
    def reads_ahead(self) -> bool:
        return ahead.reads_ahead(self)

    def read_ahead_now(self) -> threading.Thread | None:
        """Before a message is typed (a character just opened, a conversation taken up again): an engine that
        reads ahead reads how the next prompt starts now, in the background, so the message reads only its
        scenes and itself. As after each reply; a model not loaded yet is left alone. Never fails."""
        return ahead.warm(self) if self.read_ahead else None

    # ------------------------------------------------------------ the player's controls (controls.py)

    def regenerate(self) -> Streaming:
        return controls.regenerate(self)

    def swipe(self) -> Streaming:
        return controls.swipe(self)

    def keep(self, number: int, turn: int | None = None) -> Exchange:
        return controls.keep(self, number, turn)

    def flip(self, step: int = 1, turn: int | None = None) -> Exchange:
        return controls.flip(self, step, turn)

    def branch(self, at: int | None = None) -> ChatHaruhi:
        return controls.branch(self, at)

    def continue_reply(self) -> Streaming:
        return controls.continue_reply(self)

    def my_line(self) -> Streaming:
        """✍ My line: the visitor's next line written for them (in their persona's voice), never sent by itself."""
        return controls.my_line(self)

    def impersonate(self) -> Streaming:
        """The old name of `my_line` (SillyTavern's): works until the next release, and says its new name once."""
        from ..deprecated import renamed

        renamed("ChatHaruhi.impersonate()", "ChatHaruhi.my_line()")
        return self.my_line()

    def reset(self) -> None:
        self.history.clear()

    def with_budgets(self, **changes) -> ChatHaruhi:
        self.budgets = replace(self.budgets, **changes)
        return self
