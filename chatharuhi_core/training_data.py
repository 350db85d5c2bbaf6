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

from .prompt import fold_messages, format_reply

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


def openai_problems(row: dict) -> list[str]:
    """Why a trainer would reject this row (empty when it is fine)."""
    msgs = row.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return ["no messages"]
    problems = []
    body = msgs[1:] if msgs[0].get("role") == "system" else msgs
    for i, m in enumerate(body):
        want = "user" if i % 2 == 0 else "assistant"
        if m.get("role") != want:
            problems.append(f"message {i + 1 + len(msgs) - len(body)} is {m.get('role')!r}, expected {want!r}")
        if not isinstance(m.get("content"), str) or not m["content"].strip():
            problems.append(f"message {i + 1 + len(msgs) - len(body)} is empty")
    if not body or body[-1].get("role") != "assistant":
        problems.append("does not end with an assistant reply")
    return problems


def sharegpt_problems(row: dict) -> list[str]:
    turns = row.get("conversations")
    if not isinstance(turns, list) or not turns:
        return ["no conversations"]
    problems = []
    for i, t in enumerate(turns):
        want = "human" if i % 2 == 0 else "gpt"
        if t.get("from") != want:
            problems.append(f"turn {i + 1} is from {t.get('from')!r}, expected {want!r}")
        if not isinstance(t.get("value"), str) or not t["value"].strip():
            problems.append(f"turn {i + 1} is empty")
    if len(turns) % 2:
        problems.append("odd number of turns: the last one has no answer")
    return problems
