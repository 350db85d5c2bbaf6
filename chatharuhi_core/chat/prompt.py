"""Prompt assembly exactly as the ChatHaruhi paper and its code lay it out.

messages = [system: s_R]
         + [user: "Classic scenes for the role are as follows:\n" + scenes joined by "\n###\n"]
         + [user: "Earlier in this conversation:" + recalled exchanges, when memory recalls any]
         + kept history pairs as user/assistant messages
         + [system: post-history instructions, when a character card has them]
         + [user: "{user_role}:「{text}」"]
A group scene lays out its members' prompts the same way (`lay_out`), with the lines a member witnessed as
its history. Scenes are added in order of similarity until the story budget would be exceeded; history is
walked back from the newest whole pair while it fits the history budget. Both stop at the first
item that does not fit, and either may end up empty.

An engine may ask for the scenes after the history instead (its Layout's `scenes_last`), just before the
message being answered: the same messages in another order. The local engine does, because a prompt that
starts with what the last turn already had (system prompt and history) can be read while the visitor
types, and only the new scenes and message are left to read when they send it (bench/RESULTS.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..roles.card_extras import DepthNote
from ..roles.lines import format_query, format_reply
from ..tokens import count_tokens

SCENES_HEADER = "Classic scenes for the role are as follows:\n"
SCENE_SEPARATOR = "\n###\n"

Counter = Callable[[str], int]


@dataclass(frozen=True)
class Exchange:
    """One finished round: who the visitor played, what they said, what the character said, and when
    (`at`, ISO 8601: the page's clock, or an imported chat's session date; "" when unknown, see when.py).
    `alternatives`: every reply this message has had ("swipes", swipes.py), the kept one (`reply`) among them;
    empty while it has had one. Only `reply` reaches a prompt."""

    user_role: str
    text: str
    reply: str
    at: str = ""
    alternatives: tuple[str, ...] = field(default=(), compare=False)


def pack_stories(stories: Sequence[str], budget: int, count: Counter = count_tokens) -> list[str]:
    """Most similar first; stop at the first scene that would overflow the budget."""
    packed: list[str] = []
    used = 0
    for story in stories:
        n = count(story)
        if used + n > budget:
            break
        packed.append(story)
        used += n
    return packed


def trim_history(history: Sequence[Exchange], character: str, budget: int,
                 count: Counter = count_tokens) -> list[Exchange]:
    """Newest pairs first, whole pairs only; an empty list when even the newest does not fit."""
    kept: list[Exchange] = []
    used = 0
    for ex in reversed(history):
        n = count(format_query(ex.user_role, ex.text)) + count(format_reply(character, ex.reply))
        if used + n > budget:
            break
        kept.append(ex)
        used += n
    kept.reverse()
    return kept


@dataclass(frozen=True)
class Layout:
    """How an engine reads a prompt: an explicit value, declared by the engine (its `layout`) or given to a
    conversation (ChatHaruhi's `layout=`: training rows are laid out as the local model reads them).

    scenes_last: the classic scenes (and memory) after the history and post-history text, just before the
    message (the local engine: the prompt's start is then the same from turn to turn and read ahead).
    fold: no system message and no two user messages in a row (`fold_messages`), for servers that reject them.
    """

    scenes_last: bool = False
    fold: bool = False


@dataclass(frozen=True)
class PromptParts:
    """What one turn's prompt is made of, gathered by the chat (ChatHaruhi.prepare) or a group scene
    (Scene.prepare); `lay_out` is the one place that orders them."""

    system: str  # the system message: system prompt, lore called up, the visitor's persona, pinned memories
    history: Sequence[dict] = ()  # the recent messages kept within the history budget
    post_history: str = ""  # a card's post-history instructions
    scenes: Sequence[str] = ()  # the classic scenes, packed to their budget
    memory: str = ""  # notes and earlier exchanges (or lines) recalled from beyond the history
    message: str = ""  # what the character answers, as the last user message
    note: str = ""  # the player's author's note (persona.py), `note_depth` messages from the end
    note_depth: int = 4
    character_note: DepthNote | None = None  # a card's depth_prompt (card_extras.py), just before the author's note


def prompt_start(parts: PromptParts) -> list[dict]:
    """The system prompt, the history and the post-history text: with `scenes_last`, how the prompt starts,
    known as soon as the last reply is complete."""
    messages: list[dict] = [{"role": "system", "content": parts.system}, *parts.history]
    if parts.post_history.strip():
        messages.append({"role": "system", "content": parts.post_history.strip()})
    return messages


def lay_out(parts: PromptParts, layout: Layout = Layout()) -> list[dict]:
    """The message list: the prompt's start, with the scenes and memory after the system prompt (the paper's
    order) or after the post-history text (`scenes_last`), then the message; folded when the layout says so."""
    messages = prompt_start(parts)
    extra = [{"role": "user", "content": SCENES_HEADER + SCENE_SEPARATOR.join(parts.scenes)}] if parts.scenes else []
    if parts.memory:
        extra.append({"role": "user", "content": parts.memory})
    at = len(messages) if layout.scenes_last else 1
    messages[at:at] = extra
    messages.append({"role": "user", "content": parts.message})
    _insert_notes(messages, parts, 1 + (0 if layout.scenes_last else len(extra)))
    return fold_messages(messages) if layout.fold else messages


def _insert_notes(messages: list[dict], parts: PromptParts, first: int) -> None:
    """The card's character's note and the player's author's note, each `depth` messages from the end of the
    conversation (the history and the message; the scenes and memory are not counted): 0 after the message, 1 just
    before it, and before the oldest message kept when the conversation is shorter. At the same depth the
    character's note comes first, so the player's word is the later one."""
    said = [first + i for i in range(len(parts.history))] + [len(messages) - 1]

    def at(depth: int) -> int:
        depth = min(depth, len(said))
        return len(messages) if depth == 0 else said[-depth]

    notes = []
    if parts.character_note and parts.character_note.text:
        notes.append((at(parts.character_note.depth), 0, parts.character_note.role, parts.character_note.text))
    if parts.note:
        notes.append((at(parts.note_depth), 1, "system", parts.note))
    for where, _order, role, text in sorted(notes, reverse=True):  # from the end, so no insert moves another's place
        messages.insert(where, {"role": role, "content": text})


def exchange_messages(history: Sequence[Exchange], character: str, budget: int,
                      count: Counter = count_tokens) -> list[dict]:
    """The history kept within its budget (trim_history), as user and assistant messages."""
    messages: list[dict] = []
    for ex in trim_history(history, character, budget, count):
        messages.append({"role": "user", "content": format_query(ex.user_role, ex.text)})
        messages.append({"role": "assistant", "content": format_reply(character, ex.reply)})
    return messages


def fold_messages(messages: Sequence[dict]) -> list[dict]:
    """The same prompt for servers that reject a system message or two user messages in a row.

    The system prompt opens the first user message, and neighbouring messages of one role are
    joined with a blank line, so roles alternate user, assistant, user... and end with the user.
    """
    folded: list[dict] = []
    system: list[str] = []
    for m in messages:
        role, content = m["role"], m["content"]
        if role == "system":
            system.append(content)
            continue
        if system and role == "user":
            content = "\n\n".join([*system, content])
            system = []
        elif system:  # an assistant line first: the system prompt becomes the user turn before it
            folded.append({"role": "user", "content": "\n\n".join(system)})
            system = []
        if folded and folded[-1]["role"] == role:
            folded[-1] = {"role": role, "content": folded[-1]["content"] + "\n\n" + content}
        else:
            folded.append({"role": role, "content": content})
    if system:  # system text with no user message after it
        tail = "\n\n".join(system)
        if folded and folded[-1]["role"] == "user":
            folded[-1] = {"role": "user", "content": folded[-1]["content"] + "\n\n" + tail}
        else:
            folded.append({"role": "user", "content": tail})
    return folded


# ------------------------------------------------------------ reply clean-up

# a new line that opens another speaker's turn, names with spaces included ("Count Dracula:「")
_SPEAKER = r"[^\s:：「」\n](?:[^:：「」\n]{0,23}[^\s:：「」\n])?\s*[:：]\s*「"  # `Name:「`, spaces in names too
_SPEAKER_LINE = re.compile(r"\n\s*" + _SPEAKER)
_SPEAKER_OPENING = re.compile(r"^" + _SPEAKER)


# the prompt's scene separator on a line of its own (or ending one): a small model that writes it has started
# another scene
_SEPARATOR_LINE = re.compile(r"\n[ \t]*###|[ \t]*###[ \t]*\n")


def clean_reply(raw: str, character: str) -> str:
    """Strip a `Name:「…」` wrapper and cut where another speaker's line or another scene starts."""
    text = raw.strip()
    for prefix in (f"{character}:「", f"{character}：「", f"{character}:", f"{character}："):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    if text.startswith("「"):
        text = text[1:]
    for line in (_SPEAKER_LINE, _SEPARATOR_LINE):
        m = line.search(text)
        if m:
            text = text[: m.start()]
    text = text.strip()
    if text.endswith("」") and text.count("「") < text.count("」"):
        text = text[:-1]
    return text.strip()


def unwrapped(line: str) -> str:
    """A line without the `Name:「…」` a model wrote it under, whoever's name it is (a line written for the
    visitor: a model may name them otherwise)."""
    return _SPEAKER_OPENING.sub("", line).removesuffix("」").strip() or line


def pending_prefix(raw: str, character: str) -> bool:
    """True while a stream so far could still be the start of the `Name:「` wrapper."""
    s = raw.lstrip()
    return any(w.startswith(s) and len(s) < len(w) for w in (f"{character}:「", f"{character}：「"))
