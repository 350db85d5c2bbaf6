"""The player's two writing aids: continue (the last reply goes on from where it stopped) and my line (the
engine writes the player's next line, for them to edit and send).

A model is asked with the turn's own prompt: for continue, the reply so far as the character's last message and a
nudge to go on without repeating it (SillyTavern's way with chat models); for my line, the conversation and
the character's scenes with an instruction to write the player's line instead. The offline engine quotes: the
next line of the same scene, or a line of the player's role (engines/script.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..roles.lines import format_reply
from .prompt import fold_messages

_NO_SPACE_BEFORE = ",.;:!?，。；：！？、…」』）)]"
CONTINUE_NUDGE = {"en": "[Continue your last message from exactly where it stopped. Do not repeat any of it.]",
                  "zh": "[接着你的上一句话往下说，从它停下的地方继续，不要重复已经说过的内容。]"}


def _lang(language: str) -> str:
    return "zh" if (language or "").startswith("zh") else "en"


def gap(before: str, more: str) -> str:
    """What goes between a reply and what continues it: a space between two words of a spaced script, nothing
    before punctuation or between Chinese characters."""
    before, more = before.rstrip(), more.strip()
    if not before or not more or more[0] in _NO_SPACE_BEFORE or not (before[-1].isascii() and more[0].isascii()):
        return ""
    return " "


def joined(before: str, more: str) -> str:
    """A reply and what continues it, with the gap between them."""
    return before.rstrip() + gap(before, more) + more.strip()


def cut_mark_off(reply: str) -> str:
    """The reply without the "…" a reply cut at the length limit ends with (chatbot.respond): it goes on from its
    last word."""
    return reply.rstrip().removesuffix("…").rstrip() or reply


def continue_messages(messages: Sequence[dict], character: str, reply: str, language: str,
                      fold: bool = False) -> list[dict]:
    """The turn's prompt with the reply so far as the character's message and the nudge to go on."""
    out = [*messages, {"role": "assistant", "content": format_reply(character, reply)},
           {"role": "system", "content": CONTINUE_NUDGE[_lang(language)]}]
    return fold_messages(out) if fold else out


def my_line_system(character: str, player: str, about_player: str, language: str) -> str:
    """The system message when the player's line is asked for: whose line, and who the player is."""
    if _lang(language) == "zh":
        text = (f"你在为一段和{character}的角色扮演写{player}的台词。只写{player}接下来对{character}说的一句话，"
                f"用{player}的口吻，不要写{character}的话。")
    else:
        text = (f"You write {player}'s lines in a role-play with {character}. Write only what {player} says next "
                f"to {character}, in {player}'s own voice; never {character}'s words.")
    return "\n\n".join(p for p in (text, about_player) if p)


def my_line_request(player: str, language: str) -> str:
    """The last message when the player's line is asked for."""
    if _lang(language) == "zh":
        return f"写出{player}的下一句话。"
    return f"Write {player}'s next line."
