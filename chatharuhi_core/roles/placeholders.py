"""`{{user}}` and `{{char}}`: the names a card author leaves open until someone chats.

A role keeps `{{user}}` (or `<USER>`) as written; the visitor's name in the story replaces it
wherever text is shown or sent, so a visitor who plays Sam is greeted as Sam. `{{char}}` (or
`<BOT>`) becomes the character's name, or its nickname when the card gives one (card V3).
"""

from __future__ import annotations

import re

USER = re.compile(r"\{\{\s*user\s*\}\}|<user>", re.IGNORECASE)
CHAR = re.compile(r"\{\{\s*char\s*\}\}|<bot>", re.IGNORECASE)
# the start of a placeholder that a stream has not finished yet ("Hello {{us")
_PARTIAL = re.compile(r"(\{\{?\s*[A-Za-z]{0,4}\s*\}?|<[A-Za-z]{0,4})$")


GENERIC_VISITORS = frozenset({"", "user", "you", "{{user}}", "<user>", "visitor", "player"})
_OPENS = re.compile(r"(?:^|[.!?。！？]\s*)[\"'“‘「(]*\s*$")  # a sentence starts where the name goes


def natural_visitor(name: str, language: str) -> str:
    """The visitor's name in the story before they type one: the role's own ("唐僧" for 孙悟空); for a role
    that names nobody (a card's "User"), a word that reads naturally in the role's language: "朋友", "friend"."""
    if (name or "").strip().lower() not in GENERIC_VISITORS:
        return name
    return "朋友" if (language or "").lower().startswith(("zh", "ja")) else "friend"


def fill(text: str, char: str, user_role: str) -> str:
    """The text with the placeholders replaced by the character's and the visitor's names (a lower-case name
    opening a sentence gets its capital: "Friend, you came!")."""
    if "{" not in text and "<" not in text:
        return text
    text = CHAR.sub(lambda _: char, text)

    def name_at(m: re.Match) -> str:
        opens = user_role[:1].islower() and _OPENS.search(text[: m.start()])
        return user_role[:1].upper() + user_role[1:] if opens else user_role

    return USER.sub(name_at, text)


def hold_partial(text: str) -> str:
    """A streamed text minus a trailing placeholder that may still be arriving."""
    m = _PARTIAL.search(text)
    return text[: m.start()] if m and m.group(0) else text


def has_placeholder(text: str) -> bool:
    return bool(USER.search(text) or CHAR.search(text))
