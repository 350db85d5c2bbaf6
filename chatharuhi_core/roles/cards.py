"""Character cards (V1, V2 `chara_card_v2`, V3 `chara_card_v3`), as JSON or inside a PNG.

Import maps a card onto a Role in SillyTavern's order: the card's system_prompt (with
`{{original}}` standing for the paper's template) and then the definition (description,
personality, scenario) make the system prompt; post_history_instructions are sent after the
history; the lorebook fires by keys (lorebook.py) and each entry is also a retrievable scene;
first_mes and alternate_greetings are the greetings; each `<START>` block of mes_example a scene.
`{{char}}` becomes the name at import, `{{user}}` stays and is filled with the visitor's name at
chat time. The whole card stays in role.extensions["card"], so
an export writes back every field the card had, unknown extensions included. Export also
writes the role's own data under data.extensions.chatharuhi, so a ChatHaruhi role survives a
trip through a card without loss.
"""

from __future__ import annotations

import base64
import binascii
import copy
import io
import json
import re
import struct
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ImportProblem
from ..i18n import _
from ..jsonl import why_not_json
from .lines import parse_scene_lines
from .lorebook import LoreEntry, book_from_json
from .names import with_derived
from .role import Role, Story, derive_role_id, fill_system_prompt, guess_language, parse_role_json, parse_stories
from .safety import DEFAULT_LIMITS, PNG_SIGNATURE, Limits

V2 = "chara_card_v2"
V3 = "chara_card_v3"
V1_FIELDS = ("name", "description", "personality", "scenario", "first_mes", "mes_example")
V2_FIELDS = V1_FIELDS + ("creator_notes", "system_prompt", "post_history_instructions", "alternate_greetings",
                         "character_book", "tags", "creator", "character_version", "extensions")
V3_ONLY = ("assets", "nickname", "creator_notes_multilingual", "source", "group_only_greetings",
           "creation_date", "modification_date")
CARD_KEYWORDS = ("ccv3", "chara")  # readers prefer ccv3
EXT_KEY = "chatharuhi"
DEFAULT_USER = "User"
IMPORT_VERSION = "card-import-3:"

_CHAR = re.compile(r"\{\{\s*char\s*\}\}|<bot>", re.IGNORECASE)
_USER = re.compile(r"\{\{\s*user\s*\}\}|<user>", re.IGNORECASE)
_START = re.compile(r"^\s*<start>\s*$", re.IGNORECASE | re.MULTILINE)
_SPEAKER = re.compile(r"^\s*([^:：「」\n]{1,40}?)\s*[:：]\s*(.*)$")


# ------------------------------------------------------------------ PNG chunks


def png_text_chunks(data: bytes, name: str, max_chunk: int = 64 * 1024 * 1024) -> dict[str, str]:
    """tEXt, zTXt and iTXt chunks of a PNG by lower-cased keyword, read without decoding pixels."""
    if not data.startswith(PNG_SIGNATURE):
        raise ImportProblem(_("{name} is not a PNG file.", name=name))
    out: dict[str, str] = {}
    pos = len(PNG_SIGNATURE)
    while pos + 8 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if len(body) < length:
            raise ImportProblem(_("{name} is a truncated PNG file.", name=name))
        pos += 12 + length
        if ctype == b"IEND":
            break
        if ctype not in (b"tEXt", b"zTXt", b"iTXt") or b"\x00" not in body:
            continue
        keyword, rest = body.split(b"\x00", 1)
        key = keyword.decode("latin-1").lower()
        try:
            if ctype == b"tEXt":
                text = rest.decode("latin-1")
            elif ctype == b"zTXt":
                text = _inflate(rest[1:], max_chunk).decode("latin-1")
            else:
                compressed, rest = rest[0], rest[2:]
                _lang, _translated, value = rest.split(b"\x00", 2)
                text = (_inflate(value, max_chunk) if compressed else value).decode("utf-8")
        except (ValueError, zlib.error, UnicodeDecodeError):
            continue
        out.setdefault(key, text)
    return out


def _inflate(data: bytes, limit: int) -> bytes:
    d = zlib.decompressobj()
    out = d.decompress(data, limit + 1)
    if len(out) > limit:
        raise ValueError("chunk too large")
    return out


def _chunk(ctype: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + ctype + body + struct.pack(">I", zlib.crc32(ctype + body) & 0xFFFFFFFF)


def png_with_text(png: bytes, texts: dict[str, str]) -> bytes:
    """The PNG with its card chunks replaced by the given tEXt chunks (ASCII values)."""
    pos = len(PNG_SIGNATURE)
    kept = [PNG_SIGNATURE]
    drop = {k.lower() for k in (*CARD_KEYWORDS, *texts)}
    while pos + 8 <= len(png):
        length, ctype = struct.unpack(">I4s", png[pos : pos + 8])
        whole = png[pos : pos + 12 + length]
        pos += 12 + length
        if ctype == b"IEND":
            kept.extend(_chunk(b"tEXt", k.encode("latin-1") + b"\x00" + v.encode("ascii")) for k, v in texts.items())
            kept.append(whole)
            break
        if ctype in (b"tEXt", b"zTXt", b"iTXt") and whole[8:].split(b"\x00", 1)[0].decode("latin-1").lower() in drop:
            continue
        kept.append(whole)
    return b"".join(kept)


# ------------------------------------------------------------------ reading cards


def card_from_json(obj: Any, name: str) -> tuple[str, dict[str, Any]]:
    """(spec, data) for a V1, V2 or V3 card object."""
    if not isinstance(obj, dict):
        raise ImportProblem(_("{name}: a character card must be a JSON object.", name=name))
    spec = obj.get("spec")
    if spec in (V2, V3):
        data = obj.get("data")
        if not isinstance(data, dict):
            raise ImportProblem(_("{name}: a {spec} card needs a 'data' object.", name=name, spec=spec))
        return spec, copy.deepcopy(data)
    if spec is not None:
        raise ImportProblem(_("{name}: the card spec '{spec}' is not one this app reads (V1, V2 or V3).", name=name,
                               spec=spec))
    if not any(k in obj for k in V1_FIELDS):
        raise ImportProblem(_("{name} does not look like a character card (no name, description or first_mes).",
                               name=name))
    return "chara_card_v1", copy.deepcopy(obj)


def read_card_bytes(data: bytes, name: str, limits: Limits = DEFAULT_LIMITS) -> tuple[str, dict[str, Any], bytes | None]:
    """(spec, data, portrait PNG bytes or None) from a card PNG or JSON file."""
    if data.startswith(PNG_SIGNATURE):
        chunks = png_text_chunks(data, name, limits.max_file_bytes)
        raw = next((chunks[k] for k in CARD_KEYWORDS if k in chunks), None)
        if raw is None:
            raise ImportProblem(_("{name} is a PNG without a character card inside (no 'chara' or 'ccv3' chunk).",
                                   name=name))
        try:
            text = base64.b64decode(raw.strip(), validate=False).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise ImportProblem(_("{name}: the card chunk is not base64 of UTF-8 JSON.", name=name)) from None
        image = data
    elif name.lower().endswith(".png"):  # named .png, but its first bytes are not a PNG's
        raise ImportProblem(_("{name} is not a PNG image (it does not start with the PNG signature), so it cannot "
                              "hold a character card. Upload the card's own .png, or its .json.", name=name))
    else:
        from .safety import decode_text

        text, image = decode_text(data, name), None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportProblem(_("{name}: the card is not valid JSON ({why}, line {line}).", name=name, why=why_not_json(exc),
                               line=exc.lineno)) from None
    spec, card = card_from_json(obj, name)
    return spec, card, image


def _text(card: dict, key: str) -> str:
    value = card.get(key)
    return value if isinstance(value, str) else ""


def _texts(card: dict, key: str) -> list[str]:
    value = card.get(key)
    return [v for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []


def expand_char(text: str, char: str) -> str:
    """`{{char}}` becomes the name now (it is fixed for a role); `{{user}}` stays for chat time."""
    return _CHAR.sub(lambda _: char, text)


def example_scenes(mes_example: str, char: str) -> list[str]:
    """Each <START> block as a scene in `Name:「line」` form; unprefixed lines continue the last one.

    The visitor's lines keep `{{user}}` as their speaker, filled with the visitor's name at chat time.
    """
    scenes = []
    for block in _START.split(mes_example or ""):
        lines: list[list[str]] = []  # [speaker or "", text]
        for raw in expand_char(block, char).splitlines():
            if not raw.strip():
                continue
            m = _SPEAKER.match(_USER.sub("{{user}}", raw))
            if m and m.group(2).strip():
                lines.append([m.group(1).strip(), m.group(2).strip().strip("「」")])
            elif lines and lines[-1][0]:
                lines[-1][1] += " " + raw.strip()
            else:
                lines.append(["", raw.strip()])
        text = "\n".join(f"{s}:「{t}」" if s else t for s, t in lines)
        if text.strip():
            scenes.append(text)
    return scenes


def lore_scenes(entries: Sequence[LoreEntry], prefix: str = "lore") -> list[Story]:
    """Every enabled lorebook entry is also a scene (`prefix-NNN`), found by meaning when no key is said."""
    stories = []
    for n, entry in enumerate(entries, start=1):
        if entry.enabled:
            label = f"[{', '.join(entry.keys)}] " if entry.keys else ""
            stories.append(Story(id=f"{prefix}-{n:03d}", text=f"{label}{entry.content}"))
    return stories


def _from_extension(ext: Any, card: dict, role_id: str) -> Role | None:
    """A role written by our own exporter, restored whole from data.extensions.chatharuhi.

    It gets a new id all the same: an imported card must never take over a bundled role's id.
    """
    if not isinstance(ext, dict) or not isinstance(ext.get("role"), dict):
        return None
    kwargs = parse_role_json(ext["role"], "card extensions.chatharuhi.role")
    rows = ext.get("stories")
    if not isinstance(rows, list):
        return None
    stories = parse_stories("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "card extensions.chatharuhi")
    prompt = ext.get("system_prompt") if isinstance(ext.get("system_prompt"), str) else ""
    kwargs.update(name=_text(card, "name").strip() or kwargs["name"], id=role_id)
    kwargs["greeting"] = _text(card, "first_mes") or kwargs["greeting"]
    kwargs["alternate_greetings"] = _texts(card, "alternate_greetings") or kwargs["alternate_greetings"]
    return Role(system_prompt=prompt or fill_system_prompt(kwargs["name"], kwargs["series"]), stories=stories, **kwargs)


def card_to_role(spec: str, card: dict[str, Any], *, role_id: str | None = None, source: str = "") -> Role:
    """Map a card's fields onto a Role; the card itself is kept for a lossless export."""
    name = _text(card, "name").strip()
    if not name:
        raise ImportProblem(_("{source} has no name; a character card needs a 'name'.", source=source or _("The card")))
    # the importer's version is part of the id: a card read before placeholders and lorebooks were
    # kept is read again, while roles already imported under the old id keep working
    rid = role_id or derive_role_id(name, IMPORT_VERSION + json.dumps(card, sort_keys=True, ensure_ascii=False))
    extensions = card.get("extensions") if isinstance(card.get("extensions"), dict) else {}
    kept = {k: v for k, v in card.items() if k != "extensions"}
    kept["extensions"] = {k: v for k, v in extensions.items() if k != EXT_KEY}
    own = _from_extension(extensions.get(EXT_KEY), card, rid)
    if own is not None:
        own.extensions = {**own.extensions, "card": {"spec": spec, "data": kept}}
        return own

    nickname = _text(card, "nickname").strip()
    char = nickname or name  # card V3: {{char}} is the nickname when there is one

    def x(key: str) -> str:
        return expand_char(_text(card, key), char).strip()

    description, personality, scenario = x("description"), x("personality"), x("scenario")
    raw_greetings = [_text(card, "first_mes"), *_texts(card, "alternate_greetings")]
    greetings = [g for g in (expand_char(r, char).strip() for r in raw_greetings) if g]
    stories = [Story(f"example-{i:03d}", t) for i, t in enumerate(example_scenes(_text(card, "mes_example"), char), 1)]
    book = book_from_json(card.get("character_book"), f"{source or 'card'} character_book",
                          content=lambda text: expand_char(text, char))
    stories += lore_scenes(book.entries if book else ())
    stories += [Story(f"greeting-{i:03d}", f"{char}:「{g}」") for i, g in enumerate(greetings, 1)]
    if not stories:
        raise ImportProblem(
            _("{source} ('{name}') has no example dialogue, greeting or lorebook entry, so there are no scenes to "
              "draw on. Add mes_example or first_mes to the card.", source=source or _("The card"), name=name)
        )
    # SillyTavern's order: the card's system prompt replaces only the main instruction ({{original}}
    # stands for ours), and the definition always follows it
    definition = "\n\n".join(p for p in (
        description, f"Personality: {personality}" if personality else "", f"Scenario: {scenario}" if scenario else "",
    ) if p)
    base = fill_system_prompt(name, "")
    custom = x("system_prompt")
    main = custom.replace("{{original}}", base) if custom else base
    system_prompt = "\n\n".join(p for p in (main, definition) if p)
    after_history = x("post_history_instructions")  # the character's note (depth_prompt) goes at its depth
    first_line = (description or personality or scenario).split("\n")[0]
    sample = " ".join((name, description, personality, *greetings))
    return Role(
        id=rid, name=name, system_prompt=system_prompt, stories=stories,
        aliases=with_derived(name, [nickname] if nickname else []),
        language=guess_language(sample),
        description=first_line[:160] + ("…" if len(first_line) > 160 else ""),
        greeting=greetings[0] if greetings else "", alternate_greetings=greetings[1:],
        user_name=DEFAULT_USER,
        profile={"attributes": {"description": description, "scenario": scenario},
                 "behaviours": {"personality": personality}},
        source=source or f"character card by {_text(card, 'creator') or 'unknown'}",
        extensions={"card": {"spec": spec, "data": kept}},
        post_history_instructions=after_history, lorebook=book,
    )


# ------------------------------------------------------------------ writing cards


def _example_text(role: Role, limit: int = 6) -> str:
    """The first scenes as mes_example blocks, the character as {{char}}, the partner as {{user}}."""
    blocks = []
    for story in role.stories[:limit]:
        lines = []
        for speaker, line in parse_scene_lines(story.text):
            if speaker is None:
                lines.append(line)
            else:
                who = "{{char}}" if speaker in role.speaker_names else "{{user}}" if speaker == role.user_name else speaker
                lines.append(f"{who}: {line}")
        blocks.append("<START>\n" + "\n".join(lines))
    return "\n".join(blocks)


def role_to_card(role: Role, spec: str = V3) -> dict[str, Any]:
    """A card object for the role: the original card's fields where it came from one."""
    stored = role.extensions.get("card") if isinstance(role.extensions.get("card"), dict) else None
    data: dict[str, Any] = copy.deepcopy(stored["data"]) if stored and isinstance(stored.get("data"), dict) else {}
    if not data:
        behaviours = role.profile.get("behaviours") if isinstance(role.profile.get("behaviours"), dict) else {}
        data = {
            "description": role.description,
            "personality": "; ".join(str(v) for v in behaviours.values()),
            "scenario": "",
            "mes_example": _example_text(role),
            "creator_notes": f"Exported from ChatHaruhi. {role.source}".strip(),
            "system_prompt": role.system_prompt,
            "post_history_instructions": role.post_history_instructions,
            "tags": [t for t in (role.series, role.language) if t],
            "creator": "ChatHaruhi",
            "character_version": str(role.format_version),
            "character_book": role.lorebook.to_json() if role.lorebook else None,
        }
    if not stored:  # a card keeps its own name and greetings, macros and all
        data["name"] = role.name
        data["first_mes"] = role.greeting
        data["alternate_greetings"] = list(role.alternate_greetings)
    for key in V2_FIELDS:
        data.setdefault(key, [] if key in ("alternate_greetings", "tags") else {} if key == "extensions" else "")
    if data.get("character_book") in ("", None):
        data.pop("character_book", None)
    role_json = {k: v for k, v in role.to_json().items() if k != "extensions"}
    role_json["extensions"] = {k: v for k, v in role.extensions.items() if k != "card"}
    data["extensions"] = {
        **(data.get("extensions") or {}),
        EXT_KEY: {"role": role_json, "system_prompt": role.system_prompt,
                  "stories": [{"id": s.id, "text": s.text} for s in role.stories]},
    }
    if spec == V3:
        now = int(time.time())
        data.setdefault("assets", [{"type": "icon", "uri": "ccdefault:", "name": "main", "ext": "png"}])
        data.setdefault("nickname", "")
        data.setdefault("creator_notes_multilingual", {})
        data.setdefault("source", [])
        data.setdefault("group_only_greetings", [])
        data.setdefault("creation_date", now)
        data["modification_date"] = now
        return {"spec": V3, "spec_version": "3.0", "data": data}
    return {"spec": V2, "spec_version": "2.0", "data": {k: v for k, v in data.items() if k not in V3_ONLY}}


def _b64(obj: dict) -> str:
    return base64.b64encode(json.dumps(obj, ensure_ascii=False).encode("utf-8")).decode("ascii")


def portrait_png(role: Role) -> bytes:
    """The role's portrait as PNG bytes, or a plain placeholder when it has none."""
    from PIL import Image

    if role.image_path and role.image_path.is_file():
        with Image.open(role.image_path) as im:
            img = im.convert("RGBA" if im.mode in ("RGBA", "LA", "P") else "RGB")
    else:
        img = Image.new("RGB", (400, 600), (92, 98, 140))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def write_card_png(role: Role, path: Path) -> Path:
    """A PNG card with both chunks: `chara` (V2, for older readers) and `ccv3` (V3)."""
    png = png_with_text(portrait_png(role), {"chara": _b64(role_to_card(role, V2)), "ccv3": _b64(role_to_card(role, V3))})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return path


def write_card_json(role: Role, path: Path, spec: str = V3) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(role_to_card(role, spec), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path
