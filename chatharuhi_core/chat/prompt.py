"""Prompt assembly exactly as the ChatHaruhi paper and its code lay it out.

messages = [system: s_R]
         + [user: "Classic scenes for the role are as follows:\n" + scenes joined by "\n###\n"]
         + [user: "Earlier in this conversation:" + recalled exchanges, when memory recalls any]
         + kept history pairs as user/assistant messages
         + [system: post-history instructions, when a character card has them]
         + [user: "{user_role}:「{text}」"]
Scenes are added in order of similarity until the story budget would be exceeded; history is
walked back from the newest whole pair while it fits the history budget. Both stop at the first
item that does not fit, and either may end up empty.

An engine may ask for the scenes after the history instead (`scenes_last`), just before the message
being answered: the same messages in another order. The local engine does, because a prompt that
starts with what the last turn already had (system prompt and history) can be read while the visitor
types, and only the new scenes and message are left to read when they send it (bench/RESULTS.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..config import Budgets
from ..roles.lines import format_query, format_reply
from ..tokens import count_tokens

SCENES_HEADER = "Classic scenes for the role are as follows:\n"
SCENE_SEPARATOR = "\n###\n"

Counter = Callable[[str], int]


@dataclass(frozen=True)
class Exchange:
    """One finished round: who the visitor played, what they said, what the character said, and when
    (`at`, ISO 8601: the page's clock, or an imported chat's session date; "" when unknown, see when.py)."""

    user_role: str
    text: str
    reply: str
    at: str = ""


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


def build_messages(system_prompt: str, character: str, stories: Sequence[str],
                   history: Sequence[Exchange], user_role: str, text: str,
                   budgets: Budgets = Budgets(), count: Counter = count_tokens, post_history: str = "",
                   scenes_last: bool = False) -> list[dict]:
    """The full message list for one turn, budgets applied."""
    packed = pack_stories(stories, budgets.story_tokens, count)
    return assemble_messages(system_prompt, character, packed, history, user_role, text, budgets, count,
                             post_history, scenes_last)


def assemble_messages(system_prompt: str, character: str, packed: Sequence[str],
                      history: Sequence[Exchange], user_role: str, text: str,
                      budgets: Budgets = Budgets(), count: Counter = count_tokens,
                      post_history: str = "", scenes_last: bool = False, recall: str = "") -> list[dict]:
    """The message list from scenes already packed to the budget; history is trimmed here.

    `post_history` (a card's post_history_instructions) goes after the history, just before the
    message being answered, where card authors expect it. `scenes_last`: the scenes after the history
    and post-history text (see the module's docstring). `recall`: earlier exchanges of this conversation
    (memory.py), a message right after the scenes.
    """
    messages = history_messages(system_prompt, character, history, budgets, count, post_history)
    scenes = [{"role": "user", "content": SCENES_HEADER + SCENE_SEPARATOR.join(packed)}] if packed else []
    if recall:
        scenes.append({"role": "user", "content": recall})
    at = len(messages) if scenes_last else 1
    messages[at:at] = scenes
    messages.append({"role": "user", "content": format_query(user_role, text)})
    return messages


def history_messages(system_prompt: str, character: str, history: Sequence[Exchange],
                     budgets: Budgets = Budgets(), count: Counter = count_tokens,
                     post_history: str = "") -> list[dict]:
    """The system prompt, the history kept within its budget and the post-history text: with
    `scenes_last`, how the next turn's prompt starts, known as soon as a reply is complete."""
    messages: list[dict] = [{"role": "system", "content": system_prompt}]
    for ex in trim_history(history, character, budgets.history_tokens, count):
        messages.append({"role": "user", "content": format_query(ex.user_role, ex.text)})
        messages.append({"role": "assistant", "content": format_reply(character, ex.reply)})
    if post_history.strip():
        messages.append({"role": "system", "content": post_history.strip()})
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
_SPEAKER_LINE = re.compile(r"\n\s*[^\s:：「」\n](?:[^:：「」\n]{0,23}[^\s:：「」\n])?\s*[:：]\s*「")


# the prompt's scene separator on a line of its own: a small model that writes it has started another scene
_SEPARATOR_LINE = re.compile(r"\n[ \t]*###")


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


def pending_prefix(raw: str, character: str) -> bool:
    """True while a stream so far could still be the start of the `Name:「` wrapper."""
    s = raw.lstrip()
    return any(w.startswith(s) and len(s) < len(w) for w in (f"{character}:「", f"{character}：「"))
