"""A role from the paper's two ingredients, a system prompt and a folder of stories, or by its name: what
`ChatHaruhi(system_prompt=..., story_db=...)` and `ChatHaruhi(role_name=...)` are given."""

from __future__ import annotations

from pathlib import Path

from ..errors import RoleFormatError
from ..i18n import _
from .chatharuhi_folder import is_chatharuhi_folder, role_from_chatharuhi_folder
from .lines import main_speaker
from .role import Role, Story, load_role_package, parse_stories
from .sources import load_role


def read_stories(story_db: str | Path) -> list[Story]:
    """A stories.jsonl file, a role package folder, or a folder of one-scene .txt files."""
    path = Path(story_db)
    if path.is_file():
        return parse_stories(path.read_text(encoding="utf-8"), path.name)
    if (path / "stories.jsonl").is_file():
        return parse_stories((path / "stories.jsonl").read_text(encoding="utf-8"))
    if path.is_dir():
        texts = sorted(path.glob("*.txt"))
        stories = [Story(p.stem, p.read_text(encoding="utf-8").strip()) for p in texts]
        stories = [s for s in stories if s.text]
        if stories:
            return stories
    raise RoleFormatError(str(path), None, _("no stories.jsonl or .txt scenes found here."))


def role_from_parts(system_prompt: str | Path, story_db: str | Path, name: str | None = None) -> Role:
    """Build a Role from the paper's two ingredients: a system prompt and a story folder."""
    if (Path(story_db) / "role.json").is_file():
        return load_role_package(story_db)
    if is_chatharuhi_folder(Path(story_db)):  # the whole ChatHaruhi 1.0 folder, pictures included
        return role_from_chatharuhi_folder(Path(story_db), Path(story_db).name, name=name)
    prompt_path = Path(str(system_prompt))
    prompt = (
        prompt_path.read_text(encoding="utf-8")
        if len(str(system_prompt)) < 1024 and prompt_path.is_file()
        else str(system_prompt)
    )
    stories = read_stories(story_db)
    name = name or main_speaker((s.text for s in stories), prompt) or "Character"
    return Role(id=f"custom-{name}" if name.isascii() else "custom", name=name,
                system_prompt=prompt.strip(), stories=stories)


def role_of(role_name: str | None, system_prompt: str | Path | None, story_db: str | Path | None,
             name: str | None) -> Role:
    """The role a conversation is given by its name, or by the paper's two ingredients."""
    if role_name:
        return load_role(role_name)
    if story_db is not None and system_prompt is not None:
        return role_from_parts(system_prompt, story_db, name)
    raise ValueError("Give role_name=..., role=..., or both system_prompt= and story_db=.")
