"""The role package format: bundled roles meet the bar; broken packages name file and field."""

import json

import pytest
from PIL import Image

from chatharuhi_core.errors import RoleFormatError
from chatharuhi_core.roles.lines import parse_scene_lines
from chatharuhi_core.roles.role import load_role_package, write_role_package
from chatharuhi_core.roles.sources import bundled_ids, load_role
from chatharuhi_core.tokens import count_tokens


def test_two_bundled_roles_one_chinese_one_english():
    roles = [load_role(i) for i in bundled_ids()]
    assert {r.language for r in roles} >= {"zh", "en"}


@pytest.mark.parametrize("rid", bundled_ids())
def test_bundled_role_quality(rid):
    role = load_role(rid)
    assert len(role.stories) >= 40
    assert role.system_prompt.startswith(f"I want you to act like {role.name} from")
    assert role.greeting and len(role.examples) >= 3
    assert role.voice.edge_tts and role.voice.espeak
    assert role.profile["attributes"] and role.profile["behaviours"]
    with Image.open(role.image_path) as img:
        assert min(img.size) >= 256
    for story in role.stories:
        assert count_tokens(story.text) < 500, story.id
        spoken = [s for s, t in parse_scene_lines(story.text) if s]
        answered = any(a not in role.speaker_names and b in role.speaker_names for a, b in zip(spoken, spoken[1:]))
        assert answered, f"{story.id} has no exchange where {role.name} answers someone"


def test_lookup_by_id_name_and_alias():
    assert load_role("SHERLOCK").id == "sherlock"
    assert load_role("Sherlock Holmes").id == "sherlock"
    assert load_role("孙悟空").id == "sunwukong"
    assert load_role("美猴王").id == "sunwukong"



def _edit_json(path, **changes):
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_round_trip(package, tmp_path):
    role = load_role_package(package)
    out = write_role_package(role, tmp_path / "copy")
    again = load_role_package(out)
    assert again.to_json() == role.to_json()
    assert again.stories == role.stories and again.system_prompt == role.system_prompt
    assert again.image_path.name == "image.png"


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"name": ""}, "name", "must not be empty"),
        ({"name": 5}, "name", "expected text"),
        ({"id": "../evil"}, "id", "letters, digits"),
        ({"examples": "one"}, "examples", "list of texts"),
        ({"format_version": 9}, "format_version", "newer"),
        ({"voice": "loud"}, "voice", "expected an object"),
    ],
)
def test_bad_role_json_names_the_field(package, changes, field, words):
    _edit_json(package / "role.json", **changes)
    with pytest.raises(RoleFormatError) as err:
        load_role_package(package)
    assert err.value.file == "role.json" and err.value.field == field
    assert words in str(err.value) and "role.json" in str(err.value)


def test_missing_required_field(package):
    data = json.loads((package / "role.json").read_text(encoding="utf-8"))
    del data["name"]
    (package / "role.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RoleFormatError, match="field 'name'.*required"):
        load_role_package(package)


def test_bad_stories_name_the_line(package):
    lines = (package / "stories.jsonl").read_text(encoding="utf-8").splitlines()
    lines[2] = '{"id": "x", "text": ""}'
    (package / "stories.jsonl").write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(RoleFormatError, match=r"stories.jsonl line 3, field 'text'"):
        load_role_package(package)
    lines[2] = "{not json"
    (package / "stories.jsonl").write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(RoleFormatError, match=r"stories.jsonl line 3: not valid JSON"):
        load_role_package(package)


def test_duplicate_story_ids(package):
    row = '{"id": "same", "text": "A:「x」"}'
    (package / "stories.jsonl").write_text(row + "\n" + row + "\n", encoding="utf-8")
    with pytest.raises(RoleFormatError, match="used twice"):
        load_role_package(package)


def test_empty_roles_and_missing_files(package):
    (package / "stories.jsonl").write_text("\n\n", encoding="utf-8")
    with pytest.raises(RoleFormatError, match="no scenes"):
        load_role_package(package)
    (package / "system_prompt.txt").unlink()
    with pytest.raises(RoleFormatError, match="system_prompt.txt"):
        load_role_package(package)


def test_not_utf8_and_not_json(package):
    (package / "role.json").write_bytes("{\"name\": \"caf\xe9\"}".encode("latin-1"))
    with pytest.raises(RoleFormatError, match="not UTF-8"):
        load_role_package(package)
    (package / "role.json").write_text("[1, 2", encoding="utf-8")
    with pytest.raises(RoleFormatError, match="not valid JSON"):
        load_role_package(package)
