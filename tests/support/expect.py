"""What a test may expect of the app's output: the lines the offline engine can say for a role, and fine-tuning
files that trainers load. Shared by every lane, so that one lane's test never borrows another's module."""

from __future__ import annotations

import json
from pathlib import Path


def lines_of(role_id: str) -> set[str]:
    """Every line the script engine may answer with for a bundled role: the character's own lines in its scenes,
    or, where none answers, one of its greetings (the deflection)."""
    from chatharuhi_core.roles.lines import parse_scene_lines
    from chatharuhi_core.roles.sources import load_role

    role = load_role(role_id)
    return {t for s in role.stories for spk, t in parse_scene_lines(s.text) if spk in role.speaker_names} | set(
        role.greetings)


def rows(path: Path) -> list[dict]:
    """A JSONL file's records."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def check_files(out: Path, expected_rows: int) -> tuple[list[dict], list[dict]]:
    """The synthesized openai.jsonl and sharegpt.jsonl in `out` hold `expected_rows` rows each, in the turn order
    trainers accept, the same dialogues in both formats and no prompt twice; returns both files' rows."""
    from chatharuhi_core.data.training_data import openai_problems, sharegpt_problems

    openai, sharegpt = rows(out / "openai.jsonl"), rows(out / "sharegpt.jsonl")
    assert len(openai) == len(sharegpt) == expected_rows
    for a, b in zip(openai, sharegpt):
        assert openai_problems(a) == [] and sharegpt_problems(b) == []
        assert set(a) == {"messages"} and a["messages"][0]["role"] == "system"
        roles = [m["role"] for m in a["messages"][1:]]
        assert roles == ["user", "assistant"] * (len(roles) // 2)  # the scenes and the query are one turn
        assert b["system"] == a["messages"][0]["content"]
        assert [t["value"] for t in b["conversations"]] == [m["content"] for m in a["messages"][1:]]
    users = [json.dumps(a["messages"][1:-1], ensure_ascii=False) for a in openai]
    assert len(set(users)) == len(users)  # no prompt twice
    return openai, sharegpt
