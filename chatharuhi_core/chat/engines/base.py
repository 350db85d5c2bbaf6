"""The Engine protocol (what an engine must and may offer) and the registry that maps a name to an engine."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ...errors import look_up
from ...i18n import N_
from ..prompt import Exchange, Layout

if TYPE_CHECKING:
    from ...config import Budgets, Settings
    from ...embedding import Embedder
    from ...roles.lorebook import Fired
    from ...roles.role import Role
    from ...roles.store import Hit
    from ..memory import Recalled
    from ..notes import Note


@dataclass
class ChatRequest:
    """One turn as a backend sees it: the prompt messages plus what produced them."""

    messages: list[dict]
    role: Role
    user_role: str
    text: str
    scenes: list[Hit] = field(default_factory=list)
    history: list[Exchange] = field(default_factory=list)
    embedder: Embedder | None = None
    avoid: tuple[str, ...] = ()  # replies not to give again (the one being regenerated)
    plain: bool = False  # a writing task (e.g. new questions), not the character's next line
    visitor: str = ""  # the visitor's name in the story ({{user}}) when it is not user_role (a scene)
    cast: tuple[str, ...] = ()  # a group scene: every name of those present, the visitor's among them; () in a chat
    packed: int = 0  # how many of `scenes` (most similar first) fitted the scene budget and are in `messages`
    lore: list[Fired] = field(default_factory=list)  # the lorebook entries in `messages`, and why they fired
    recalled: list[Recalled] = field(default_factory=list)  # earlier exchanges memory brought back, and how close
    pinned: int = 0  # how many of the conversation's pinned memories fitted their budget and are in `messages`
    notes: list[Note] = field(default_factory=list)  # dated notes on older stretches in `messages`
    window: int = 0  # how many of the last exchanges the history window holds in `messages`
    indexed: tuple[int, int] = (0, 0)  # (exchanges embedded, exchanges beyond the window) when memory was searched
    # what is asked: the character's next line (""), its last reply going on ("continue", from `continuing`), or
    # the visitor's next line written for them (✍ My line, "my_line"); the messages already say so, for a model
    task: str = ""
    continuing: str = ""

    @property
    def user_name(self) -> str:
        return self.visitor or self.user_role


@dataclass(frozen=True)
class EngineOptions:
    """Per-conversation options; api_key is never logged (repr hides it)."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60.0
    max_tokens: int = 300  # the longest reply asked of a model
    seed: int | None = None  # a fixed draw for engines that sample locally (reproducible eval); None: fresh each time
    temperature: float | None = None  # None: the engine's own; 0: greedy, the most likely token every time (eval)
    cache_dir: Path | None = None  # where an engine keeps files it makes (the local model's copies); None: the default
    router: str | None = None  # where a hosted model id is sent (the hf engine's Inference Providers); None: the SDK's


def api_sampling(options: EngineOptions) -> dict[str, float | int]:
    """The draw asked of a server, only where the caller fixed it (eval's seeds and greedy); otherwise the
    server's own defaults, as a visitor has always had them."""
    asked = {"temperature": options.temperature, "seed": options.seed}
    return {k: v for k, v in asked.items() if v is not None}


class Engine(Protocol):
    """Streams the text of a reply, delta by delta. Raises EngineError with a plain sentence.

    An engine may also offer (all optional; the built-in engines document theirs):
      layout: Layout                    how it reads a prompt (prompt.Layout; read with `layout_of`)
      options: EngineOptions            what it was opened with (its max_tokens caps a reply)
      reply_cap: int                    the longest reply it writes, in tokens, when not options.max_tokens
      loading_message() -> str | None   a sentence while something heavy loads on first use
      load() -> None                    do that loading now
      count_tokens(text) -> int         its own tokenizer, for the prompt budgets
      model_label() -> str              which model answered, for the page
      languages() -> frozenset | None   the languages its model speaks (chat/languages.py); None: any
      warm(messages) -> Thread | None   read a prompt's start ahead, while the visitor types (layout.scenes_last)
      lane() -> LaneSpec | None         the queue its visitors wait in when it answers one at a time (chat/lanes.py)
      score(request, lines) -> [float]  how strongly it would give each line as the reply (eval's next-line
                                        choice: a model's mean log-probability, the script engine's ranking)
    """

    name: str

    def stream(self, request: ChatRequest) -> Iterator[str]: ...


class EngineBase:
    """What the built-in engines share: each is opened with the options it was chosen with (`options`; its
    max_tokens caps a reply), and register_engine gives it its name. An engine may also be any object that
    has `name` and `stream` (Engine)."""

    name = ""
    layout = Layout()

    def __init__(self, options: EngineOptions | None = None):
        self.options = options or EngineOptions()


def layout_of(engine: object) -> Layout:
    """The engine's prompt layout: its own `layout`, else the paper's (scenes right after the system prompt)."""
    layout = getattr(engine, "layout", None)
    return layout if isinstance(layout, Layout) else Layout()


Defaults = Callable[["Settings"], dict]


@dataclass(frozen=True)
class EngineInfo:
    """A registered engine: its name, label and description, how it is built, and what it can do (what the
    page's settings panel shows for it is web/panel_hints.py's)."""

    name: str
    label: str
    description: str
    factory: Callable[[EngineOptions], Engine]
    defaults: Defaults | None = None  # operator settings that fill blank options
    writes: bool = True  # can write new text (False for the script engine, which only quotes)
    budgets: Budgets | None = None  # prompt budgets sized to the engine (None: the paper's, for big models)
    signs_in: bool = False  # a visitor signed in with Hugging Face is its key (their own Inference Providers account)


_REGISTRY: dict[str, EngineInfo] = {}


def register_engine(name: str, label: str, description: str, *, defaults: Defaults | None = None,
                    writes: bool = True, budgets: Budgets | None = None, signs_in: bool = False):
    """Class decorator: the class is built with an EngineOptions."""

    def wrap(cls):
        _REGISTRY[name] = EngineInfo(name, label, description, cls, defaults, writes, budgets, signs_in)
        cls.name = name
        return cls

    return wrap


def engine_names() -> list[str]:
    return list(_REGISTRY)


def engine_info(name: str) -> EngineInfo:
    """The registered engine of that name; UnknownNameError (with the known names) otherwise."""
    return look_up(_REGISTRY, N_("engine"), name)


def registered(engine: Engine) -> EngineInfo | None:
    """The registry's entry for an engine object; None for an engine object of the caller's own."""
    return _REGISTRY.get(engine.name)


def writes(engine: Engine) -> bool:
    """Whether the engine can write new text (the script engine only quotes); an engine object of the
    caller's own is assumed to write."""
    info = registered(engine)
    return info.writes if info else True


def default_budgets(name: str, settings: Settings) -> Budgets:
    """The budgets a conversation with this engine starts from.

    Budgets the operator or caller set in Settings win; otherwise the engine's own (a small local
    model reads the paper's 2,700-token prompt slowly), otherwise the paper's.
    """
    from ...config import Budgets

    if settings.budgets != Budgets():
        return settings.budgets
    info = _REGISTRY.get(name)
    return (info.budgets if info else None) or settings.budgets


def create_engine(name: str, options: EngineOptions | None = None) -> Engine:
    return engine_info(name).factory(options or EngineOptions())


@dataclass(frozen=True)
class EngineChoice:
    """Which engine answers, and how: one value, chosen once (the page's settings panel, the command line's
    flags, each system eval compares) and passed down whole to a conversation, a group scene, eval or synthesis.

    engine: a registered name or an Engine object; model, base_url, api_key: what the visitor gave (blanks are
    filled from the operator's settings when the engine opens); budgets: the prompt budgets (None: the engine's
    own); fold_prompt: no system message and no two user messages in a row (None: the operator's setting).
    """

    engine: str | Engine = "script"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    budgets: Budgets | None = None
    fold_prompt: bool | None = None

    def open(self, settings: Settings, **extra) -> Engine:
        """The engine, opened with these options (and `extra` ones: eval's seed and temperature)."""
        return open_engine(self.engine, settings, model=self.model, base_url=self.base_url, api_key=self.api_key,
                           **extra)

    @property
    def name(self) -> str:
        return self.engine if isinstance(self.engine, str) else self.engine.name


def as_choice(engine: str | Engine | EngineChoice, **given) -> EngineChoice:
    """`engine` as an EngineChoice: a choice as it is (an option given beside it, not None, wins), or a name or an
    engine object with the options given beside it (`ChatHaruhi(engine=..., model=...)`)."""
    given = {k: v for k, v in given.items() if v is not None}
    return replace(engine, **given) if isinstance(engine, EngineChoice) else EngineChoice(engine, **given)


def open_engine(engine: str | Engine, settings: Settings, **overrides: str | None) -> Engine:
    """The engine a conversation answers with: a registered name built with what the visitor gave
    (model, base_url, api_key; blanks filled from the operator's settings), or an engine object as it is."""
    if not isinstance(engine, str):
        return engine
    return create_engine(engine, options_for(engine, settings, **overrides))


def options_for(name: str, settings: Settings, **given) -> EngineOptions:
    """What the visitor gave, with blanks filled from the operator's settings for that engine."""
    info = engine_info(name)
    filled = dict(info.defaults(settings)) if info.defaults else {}
    filled.update({k: v for k, v in given.items() if v not in (None, "")})
    filled.setdefault("timeout_s", settings.timeout_s)
    filled.setdefault("cache_dir", settings.cache_dir)
    return EngineOptions(**filled)
