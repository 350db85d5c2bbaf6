"""Errors that carry a sentence a visitor can read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from .i18n import _

T = TypeVar("T")


class ChatHaruhiError(Exception):
    """Base class: str(error) is a complete, plain sentence for the UI or CLI."""


class RoleFormatError(ChatHaruhiError):
    """A role package is broken; names the file and the field at fault."""

    def __init__(self, file: str, field: str | None, problem: str):
        self.file = file
        self.field = field
        self.problem = problem
        where = _("{file}, field '{field}'", file=file, field=field) if field else file
        super().__init__(_("Role package problem in {where}: {problem}", where=where, problem=problem))


class RoleNotFoundError(ChatHaruhiError):
    """No role answers to the given id or path."""


class EngineError(ChatHaruhiError):
    """The language model failed; the message says what to do about it."""


class EmptyReply(EngineError):
    """The model wrote nothing (it stopped at once): worth one more draw where stopping is likely (continue)."""


class Stopped(ChatHaruhiError):
    """The visitor stopped a reply before it said anything (the page's ■ Stop): nothing to keep, nothing to retry."""


def __getattr__(name: str):
    """`BackendError`, EngineError's name before "engine" became the one word for what answers (0.1's API), still
    imports, and says its new name once."""
    if name == "BackendError":
        from .deprecated import renamed

        renamed("BackendError", "EngineError")
        return EngineError
    raise AttributeError(name)


class InputError(ChatHaruhiError):
    """The visitor's input cannot be used as it is (too long, empty...)."""


class ImportProblem(ChatHaruhiError):
    """A file, zip, card or dataset brought from outside cannot be turned into a role."""


class UnknownNameError(ChatHaruhiError):
    """A registry (engines, embedders, group-scene orders) has nothing by that name; the sentence lists
    what it has, so a typo in a flag or an environment variable is fixed at once."""

    def __init__(self, kind: str, name: str, known: Iterable[str]):
        self.kind, self.name, self.known = kind, name, list(known)
        super().__init__(_("Unknown {kind} '{name}'. Known {kind}s: {known}.", kind=_(kind), name=name,
                           known=", ".join(self.known)))


def look_up(registry: Mapping[str, T], kind: str, name: str) -> T:
    """`registry[name]`, or UnknownNameError naming the `kind` and what the registry holds."""
    try:
        return registry[name]
    except KeyError:
        raise UnknownNameError(kind, name, registry) from None


class HubError(ChatHaruhiError):
    """The Hugging Face Hub could not be reached or does not hold what was asked for."""
