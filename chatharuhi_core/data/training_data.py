"""Fine-tuning rows in the two formats trainers read, with the turn order they require.

- OpenAI chat: `{"messages": [{"role": "system"|"user"|"assistant", "content": ...}, ...]}`
- ShareGPT (LLaMA-Factory, Axolotl): `{"system": ..., "conversations": [{"from": "human"|"gpt",
  "value": ...}, ...]}`

ChatHaruhi's prompt sends the scenes and the query as two user messages in a row; the original
project's data kept that, and trainers that expect alternating turns rejected its files. Here
every row is folded first: one system message, then user and assistant strictly alternating,
starting with the user and ending with the reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..chat.prompt import fold_messages
from ..roles.lines import format_reply

SHAREGPT_FROM = {"user": "human", "assistant": "gpt"}


def alternating(messages: Sequence[dict]) -> list[dict]:
    """Leading system messages joined into one; the rest folded so roles alternate."""
    system = [m["content"] for m in messages if m["role"] == "system"]
    rest = [m for m in messages if m["role"] != "system"]
    out = [{"role": "system", "content": "\n\n".join(system)}] if system else []
    return out + fold_messages(rest)


def training_messages(prompt: Sequence[dict], character: str, reply: str) -> list[dict]:
    """The prompt a chatbot sent, then the reply as the character's script line (what it should say)."""
    return [*alternating(prompt), {"role": "assistant", "content": format_reply(character, reply)}]


def openai_row(messages: Sequence[dict]) -> dict:
    return {"messages": [{"role": m["role"], "content": m["content"]} for m in messages]}


def sharegpt_row(messages: Sequence[dict]) -> dict:
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    turns = [{"from": SHAREGPT_FROM[m["role"]], "value": m["content"]} for m in messages if m["role"] != "system"]
    return {"system": system, "conversations": turns} if system else {"conversations": turns}


@dataclass(frozen=True)
class _Spelling:
    """How a format writes its turns (the keys of a turn's speaker and text, the two speakers, what a turn is
    called): one value per format, so one check serves both."""

    role_key: str
    text_key: str
    ask: str
    answer: str
    noun: str


_OPENAI = _Spelling("role", "content", "user", "assistant", "message")
_SHAREGPT = _Spelling("from", "value", "human", "gpt", "turn")


def _turn_problems(turns: list, spelling: _Spelling, first_number: int = 1) -> list[str]:
    """Roles alternate ask, answer, ask...; no text is empty. Numbers count from `first_number`."""
    s = spelling
    problems = []
    for i, t in enumerate(turns):
        want = s.ask if i % 2 == 0 else s.answer
        if t.get(s.role_key) != want:
            got = f"is {t.get(s.role_key)!r}" if s.noun == "message" else f"is from {t.get(s.role_key)!r}"
            problems.append(f"{s.noun} {i + first_number} {got}, expected {want!r}")
        if not isinstance(t.get(s.text_key), str) or not t[s.text_key].strip():
            problems.append(f"{s.noun} {i + first_number} is empty")
    return problems


def openai_problems(row: dict) -> list[str]:
    """Why a trainer would reject this row (empty when it is fine)."""
    msgs = row.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return ["no messages"]
    body = msgs[1:] if msgs[0].get("role") == "system" else msgs
    problems = _turn_problems(body, _OPENAI, 1 + len(msgs) - len(body))
    if not body or body[-1].get("role") != "assistant":
        problems.append("does not end with an assistant reply")
    return problems


def sharegpt_problems(row: dict) -> list[str]:
    turns = row.get("conversations")
    if not isinstance(turns, list) or not turns:
        return ["no conversations"]
    problems = _turn_problems(turns, _SHAREGPT)
    if len(turns) % 2:
        problems.append("odd number of turns: the last one has no answer")
    return problems
