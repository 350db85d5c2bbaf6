"""Scene pictures: the one whose caption is closest to the reply, by the same embedder."""

from __future__ import annotations

import json

import pytest

from chatharuhi_core.errors import RoleFormatError
from chatharuhi_core.roles.role import load_role_package
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.web.drawing import scene_image_for


@pytest.mark.parametrize("role_id, reply, picture", [
    ("sunwukong", "一万三千五百斤！原是东海龙宫的定海神针，能大能小。", "staff.png"),
    ("sunwukong", "孩儿们，俺回来看看你们，桃子够不够吃？", "mountain.png"),
    ("sunwukong", "玉帝老儿，俺老孙要做齐天大圣！", "palace.png"),
    ("sherlock", "Pass me the lens, Watson; these footprints tell the whole story.", "clues.png"),
    ("sherlock", "A problem was turning in my head, and the music helps it turn.", "violin.png"),
    ("lindaiyu", "花谢花飞飞满天，我把这些落花葬了，也算干净。", "burying-flowers.png"),
    ("zhugeliang", "城门大开，亮在城楼上焚香弹琴，司马懿必不敢进。", "empty-city.png"),
    ("dracula", "Welcome to my house, above the pass, where the moon is bright and the night creatures sing.",
     "castle.png"),
    ("alice", "It was the strangest tea-party: the Hatter wanted a clean cup and the Dormouse was asleep.",
     "tea-party.png"),
])
def test_the_picture_follows_the_reply(settings, role_id, reply, picture):
    path, caption = scene_image_for(load_role(role_id), reply, settings)
    assert path.endswith(picture) and caption


MAX_PICTURE_BYTES = 40_000


def test_every_bundled_role_ships_three_small_captioned_pictures():
    from PIL import Image

    from chatharuhi_core.roles.sources import bundled_ids

    for rid in bundled_ids():
        role = load_role(rid)  # the index is validated on load: each file exists, inside images/
        assert len(role.scene_images) == 3, rid
        for picture in role.scene_images:
            assert picture.caption and picture.path.stat().st_size <= MAX_PICTURE_BYTES, picture.path
            with Image.open(picture.path) as im:
                im.verify()
                assert im.size == (512, 320), picture.path


def test_roles_without_pictures_and_bad_indexes(settings, tmp_path):
    assert scene_image_for(load_role("sherlock").__class__(id="bare", name="Bare", system_prompt="x", stories=[]),
                           "Curiouser!", settings) is None
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
