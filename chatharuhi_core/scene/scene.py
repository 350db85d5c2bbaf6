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
from ..chat.memory import Memory, in_background
from ..chat.swipes import Choices
from ..config import Settings
from ..deprecated import renamed
from ..embedding import Embedder, get_embedder
from ..errors import ChatHaruhiError, InputError
from ..i18n import _
from ..roles.card_extras import talkativeness
from ..roles.lines import format_query
from ..roles.names import find_name, written_small
from ..roles.role import Role
from ..roles.sources import bundled_ids, load_role
from .cast import DEFAULT_TALKATIVENESS, MAX_MEMBERS, MIN_MEMBERS, Member, SceneLine, SceneState, mention_at
from .order import END, candidates, get_order
from .view import SCENE_RECALL_HEADER, index_lines, member_request  # noqa: F401  (the header: where callers found it)

log = logging.getLogger(__name__)
DIRECTOR_LINES = 12  # how much of the transcript the director reads


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
            bot = self._bots[member.role_id] = _bot_for(self, load_role(member.role_id))
            # a scene saved earlier knows fewer names: the role's own are added (Sherlock, 福尔摩斯)
            member.aliases = tuple(dict.fromkeys([*member.aliases, *bot.role.aliases]))
        for role in roles:
            self.add(role)
        _learn_calls(self)

    # ------------------------------------------------------------ cast

    @property
    def members(self) -> list[Member]:
        return self.state.members

    @property
    def lines(self) -> list[SceneLine]:
        return self.state.lines

    @property
    def allow_self(self) -> bool:
        return self.state.allow_self

    @property
    def user_role(self) -> str:
        return self.state.user_role

    @property
    def present(self) -> list[Member]:
        return self.state.present

    def add(self, role: str | Role | ChatHaruhi) -> Member:
        """A character joins now: it will see only what is said from here on."""
        if isinstance(role, str):
            role = load_role(role)
        rid = role.role.id if isinstance(role, ChatHaruhi) else role.id
        known = next((m for m in self.members if m.role_id == rid), None)
        if known and known.present:
            raise InputError(_("{name} is already in the scene.", name=known.name))
        if len(self.present) >= MAX_MEMBERS:
            raise InputError(_("A scene holds at most {limit} characters; ask someone to leave first.",
                                 limit=MAX_MEMBERS))
        if known:
            known.join(len(self.lines))
            return known
        bot = _bot_for(self, role)
        talk = talkativeness(bot.role)  # a card's own, where it gives one
        member = Member(rid, bot.role.name, tuple(bot.role.aliases), spans=[[len(self.lines), None]],
                        talkativeness=DEFAULT_TALKATIVENESS if talk is None else talk)
        self._bots[rid] = bot
        self.members.append(member)
        _learn_calls(self)
        return member

    def member(self, name: str) -> Member:
        """A member by name, alias or id (any case)."""
        key = (name or "").strip().lower()
        for m in self.members:
            if key in {n.lower() for n in (m.role_id, *m.names())}:
                return m
        here = ", ".join(m.name for m in self.present) or _("nobody")
        raise InputError(_("'{name}' is not in this scene. Here now: {here}.", name=name, here=here))

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
                notes.append(_("{name} has left the scene; add them to the cast again to hear them.", name=m.name))
            elif m.muted:
                notes.append(_("{name} is muted and will not answer; unmute them, or press ▶ {name}.", name=m.name))
        cast = {m.role_id for m in self.members}
        for rid in bundled_ids():
            if rid in cast:
                continue
            role = load_role(rid)
            if find_name(text, [role.name, *role.aliases]) is not None:
                notes.append(_("{name} is not in this scene; add them to the cast to hear them.", name=role.name))
        return notes

    def check_cast(self) -> None:
        if len(self.present) < MIN_MEMBERS:
            raise InputError(_("A scene needs at least {limit} characters; add one more.", limit=MIN_MEMBERS))

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

    def can_answer(self, member: Member) -> bool | None:
        """Whether the member has a line that answers the last one (None: the engine cannot tell, as a model that
        writes its reply cannot before it writes it)."""
        probe = getattr(self.engine, "answers", None)
        return None if probe is None else bool(probe(self.prepare(member)))

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

    def index_ahead(self) -> None:
        """Embed every present member's witnessed lines now, after a line, while the visitor reads (view.py)."""
        index_lines(self.state, self.bot)

    def prepare(self, member: Member, avoid: Sequence[str] = ()) -> ChatRequest:
        """The member's prompt (view.py): its system message and scenes, what it recalls of the lines it witnessed
        beyond its history, the recent lines it saw, and the lines for it to answer."""
        return member_request(self.state, member, self.bot(member), avoid)

    def stream_turn(self, who: Member | str | None = None, avoid: Sequence[str] = ()) -> Generator[str, None, Reply]:
        """Stream one character's line (`who`, or the order's pick); it joins the transcript when complete.

        A muted member speaks when named here: that is how the visitor forces it.
        """
        self.check_cast()
        member = who if isinstance(who, Member) else self.member(who) if who else self.pick_next()
        if member is None:
            raise InputError(_("Nobody is free to speak: everyone present is muted, or just spoke."))
        if not member.present:
            raise InputError(_("{name} has left the scene; add them again to let them speak.", name=member.name))
        bot = self.bot(member)
        request = self.prepare(member, avoid)
        reply = yield from bot.respond(request)
        private = member.role_id if self.answers_privately(member) else None
        self.lines.append(SceneLine(
            member.name, reply.text, member.role_id, messages=reply.messages, cue=request.text,
            scenes=[{"id": h.id, "similarity": round(h.similarity, 4), "text": h.text, "used": i < reply.packed}
                    for i, h in enumerate(reply.scenes)],
            engine=reply.stats.engine, model=reply.stats.model, to=private,
            recalled=[{"line": r.turn, "similarity": round(r.similarity, 4), "text": r.text}
                      for r in reply.recalled]))
        if self.read_ahead:
            in_background(self.index_ahead, "indexing the scene")
        return reply

    def turn(self, who: Member | str | None = None) -> SceneLine:
        for _unused in self.stream_turn(who):
            pass
        return self.lines[-1]

    # ------------------------------------------------------------ the API

    def say(self, text: str, to: str | None = None) -> SceneLine:
        """The visitor's line, as their character in the story; whispered `to` one character when given."""
        if to:
            return self.whisper(to, text)
        line = SceneLine(self.user_role, check_input(text))
        self.lines.append(line)
        return line

    def answers_privately(self, member: Member) -> bool:
        """Whether the member's next line is private: the answer to a whisper to it (the last line) is heard
        only by the visitor and this character."""
        return bool(self.lines) and self.lines[-1].to == member.role_id

    def whisper(self, name: str, text: str) -> SceneLine:
        """The visitor's private line to one character: only it hears it, remembers it and answers it."""
        member = self.member(name)
        if not member.present:
            raise InputError(_("{name} has left the scene; a whisper needs someone here to hear it.", name=member.name))
        line = SceneLine(self.user_role, check_input(text), to=member.role_id)
        self.lines.append(line)
        return line

    def chat(self, text: str, to: str | None = None) -> list[SceneLine]:
        """The visitor's line (whispered `to` one character, when given), then the replies the order calls
        for (none in manual order)."""
        self.check_cast()
        self.say(text, to)
        return [self.turn(m) for m in self.responders()]

    def talk(self, turns: int) -> Iterator[SceneLine]:
        """The characters carry on for up to `turns` lines; stops early when the director ends the scene."""
        self.check_cast()
        for _unused in range(turns):
            member = self.pick_next()
            if member is None:
                return
            yield self.turn(member)

    def regenerate(self) -> Generator[str, None, Reply]:
        """The last character line again, by the same character, avoiding the words it gave."""
        if not self.lines or not self.lines[-1].by_character:
            raise InputError(_("The last line is not a character's; there is nothing to regenerate."))
        old = self.lines.pop()
        try:  # every text the line has had is avoided, and kept beside the new one (chat/swipes.py)
            reply = yield from self.stream_turn(self.member(old.role_id), avoid=old.alternatives or [old.text])
        except BaseException:
            self.lines.append(old)
            raise
        new = self.lines[-1]
        new.alternatives = list(Choices.of(old.text, old.alternatives).added(new.text).stored)
        new.id = old.id  # the same line for feedback: its kept text against the ones passed over
        return reply

    def flip(self, step: int = 1, index: int | None = None) -> SceneLine:
        """Keep the next (`step` 1) or previous (-1) text of character line `index` (the last by default)."""
        k = len(self.lines) - 1 if index is None else index
        if not 0 <= k < len(self.lines) or not self.lines[k].by_character:
            raise InputError(_("That is not a character's line."))
        ln = self.lines[k]
        ln.text = Choices.of(ln.text, ln.alternatives).flipped(step).kept
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


def _learn_calls(scene: Scene) -> None:
    """Each member answers to the words the others call it by in its scenes ("Count, …" to Dracula), except
    a word a member's scenes use for someone else ("师父" beside 孙悟空), or another member's name."""
    taken = {w for m in scene.members for w in (*scene._bots[m.role_id].role.addressing.terms,
                                                *scene._bots[m.role_id].role.addressing.shared)}
    texts = [s.text for m in scene.members for s in scene._bots[m.role_id].role.known_stories]
    for m in scene.members:
        others = {n for o in scene.members if o is not m for n in (o.name, *o.aliases)}
        called = [w for w in scene._bots[m.role_id].role.called_by if w not in taken and w not in others]
        # "alice", "lizzie": a name typed in lower case, where the cast's scenes never use it as a word
        small = written_small([m.name, *m.aliases, *called], texts)
        m.called = tuple(dict.fromkeys([*called, *(w for w in small if w not in taken and w not in others)]))


def _bot_for(scene: Scene, role: Role | ChatHaruhi) -> ChatHaruhi:
    """The member's conversation core: the scene's opened engine choice, the member's own memory of the scene."""
    if isinstance(role, ChatHaruhi):
        scene.state.memory.setdefault(role.role.id, role.memory)
        return role
    memory = scene.state.memory.setdefault(role.id, Memory())
    return ChatHaruhi(role=role, engine=scene.choice, settings=scene.settings, embedder=scene.embedder,
                      memory=memory, read_ahead=False)
