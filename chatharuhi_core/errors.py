"""Errors that carry a sentence a visitor can read."""

from __future__ import annotations


class ChatHaruhiError(Exception):
    """Base class: str(error) is a complete, plain sentence for the UI or CLI."""


class RoleFormatError(ChatHaruhiError):
    """A role package is broken; names the file and the field at fault."""

    def __init__(self, file: str, field: str | None, problem: str):
        self.file = file
        self.field = field
        self.problem = problem
        where = f"{file}, field '{field}'" if field else file
        super().__init__(f"Role package problem in {where}: {problem}")


class RoleNotFoundError(ChatHaruhiError):
    """No role answers to the given id or path."""


class BackendError(ChatHaruhiError):
    """The language model failed; the message says what to do about it."""


class InputError(ChatHaruhiError):
    """The visitor's input cannot be used as it is (too long, empty...)."""


class ImportProblem(ChatHaruhiError):
    """A file, zip, card or dataset brought from outside cannot be turned into a role."""


class HubError(ChatHaruhiError):
    """The Hugging Face Hub could not be reached or does not hold what was asked for."""
