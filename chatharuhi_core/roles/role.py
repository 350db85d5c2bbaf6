"""The Role record and the role package format, version 2 (see docs/role-format.md).

Version 2 adds what character cards need to be played as their authors wrote them:
`post_history_instructions` (sent after the history), a `lorebook` of keyed world notes, and
`{{user}}` placeholders kept in the texts and filled at chat time. Version 1 packages read as before.

A package is a folder (or a zip of one) holding role.json, system_prompt.txt, stories.jsonl,
an optional portrait (image.png/.jpg/.webp) and an optional prebuilt Chroma store in store/.
Everything is validated on load, and every error names the file and the field.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import RoleFormatError
from ..i18n import _
from ..jsonl import why_not_json
from .address import Addressing
from .address import called_by as learn_called_by
from .address import learn as learn_addressing
from .lorebook import Lorebook, book_from_json
from .names import HAN, with_derived
from .placeholders import natural_visitor
from .vocatives import openers as learn_openers
from .vocatives import said_to as learn_said_to

FORMAT_VERSION = 3
# Han characters are allowed (蓝掌柜-53c060d601): they have no decomposed form, so an id reads the
# same in URLs and in file names on Windows, macOS (which stores names decomposed) and Linux.
ROLE_ID_RE = re.compile(rf"^[A-Za-z0-9{HAN}][A-Za-z0-9_.{HAN}-]{{0,63}}$")
IMAGE_NAMES = ("image.png", "image.jpg", "image.jpeg", "image.webp")
MAX_STORY_CHARS = 20_000

SYSTEM_PROMPT_TEMPLATE = (
    "I want you to act like {character} from {series}. You are now cosplay {character}. "
    "If others' questions are related with the novel, please try to reuse the original lines "
    "from the novel. I want you to respond and answer like {character} using the tone, manner "
    "and vocabulary {character} would use. You must know all of the knowledge of {character}."
)


@dataclass(frozen=True)
class Story:
    """One classic scene: lines written as `Name:「line」`, narration allowed."""

    id: str
    text: str


@dataclass(frozen=True)
class SceneImage:
    """A picture from the story with a caption; the page shows the one closest to the reply."""

    path: Path
    caption: str


@dataclass(frozen=True)
class Described:
    """What the page says about a character in one language: the line about it, its work and the questions to
    try. A character's own words (name, greeting, lines) are never translated; these are the package's notes."""

    description: str = ""
    series: str = ""
    examples: tuple[str, ...] = ()


def language_key(tag: str | None) -> str:
    """A language tag's first part, lower case: 'zh-CN', 'zh_TW' → 'zh'; 'en-GB' → 'en'; nothing → ''."""
    return re.split(r"[-_.@]", (tag or "").strip().lower(), maxsplit=1)[0]


@dataclass(frozen=True)
class Voice:
    edge_tts: str | None = None
    espeak: str | None = None
    rate: str = "+0%"
    pitch: str = "+0Hz"


@dataclass
class Role:
    """Everything the engine needs to play one character."""

    id: str
    name: str
    system_prompt: str
    stories: list[Story]
    aliases: list[str] = field(default_factory=list)
    series: str = ""
    language: str = "en"
    description: str = ""
    greeting: str = ""
    alternate_greetings: list[str] = field(default_factory=list)
    user_name: str = "User"
    voice: Voice = Voice()
    profile: dict[str, Any] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    # the description, work and questions in other languages than the package's own, by language ("zh", "en")
    translations: dict[str, Described] = field(default_factory=dict)
    source: str = ""
    license: str = ""
    extensions: dict[str, Any] = field(default_factory=dict)
    post_history_instructions: str = ""  # sent after the history, just before the message answered
    lorebook: Lorebook | None = None
    scene_images: list[SceneImage] = field(default_factory=list)
    image_path: Path | None = None
    root: Path | None = None
    format_version: int = FORMAT_VERSION
    # vectors that came with the texts (a ChatHaruhi jsonl column), keyed by column name;
    # a store uses them as they are when the column belongs to the active embedder
    embeddings: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # scenes kept out of everything the engine learns or quotes (eval's held-out scenes); the store still holds
    # them, and retrieval leaves them out by `exclude_scenes`
    held_out: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    @functools.cached_property
    def stories_sha256(self) -> str:
        """Identity of the texts: a store built from other texts must not be reused.

        Computed once: it keys the store cache on every turn, and hashing 100k scenes takes
        80 ms. Roles are shared read-only once built; build a new Role to change its scenes.
        """
        h = hashlib.sha256()
        for s in self.stories:
            h.update(s.id.encode("utf-8") + b"\x00" + s.text.encode("utf-8") + b"\x01")
        return h.hexdigest()

    @property
    def known_stories(self) -> list[Story]:
        """The scenes the engine may learn from and quote: all of them but those held out for evaluation."""
        if not self.held_out:
            return self.stories
        return [s for s in self.stories if s.id not in self.held_out]

    def holding_out(self, scene_ids: Iterable[str]) -> Role:
        """This role with `scene_ids` out of what is learned and quoted (eval: the scene a case is taken from
        must not teach the engine a nickname or lend it the reference line). Same scenes, so the same store."""
        ids = frozenset(scene_ids) | self.held_out
        if ids == self.held_out:
            return self
        copy = replace(self, held_out=ids)
        copy.__dict__["stories_sha256"] = self.stories_sha256  # computed once for the shared store
        return copy

    @functools.cached_property
    def addressing(self) -> Addressing:
        """Who the character's lines call by name or nickname (roles/address.py), learned once from its scenes."""
        return learn_addressing((s.text for s in self.known_stories), self.speaker_names)

    @functools.cached_property
    def called_by(self) -> tuple[str, ...]:
        """The words the others call the character by in its scenes beyond its names ("Count", "先生"), learned
        once: a group scene's visitor may name it so."""
        return learn_called_by((s.text for s in self.known_stories), self.speaker_names, self.addressing)

    @functools.cached_property
    def openers(self) -> frozenset[str]:
        """The Chinese words the character opens its answers to several people with (interjections, "好啊"): a
        group scene's wide net for calls (roles/vocatives.py) lets them pass."""
        return learn_openers((s.text for s in self.known_stories), self.speaker_names)

    @functools.cached_property
    def said_to(self) -> dict[str, frozenset[str]]:
        """Whom the character called by each word of the wide net in its scenes ("主公" to 刘备)."""
        return learn_said_to((s.text for s in self.known_stories), self.speaker_names, self.openers)

    def described(self, lang: str | None = None) -> Described:
        """The description, the work and the questions to try in `lang` (the visitor's: "zh", "en"); what the
        package does not give in that language, in its own."""
        own = Described(self.description, self.series, tuple(self.examples))
        key = language_key(lang)
        other = self.translations.get(key) if key and key != language_key(self.language) else None
        if other is None:
            return own
        return Described(other.description or own.description, other.series or own.series,
                         other.examples or own.examples)

    @property
    def greetings(self) -> list[str]:
        """The greeting and the alternate ones, blanks left out."""
        return [g for g in (self.greeting, *self.alternate_greetings) if g]

    def fitting_greeting(self, user_role: str) -> str:
        """The first of the role's greetings that calls nobody but `user_role` ("师父！" is for 唐僧; 小明 gets the
        next one); "" when none does."""
        return next((g for g in self.greetings if not self.addressing.elsewhere(g, user_role)), "")

    @property
    def visitor_name(self) -> str:
        """Who the visitor is in the story until they type a name: the role's partner, or a natural word for a
        role that names none ("朋友", "friend"; roles/placeholders.py)."""
        return natural_visitor(self.user_name, self.language)

    @property
    def speaker_names(self) -> frozenset[str]:
        """Names under which the role speaks in its scenes."""
        return frozenset([self.name, *self.aliases])

    @property
    def store_dir(self) -> Path | None:
        if self.root is None:
            return None
        d = self.root / "store"
        return d if d.is_dir() else None

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,  # written in the current format, whatever it was read from
            "id": self.id,
            "name": self.name,
            "aliases": list(self.aliases),
            "series": self.series,
            "language": self.language,
            "description": self.description,
            "greeting": self.greeting,
            "alternate_greetings": list(self.alternate_greetings),
            "user_name": self.user_name,
            "voice": {
                "edge_tts": self.voice.edge_tts,
                "espeak": self.voice.espeak,
                "rate": self.voice.rate,
                "pitch": self.voice.pitch,
            },
            "profile": self.profile,
            "examples": list(self.examples),
            "source": self.source,
            "license": self.license,
            "extensions": self.extensions,
            "post_history_instructions": self.post_history_instructions,
            "lorebook": self.lorebook.to_json() if self.lorebook else None,
        } | ({"translations": translations_to_json(self.translations)} if self.translations else {})


def translations_to_json(translations: dict[str, Described]) -> dict[str, dict[str, Any]]:
    """role.json's `translations`: each language's description, series and examples, the empty ones left out."""
    out = {}
    for lang, d in translations.items():
        fields = {"description": d.description, "series": d.series, "examples": list(d.examples)}
        out[lang] = {k: v for k, v in fields.items() if v}
    return out


def fill_system_prompt(character: str, series: str, personality: str = "") -> str:
    """The paper's template (sec. 3.1) plus the supplementary personality note."""
    text = SYSTEM_PROMPT_TEMPLATE.format(character=character, series=series or "their own story")
    return text + ("\n\n" + personality.strip() if personality.strip() else "")


# ---------------------------------------------------------------- reading


def _str(data: dict, key: str, file: str, *, required: bool = False, default: str = "") -> str:
    value = data.get(key, None)
    if value is None:
        if required:
            raise RoleFormatError(file, key, _("this field is required."))
        return default
    if not isinstance(value, str):
        raise RoleFormatError(file, key, _("expected text, found {kind}.", kind=type(value).__name__))
    if required and not value.strip():
        raise RoleFormatError(file, key, _("this field must not be empty."))
    return value


def _str_list(data: dict, key: str, file: str) -> list[str]:
    value = data.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RoleFormatError(file, key, _("expected a list of texts."))
    return [v for v in value if v.strip()]


def _read_text(path: Path, name: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RoleFormatError(name, None, _("the file is not UTF-8 text (byte {offset}).", offset=exc.start)) from None


def parse_translations(data: Any, file: str) -> dict[str, Described]:
    """role.json's optional `translations`: {"zh": {"description": ..., "series": ..., "examples": [...]}, ...},
    every part optional. Fields other than these three are left alone, as elsewhere in role.json."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RoleFormatError(file, "translations", _("expected an object."))
    out = {}
    for lang, text in data.items():
        where = f"translations.{lang}"
        if not isinstance(text, dict):
            raise RoleFormatError(file, where, _("expected an object."))
        for key in ("description", "series"):
            if text.get(key) is not None and not isinstance(text[key], str):
                raise RoleFormatError(file, f"{where}.{key}", _("expected text."))
        examples = text.get("examples") or []
        if not isinstance(examples, list) or not all(isinstance(q, str) for q in examples):
            raise RoleFormatError(file, f"{where}.examples", _("expected a list of texts."))
        key = language_key(lang)
        if key:
            out[key] = Described((text.get("description") or "").strip(), (text.get("series") or "").strip(),
                                 tuple(q for q in examples if q.strip()))
    return out


def parse_role_json(data: Any, file: str = "role.json") -> dict[str, Any]:
    """Validate role.json and return keyword arguments for Role."""
    if not isinstance(data, dict):
        raise RoleFormatError(file, None, _("expected a JSON object at the top level."))
    version = data.get("format_version", FORMAT_VERSION)
    if not isinstance(version, int) or version < 1:
        raise RoleFormatError(file, "format_version", _("expected a whole number such as 1."))
    if version > FORMAT_VERSION:
        raise RoleFormatError(
            file, "format_version",
            _("version {version} is newer than this app reads ({known}); update ChatHaruhi.", version=version,
              known=FORMAT_VERSION),
        )
    role_id = _str(data, "id", file, required=True)
    if not ROLE_ID_RE.match(role_id):
        raise RoleFormatError(
            file, "id", _("use 1-64 Latin letters, digits, Chinese characters, '.', '_' or '-', starting with a "
                          "letter, digit or character.")
        )
    voice = data.get("voice") or {}
    if not isinstance(voice, dict):
        raise RoleFormatError(file, "voice", _("expected an object with edge_tts and espeak names."))
    for key in ("edge_tts", "espeak", "rate", "pitch"):
        if voice.get(key) is not None and not isinstance(voice[key], str):
            raise RoleFormatError(file, f"voice.{key}", _("expected text."))
    profile = data.get("profile") or {}
    if not isinstance(profile, dict):
        raise RoleFormatError(file, "profile", _("expected an object (attributes and behaviours)."))
    extensions = data.get("extensions") or {}
    if not isinstance(extensions, dict):
        raise RoleFormatError(file, "extensions", _("expected an object."))
    name = _str(data, "name", file, required=True).strip()
    aliases = _str_list(data, "aliases", file)
    if version < 3:  # before format 3, aliases were the names it speaks under; add the ones it is called by
        aliases = with_derived(name, aliases)
    return dict(
        id=role_id,
        name=name,
        aliases=aliases,
        series=_str(data, "series", file),
        language=_str(data, "language", file, default="en") or "en",
        description=_str(data, "description", file),
        greeting=_str(data, "greeting", file),
        alternate_greetings=_str_list(data, "alternate_greetings", file),
        user_name=_str(data, "user_name", file, default="User").strip() or "User",
        voice=Voice(edge_tts=voice.get("edge_tts"), espeak=voice.get("espeak"), rate=voice.get("rate") or "+0%",
                    pitch=voice.get("pitch") or "+0Hz"),
        profile=profile,
        examples=_str_list(data, "examples", file),
        translations=parse_translations(data.get("translations"), file),
        source=_str(data, "source", file),
        license=_str(data, "license", file),
        extensions=extensions,
        post_history_instructions=_str(data, "post_history_instructions", file).strip(),
        lorebook=book_from_json(data.get("lorebook"), file),
        format_version=version,
    )


def json_object_lines(text: str, file: str,
                      error: Callable[[str, str], Exception]) -> Iterator[tuple[int, str, dict]]:
    """(line number, "file line N", object) for each non-blank JSONL line; error(where, problem) makes
    the exception for a line that is not a JSON object, so each format keeps its own error type."""
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = _("{file} line {n}", file=file, n=n)
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(where, _("not valid JSON ({why}).", why=why_not_json(exc))) from None
        if not isinstance(row, dict):
            raise error(where, _("expected a JSON object."))
        yield n, where, row


def parse_stories(text: str, file: str = "stories.jsonl") -> list[Story]:
    """One JSON object a line: {"id": ..., "text": ...}; blank lines are skipped."""
    stories: list[Story] = []
    seen: set[str] = set()
    for n, where, row in json_object_lines(text, file, lambda where, problem: RoleFormatError(where, None, problem)):
        sid = row.get("id", str(n))
        if not isinstance(sid, (str, int)) or isinstance(sid, bool):
            raise RoleFormatError(where, "id", _("expected text or a number."))
        sid = str(sid)
        if sid in seen:
            raise RoleFormatError(where, "id", _("the id '{id}' is used twice.", id=sid))
        seen.add(sid)
        body = row.get("text")
        if not isinstance(body, str) or not body.strip():
            raise RoleFormatError(where, "text", _("each scene needs non-empty text."))
        if len(body) > MAX_STORY_CHARS:
            raise RoleFormatError(where, "text", _("a scene is limited to {limit} characters.", limit=MAX_STORY_CHARS))
        stories.append(Story(id=sid, text=body.strip()))
    if not stories:
        raise RoleFormatError(file, None, _("the role has no scenes; add at least one line."))
    return stories


def find_image(root: Path) -> Path | None:
    for name in IMAGE_NAMES:
        if (root / name).is_file():
            return root / name
    return None


SCENE_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")


def load_scene_images(root: Path) -> list[SceneImage]:
    """images/images.json: [{"file": "staff.png", "caption": "..."}], files inside images/."""
    index = root / "images" / "images.json"
    if not index.is_file():
        return []
    name = "images/images.json"
    try:
        rows = json.loads(_read_text(index, name))
    except json.JSONDecodeError as exc:
        raise RoleFormatError(name, None, _("not valid JSON ({why}).", why=why_not_json(exc))) from None
    if not isinstance(rows, list):
        raise RoleFormatError(name, None, _("expected a list of {file, caption} objects."))
    images = []
    folder = (root / "images").resolve()
    for n, row in enumerate(rows, start=1):
        where = _("{file} item {n}", file=name, n=n)
        if not isinstance(row, dict) or not isinstance(row.get("file"), str) or not isinstance(row.get("caption"), str):
            raise RoleFormatError(where, None, _("each item needs a 'file' and a 'caption' (text)."))
        path = (folder / row["file"]).resolve()
        if folder not in path.parents or path.suffix.lower() not in SCENE_IMAGE_SUFFIXES:
            raise RoleFormatError(where, "file", _("must name a .png, .jpg or .webp inside images/."))
        if not path.is_file():
            raise RoleFormatError(where, "file", _("images/{file} is missing.", file=row["file"]))
        if row["caption"].strip():
            images.append(SceneImage(path, row["caption"].strip()))
    return images


def load_role_package(root: Path | str) -> Role:
    """Read and validate a role package folder."""
    root = Path(root)
    if not root.is_dir():
        raise RoleFormatError(str(root), None, _("not a folder."))
    meta_path = root / "role.json"
    if not meta_path.is_file():
        raise RoleFormatError("role.json", None, _("missing from {folder}/.", folder=root.name))
    try:
        data = json.loads(_read_text(meta_path, "role.json"))
    except json.JSONDecodeError as exc:
        raise RoleFormatError("role.json", None, _("not valid JSON ({why}, line {line}).", why=why_not_json(exc),
                                                     line=exc.lineno)) from None
    kwargs = parse_role_json(data)
    prompt_path = root / "system_prompt.txt"
    if not prompt_path.is_file():
        raise RoleFormatError("system_prompt.txt", None, _("missing from {folder}/.", folder=root.name))
    system_prompt = _read_text(prompt_path, "system_prompt.txt").strip()
    if not system_prompt:
        raise RoleFormatError("system_prompt.txt", None, _("the system prompt is empty."))
    stories_path = root / "stories.jsonl"
    if not stories_path.is_file():
        raise RoleFormatError("stories.jsonl", None, _("missing from {folder}/.", folder=root.name))
    stories = parse_stories(_read_text(stories_path, "stories.jsonl"))
    return Role(system_prompt=system_prompt, stories=stories, image_path=find_image(root), root=root,
                scene_images=load_scene_images(root), **kwargs)


def write_role_package(role: Role, root: Path | str) -> Path:
    """Write role.json, system_prompt.txt, stories.jsonl and the portrait to a folder."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "role.json").write_text(
        json.dumps(role.to_json(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    (root / "system_prompt.txt").write_text(role.system_prompt.strip() + "\n", encoding="utf-8")
    with (root / "stories.jsonl").open("w", encoding="utf-8") as f:
        for s in role.stories:
            f.write(json.dumps({"id": s.id, "text": s.text}, ensure_ascii=False) + "\n")
    if role.image_path and role.image_path.is_file():
        target = root / ("image" + role.image_path.suffix.lower())
        if target.resolve() != role.image_path.resolve():
            target.write_bytes(role.image_path.read_bytes())
    if role.scene_images:
        (root / "images").mkdir(exist_ok=True)
        rows = []
        for i, image in enumerate(role.scene_images, start=1):
            name = f"{i:02d}{image.path.suffix.lower()}"
            if (root / "images" / name).resolve() != image.path.resolve():
                (root / "images" / name).write_bytes(image.path.read_bytes())
            rows.append({"file": name, "caption": image.caption})
        (root / "images" / "images.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n",
                                                     encoding="utf-8")
    return root


def derive_role_id(hint: str, content: bytes | str) -> str:
    """A unique, stable id for an imported role: a readable slug plus a hash of its source.

    Two uploads that share a name but not their content get different ids (and stores).
    """
    data = content.encode("utf-8") if isinstance(content, str) else content
    digest = hashlib.sha256(data).hexdigest()[:10]
    hint = unicodedata.normalize("NFKC", hint)  # compatibility ideographs become the usual ones
    slug = re.sub(rf"[^A-Za-z0-9{HAN}]+", "-", hint).strip("-").lower()[:40].strip("-") or "role"
    return f"{slug}-{digest}"


def guess_language(text: str) -> str:
    """'zh' when CJK characters make up a real share of the text, else 'en'."""
    sample = text[:4000]
    cjk = sum(1 for ch in sample if "\u4e00" <= ch <= "\u9fff" or "\u3040" <= ch <= "\u30ff")
    letters = sum(1 for ch in sample if ch.isalpha())
    return "zh" if letters and cjk / letters > 0.2 else "en"
