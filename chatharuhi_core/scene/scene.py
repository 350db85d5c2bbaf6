"""A scene: 2 to 6 characters and the visitor share one transcript.

    scene = Scene(["sunwukong", "zhugeliang", "lindaiyu"], engine="script", user_role="唐僧")
    scene.chat("悟空，你怎么看？")          # the visitor's line, then whoever the order picks answers
    for line in scene.talk(3): ...         # the characters carry on among themselves

Each character's turn is an ordinary ChatHaruhi turn: its own system prompt, its own retrieval
from its own store (queried with the recent lines addressed to it), and its own view of the
transcript (only the lines it witnessed), within its budgets. A turn that fails or is stopped
adds nothing: lines join the transcript only when complete.

Witnessing: a character hears a line when it was present (cast.Member.saw) and the line was not
whispered to someone else (`Scene.whisper`: the visitor's private line to one character, whose answer
is private too). Memory follows witnessing: what a character recalls from beyond its history window
(chat/memory.py) comes only from lines it heard, so a late joiner recalls nothing said before it came.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, replace

from ..chat.chatbot import ChatHaruhi, Reply, check_input
from ..chat.engines import ChatRequest, Engine, EngineChoice, as_choice, writes
from ..chat.lexical import tokens
from ..chat.memory import Ask, Memory, Recalled, RecallQuery, Units, in_background, recall_block
from ..chat.prompt import Exchange, PromptParts, lay_out
from ..chat.swipes import merged, stepped
from ..config import Settings
from ..deprecated import renamed
from ..embedding import Embedder, get_embedder
from ..errors import ChatHaruhiError, InputError
from ..roles.lines import format_query
from ..roles.names import find_name, written_small
from ..roles.role import Role
from ..roles.sources import bundled_ids, load_role
from .cast import MAX_MEMBERS, MIN_MEMBERS, Line, Member, SceneState, mention_at
from .order import END, candidates, get_order

log = logging.getLogger(__name__)
DIRECTOR_LINES = 12  # how much of the transcript the director reads
SCENE_RECALL_HEADER = "Earlier in this scene:\n"


@dataclass(frozen=True)
class SceneSetup:
    """How a scene runs, beside its cast, engine and visitor: who speaks next (`order`, order.py), whether a
    character may answer itself (`allow_self`), the embedder the app loaded (else the settings'), the seed of its
    draws, a saved state to take up (saved.py), and whether each member indexes new lines in the background."""

    order: str = "natural"
    allow_self: bool = False
    embedder: Embedder | None = None
    seed: int | None = None
    state: SceneState | None = None
    read_ahead: bool = True


class Scene:
    """One visitor's scene with several characters. Not shared between visitors."""

    def __init__(self, roles: Sequence[str | Role | ChatHaruhi] = (), engine: str | Engine | EngineChoice = "script",
                 *, user_role: str = "You", settings: Settings | None = None, setup: SceneSetup | None = None,
                 llm: str | Engine | EngineChoice | None = None):
        if llm is not None:
            renamed("Scene(llm=...)", "Scene(engine=...)")
            engine = llm
        setup = setup or SceneSetup()
        self.settings = settings or Settings.from_env()
        self.embedder = setup.embedder or get_embedder(self.settings.embedder)
        # one engine for the whole cast, opened once (`engine`: a name, an Engine, or an EngineChoice with its
        # options, budgets and fold); every member is a conversation core given that choice
        choice = as_choice(engine)
        self.choice = replace(choice, engine=choice.open(self.settings))
        self.engine: Engine = self.choice.engine
        # after each line, each member's memory embeds it in the background (index_ahead)
        self.read_ahead = setup.read_ahead
        seed, state = setup.seed, setup.state
        order, allow_self = setup.order, setup.allow_self
        self.rng = random.Random(seed)
        state = state or SceneState(user_role=user_role, order=order, allow_self=allow_self)
        get_order(state.order)  # an unknown order fails here, not on the first turn
        self.state = state
        self._bots: dict[str, ChatHaruhi] = {}
        for member in state.members:
            bot = self._bots[member.role_id] = self._bot(load_role(member.role_id))
            # a scene saved earlier knows fewer names: the role's own are added (Sherlock, 福尔摩斯)
            member.aliases = tuple(dict.fromkeys([*member.aliases, *bot.role.aliases]))
        for role in roles:
            self.add(role)
        self._learn_calls()

    def _learn_calls(self) -> None:
        """Each member answers to the words the others call it by in its scenes ("Count, …" to Dracula), except
        a word a member's scenes use for someone else ("师父" beside 孙悟空), or another member's name."""
        taken = {w for m in self.members for w in (*self._bots[m.role_id].role.addressing.terms,
                                                    *self._bots[m.role_id].role.addressing.shared)}
        texts = [s.text for m in self.members for s in self._bots[m.role_id].role.known_stories]
        for m in self.members:
            others = {n for o in self.members if o is not m for n in (o.name, *o.aliases)}
            called = [w for w in self._bots[m.role_id].role.called_by if w not in taken and w not in others]
            # "alice", "lizzie": a name typed in lower case, where the cast's scenes never use it as a word
            small = written_small([m.name, *m.aliases, *called], texts)
            m.called = tuple(dict.fromkeys([*called, *(w for w in small if w not in taken and w not in others)]))

    # ------------------------------------------------------------ cast

    @property
    def members(self) -> list[Member]:
        return self.state.members

    @property
    def lines(self) -> list[Line]:
        return self.state.lines

    @property
    def allow_self(self) -> bool:
        return self.state.allow_self

    @property
    def user_role(self) -> str:
        return self.state.user_role

    @property
    def present(self) -> list[Member]:
        return [m for m in self.members if m.present]

    def _bot(self, role: Role | ChatHaruhi) -> ChatHaruhi:
        if isinstance(role, ChatHaruhi):
            self.state.memory.setdefault(role.role.id, role.memory)
            return role
        memory = self.state.memory.setdefault(role.id, Memory())
        return ChatHaruhi(role=role, engine=self.choice, settings=self.settings, embedder=self.embedder,
                          memory=memory, read_ahead=False)

    def add(self, role: str | Role | ChatHaruhi) -> Member:
        """A character joins now: it will see only what is said from here on."""
        if isinstance(role, str):
            role = load_role(role)
        rid = role.role.id if isinstance(role, ChatHaruhi) else role.id
        known = next((m for m in self.members if m.role_id == rid), None)
        if known and known.present:
            raise InputError(f"{known.name} is already in the scene.")
        if len(self.present) >= MAX_MEMBERS:
            raise InputError(f"A scene holds at most {MAX_MEMBERS} characters; ask someone to leave first.")
        if known:
            known.join(len(self.lines))
            return known
        bot = self._bot(role)
        member = Member(rid, bot.role.name, tuple(bot.role.aliases), spans=[[len(self.lines), None]])
        self._bots[rid] = bot
        self.members.append(member)
        self._learn_calls()
        return member

    def member(self, name: str) -> Member:
        """A member by name, alias or id (any case)."""
        key = (name or "").strip().lower()
        for m in self.members:
            if key in {n.lower() for n in (m.role_id, *m.names())}:
                return m
        here = ", ".join(m.name for m in self.present) or "nobody"
        raise InputError(f"'{name}' is not in this scene. Here now: {here}.")

    def leave(self, name: str) -> Member:
        """The character leaves: it sees nothing said after this."""
        m = self.member(name)
        m.leave(len(self.lines))
        return m

    def mute(self, name: str, muted: bool = True) -> Member:
        m = self.member(name)
        m.set_muted(muted, len(self.lines))
        return m

    def bot(self, member: Member | str) -> ChatHaruhi:
        return self._bots[member.role_id if isinstance(member, Member) else self.member(member).role_id]

    def unheard(self, text: str, to: str | None = None) -> list[str]:
        """A sentence for each character named in `text` (or whispered `to`) who will not answer it: muted,
        gone, or not in this scene at all (a bundled character by any of its names)."""
        notes = []
        for m in self.members:
            if mention_at(text, m) is None and m.role_id != to:
                continue
            if not m.present:
                notes.append(f"{m.name} has left the scene; add them to the cast again to hear them. "
                             f"· {m.name}已离开。")
            elif m.muted:
                notes.append(f"{m.name} is muted and will not answer; unmute them, or press ▶ {m.name}. "
                             f"· {m.name}已静音。")
        cast = {m.role_id for m in self.members}
        for rid in bundled_ids():
            if rid in cast:
                continue
            role = load_role(rid)
            if find_name(text, [role.name, *role.aliases]) is not None:
                notes.append(f"{role.name} is not in this scene; add them to the cast to hear them. "
                             f"· {role.name}不在这场戏里。")
        return notes

    def check_cast(self) -> None:
        if len(self.present) < MIN_MEMBERS:
            raise InputError(f"A scene needs at least {MIN_MEMBERS} characters; add one more.")

    # ------------------------------------------------------------ who speaks

    @property
    def engine_writes(self) -> bool:
        return writes(self.engine)

    def responders(self) -> list[Member]:
        """Who answers the visitor's last line, in turn, by the scene's order (none in manual order). A
        whisper is answered by the one it was whispered to, unless muted or in manual order."""
        last = self.lines[-1] if self.lines else None
        if last is not None and last.private and not last.by_character:
            to = self.member(last.to)
            return [to] if to.present and not to.muted and self.state.order != "manual" else []
        return get_order(self.state.order).responders(self, self.rng)

    def pick_next(self) -> Member | None:
        """Who speaks next when the characters talk among themselves; None when nobody can, or the director ends it."""
        return get_order(self.state.order).next(self, self.rng)

    def ask_director(self) -> Member | object | None:
        """The engine names the next speaker from a short plain request; END to close the scene.

        None when the answer names nobody or the engine failed (the order falls back to natural).
        """
        pool = candidates(self)
        if not pool:
            return None
        public = [ln for ln in self.lines if not ln.private]  # a whisper is nobody else's business
        recent = "\n".join(format_query(ln.speaker, ln.text) for ln in public[-DIRECTOR_LINES:])
        names = ", ".join(m.name for m in pool)
        messages = [
            {"role": "system", "content": "You direct a role-play scene. You never write dialogue: you only "
                                          "say who speaks next, or that the scene is over."},
            {"role": "user", "content": f"The scene so far:\n{recent or '(nothing said yet)'}\n\n"
                                        f"Characters who may speak: {names}.\nWho should speak next? "
                                        "Answer with one name from that list, or END if the scene has "
                                        "reached a natural close."},
        ]
        request = ChatRequest(messages=messages, role=self.bot(pool[0]).role, user_role=self.user_role, text="",
                              plain=True)
        try:
            answer = "".join(self.engine.stream(request)).strip()
        except ChatHaruhiError as exc:
            log.info("director failed, natural order instead: %s", exc)
            return None
        named = sorted(((pos, i, m) for i, m in enumerate(pool) if (pos := mention_at(answer, m)) is not None),
                       key=lambda t: (t[0], t[1]))
        end = re.search(r"\bEND\b", answer)
        if end and (not named or end.start() < named[0][0]):
            return END
        return named[0][2] if named else None

    # ------------------------------------------------------------ one character's turn

    def witnessed(self, member: Member, index: int) -> bool:
        """Whether the member heard line `index`: present then, and not a whisper to someone else."""
        to = self.lines[index].to
        return member.saw(index) and (to is None or to == member.role_id)

    def seen_at(self, member: Member) -> list[int]:
        """The indices of the lines this member witnessed, in order."""
        return [i for i in range(len(self.lines)) if self.witnessed(member, i)]

    def seen(self, member: Member) -> list[Line]:
        """The transcript as this member witnessed it."""
        return [self.lines[i] for i in self.seen_at(member)]

    def recall(self, member: Member, older: Sequence[int], vector, texts: Sequence[str] = ()) -> list[Recalled]:
        """The witnessed lines `older` (indices, beyond the member's history window) the cue brings up (by the
        meaning of `vector`'s rows and the words of `texts`), within the member's recall budget; each numbered
        as the transcript's line (1-based)."""
        bot = self.bot(member)
        b = bot.budgets
        lines = [self.lines[i] for i in older]
        query = RecallQuery(vector, tuple(tokens(" ".join(texts))))
        units = Units([_line_views(ln) for ln in lines], [format_query(ln.speaker, ln.text) for ln in lines],
                      [i + 1 for i in older])
        ask = Ask(query, bot.embedder, b.recall_tokens, b.recall_k, bot.count_tokens)
        return bot.memory.recall_among(units, ask, SCENE_RECALL_HEADER, "line")

    def index_ahead(self) -> None:
        """Embed every present member's witnessed lines now, after a line, while the visitor reads: its next
        turn's recall is then a matrix product. Each member's index holds what it heard, in order; a turn
        searches the part beyond its history window."""
        for m in self.present:
            bot = self.bot(m)
            if bot.budgets.recall_tokens > 0:
                bot.memory.index.sync([_line_views(self.lines[i]) for i in self.seen_at(m)], bot.embedder)

    def prepare(self, member: Member, avoid: Sequence[str] = ()) -> ChatRequest:
        """The member's prompt: its system prompt, its scenes, what it recalls of the lines it witnessed
        beyond its history, the recent lines it saw, and the lines for it to answer."""
        bot = self.bot(member)
        role = bot.role
        at = self.seen_at(member)
        seen = [self.lines[i] for i in at]
        own = [i for i, ln in enumerate(seen) if ln.role_id == member.role_id]
        cut = own[-1] + 1 if own else 0
        earlier, fresh = seen[:cut], seen[cut:]
        addressed = [ln for ln in fresh if mention_at(ln.text, member) is not None]
        cue = (addressed or fresh or seen[-1:] or [None])[-1]
        query = cue.text if cue else role.name
        recent, kept = _history_messages(earlier, member, bot.budgets.history_tokens, bot.count_tokens)
        older = at[:cut - kept]
        remembering = bool(older) and bot.budgets.recall_tokens > 0
        # memory is asked with the line addressed to it and with the newest line it heard (a question to
        # everyone after Holmes was named): the earlier lines nearest either come back
        newest = fresh[-1].text if fresh and fresh[-1].text != query else None
        texts = [query, newest] if remembering and newest else [query]
        vectors = bot.embed_turn(texts, remembering)
        drawn = bot.draw(query, vectors, self.user_role, [ln.text for ln in seen])
        recalled = self.recall(member, older, vectors[::-1], texts) if remembering else []  # the newest line first
        others = [m.name for m in self.present if m.role_id != member.role_id]
        note = (f"\n\nThis is a scene with {', '.join(others)} and {self.user_role}. Speak only as {role.name}: "
                "one line, and never write the others' lines.")
        if fresh:
            last = "\n".join(format_query(ln.speaker, ln.text) for ln in fresh)
        else:  # it spoke last (a forced turn) or nothing was said yet: the narrator hands it the word
            last = (f"旁白:{role.name}接着说。" if role.language.startswith("zh")
                    else f"narrator:{role.name} speaks next.")
        memory = recall_block(recalled, SCENE_RECALL_HEADER, "line") if recalled else ""
        parts = PromptParts(drawn.system + note, recent, drawn.after, drawn.packed, memory, last)
        # the classic scenes right after the system prompt, whatever the engine: a member's prompt changes with
        # every line, so there is no start to read ahead
        messages = lay_out(parts, replace(bot.layout, scenes_last=False))
        history = [Exchange(a.speaker, a.text, b.text) for a, b in zip(seen, seen[1:])
                   if b.role_id == member.role_id and a.role_id != member.role_id]
        return ChatRequest(messages=messages, role=role, user_role=cue.speaker if cue else self.user_role,
                           text=query, scenes=drawn.scenes, history=history, embedder=bot.embedder,
                           avoid=tuple(avoid), visitor=self.user_role, packed=len(drawn.packed), lore=drawn.lore,
                           cast=(self.user_role, *(n for m in self.present for n in m.names())),
                           recalled=recalled, pinned=len(bot.pinned()))

    def stream_turn(self, who: Member | str | None = None, avoid: Sequence[str] = ()) -> Generator[str, None, Reply]:
        """Stream one character's line (`who`, or the order's pick); it joins the transcript when complete.

        A muted member speaks when named here: that is how the visitor forces it.
        """
        self.check_cast()
        member = who if isinstance(who, Member) else self.member(who) if who else self.pick_next()
        if member is None:
            raise InputError("Nobody is free to speak: everyone present is muted, or just spoke.")
        if not member.present:
            raise InputError(f"{member.name} has left the scene; add them again to let them speak.")
        bot = self.bot(member)
        request = self.prepare(member, avoid)
        reply = yield from bot.respond(request)
        private = member.role_id if self.answers_privately(member) else None
        self.lines.append(Line(
            member.name, reply.text, member.role_id, messages=reply.messages, cue=request.text,
            scenes=[{"id": h.id, "similarity": round(h.similarity, 4), "text": h.text, "used": i < reply.packed}
                    for i, h in enumerate(reply.scenes)],
            engine=reply.stats.engine, model=reply.stats.model, to=private,
            recalled=[{"line": r.turn, "similarity": round(r.similarity, 4), "text": r.text}
                      for r in reply.recalled]))
        if self.read_ahead:
            in_background(self.index_ahead, "indexing the scene")
        return reply

    def turn(self, who: Member | str | None = None) -> Line:
        for _ in self.stream_turn(who):
            pass
        return self.lines[-1]

    # ------------------------------------------------------------ the API

    def say(self, text: str, to: str | None = None) -> Line:
        """The visitor's line, as their character in the story; whispered `to` one character when given."""
        if to:
            return self.whisper(to, text)
        line = Line(self.user_role, check_input(text))
        self.lines.append(line)
        return line

    def answers_privately(self, member: Member) -> bool:
        """Whether the member's next line is private: the answer to a whisper to it (the last line) is heard
        only by the visitor and this character."""
        return bool(self.lines) and self.lines[-1].to == member.role_id

    def whisper(self, name: str, text: str) -> Line:
        """The visitor's private line to one character: only it hears it, remembers it and answers it."""
        member = self.member(name)
        if not member.present:
            raise InputError(f"{member.name} has left the scene; a whisper needs someone here to hear it.")
        line = Line(self.user_role, check_input(text), to=member.role_id)
        self.lines.append(line)
        return line

    def chat(self, text: str, to: str | None = None) -> list[Line]:
        """The visitor's line (whispered `to` one character, when given), then the replies the order calls
        for (none in manual order)."""
        self.check_cast()
        self.say(text, to)
        return [self.turn(m) for m in self.responders()]

    def talk(self, turns: int) -> Iterator[Line]:
        """The characters carry on for up to `turns` lines; stops early when the director ends the scene."""
        self.check_cast()
        for _ in range(turns):
            member = self.pick_next()
            if member is None:
                return
            yield self.turn(member)

    def regenerate(self) -> Generator[str, None, Reply]:
        """The last character line again, by the same character, avoiding the words it gave."""
        if not self.lines or not self.lines[-1].by_character:
            raise InputError("The last line is not a character's; there is nothing to regenerate.")
        old = self.lines.pop()
        try:  # every text the line has had is avoided, and kept beside the new one (chat/swipes.py)
            reply = yield from self.stream_turn(self.member(old.role_id), avoid=old.alternatives or [old.text])
        except BaseException:
            self.lines.append(old)
            raise
        new = self.lines[-1]
        texts = merged(old.alternatives or [old.text], new.text)
        new.alternatives = list(texts) if len(texts) > 1 else []
        new.id = old.id  # the same line for feedback: its kept text against the ones passed over
        return reply

    def flip(self, step: int = 1, index: int | None = None) -> Line:
        """Keep the next (`step` 1) or previous (-1) text of character line `index` (the last by default)."""
        k = len(self.lines) - 1 if index is None else index
        if not 0 <= k < len(self.lines) or not self.lines[k].by_character:
            raise InputError("That is not a character's line.")
        ln = self.lines[k]
        ln.text = stepped(ln.alternatives or [ln.text], ln.text, step)
        return ln

    def dump(self) -> str:
        from .saved import dump_scene

        return dump_scene(self.state)

    @classmethod
    def load(cls, data: bytes | str, engine: str | Engine | EngineChoice = "script", *,
             settings: Settings | None = None, setup: SceneSetup | None = None) -> Scene:
        """A saved scene, with the same cast, presence, order and transcript."""
        from .saved import load_scene

        setup = replace(setup or SceneSetup(), state=load_scene(data))
        return cls(engine=engine, settings=settings, setup=setup)


def _line_views(ln: Line) -> tuple[str, str]:
    """What a line is indexed by for recall: with its speaker, and its words alone (see chat.memory)."""
    return format_query(ln.speaker, ln.text), ln.text


def _history_messages(lines: Sequence[Line], member: Member, budget: int, count) -> tuple[list[dict], int]:
    """Earlier lines, newest first while they fit; the member's own as assistant, the rest grouped as user.
    Also how many of the last `lines` are held (the older ones are for memory to recall)."""
    kept: list[Line] = []
    used = 0
    for ln in reversed(lines):
        n = count(format_query(ln.speaker, ln.text))
        if used + n > budget:
            break
        kept.append(ln)
        used += n
    kept.reverse()
    while kept and kept[0].role_id == member.role_id:  # a prompt's history opens with someone else's line
        kept.pop(0)
    messages: list[dict] = []
    for ln in kept:
        role = "assistant" if ln.role_id == member.role_id else "user"
        text = format_query(member.name if role == "assistant" else ln.speaker, ln.text)
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": role, "content": text})
    return messages, len(kept)
