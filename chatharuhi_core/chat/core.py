"""The conversation core: one character (a role), the engine chosen for it (an EngineChoice) and its memory; it
draws a turn's scenes and persona, lays out the prompt and streams the reply. The chat (chatbot.ChatHaruhi, the
paper's API) and every member of a group scene are built on it; what happens between turns is in ahead.py, the
player's controls (another reply, continue, ✍ my line, branches) in controls.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..config import Budgets, Settings
from ..embedding import Embedder, get_embedder, memory_embedder
from ..errors import EmptyReply, Stopped
from ..i18n import _
from ..roles.card_extras import DepthNote, character_note, regex_scripts, scripted
from ..roles.lines import format_query
from ..roles.lorebook import Fired, activate, lore_block
from ..roles.placeholders import fill, hold_partial
from ..roles.regex_scripts import AI_OUTPUT, PROMPT, STORED, USER_INPUT
from ..roles.role import Role
from ..roles.store import Hit, open_store
from ..tokens import count_tokens
from .conversation import Conversation
from .engines import ChatRequest, Engine, EngineChoice, default_budgets, layout_of, registered
from .engines.cpu_share import foreground
from .memory import Ask, Memory, Pin, Recalled, ask_deep, pinned_block, query_forms, recall_block, recall_query
from .notes import Note, notes_block
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
    trim_history,
)
from .reply import Reply, ReplyStats, Streaming, check_input, ends_sentence, reply_cap, visible
from .when import day_of, now_iso


@dataclass(frozen=True)
class Seat:
    """Who sits across from the character and how the conversation runs, beside its role, engine and memory.

    user_role: the visitor's name ({{user}}; the persona's name, else the role's visitor name); persona: who the
    visitor plays (its description goes in the system message); note: the author's note, `note.depth` messages
    from the end; embedder: the one the app loaded (else the settings'); exclude_scenes: scenes never retrieved
    (eval holds out the scene it asks about); ruler: a token counter every system in an eval shares; read_ahead:
    prepare the next turn after each reply (off for a bot that answers once); layout: how the prompt is laid out
    (the engine's own unless given)."""

    user_role: str | None = None
    persona: Persona | None = None
    note: AuthorsNote | None = None
    embedder: Embedder | None = None
    exclude_scenes: Sequence[str] = ()
    ruler: Callable[[str], int] | None = None
    read_ahead: bool = True
    layout: Layout | None = None


@dataclass(frozen=True)
class Drawn:
    """What a turn draws from the character, whoever asks (the chat or a group scene): the classic scenes
    retrieved for it, those packed into the scene budget, and the system message (with the post-history text
    and the lore called up)."""

    scenes: list[Hit]
    packed: list[str]
    system: str
    after: str
    lore: list[Fired]


class ChatCore:
    """A role and an engine choice answering on a Conversation (conversation.py), which holds the history and the
    memory: the core keeps none of its own, so the library, the command line, the page and the tools share one
    conversation value. Not shared between visitors."""

    def __init__(self, role: Role, choice: EngineChoice, memory: Memory | None = None,
                 history: Sequence[Exchange] = (), *, settings: Settings | None = None, seat: Seat | None = None):
        seat = seat or Seat()
        self.settings = settings or Settings.from_env()
        self.role = role
        self.player = seat.persona
        self.user_role = seat.user_role or (seat.persona.name if seat.persona else "") or role.visitor_name
        self.embedder = seat.embedder or get_embedder(self.settings.embedder)
        # memory searches a long chat by this one's meaning too (None: the role's embedder and words alone)
        self.memory_embedder: Embedder | None = memory_embedder(self.settings.memory_embedder)
        self.engine: Engine = choice.open(self.settings)
        # the engine's own budgets unless given: a small local model reads a short prompt far sooner
        self.budgets: Budgets = choice.budgets or default_budgets(self.engine.name, self.settings)
        self.fold_prompt = self.settings.fold_prompt if choice.fold_prompt is None else choice.fold_prompt
        # training rows are laid out as the local model reads them, without one: hence a layout may be given
        self._scenes_last = (seat.layout or layout_of(self.engine)).scenes_last
        # the conversation it answers on (conversation.py): its history and memory are that value's, not its own
        self.conversation = Conversation(role.id, list(history), memory=memory if memory is not None else Memory(),
                                         note=seat.note)
        self.exclude_scenes = frozenset(seat.exclude_scenes)
        self.ruler = seat.ruler
        self.read_ahead = seat.read_ahead
        # when each new exchange is said (ISO 8601): memory finds "what did I say yesterday" by it
        self.clock: Callable[[], str] = now_iso
        # set by another thread (the page's ■ Stop): the reply streaming ends with what it has written so far
        self.halt = threading.Event()

    # ------------------------------------------------------------ the conversation it answers on

    @property
    def history(self) -> list[Exchange]:
        return self.conversation.history

    @history.setter
    def history(self, exchanges: list[Exchange]) -> None:
        self.conversation.history = exchanges

    @property
    def memory(self) -> Memory:
        return self.conversation.memory

    @memory.setter
    def memory(self, memory: Memory) -> None:
        self.conversation.memory = memory

    @property
    def note(self) -> AuthorsNote | None:
        """The author's note of the line in use."""
        return self.conversation.note

    @note.setter
    def note(self, note: AuthorsNote | None) -> None:
        self.conversation.note = note

    # ------------------------------------------------------------ the engine and the store

    @property
    def store(self):
        return open_store(self.role, self.embedder, self.settings)

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
            _unused = self.store
            self.embedder.embed([self.role.name])

    def count_tokens(self, text: str) -> int:
        """The ruler given, else the engine's own tokenizer when it has one (a local model), else cl100k_base."""
        if self.ruler is not None:
            return self.ruler(text)
        counter = getattr(self.engine, "count_tokens", None)
        return counter(text) if counter else count_tokens(text)

    @property
    def scenes_last(self) -> bool:
        """Whether the scenes come after the history (prompt.Layout): the local model's layout, which reads
        the next turn's start while the visitor types."""
        return self._scenes_last

    @property
    def layout(self) -> Layout:
        return Layout(scenes_last=self._scenes_last, fold=bool(self.fold_prompt))

    # ------------------------------------------------------------ what a turn draws

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

    def fill(self, text: str, user_role: str | None = None) -> str:
        """`{{user}}` as the visitor's name in the story, `{{char}}` as the character's."""
        return fill(text, self.role.name, user_role or self.user_role)

    def system_message(self, user_role: str, conversation: Sequence[str]) -> tuple[str, str, list[Fired]]:
        """(system message, post-history text, lore) for this turn: the system prompt with the lorebook
        entries the conversation's last messages call up, names filled in."""
        lore = activate(self.role.lorebook, conversation, self.count_tokens)
        system = self.fill(self.role.system_prompt, user_role)
        notes = lore_block(lore, lambda t: self.fill(t, user_role))
        player = self.about_player(user_role)
        pinned = pinned_block(self.role.name, self.pinned())
        after = self.fill(self.role.post_history_instructions, user_role)
        return "\n\n".join(part for part in (system, notes, player, pinned) if part), after, lore

    def character_note(self, user_role: str) -> DepthNote | None:
        """The card's character's note for this turn, names filled in (None without one)."""
        note = character_note(self.role)
        return replace(note, text=self.fill(note.text, user_role)) if note else None

    def about_player(self, user_role: str) -> str:
        """The visitor's persona (whom they play) as the system message carries it ("" without one)."""
        return self.fill(self.player.block(self.role.language), user_role) if self.player else ""

    def pinned(self) -> list[Pin]:
        """The pinned memories that fit their budget (all, unless the visitor pinned more than it holds)."""
        return self.memory.pinned(self.budgets.memory_tokens, self.count_tokens)

    def in_window(self) -> int:
        """How many of the last exchanges the history window holds."""
        return len(trim_history(self.history, self.role.name, self.budgets.history_tokens, self.count_tokens))

    def history_part(self) -> list[dict]:
        return exchange_messages(self.prompt_history(), self.role.name, self.budgets.history_tokens,
                                 self.count_tokens)

    def prompt_history(self) -> list[Exchange]:
        """The history as the prompt reads it: with a card's prompt-only regex scripts applied by each message's
        depth (the message answered is 0, the last reply 1); the history itself when the card has none."""
        if not regex_scripts(self.role):
            return self.history
        n = len(self.history)
        return [replace(ex, text=scripted(self.role, ex.text, PROMPT, USER_INPUT, 2 * (n - i), ex.user_role),
                        reply=scripted(self.role, ex.reply, PROMPT, AI_OUTPUT, 2 * (n - i) - 1, ex.user_role))
                for i, ex in enumerate(self.history)]

    def embed_turn(self, texts: Sequence[str], remembering: bool) -> np.ndarray | None:
        """One embedding call per turn: the text the scenes are retrieved for first, then the other texts memory
        asks with; None when neither scenes nor memory need it."""
        return self.embedder.embed(list(texts)) if self.budgets.top_k > 0 or remembering else None

    def draw(self, query: str, vectors: np.ndarray | None, user_role: str, said: Sequence[str]) -> Drawn:
        """The classic scenes for `query` (its vector: the first of `vectors`), names filled in, packed to their
        budget, and the system message for this turn (the lore that `said`, the conversation's last messages, calls
        up)."""
        vector = vectors[0] if vectors is not None else None
        scenes = [replace(h, text=self.fill(h.text, user_role)) for h in self.retrieve(query, vector)]
        packed = pack_stories([h.text for h in scenes], self.budgets.story_tokens, self.count_tokens)
        system, after, lore = self.system_message(user_role, said)
        return Drawn(scenes, packed, system, after, lore)

    def visitor_names(self, user_role: str) -> list[str]:
        """Every name the visitor used in this conversation, this message's first."""
        return list(dict.fromkeys([user_role, *(ex.user_role for ex in self.history)]))

    def remembered(self, text: str, vectors: np.ndarray | None, user_role: str, in_window: int,
                   deep: Callable[[], np.ndarray | None] | None = None) -> tuple[list[Recalled], list[Note], str]:
        """The notes and the earlier exchanges this message brings up, beyond the last `in_window` exchanges:
        notes first, within their share of the recall budget, then exchanges in what is left; and the notes as
        the prompt writes them. Memory is asked for the visitor by every name they used, the days counted from
        now (memory.recall_query); `deep`: the message by the memory embedder, embedded meanwhile (ask_deep)."""
        if len(self.history) <= in_window:
            return [], [], ""
        query = recall_query(text, vectors, self.embedder, self.visitor_names(user_role), self.role.name,
                             today=day_of(self.clock()))
        query = replace(query, deep=deep() if deep and vectors is not None else None)
        b = self.budgets
        notes = self.memory.recall_notes(self.history, query, self.embedder, min(b.note_tokens, b.recall_tokens),
                                         self.count_tokens)
        written = notes_block(notes, self.history)
        left = b.recall_tokens - (self.count_tokens(written) if written else 0)
        ask = Ask(query, self.embedder, left, b.recall_k, self.count_tokens, deep=self.memory_embedder)
        return self.memory.recall(self.history, in_window, self.role.name, ask), notes, written

    # ------------------------------------------------------------ one turn

    def prepare(self, text: str, role: str | None = None, avoid: Sequence[str] = ()) -> ChatRequest:
        """The request for one message: embed once, draw scenes and persona, recall memory, lay out (prompt.py).
        Marked as a visitor's short work, which the local model's threads make room for (cpu_share.py)."""
        with foreground():
            return self._prepare(text, role, avoid)

    def _prepare(self, text: str, role: str | None, avoid: Sequence[str]) -> ChatRequest:
        user_role = (role or self.user_role).strip() or self.role.visitor_name
        text = check_input(text)
        kept = scripted(self.role, text, STORED, USER_INPUT, 0, user_role)  # a card's script may change the message
        text = check_input(kept) if kept != text else text
        remembering = self.budgets.recall_tokens > 0 and len(self.history) > 1
        in_window = self.in_window()
        # the memory embedder reads the message on the other core while the scenes are drawn
        deep = ask_deep(self.memory_embedder, text) if remembering and len(self.history) > in_window else None
        # one embedding call: the message (scenes and memory) and the forms memory also asks with
        forms = [text, *query_forms(text, self.visitor_names(user_role), self.role.name)] if remembering else [text]
        vectors = self.embed_turn(forms, remembering)
        drawn = self.draw(text, vectors, user_role, [t for ex in self.history for t in (ex.text, ex.reply)] + [text])
        recalled, notes, written = (self.remembered(text, vectors, user_role, in_window, deep)
                                    if remembering else ([], [], ""))
        memory = "\n\n".join(b for b in (written, recall_block(recalled)) if b)
        note = self.fill(self.note.text, user_role) if self.note else ""
        parts = PromptParts(drawn.system, self.history_part(), drawn.after, drawn.packed, memory,
                            format_query(user_role, scripted(self.role, text, PROMPT, USER_INPUT, 0, user_role)),
                            note, self.note.depth if self.note else 0,
                            self.character_note(user_role))
        return ChatRequest(messages=lay_out(parts, self.layout), role=self.role, user_role=user_role, text=text,
                           scenes=drawn.scenes, history=list(self.history), embedder=self.embedder,
                           avoid=tuple(avoid), packed=len(drawn.packed), lore=drawn.lore, recalled=recalled,
                           pinned=len(self.pinned()), notes=notes, window=in_window,
                           indexed=self.memory.index.progress() if remembering else (0, 0))

    def stream(self, text: str, role: str | None = None, avoid: Sequence[str] = ()) -> Streaming:
        """The reply as it arrives (iterate); the exchange joins the history only when complete, and the
        stream's `reply` holds its record.

        Raises InputError for unusable input and EngineError when the model fails; in both
        cases the history is left as it was.
        """
        return Streaming(self.turn(text, role, avoid))

    def turn(self, text: str, role: str | None, avoid: Sequence[str]) -> Generator[str, None, Reply]:
        """One whole turn, as a generator: prepare, respond, and the exchange joins the history."""
        self.load()  # a model loading on first use is not part of the reply's timing
        started = time.perf_counter()
        request = self.prepare(text, role, avoid)
        reply = yield from self.respond(request, started)
        self.history.append(Exchange(request.user_role, request.text, reply.text, self.clock()))
        if self.read_ahead:
            self.after_reply()
        return reply

    def after_reply(self) -> threading.Thread | None:
        """After a complete reply, the next turn's work that needs no message: none here; the chat indexes,
        writes notes and reads ahead (ChatHaruhi, ahead.py)."""
        return None

    def respond(self, request: ChatRequest, started: float | None = None,
                speaker: str | None = None) -> Generator[str, None, Reply]:
        """Stream the character's line for a prepared request and return its Reply; no history change.

        A scene with several characters prepares its own requests and calls this, so both paths
        share the clean-up of the `Name:「…」` wrapper and the timing. `speaker`: whose line it is when not the
        character's (my_line writes the visitor's).
        """
        self.load()
        self.halt.clear()  # a Stop meant for an earlier reply
        started = started or time.perf_counter()
        first: float | None = None
        name = speaker or self.role.name
        raw, shown = "", ""
        deltas = self.engine.stream(request)
        for delta in deltas:
            raw += delta
            if self.halt.is_set():  # stopped: the engine stops too (an HTTP stream closed, a batch slot freed)
                getattr(deltas, "close", lambda: None)()
                break
            if pending_prefix(raw, name):
                continue
            now = self.fill(hold_partial(visible(raw, name)), request.user_name)
            if now.startswith(shown) and len(now) > len(shown):
                first = first or time.perf_counter()
                yield now[len(shown):]
                shown = now
        final = self.fill(clean_reply(raw, name), request.user_name)
        kept = scripted(self.role, final, STORED, USER_INPUT if speaker else AI_OUTPUT, 0, request.user_name)
        final = kept.strip() if kept != final else final  # a card's script may cut a block, not its line breaks
        cap = reply_cap(self.engine)
        cut = bool(cap) and not request.plain and not ends_sentence(final) and self.count_tokens(raw) >= cap - 2
        if cut or (self.halt.is_set() and final and not ends_sentence(final)):  # a length limit or Stop mid-sentence:
            final = final.rstrip(" ,，、;；:：-—") + "…"  # marked as cut, what was shown kept
        if not final and self.halt.is_set():
            raise Stopped(_("Stopped before {name} said anything.", name=name))
        if not final:
            raise EmptyReply(_("The model returned an empty reply. Try again, or pick another model."))
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
        for _unused in streaming:
            pass
        assert streaming.reply is not None
        return streaming.reply

    def chat(self, text: str, role: str | None = None) -> str:
        """Answer one message and return the whole reply (the paper's API)."""
        return self.answer(text, role).text
