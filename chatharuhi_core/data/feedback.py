"""Visitors' likes, dislikes and corrections, and the fine-tuning data made from them.

CharacterGLM improves its model from users' corrections ("self-refinement"): a visitor who
dislikes a reply rewrites it as the character should have said it, and the corrected dialogue
feeds the next fine-tune. Every rating or edit in the page appends one record to a JSON Lines
file (crash-safe, see `jsonl`): the role, the prompt messages the model saw, the original reply,
the correction and the rating, and the alternatives the visitor passed over for it (swipes). A reply rated,
edited or swiped several times has several records; the newest one for a reply id holds its final state.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..jsonl import read_records, write_all
from ..roles.lines import format_reply
from .training_data import (
    alternating,
    openai_problems,
    openai_row,
    sharegpt_problems,
    sharegpt_row,
    training_messages,
)


@dataclass(frozen=True)
class FeedbackRecord:
    """A reply's state as the visitor left it, with what it answered: one typed value where there were thirteen
    keywords, so the page and the tests build the same thing."""

    reply_id: str
    role_id: str
    role_name: str
    user_role: str
    text: str  # what the visitor said
    messages: list[dict]  # the prompt as the model received it
    original: str
    corrected: str | None
    rating: str | None
    engine: str = ""
    model: str = ""
    event: str = ""
    passed_over: list[str] | None = None  # the other replies the message had, which the visitor did not keep


def feedback_record(record: FeedbackRecord) -> dict:
    """One line of the feedback file, stamped with the time it was written."""
    r = record
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "event": r.event, "reply_id": r.reply_id,
        "role": r.role_id, "name": r.role_name, "user_role": r.user_role, "text": r.text,
        "messages": r.messages, "original": r.original, "corrected": r.corrected, "rating": r.rating,
        "engine": r.engine, "model": r.model, "passed_over": list(r.passed_over or []),
    }


def latest_per_reply(records: Iterable[dict]) -> list[dict]:
    """The newest record of each reply, in the order replies were first rated."""
    latest: dict[str, dict] = {}
    for rec in records:
        rid = rec.get("reply_id")
        if rid:
            latest.pop(rid, None)
            latest[rid] = rec
    return list(latest.values())


@dataclass
class FeedbackData:
    """What a feedback file turns into."""

    sft: list[list[dict]] = field(default_factory=list)  # conversations to imitate
    preference: list[dict] = field(default_factory=list)  # (prompt, chosen, rejected) for DPO-style training
    replies: int = 0
    corrected: int = 0
    kept_over: int = 0  # pairs from an alternative kept over others (swipes)
    liked: int = 0
    disliked_uncorrected: int = 0
    unusable: int = 0  # no prompt recorded, or a row a trainer would reject
    torn_lines: int = 0


def _pair(prompt: list[dict], name: str, chosen: str, rejected: str) -> dict:
    return {"prompt": alternating(prompt),
            "chosen": [{"role": "assistant", "content": format_reply(name, chosen)}],
            "rejected": [{"role": "assistant", "content": format_reply(name, rejected)}]}


def build_training_data(path: Path) -> FeedbackData:
    """Corrected replies (and liked originals) as SFT rows; corrections also as preference pairs, and so is the
    reply kept over each alternative passed over."""
    read = read_records(path)
    data = FeedbackData(torn_lines=read.skipped)
    for rec in latest_per_reply(read.records):
        data.replies += 1
        prompt, name = rec.get("messages") or [], rec.get("name") or ""
        corrected = (rec.get("corrected") or "").strip()
        original = (rec.get("original") or "").strip()
        if not prompt or not name:
            data.unusable += 1
            continue
        is_correction = bool(corrected) and corrected != original
        kept = corrected if is_correction else original
        others = [r.strip() for r in rec.get("passed_over") or [] if isinstance(r, str) and r.strip()]
        for other in dict.fromkeys(o for o in others if o not in (kept, original)):
            data.preference.append(_pair(prompt, name, kept, other))
            data.kept_over += 1
        if not is_correction and rec.get("rating") != "like":
            data.disliked_uncorrected += rec.get("rating") == "dislike"
            continue
        messages = training_messages(prompt, name, corrected if is_correction else original)
        if openai_problems(openai_row(messages)):
            data.unusable += 1
            continue
        data.sft.append(messages)
        if not is_correction:
            data.liked += 1
            continue
        data.corrected += 1
        data.preference.append(_pair(prompt, name, corrected, original))
    return data


def export_training_data(path: Path, out: Path) -> tuple[FeedbackData, dict[str, Path]]:
    """sft-openai.jsonl, sft-sharegpt.jsonl and preference.jsonl under `out`."""
    data = build_training_data(path)
    files = {"openai": out / "sft-openai.jsonl", "sharegpt": out / "sft-sharegpt.jsonl",
             "preference": out / "preference.jsonl"}
    write_all(files["openai"], (openai_row(m) for m in data.sft))
    write_all(files["sharegpt"], (r for m in data.sft if not sharegpt_problems(r := sharegpt_row(m))))
    write_all(files["preference"], data.preference)
    return data, files
