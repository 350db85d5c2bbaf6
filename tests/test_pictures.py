"""Scene pictures: the one whose caption is closest to the reply, by the same embedder."""

from __future__ import annotations

import json

import pytest

from chatharuhi_core.chat.webchat import scene_image_for
from chatharuhi_core.errors import RoleFormatError
from chatharuhi_core.roles.role import load_role_package
from chatharuhi_core.roles.sources import load_role


@pytest.mark.parametrize("role_id, reply, picture", [
    ("sunwukong", "一万三千五百斤！原是东海龙宫的定海神针，能大能小。", "staff.png"),
    ("sunwukong", "孩儿们，俺回来看看你们，桃子够不够吃？", "mountain.png"),
    ("sunwukong", "玉帝老儿，俺老孙要做齐天大圣！", "palace.png"),
    ("sherlock", "Pass me the lens, Watson; these footprints tell the whole story.", "clues.png"),
    ("sherlock", "A problem was turning in my head, and the music helps it turn.", "violin.png"),
])
def test_the_picture_follows_the_reply(settings, role_id, reply, picture):
    path, caption = scene_image_for(load_role(role_id), reply, settings)
    assert path.endswith(picture) and caption


def test_roles_without_pictures_and_bad_indexes(settings, tmp_path):
    assert scene_image_for(load_role("alice"), "Curiouser!", settings) is None
    pkg = tmp_path / "pkg"
    (pkg / "images").mkdir(parents=True)
    for name, text in (("role.json", '{"id": "x", "name": "X"}'), ("system_prompt.txt", "p"),
                       ("stories.jsonl", '{"id": 1, "text": "A:「a」\\nX:「b」"}')):
        (pkg / name).write_text(text)
    (pkg / "images" / "images.json").write_text(json.dumps([{"file": "../role.json", "caption": "escape"}]))
    with pytest.raises(RoleFormatError, match="inside images/"):
        load_role_package(pkg)
    (pkg / "images" / "images.json").write_text(json.dumps([{"file": "gone.png", "caption": "missing"}]))
    with pytest.raises(RoleFormatError, match="missing"):
        load_role_package(pkg)
