"""ChatHaruhi 1.0's character folders (the original repository's `characters/<name>/`), in and out.

A folder holds `system_prompt.txt`, `texts/*.txt` (one classic scene per file, lines written `Name:「line」`) and, for
several characters, `images/` with `text_image_dict.txt`: a line of a scene, then on the next line the picture that
goes with it (its file name in images/, `.jpg` left off as ChatHaruhi 1.0 wrote it); pictures named after their line
are read too. The character is the one the paper's form finds: the speaker the prompt names who has the most lines.
The pictures become the role's scene pictures, captioned by their line, so the page shows the one closest to a reply
as ChatHaruhi 1.0 did. Embedding caches the folder may hold (`.pkl`) are never read: unpickling a visitor's file
would run its code.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ..errors import ChatHaruhiError, ImportProblem
from ..i18n import _
from .lines import main_speaker, partner_of
from .names import HAN, with_derived
from .role import SCENE_IMAGE_SUFFIXES, Role, SceneImage, Story, derive_role_id, guess_language
from .safety import DEFAULT_LIMITS, Limits, read_text
from .script_scenes import name_matcher

PICTURE_MAP = "text_image_dict.txt"
IMPORT_VERSION = "chatharuhi-folder-1:"


def is_chatharuhi_folder(folder: Path) -> bool:
    """A system prompt and a texts/ folder of .txt scenes, and no role.json (a package is read as a package)."""
    return (folder / "system_prompt.txt").is_file() and (folder / "texts").is_dir() \
        and not (folder / "role.json").is_file() and any((folder / "texts").glob("*.txt"))


def find_chatharuhi_folder(root: Path) -> Path | None:
    """The folder itself, or its one sub-folder that is one (a zip of `characters/haruhi/` unpacks to `haruhi/`)."""
    if is_chatharuhi_folder(root):
        return root
    inside = [p for p in sorted(root.iterdir()) if p.is_dir() and is_chatharuhi_folder(p)] if root.is_dir() else []
    return inside[0] if len(inside) == 1 else None


def _scenes(folder: Path, label: str, limits: Limits) -> list[Story]:
    stories = []
    for path in sorted((folder / "texts").glob("*.txt")):
        text = read_text(path, limits, f"{label}: texts/{path.name}").strip()
        if text:
            stories.append(Story(path.stem, text))
    if not stories:
        raise ImportProblem(_("{name}: every scene in texts/ is empty.", name=label))
    return stories


def _picture(images: Path, name: str) -> Path | None:
    """The file a picture map names: as written, or with the suffixes ChatHaruhi 1.0 left off."""
    name = name.strip()
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    names = [name] if Path(name).suffix.lower() in SCENE_IMAGE_SUFFIXES else [name + s for s in SCENE_IMAGE_SUFFIXES]
    return next((images / n for n in names if (images / n).is_file()), None)


def read_picture_map(folder: Path, label: str, limits: Limits = DEFAULT_LIMITS) -> list[SceneImage]:
    """The folder's pictures, each captioned by its line: those text_image_dict.txt (at the top or in images/) pairs
    with a line, then those named after their line ("周一是黄色.jpg"), as ChatHaruhi's own folders hold both. A line
    whose picture is not in images/ (the original folders list many that were never committed) is passed over, and
    a picture named after a line stands in for it."""
    images = folder / "images"
    if not images.is_dir():
        return []
    found = [p for p in (folder / PICTURE_MAP, images / PICTURE_MAP) if p.is_file()]
    text = read_text(found[0], limits, f"{label}: {found[0].relative_to(folder).as_posix()}") if found else ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    pictures, used = [], set()
    for caption, name in zip(lines[0::2], lines[1::2]):
        path = _picture(images, name) or _picture(images, caption)
        if path is not None and path.name not in used:
            used.add(path.name)
            pictures.append(SceneImage(path, caption))
    for path in sorted(images.iterdir()):
        if path.name not in used and path.suffix.lower() in SCENE_IMAGE_SUFFIXES and _names_a_line(path.stem):
            pictures.append(SceneImage(path, path.stem))
    return pictures


def _names_a_line(stem: str) -> bool:
    """A file name that is a line to caption by: two Chinese characters or two words, no brackets or bare number
    (not "[CASO][...]-0002", "0001" or "img")."""
    if re.search(r"[\[\]{}]", stem) or re.fullmatch(r"[\W\d_]*", stem):
        return False
    return len(re.findall(f"[{HAN}]", stem)) >= 2 or len(re.findall(r"[A-Za-z]+", stem)) >= 2


def role_from_chatharuhi_folder(folder: Path, label: str, limits: Limits = DEFAULT_LIMITS,
                                name: str | None = None) -> Role:
    """A Role from a ChatHaruhi 1.0 folder; `name` when the visitor says whom to become."""
    prompt = read_text(folder / "system_prompt.txt", limits, f"{label}: system_prompt.txt").strip()
    if not prompt:
        raise ImportProblem(_("{name}: system_prompt.txt is empty.", name=label))
    stories = _scenes(folder, label, limits)
    if len(stories) > limits.max_scenes:
        raise ImportProblem(_("{name} holds {count} scenes; the limit is {limit}.", name=label,
                              count=format(len(stories), ","), limit=format(limits.max_scenes, ",")))
    who = name or main_speaker((s.text for s in stories), prompt, source_name=label)
    if not who:
        raise ImportProblem(_("{name}: no line in texts/ is written as Name:「line」, so there is no character to "
                              "become.", name=label))
    aliases = [folder.name] if re.fullmatch(r"[A-Za-z][A-Za-z0-9 _-]*", folder.name) and folder.name != who else []
    content = "\n".join([prompt, *(f"{s.id}\n{s.text}" for s in stories)])
    names = with_derived(who, aliases)
    # a folder names no greeting nor partner: the character's first line to the one it talks with most opens the
    # chat, and that one is the visitor until they give a name
    partner = partner_of((s.text for s in stories), name_matcher([who, *names]))
    return Role(id=derive_role_id(who, IMPORT_VERSION + content), name=who, system_prompt=prompt, stories=stories,
                aliases=names, language=guess_language(prompt + stories[0].text),
                description=_("{name}, from a ChatHaruhi character folder.", name=who),
                greeting=partner.first_reply, user_name=partner.name, examples=partner.cues[:4],
                scene_images=read_picture_map(folder, label, limits), source=label)


def _file_stem(sid: str, n: int) -> str:
    stem = re.sub(r"[\\/:*?\"<>|\s]+", "_", sid).strip("._")
    return stem or f"scene_{n:03d}"


def write_chatharuhi_folder(role: Role, target: Path) -> Path:
    """The role as ChatHaruhi 1.0 reads it: system_prompt.txt, texts/ and, with scene pictures, images/ and
    text_image_dict.txt (a caption on one line, then the picture's name; `.jpg` written without its suffix)."""
    if target.exists() and any(target.iterdir()):
        raise ChatHaruhiError(_("{target} is a folder with other files in it; choose an empty or new folder.",
                                target=target))
    (target / "texts").mkdir(parents=True, exist_ok=True)
    (target / "system_prompt.txt").write_text(role.system_prompt.strip() + "\n", encoding="utf-8")
    used: set[str] = set()
    for n, story in enumerate(role.stories, start=1):
        stem = _file_stem(story.id, n)
        stem = stem if stem not in used else f"{stem}_{n}"
        used.add(stem)
        (target / "texts" / f"{stem}.txt").write_text(story.text + "\n", encoding="utf-8")
    if role.scene_images:
        (target / "images").mkdir()
        rows, written = [], set()
        for n, picture in enumerate(role.scene_images, start=1):
            name = picture.path.name if picture.path.name not in written else f"{n:03d}{picture.path.suffix}"
            written.add(name)
            shutil.copyfile(picture.path, target / "images" / name)
            rows.append((" ".join(picture.caption.split()), name[:-4] if name.lower().endswith(".jpg") else name))
        (target / PICTURE_MAP).write_text("".join(f"{c}\n{n}\n" for c, n in rows), encoding="utf-8")
    return target
