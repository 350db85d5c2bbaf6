"""The page's memory panel: the character's pinned memories of this conversation, listed, added, pinned from
the visitor's last message, rewritten and forgotten. Each function takes the visitor's Conversation and
returns a new one (page state is replaced, never changed in place), with a sentence for the visitor."""

from __future__ import annotations

import html

from ..chat.memory import Memory
from ..errors import InputError
from .chat import Conversation

EMPTY = ("_No memories yet. Write a fact below (“my sister is Anna”) or pin your last message: the character "
         "keeps them for the rest of this conversation. · 还没有记忆：写下一件事，角色会一直记得。_")


def memory_markdown(conv: Conversation | None) -> str:
    """The pins, numbered as the Forget list numbers them; a pin that was there for the last reply but not in
    its prompt is marked: the memory budget was full."""
    pins = conv.memory.pins if conv else []
    if not pins:
        return EMPTY
    last = conv.last
    prompt = last.messages[0]["content"] if last is not None and last.messages else ""
    rows = []
    for n, pin in enumerate(pins, 1):
        where = f" · from exchange {pin.turn}" if pin.turn else ""
        left_out = last is not None and pin.made_at < len(conv.history) and f"- {pin.text}" not in prompt
        over = " · ✂️ over the memory budget: not in the last reply's prompt" if left_out else ""
        rows.append(f"{n}. {html.escape(pin.text, quote=False)}{where}{over}")
    return "**What the character remembers · 角色记得**\n\n" + "\n".join(rows)


def memory_choices(conv: Conversation | None) -> list[tuple[str, int]]:
    """(label, number) for the list a memory is picked from to forget or rewrite."""
    pins = conv.memory.pins if conv else []
    return [(f"{n}. {pin.text[:60]}{'…' if len(pin.text) > 60 else ''}", n) for n, pin in enumerate(pins, 1)]


def _changed(conv: Conversation, change) -> tuple[Conversation, str]:
    new = conv.copy()
    try:
        said = change(new.memory)
    except InputError as exc:
        return conv, str(exc)
    return new, said


def remember_fact(conv: Conversation | None, text: str) -> tuple[Conversation | None, str]:
    if conv is None:
        return conv, "Pick a character first."

    def add(memory: Memory) -> str:
        return f"Remembered: {memory.remember(text or '', made_at=len(conv.history)).text} · 记住了"
    return _changed(conv, add)


def pin_last_message(conv: Conversation | None, user_role: str) -> tuple[Conversation | None, str]:
    """Pin what the visitor said last (with their name in the story, as the character heard it)."""
    if conv is None or not conv.history:
        return conv, "Send a message first; then it can be pinned. · 先发一句话再记住。"
    turn = len(conv.history)
    ex = conv.history[-1]

    def pin(memory: Memory) -> str:
        return f"Pinned: {memory.remember(f'{ex.user_role or user_role}: {ex.text}', turn, turn).text} · 记住了"
    return _changed(conv, pin)


def forget_memory(conv: Conversation | None, number: int | None) -> tuple[Conversation | None, str]:
    if conv is None or not number:
        return conv, "Choose the memory to forget in the list. · 请先选择一条记忆。"
    return _changed(conv, lambda memory: f"Forgotten: {memory.forget(int(number)).text} · 忘记了")


def rewrite_memory(conv: Conversation | None, number: int | None, text: str) -> tuple[Conversation | None, str]:
    if conv is None or not number:
        return conv, "Choose the memory to rewrite in the list, and write its new text above. · 请先选择一条记忆。"
    return _changed(conv, lambda memory: f"Rewritten: {memory.edit(int(number), text or '').text} · 改好了")
