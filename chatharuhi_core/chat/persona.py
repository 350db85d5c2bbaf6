"""Who the player is, and what they ask of the story: a persona and an author's note.

A persona is the player's character: a name (the `{{user}}` of cards and greetings), a short description and
optionally a portrait. The description goes into the system message after the character's own prompt and the
lore it calls up, where SillyTavern's story string puts it, so the character knows whom it talks to.

An author's note is a short instruction the player writes ("keep it tense; it is raining"), inserted `depth`
messages from the end of the conversation on every turn (prompt.lay_out), as SillyTavern and KoboldAI do: near
the end, where a small model still heeds it. Off until written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..i18n import _
from ..jsonl import parse_object

MAX_NAME_CHARS = 40
MAX_DESCRIPTION_CHARS = 728  # Character.AI's persona limit
MAX_NOTE_CHARS = 1000
MAX_DEPTH = 20
DEFAULT_DEPTH = 4  # SillyTavern's


@dataclass(frozen=True)
class Persona:
    """Who the player plays: a name, a description (capped) and a portrait (a file path, "" for none)."""

    name: str
    description: str = ""
    image: str = ""

    def block(self, language: str = "en") -> str:
        """The description as the system message carries it ("" without one)."""
        if not self.description.strip():
            return ""
        if language.startswith("zh"):
            return f"关于{self.name}（正在和你说话的人）：{self.description.strip()}"
        return f"About {self.name}, the one you are talking to: {self.description.strip()}"


def persona(name: object, description: object = "", image: object = "") -> Persona:
    """A checked persona; a sentence for a name or description too long or a missing name."""
    name = str(name or "").strip()
    description = str(description or "").strip()
    if not name:
        raise InputError(_("A persona needs a name: the one the character calls you."))
    if len(name) > MAX_NAME_CHARS:
        raise InputError(_("That persona's name is {count} characters long; the limit is {limit}.", count=len(name),
                           limit=MAX_NAME_CHARS))
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise InputError(_("That persona's description is {count} characters long; the limit is {limit}. Please "
                           "shorten it.", count=format(len(description), ","), limit=MAX_DESCRIPTION_CHARS))
    return Persona(name, description, str(image or ""))


def read_persona(path: str | Path) -> Persona:
    """A persona file: JSON ({"name", "description", "image"}) or text (the name on the first line, the
    description after it). A sentence naming the file for anything else."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(_("Could not read the persona file {path} ({why}).", path=path, why=type(exc).__name__)) from None
    if path.suffix.lower() == ".json":
        data = parse_object(text, _("{path} is not JSON; write {example}.", path=path,
                                    example='{"name": …, "description": …}'),
                            _("{path} should hold one JSON object with a 'name'.", path=path))
        image = data.get("image") or ""
        if image and not Path(image).is_absolute():
            image = str(path.parent / image)
        return persona(data.get("name"), data.get("description"), image)
    first, _sep, rest = text.strip().partition("\n")
    return persona(first.removeprefix("Name:").removeprefix("name:").strip(), rest)


@dataclass(frozen=True)
class AuthorsNote:
    """The player's instruction and how many messages from the end it goes (0: after the message itself)."""

    text: str
    depth: int = DEFAULT_DEPTH


def authors_note(text: object, depth: object = DEFAULT_DEPTH) -> AuthorsNote | None:
    """A checked note (None when empty: off); a sentence when it is too long or its depth is out of range."""
    text = str(text or "").strip()
    if not text:
        return None
    if len(text) > MAX_NOTE_CHARS:
        raise InputError(_("That author's note is {count} characters long; the limit is {limit}.",
                           count=format(len(text), ","), limit=format(MAX_NOTE_CHARS, ",")))
    try:
        depth = int(depth)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(_("An author's note's depth is a whole number of messages from the end.")) from None
    if not 0 <= depth <= MAX_DEPTH:
        raise InputError(_("An author's note goes 0 to {limit} messages from the end, not {depth}.", limit=MAX_DEPTH,
                           depth=depth))
    return AuthorsNote(text, depth)
