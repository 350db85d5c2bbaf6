"""ChatHaruhi 2.0 role files (one jsonl per role, as on silk-road/ChatHaruhi-RolePlaying).

Row 1 holds the system prompt, row 2 a reserved config row, every other row one scene. Each
row carries its text (`text`, or `enc_text` as base64 UTF-8) and one or more embedding
columns: base64 of big-endian float32 values. A column is used as it is when it belongs to the
active embedder; otherwise the texts are embedded again when the store is built.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path

import numpy as np

from ..embedding import Embedder, embedding_column
from ..errors import ImportProblem
from ..i18n import _
from .lines import main_speaker
from .names import with_derived
from .role import Role, Story, derive_role_id, guess_language, json_object_lines

TEXT_KEYS = ("text", "enc_text")
SYSTEM_MARK = "system_prompt"
CONFIG_MARK = "config"
CONFIG_TEXT = "Reserve Config Setting Here"
KNOWN_DIMS = {"luotuo_openai": 1536, "bge_zh_s15": 512, "bge_en_s15": 384}  # bge-small-{zh,en}-v1.5
_ACT_LIKE = re.compile(r"act like\s+(.+?)\s+from\s+(.+?)[.。]", re.IGNORECASE)


def decode_vector(value: str, where: str) -> np.ndarray:
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ImportProblem(_("{where}: the embedding is not valid base64.", where=where)) from None
    if len(raw) % 4:
        raise ImportProblem(_("{where}: the embedding is {count} bytes, not a whole number of float32 values.",
                               where=where, count=len(raw)))
    return np.frombuffer(raw, dtype=">f4").astype(np.float32)


def encode_vector(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype=">f4").tobytes()).decode("ascii")


def _row_text(row: dict, where: str) -> str:
    if isinstance(row.get("text"), str):
        return row["text"]
    if isinstance(row.get("enc_text"), str):
        try:
            return base64.b64decode(row["enc_text"], validate=True).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise ImportProblem(_("{where}: 'enc_text' is not base64 of UTF-8 text.", where=where)) from None
    raise ImportProblem(_("{where}: the row has neither 'text' nor 'enc_text'.", where=where))


def _add_vectors(columns: dict[str, list[np.ndarray]], marks: dict, where: str, embedder: Embedder | None,
                 active: str | None) -> None:
    """A row's embedding columns, each checked for its length (the active embedder's, a known column's, or the
    column's first row's), added to `columns`."""
    for col, value in marks.items():
        if not isinstance(value, str):
            continue
        vec = decode_vector(value, _("{where}, column '{column}'", where=where, column=col))
        want = embedder.dim if col == active and embedder else KNOWN_DIMS.get(col)
        seen = columns.get(col)
        expected = want or (len(seen[0]) if seen else None)
        if expected is not None and len(vec) != expected:
            raise ImportProblem(
                _("{where}, column '{column}': the embedding has {count} dimensions, expected {expected}.",
                  where=where, column=col, count=len(vec), expected=expected)
            )
        columns.setdefault(col, []).append(vec)  # a column missing on some rows is dropped below


def parse_chatharuhi_jsonl(text: str, name: str, *, role_id: str | None = None, role_name: str | None = None,
                           embedder: Embedder | None = None, source: str = "") -> Role:
    """Turn the text of a ChatHaruhi 2.0 jsonl into a Role, keeping usable embedding columns."""
    system_prompt = ""
    stories: list[Story] = []
    columns: dict[str, list[np.ndarray]] = {}
    active = embedding_column(embedder) if embedder else None
    for _n, where, row in json_object_lines(text, name, lambda where, problem: ImportProblem(f"{where}: {problem}")):
        body = _row_text(row, where)
        marks = {k: v for k, v in row.items() if k not in TEXT_KEYS}
        if any(v == SYSTEM_MARK for v in marks.values()):
            system_prompt = body.strip()
            continue
        if any(v == CONFIG_MARK for v in marks.values()) or body.strip() == CONFIG_TEXT:
            continue
        if not body.strip():
            continue
        _add_vectors(columns, marks, where, embedder, active)
        stories.append(Story(id=f"{len(stories) + 1:05d}", text=body.strip()))
    if not stories:
        raise ImportProblem(_("{name} holds no scenes: after the system prompt and config rows there is no story text.",
                               name=name))
    # every column was checked above; only the active embedder's is worth its memory (1536 floats a scene
    # for luotuo_openai), the others would be embedded again anyway
    keep = {active} if active else set(columns)
    embeddings = {c: np.stack(v) for c, v in columns.items() if len(v) == len(stories) and c in keep}
    m = _ACT_LIKE.search(system_prompt)
    texts = [s.text for s in stories]
    name_guess = role_name or (m.group(1).strip() if m else None) or main_speaker(texts, system_prompt, name)
    role_name = (name_guess or Path(name).stem).strip()
    speaker = main_speaker(texts, system_prompt)
    aliases = [speaker] if speaker and speaker != role_name else []  # e.g. listed 凉宫春日, speaking as 春日
    series = m.group(2).strip() if m else ""
    if not system_prompt:
        from .role import fill_system_prompt

        system_prompt = fill_system_prompt(role_name, series)
    sample = system_prompt + "".join(s.text for s in stories[:20])
    language = guess_language(sample)
    return Role(
        id=role_id or derive_role_id(Path(name).stem, text),
        name=role_name,
        aliases=with_derived(role_name, aliases),
        system_prompt=system_prompt,
        stories=stories,
        series=series,
        language=language,
        description=f"{len(stories)} scenes from a ChatHaruhi dataset.",
        user_name=usual_partner(stories, {role_name, *aliases}) or ("用户" if language == "zh" else "User"),
        source=source or name,
        extensions={"chatharuhi_jsonl": {"columns": sorted(embeddings)}},
        embeddings=embeddings,
    )


def usual_partner(stories: list[Story], names: set[str]) -> str | None:
    """Who most often speaks right before the character: the default name for the visitor."""
    from .lines import partner_of

    return partner_of((s.text for s in stories), lambda speaker: speaker in names).name or None


def write_chatharuhi_jsonl(role: Role, path: Path, embedder: Embedder | None = None) -> Path:
    """Write a role as a ChatHaruhi 2.0 jsonl, with the active embedder's column and any kept columns."""
    columns: dict[str, np.ndarray] = {c: np.asarray(v) for c, v in role.embeddings.items()
                                      if len(v) == len(role.stories)}
    if embedder is not None:
        from .store import embed_stories, stored_vectors

        col = embedding_column(embedder)
        if col not in columns:
            vectors = stored_vectors(role, embedder)
            columns[col] = vectors if vectors is not None else embed_stories(role, embedder)
    mark_cols = list(columns) or ["embedding"]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for text, mark in ((role.system_prompt, SYSTEM_MARK), (CONFIG_TEXT, CONFIG_MARK)):
            f.write(json.dumps({"text": text, **dict.fromkeys(mark_cols, mark)}, ensure_ascii=False) + "\n")
        for i, story in enumerate(role.stories):
            row = {"text": story.text}
            row.update({c: encode_vector(v[i]) for c, v in columns.items()})
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
