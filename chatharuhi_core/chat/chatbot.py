"""ChatHaruhi: one conversation with one character (the API of the paper's appendix).

    bot = ChatHaruhi(role_name="sunwukong", llm="script")
    bot.chat(text="你是谁？", role="唐僧")

One object is one conversation: it owns its history. Roles, stores and embedders behind it are
shared read-only caches, so creating many objects is cheap.
"""

from __future__ import annotations

import copy
import logging
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..config import Budgets, Settings
from ..embedding import Embedder, get_embedder
from ..errors import EngineError, InputError, RoleFormatError
from ..roles.lines import format_query, main_speaker
from ..roles.lorebook import Fired, activate, lore_block
from ..roles.placeholders import fill, hold_partial
from ..roles.role import Role, Story, load_role_package, parse_stories
from ..roles.sources import load_role
from ..roles.store import Hit, open_store
from ..tokens import count_tokens
from .continuation import continue_messages, cut_mark_off, gap, impersonate_request, impersonate_system, joined
from .engines import ChatRequest, Engine, EngineChoice, as_choice, default_budgets, layout_of, registered, writes
from .engines.cpu_share import foreground
from .lanes import process_lanes
from .memory import (
    Memory,
    Pin,
    Recalled,
    RecallQuery,
    in_background,
    pinned_block,
    query_forms,
    recall_block,
    recall_query,
)
from .notes import MAX_NOTES, Note, due, notes_block, valid_notes, write_note
from .persona import AuthorsNote, Persona
from .prompt import (
    Exchange,
    Layout,
    PromptParts,
    clean_reply,
    exchange_messages,
    lay_out,
    pack_stories,
    pending_prefix,
    prompt_start,
    trim_history,
    unwrapped,
)
from .swipes import another, flipped, kept, replies_of, rewritten
from .when import day_of, now_iso

log = logging.getLogger(__name__)

MAX_INPUT_CHARS = 8000


def check_input(text: str) -> str:
    """Refuse what no model should be sent, with a sentence saying why."""
    if text is None or not str(text).strip():
        raise InputError("Please type a message first.")
    text = str(text).strip()
    if len(text) > MAX_INPUT_CHARS:
        raise InputError(
            f"That message is {len(text):,} characters long; the limit is {MAX_INPUT_CHARS:,}. "
            "Please send a shorter one."
        )
    return text


def _read_stories(story_db: str | Path) -> list[Story]:
    """A stories.jsonl file, a role package folder, or a folder of one-scene .txt files."""
    path = Path(story_db)
    if path.is_file():
        return parse_stories(path.read_text(encoding="utf-8"), path.name)
    if (path / "stories.jsonl").is_file():
        return parse_stories((path / "stories.jsonl").read_text(encoding="utf-8"))
    if path.is_dir():
        texts = sorted(path.glob("*.txt"))
        stories = [Story(p.stem, p.read_text(encoding="utf-8").strip()) for p in texts]
        stories = [s for s in stories if s.text]
        if stories:
            return stories
    raise RoleFormatError(str(path), None, "no stories.jsonl or .txt scenes found here.")


def role_from_parts(system_prompt: str | Path, story_db: str | Path, name: str | None = None) -> Role:
    """Build a Role from the paper's two ingredients: a system prompt and a story folder."""
    if (Path(story_db) / "role.json").is_file():
        return load_role_package(story_db)
    prompt_path = Path(str(system_prompt))
    prompt = (
        prompt_path.read_text(encoding="utf-8")
        if len(str(system_prompt)) < 1024 and prompt_path.is_file()
        else str(system_prompt)
    )
    stories = _read_stories(story_db)
    name = name or main_speaker((s.text for s in stories), prompt) or "Character"
    return Role(id=f"custom-{name}" if name.isascii() else "custom", name=name,
                system_prompt=prompt.strip(), stories=stories)


def _role_of(role_name: str | None, system_prompt: str | Path | None, story_db: str | Path | None,
             name: str | None) -> Role:
    """The role a conversation is given by its name, or by the paper's two ingredients."""
    if role_name:
        return load_role(role_name)
    if story_db is not None and system_prompt is not None:
        return role_from_parts(system_prompt, story_db, name)
    raise ValueError("Give role_name=..., role=..., or both system_prompt= and story_db=.")


@dataclass(frozen=True)
class ReplyStats:
    """How one reply went, for the page: which engine and model, how soon, how fast."""

    engine: str  # the engine's label
    model: str  # which model answered ("" for engines without one)
    first_token_s: float  # from the message to the first visible text (retrieval included)
    total_s: float
    tokens: int  # reply length, counted with the engine's own tokenizer when it has one
    cut_at: int = 0  # the length limit (tokens) the engine reached mid-sentence; the reply ends with "…"

    @property
    def tokens_per_s(self) -> float:
        """Generation speed after the first token (the first one carries the wait, not the pace)."""
        span = self.total_s - self.first_token_s
        return (self.tokens - 1) / span if self.tokens > 1 and span > 0 else 0.0


@dataclass(frozen=True)
class Reply:
    """One answer and how it came about, in one record: the page shows its scenes, lore and speed, the
    chat file keeps its prompt, evaluation reads what the engine said before clean-up."""

    text: str  # the line as shown: `Name:「…」` wrapper removed, names filled in
    raw: str  # what the engine said before clean-up (eval looks there for out-of-character lines)
    messages: list[dict]  # the prompt as sent
    scenes: list[Hit]  # the retrieved classic scenes, most similar first
    packed: int  # how many of `scenes` fitted the scene budget and were sent
    lore: list[Fired]  # the lorebook entries sent, and why they fired
    stats: ReplyStats
    recalled: list[Recalled] = field(default_factory=list)  # earlier exchanges memory brought back
    pinned: int = 0  # how many pinned memories fitted their budget and were sent
    notes: list[Note] = field(default_factory=list)  # dated notes on older stretches that were sent
    window: int = 0  # how many of the last exchanges were in the history window
    indexed: tuple[int, int] = (0, 0)  # (embedded, beyond the window): short of the second, recall used words alone


class Streaming(Iterator[str]):
    """A reply as it streams: iterate for its text as it arrives; `reply` is the whole record once done
    (`yield from` one returns it too). `close()` stops the engine, as a visitor leaving does."""

    def __init__(self, steps: Generator[str, None, Reply]):
        self._steps = steps
        self.reply: Reply | None = None

    def __iter__(self) -> Streaming:
        return self

    def __next__(self) -> str:
        try:
            return next(self._steps)
        except StopIteration as done:
            self.reply = done.value
            raise

    def close(self) -> None:
        self._steps.close()


@dataclass(frozen=True)
class Drawn:
    """What a turn draws from the character, whoever asks (the chat or a group scene): the classic scenes
    retrieved for it, those packed into the scene budget, and the persona (system message, post-history text
    and the lore called up)."""

    scenes: list[Hit]
    packed: list[str]
    system: str
    after: str
    lore: list[Fired]


class ChatHaruhi:
    """A conversation: role + engine + history. Not shared between visitors.

    `llm` is the engine that answers: a registered name (`engines` on the command line lists them), an Engine
    object, or an EngineChoice (the engine with its options, budgets and fold, as one value); the argument keeps
    the name the paper's API gave it, and model, base_url, api_key, budgets and fold_prompt beside it still work.
    """

    def __init__(
        self,
        system_prompt: str | Path | None = None,
        story_db: str | Path | None = None,
        llm: str | Engine | EngineChoice = "script",
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
    ):
        self.settings = settings or Settings.from_env()
        self.role = role = role or _role_of(role_name, system_prompt, story_db, name)
        # who the player plays (persona.py): their name is {{user}} unless a name is given, their description is
        # in the system message; the author's note goes `note.depth` messages from the end of every prompt
        self.player = persona
        self.note = note
        self.user_role = user_role or (persona.name if persona else "") or role.visitor_name
        self.embedder = embedder or get_embedder(self.settings.embedder)
        choice = as_choice(llm, model=model, base_url=base_url, api_key=api_key, budgets=budgets,
                           fold_prompt=fold_prompt)
        self.engine: Engine = choice.open(self.settings)
        # the engine's own budgets unless given: a small local model reads a short prompt far sooner
        self.budgets = choice.budgets or default_budgets(self.engine.name, self.settings)
        self.fold_prompt = self.settings.fold_prompt if choice.fold_prompt is None else choice.fold_prompt
        # how the engine reads a prompt (prompt.Layout): the engine's own unless given (training rows are laid out
        # as the local model reads them, without one)
        self._scenes_last = (layout or layout_of(self.engine)).scenes_last
        self.history: list[Exchange] = list(history or [])
        # scenes never to retrieve: evaluation holds the scene it asks about out of the store
        self.exclude_scenes = frozenset(exclude_scenes)
        # budgets counted with this instead of the engine's tokenizer: evaluation gives every system one ruler,
        # so each packs the same scenes and history
        self.ruler = ruler
        # pinned facts and the index of earlier exchanges (memory.py): the conversation's, like its history
        self.memory = memory if memory is not None else Memory()
        # after each reply, prepare the next turn in the background (index_ahead, _warm); off for a bot that
        # answers one message and is dropped (eval, synthesize), where that work would only slow the next case
        self.read_ahead = read_ahead
        # when each new exchange is said (ISO 8601): memory finds "what did I say yesterday" by it
        self.clock: Callable[[], str] = now_iso

    # ------------------------------------------------------------ pieces of a turn

    @property
    def store(self):
        return open_store(self.role, self.embedder, self.settings)

    def retrieve(self, text: str, vector: np.ndarray | None = None) -> list[Hit]:
        """The nearest scenes (top_k by cosine similarity), most similar first, minus excluded ones.
        `vector`: the text already embedded (a turn embeds its message once, for scenes and memory)."""
        k = self.budgets.top_k
        if k <= 0:
            return []
        vector = self.embedder.embed([text])[0] if vector is None else vector
        if not self.exclude_scenes:
            return self.store.search_vector(vector, k)
        hits = self.store.search_vector(vector, k + len(self.exclude_scenes))
        return [h for h in hits if h.id not in self.exclude_scenes][:k]

    @property
    def engine_label(self) -> str:
        info = registered(self.engine)
        return info.label if info else self.engine.name

    @property
    def model_label(self) -> str:
        label = getattr(self.engine, "model_label", None)
        return label() if label else ""

    def loading_message(self) -> str | None:
        """A sentence to show while the engine loads something heavy on first use, else None."""
        probe = getattr(self.engine, "loading_message", None)
        return probe() if probe else None

    def load(self) -> None:
        """Load what the engine needs (a local model) now; instant once it is loaded."""
        loader = getattr(self.engine, "load", None)
        if loader:
            loader()

    def open_scenes(self) -> None:
        """Load the embedder and open the role's scene store now: their first use costs about half a second on
        2 cores, which a first message would otherwise wait for (the app does it for every role at start)."""
        if self.budgets.top_k > 0:
            _ = self.store
            self.embedder.embed([self.role.name])

    def count_tokens(self, text: str) -> int:
        """The ruler given, else the engine's own tokenizer when it has one (a local model), else cl100k_base."""
        if self.ruler is not None:
            return self.ruler(text)
        counter = getattr(self.engine, "count_tokens", None)
        return counter(text) if counter else count_tokens(text)

    def fill(self, text: str, user_role: str | None = None) -> str:
        """`{{user}}` as the visitor's name in the story, `{{char}}` as the character's."""
        return fill(text, self.role.name, user_role or self.user_role)

    def scenes_for(self, query: str, user_role: str, vector: np.ndarray | None = None) -> list[Hit]:
        """The retrieved scenes with their placeholders filled, as they are sent and shown."""
        return [replace(h, text=self.fill(h.text, user_role)) for h in self.retrieve(query, vector)]

    def persona(self, user_role: str, conversation: Sequence[str]) -> tuple[str, str, list[Fired]]:
        """(system message, post-history text, lore) for this turn: the system prompt with the lorebook
        entries the conversation's last messages call up, names filled in."""
        lore = activate(self.role.lorebook, conversation, self.count_tokens)
        system = self.fill(self.role.system_prompt, user_role)
        notes = lore_block(lore, lambda t: self.fill(t, user_role))
        player = self._about_player(user_role)
        pinned = pinned_block(self.role.name, self.pinned())
        after = self.fill(self.role.post_history_instructions, user_role)
        return "\n\n".join(part for part in (system, notes, player, pinned) if part), after, lore

    def _about_player(self, user_role: str) -> str:
        """The persona's description as the system message carries it ("" without one)."""
        return self.fill(self.player.block(self.role.language), user_role) if self.player else ""

    # ------------------------------------------------------------ memory

    def pinned(self) -> list[Pin]:
        """The pinned memories that fit their budget (all, unless the visitor pinned more than it holds)."""
        return self.memory.pinned(self.budgets.memory_tokens, self.count_tokens)

    def remember(self, text: str) -> Pin:
        """Pin a fact the character keeps for the rest of the conversation ("my sister is Anna")."""
        return self.memory.remember(text, made_at=len(self.history))

    def pin(self, turn: int, which: str = "user") -> Pin:
        """Pin what was said in exchange `turn` (1-based): the visitor's message ("user") or the reply."""
        if not 1 <= turn <= len(self.history):
            raise InputError(f"There is no exchange {turn} to pin; the conversation has {len(self.history)}.")
        ex = self.history[turn - 1]
        said = f"{ex.user_role}: {ex.text}" if which == "user" else f"{self.role.name}: {ex.reply}"
        return self.memory.remember(said, turn, len(self.history))

    def forget(self, number: int) -> Pin:
        """Drop pinned memory `number` (1-based, as `memory.pins` lists them)."""
        return self.memory.forget(number)

    def _in_window(self) -> int:
        return len(trim_history(self.history, self.role.name, self.budgets.history_tokens, self.count_tokens))

    def _visitor(self, user_role: str) -> list[str]:
        """Every name the visitor used in this conversation, this message's first."""
        return list(dict.fromkeys([user_role, *(ex.user_role for ex in self.history)]))

    def recall_query(self, text: str, vectors: np.ndarray | None, user_role: str, now: str) -> RecallQuery:
        """How memory is asked for this message (memory.recall_query): the visitor by every name they used in
        this conversation, the character by its name, the days counted from `now`. `vectors`: the message's
        (and its forms', when already embedded)."""
        return recall_query(text, vectors, self.embedder, self._visitor(user_role), self.role.name,
                            today=day_of(now))

    def _remembered(self, text: str, vectors: np.ndarray | None, user_role: str, now: str,
                    in_window: int) -> tuple[list[Recalled], list[Note], str]:
        """The notes and the earlier exchanges this message brings up, beyond the last `in_window` exchanges:
        notes first, within their share of the recall budget, then exchanges in what is left; and the notes as
        the prompt writes them."""
        if len(self.history) <= in_window:
            return [], [], ""
        query = self.recall_query(text, vectors, user_role, now)
        b = self.budgets
        notes = self.memory.recall_notes(self.history, query, self.embedder, min(b.note_tokens, b.recall_tokens),
                                         self.count_tokens)
        written = notes_block(notes, self.history)
        left = b.recall_tokens - (self.count_tokens(written) if written else 0)
        recalled = self.memory.recall(self.history, in_window, self.role.name, query, self.embedder, left,
                                      b.recall_k, self.count_tokens)
        return recalled, notes, written

    @property
    def makes_notes(self) -> bool:
        """Whether this conversation gets dated notes: an engine that writes, and budgets with room for them."""
        return self.budgets.note_tokens > 0 and self.budgets.recall_tokens > 0 and writes(self.engine)

    def write_notes(self, limit: int = 1) -> list[Note]:
        """Write the notes still due (notes.due: a whole stretch out of the history window with none), at most
        `limit`, with this conversation's engine; notes whose exchanges were edited or deleted are dropped first.
        Called after a reply, in the background (never in a visitor's turn); returns the notes written."""
        if not self.makes_notes or process_lanes().for_engine(self.engine) is not None:
            return []  # an engine that answers one visitor at a time (a one-slot server) is kept for replies
        self.memory.notes[:] = valid_notes(self.memory.notes, self.history)
        older = self.history[:len(self.history) - self._in_window()]
        label = " · ".join(p for p in (self.engine_label, self.model_label) if p)

        def ask(messages: list[dict]):
            return self.engine.stream(ChatRequest(messages=messages, role=self.role, user_role=self.user_role,
                                                  text="", embedder=self.embedder, plain=True))
        made: list[Note] = []
        while len(made) < limit and (stretch := due(self.memory.notes, older)):
            note = write_note(ask, stretch, self.role.name, stretch[-1].user_role or self.user_role,
                              self.role.language, label)
            if len(self.memory.notes) < MAX_NOTES:
                self.memory.notes.append(note)
            made.append(note)
        return made

    def index_ahead(self) -> None:
        """Embed the exchanges that have left the history window now, after a reply, while the visitor types:
        the next message's recall is then a matrix product (else its `prepare` embeds them)."""
        if self.budgets.recall_tokens <= 0:
            return
        in_window = self._in_window()
        if len(self.history) > in_window:
            self.memory.index_older(self.history[:len(self.history) - in_window], self.role.name, self.embedder)

    def _ahead(self) -> None:
        """After a complete reply: the next turn's work that needs no message, in the background, never failing."""
        in_background(self.index_ahead, "indexing the conversation")
        if self.makes_notes:
            in_background(self.write_notes, "writing a note")
        self._warm()

    @property
    def scenes_last(self) -> bool:
        """Whether the scenes come after the history (prompt.Layout): the local model's layout, which reads
        the next turn's start while the visitor types."""
        return self._scenes_last

    @property
    def layout(self) -> Layout:
        return Layout(scenes_last=self._scenes_last, fold=bool(self.fold_prompt))

    def next_prompt_start(self) -> list[dict]:
        """How the next turn's messages begin when the scenes come last: the system prompt (lore called up
        by the conversation so far), the history within its budget and the post-history text."""
        user_role = self.history[-1].user_role if self.history else self.user_role
        system, after, _ = self.persona(user_role, [t for ex in self.history for t in (ex.text, ex.reply)])
        return prompt_start(PromptParts(system, self._history_part(), after))

    def _history_part(self) -> list[dict]:
        return exchange_messages(self.history, self.role.name, self.budgets.history_tokens, self.count_tokens)

    @property
    def reads_ahead(self) -> bool:
        """Whether the engine reads a prompt's start ahead of the message (the local model, scenes last)."""
        return getattr(self.engine, "warm", None) is not None and self.scenes_last and not self.fold_prompt

    def _warm(self) -> threading.Thread | None:
        """Hand the next turn's start to an engine that reads it ahead (`warm`; it returns the reading thread);
        this never fails a turn."""
        if not self.reads_ahead:
            return None
        try:
            return self.engine.warm(self.next_prompt_start())
        except Exception as exc:  # only the time it would have saved is lost
            log.info("reading the next turn ahead failed: %r", exc)
            return None

    def read_ahead_now(self) -> threading.Thread | None:
        """Before a message is typed (a character just opened, a conversation taken up again): an engine that
        reads ahead reads how the next prompt starts now, in the background, so the message reads only its
        scenes and itself. As after each reply; a model not loaded yet is left alone. Never fails."""
        return self._warm() if self.read_ahead else None

    # ------------------------------------------------------------ one turn's prompt (the chat's and a group scene's)

    def embed_turn(self, texts: Sequence[str], remembering: bool) -> np.ndarray | None:
        """One embedding call per turn: the text the scenes are retrieved for first, then the other texts memory
        asks with; None when neither scenes nor memory need it."""
        return self.embedder.embed(list(texts)) if self.budgets.top_k > 0 or remembering else None

    def draw(self, query: str, vectors: np.ndarray | None, user_role: str, said: Sequence[str]) -> Drawn:
        """The classic scenes for `query` (its vector: the first of `vectors`), packed to their budget, and the
        persona for this turn (the lore that `said`, the conversation's last messages, calls up)."""
        scenes = self.scenes_for(query, user_role, vectors[0] if vectors is not None else None)
        packed = pack_stories([h.text for h in scenes], self.budgets.story_tokens, self.count_tokens)
        system, after, lore = self.persona(user_role, said)
        return Drawn(scenes, packed, system, after, lore)

    def prepare(self, text: str, role: str | None = None, avoid: Sequence[str] = ()) -> ChatRequest:
        """The request for one message: embed once, draw scenes and persona, recall memory, lay out (prompt.py).
        Marked as a visitor's short work, which the local model's threads make room for (cpu_share.py)."""
        with foreground():
            return self._prepare(text, role, avoid)

    def _prepare(self, text: str, role: str | None, avoid: Sequence[str]) -> ChatRequest:
        text = check_input(text)
        user_role = (role or self.user_role).strip() or self.role.visitor_name
        remembering = self.budgets.recall_tokens > 0 and len(self.history) > 1
        # one embedding call: the message (scenes and memory) and the forms memory also asks with
        forms = [text, *query_forms(text, self._visitor(user_role), self.role.name)] if remembering else [text]
        vectors = self.embed_turn(forms, remembering)
        drawn = self.draw(text, vectors, user_role, [t for ex in self.history for t in (ex.text, ex.reply)] + [text])
        in_window = self._in_window()
        recalled, notes, written = (self._remembered(text, vectors, user_role, self.clock(), in_window)
                                    if remembering else ([], [], ""))
        memory = "\n\n".join(b for b in (written, recall_block(recalled)) if b)
        note = self.fill(self.note.text, user_role) if self.note else ""
        parts = PromptParts(drawn.system, self._history_part(), drawn.after, drawn.packed, memory,
                            format_query(user_role, text), note, self.note.depth if self.note else 0)
        return ChatRequest(messages=lay_out(parts, self.layout), role=self.role, user_role=user_role, text=text,
                           scenes=drawn.scenes, history=list(self.history), embedder=self.embedder,
                           avoid=tuple(avoid), packed=len(drawn.packed), lore=drawn.lore, recalled=recalled,
                           pinned=len(self.pinned()), notes=notes, window=in_window,
                           indexed=self.memory.index.progress() if remembering else (0, 0))

    # ------------------------------------------------------------ the API

    def stream(self, text: str, role: str | None = None, avoid: Sequence[str] = ()) -> Streaming:
        """The reply as it arrives (iterate); the exchange joins the history only when complete, and the
        stream's `reply` holds its record.

        Raises InputError for unusable input and EngineError when the model fails; in both
        cases the history is left as it was.
        """
        return Streaming(self._turn(text, role, avoid))

    def _turn(self, text: str, role: str | None, avoid: Sequence[str]) -> Generator[str, None, Reply]:
        self.load()  # a model loading on first use is not part of the reply's timing
        started = time.perf_counter()
        request = self.prepare(text, role, avoid)
        reply = yield from self.respond(request, started)
        self.history.append(Exchange(request.user_role, request.text, reply.text, self.clock()))
        if self.read_ahead:
            self._ahead()
        return reply

    def respond(self, request: ChatRequest, started: float | None = None,
                speaker: str | None = None) -> Generator[str, None, Reply]:
        """Stream the character's line for a prepared request and return its Reply; no history change.

        A scene with several characters prepares its own requests and calls this, so both paths
        share the clean-up of the `Name:「…」` wrapper and the timing. `speaker`: whose line it is when not the
        character's (impersonate writes the visitor's).
        """
        self.load()
        started = started or time.perf_counter()
        first: float | None = None
        name = speaker or self.role.name
        raw, shown = "", ""
        for delta in self.engine.stream(request):
            raw += delta
            if pending_prefix(raw, name):
                continue
            now = self.fill(hold_partial(_visible(raw, name)), request.user_name)
            if now.startswith(shown) and len(now) > len(shown):
                first = first or time.perf_counter()
                yield now[len(shown):]
                shown = now
        final = self.fill(clean_reply(raw, name), request.user_name)
        cap = reply_cap(self.engine)
        cut = bool(cap) and not request.plain and not ends_sentence(final) and self.count_tokens(raw) >= cap - 2
        if cut:  # the engine stopped at its length limit mid-sentence: marked as cut, what was shown kept
            final = final.rstrip(" ,，、;；:：-—") + "…"
        if not final:
            raise EngineError("The model returned an empty reply. Try again, or pick another model.")
        if final.startswith(shown) and len(final) > len(shown):
            first = first or time.perf_counter()
            yield final[len(shown):]
        end = time.perf_counter()
        stats = ReplyStats(self.engine_label, self.model_label, (first or end) - started, end - started,
                           self.count_tokens(final), cap if cut else 0)
        return Reply(final, raw, request.messages, request.scenes, request.packed, request.lore, stats,
                     request.recalled, request.pinned, request.notes, request.window, request.indexed)

    def answer(self, text: str, role: str | None = None) -> Reply:
        """Answer one message and return its whole record."""
        streaming = self.stream(text, role)
        for _ in streaming:
            pass
        assert streaming.reply is not None
        return streaming.reply

    def chat(self, text: str, role: str | None = None) -> str:
        """Answer one message and return the whole reply (the paper's API)."""
        return self.answer(text, role).text

    def regenerate(self) -> Streaming:
        """Drop the last exchange and answer the same message again."""
        if not self.history:
            raise InputError("There is no reply to regenerate yet.")
        return Streaming(self._again(self.history.pop()))

    def _again(self, last: Exchange) -> Generator[str, None, Reply]:
        try:
            return (yield from self._turn(last.text, last.user_role, [last.reply]))
        except Exception:
            self.history.append(last)
            raise

    # ------------------------------------------------------------ the player's controls

    def swipe(self) -> Streaming:
        """Another reply to the last message, kept beside the ones before it (swipes.py): the new one is kept, and
        `keep` or `flip` brings back any other."""
        if not self.history:
            raise InputError("There is no reply to swipe yet.")
        last = self.history[-1]
        return Streaming(self._swipe(last))

    def _swipe(self, last: Exchange) -> Generator[str, None, Reply]:
        self.history.pop()
        try:  # every reply the message has had is avoided, so a quoting engine goes through all its candidates
            reply = yield from self._turn(last.text, last.user_role, replies_of(last))
        except BaseException:  # failed, or closed mid-stream: the exchange stays as it was
            self.history.append(last)
            raise
        self.history[-1] = another(last, self.history[-1])
        return reply

    def keep(self, number: int, turn: int | None = None) -> Exchange:
        """Keep alternative `number` (1-based) of exchange `turn` (1-based; the last by default): the
        conversation goes on from it."""
        k = self._turn_index(turn)
        self.history[k] = kept(self.history[k], number)
        return self.history[k]

    def flip(self, step: int = 1, turn: int | None = None) -> Exchange:
        """Keep the next (`step` 1) or previous (-1) alternative of exchange `turn` (the last by default)."""
        k = self._turn_index(turn)
        self.history[k] = flipped(self.history[k], step)
        return self.history[k]

    def _turn_index(self, turn: int | None) -> int:
        if not self.history:
            raise InputError("There is no reply yet.")
        turn = len(self.history) if turn is None else turn
        if not 1 <= turn <= len(self.history):
            raise InputError(f"There is no exchange {turn}; the conversation has {len(self.history)}.")
        return turn - 1

    def branch(self, at: int | None = None) -> ChatHaruhi:
        """A new conversation that shares the first `at` exchanges (all by default) and goes its own way from
        there; its memory keeps what belongs to those exchanges (Memory.branched). This one is left as it is."""
        at = len(self.history) if at is None else at
        if not 0 <= at <= len(self.history):
            raise InputError(f"A branch starts after one of the {len(self.history)} exchanges, not after {at}.")
        other = copy.copy(self)
        other.history = list(self.history[:at])
        other.memory = self.memory.branched(other.history)
        return other

    def continue_reply(self) -> Streaming:
        """The last reply goes on from where it stopped (a model asked to continue it; the offline engine quotes
        the next line of the same scene). Iterating gives what is added; `reply.text` is the whole reply."""
        if not self.history:
            raise InputError("There is no reply to continue yet.")
        return Streaming(self._continue(self.history[-1]))

    def _continue(self, last: Exchange) -> Generator[str, None, Reply]:
        self.load()
        started = time.perf_counter()
        self.history.pop()
        try:
            request = self.prepare(last.text, last.user_role)
        finally:
            self.history.append(last)
        so_far = cut_mark_off(last.reply)
        messages = continue_messages(request.messages, self.role.name, so_far, self.role.language, self.layout.fold)
        request = replace(request, messages=messages, task="continue", continuing=so_far)
        last = rewritten(last, so_far)
        steps, first = self.respond(request, started), True
        try:
            while True:
                piece = next(steps)
                if first:  # a Latin continuation starts after a space (continuation.gap)
                    bare = piece.lstrip()
                    piece, first = gap(last.reply, bare) + bare, not bare
                yield piece
        except StopIteration as done:
            more: Reply = done.value
        whole = joined(last.reply, more.text)
        self.history[-1] = rewritten(last, whole)
        return replace(more, text=whole)

    def impersonate(self) -> Streaming:
        """The visitor's next line written for them, in their persona, for them to edit and send: nothing joins
        the history. The offline engine quotes a line of the visitor's role from the scenes, or says it cannot."""
        return Streaming(self._impersonate())

    def _impersonate(self) -> Generator[str, None, Reply]:
        self.load()
        started = time.perf_counter()
        user = self.user_role
        last = self.history[-1].reply if self.history else self.fill(self.role.fitting_greeting(user) or "")
        query = last or self.role.name
        vectors = self.embed_turn([query], False)
        drawn = self.draw(query, vectors, user, [t for ex in self.history for t in (ex.text, ex.reply)])
        system = impersonate_system(self.role.name, user, self._about_player(user), self.role.language)
        parts = PromptParts(system, self._history_part(), "", drawn.packed,
                            message=impersonate_request(user, self.role.language))
        request = ChatRequest(messages=lay_out(parts, self.layout), role=self.role, user_role=user, text=query,
                              scenes=drawn.scenes, history=list(self.history), embedder=self.embedder,
                              packed=len(drawn.packed), task="impersonate")
        line = yield from self.respond(request, started, speaker=user)
        return replace(line, text=unwrapped(line.text))

    def reset(self) -> None:
        self.history.clear()

    def with_budgets(self, **changes) -> ChatHaruhi:
        self.budgets = replace(self.budgets, **changes)
        return self


def _visible(raw: str, name: str) -> str:
    """What may be shown mid-stream: clean text minus a tail that may yet become a new speaker."""
    text = clean_reply(raw, name)
    cut = text.rfind("\n")
    if cut >= 0 and len(text) - cut <= 25 and "「" not in text[cut:]:
        text = text[:cut]
    return text.rstrip("」").rstrip()


_SENTENCE_END = re.compile(r"[.!?。！？…~～](?:[」』”’\"')\]）]*)")


def ends_sentence(text: str) -> bool:
    """Whether a reply ends as a sentence does (a full stop, a question or exclamation mark, an ellipsis)."""
    return bool(re.search(_SENTENCE_END.pattern + r"\s*$", text.strip())) or text.rstrip().endswith(("」", "*"))


def reply_cap(engine) -> int:
    """The longest reply the engine writes, in its own tokens (0: no limit, as for the script engine)."""
    own = getattr(engine, "reply_cap", None)
    if callable(own):
        return int(own() or 0)
    if not writes(engine):
        return 0
    options = getattr(engine, "options", None)
    return int(getattr(options, "max_tokens", 0) or 0)
