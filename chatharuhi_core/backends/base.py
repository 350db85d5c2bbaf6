"""The Backend protocol and the registry that maps a name to a backend class."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..prompt import Exchange

if TYPE_CHECKING:
    from ..embedding import Embedder
    from ..role import Role
    from ..store import Hit


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


@dataclass(frozen=True)
class BackendOptions:
    """Per-conversation options; api_key is never logged (repr hides it)."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60.0


class Backend(Protocol):
    """Streams the text of a reply, delta by delta. Raises BackendError with a plain sentence."""

    name: str

    def stream(self, request: ChatRequest) -> Iterator[str]: ...


@dataclass(frozen=True)
class BackendInfo:
    name: str
    label: str
    description: str
    factory: Callable[[BackendOptions], Backend]
    uses_model: bool = True


_REGISTRY: dict[str, BackendInfo] = {}


def register_backend(name: str, label: str, description: str, *, uses_model: bool = True):
    """Class decorator: the class is built with a BackendOptions."""

    def wrap(cls):
        _REGISTRY[name] = BackendInfo(name, label, description, cls, uses_model)
        cls.name = name
        return cls

    return wrap


def backend_names() -> list[str]:
    return list(_REGISTRY)


def backend_info(name: str) -> BackendInfo:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(_REGISTRY)
        raise KeyError(f"Unknown engine '{name}'. Known engines: {known}.") from None


def create_backend(name: str, options: BackendOptions | None = None) -> Backend:
    return backend_info(name).factory(options or BackendOptions())
