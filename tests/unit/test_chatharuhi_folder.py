"""ChatHaruhi 1.0's character folders: imported as a folder, a zip of one and through the CLI, with their pictures;
written back by export; every bad folder a sentence naming the file."""

from __future__ import annotations

import io
import zipfile

import pytest
from support.make_inputs import HARUHI_PROMPT, HARUHI_STORIES, chatharuhi_folder

from chatharuhi_core.cli import main
from chatharuhi_core.errors import ChatHaruhiError, ImportProblem
from chatharuhi_core.roles.chatharuhi_folder import role_from_chatharuhi_folder
from chatharuhi_core.roles.export import export_role
from chatharuhi_core.roles.sources import ImportOptions, import_file, load_role


def _zip_of(folder, inside: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                zf.write(p, f"{inside}/{p.relative_to(folder).as_posix()}" if inside else p.relative_to(folder).as_posix())
    return buf.getvalue()


def test_a_folder_imports_with_its_scenes_name_and_pictures(env):
    settings, inbox = env
    role = import_file(chatharuhi_folder(inbox), settings)
    assert role.name == "春日"  # the paper's form: a speaker the prompt names, with the most lines
    assert "haruhi" in role.aliases  # the folder's name finds it in the picker
    assert [s.text for s in role.stories] == HARUHI_STORIES
    assert role.system_prompt == HARUHI_PROMPT
    assert role.language == "zh"
    assert [p.caption for p in role.scene_images] == ["普通的人类我没有兴趣！", "不可思议探索之旅！全体在车站前集合。"]
    assert all(p.path.is_file() and settings.roles_dir in p.path.parents for p in role.scene_images)
    assert load_role(role.id, settings).name == "春日"  # saved as a package under the cache


@pytest.mark.parametrize("inside", ["", "haruhi", "characters/haruhi"])
def test_a_zip_of_a_folder_imports_as_the_page_sends_it(env, inside):
    settings, inbox = env
    folder = chatharuhi_folder(inbox / "src", suffix=".png")
    (inbox / "up.zip").write_bytes(_zip_of(folder, inside))
    if inside.count("/") > 0:  # two folders down is not looked into, as for a role package
        with pytest.raises(ImportProblem, match="system_prompt.txt and texts/"):
            import_file(inbox / "up.zip", settings, ImportOptions(display_name="haruhi.zip"))
        return
    role = import_file(inbox / "up.zip", settings, ImportOptions(display_name="haruhi.zip"))
    assert role.name == "春日" and len(role.stories) == 4 and len(role.scene_images) == 2


def test_the_name_can_be_given_and_the_picture_map_is_optional(env):
    settings, inbox = env
    role = import_file(chatharuhi_folder(inbox, pictures=False), settings, ImportOptions(name="阿虚"))
    assert role.name == "阿虚" and role.scene_images == []


def test_pictures_as_the_original_folders_hold_them(env):
    """ChatHaruhi's own folders map many lines to frame grabs that were never committed, and name other pictures
    after their line: a missing picture is passed over (or stood in for by one named after its line), and a picture
    named after a line is read with that line as its caption."""
    settings, inbox = env
    folder = chatharuhi_folder(inbox)
    (folder / "images" / "002.jpg").unlink()  # the map's second line now names a missing picture
    named = folder / "images" / "不可思议探索之旅！全体在车站前集合。.jpg"
    named.write_bytes((folder / "images" / "001.jpg").read_bytes())
    (folder / "images" / "[EP01]-0003.jpg").write_bytes(named.read_bytes())  # a frame grab no line names
    (folder / "images" / "今天也要加油.jpg").write_bytes(named.read_bytes())
    role = import_file(folder, settings)
    assert [p.caption for p in role.scene_images] == ["普通的人类我没有兴趣！", "不可思议探索之旅！全体在车站前集合。",
                                                     "今天也要加油"]


def test_an_empty_prompt_is_a_sentence(env):
    settings, inbox = env
    folder = chatharuhi_folder(inbox, name="empty")
    (folder / "system_prompt.txt").write_text("  \n", encoding="utf-8")
    with pytest.raises(ImportProblem, match="system_prompt.txt is empty"):
        role_from_chatharuhi_folder(folder, "empty")


def test_export_writes_a_folder_that_imports_the_same(env, tmp_path):
    settings, inbox = env
    role = import_file(chatharuhi_folder(inbox), settings)
    out = export_role(role, tmp_path / "out" / "haruhi", settings, "chatharuhi-folder")
    assert (out / "system_prompt.txt").is_file() and len(list((out / "texts").glob("*.txt"))) == 4
    picture_map = (out / "text_image_dict.txt").read_text(encoding="utf-8").splitlines()
    assert picture_map[1] == "01"  # .jpg left off (the saved package numbers its pictures)
    again = role_from_chatharuhi_folder(out, "out")
    assert (again.name, again.system_prompt, [s.text for s in again.stories]) == \
        (role.name, role.system_prompt, [s.text for s in role.stories])
    assert [p.caption for p in again.scene_images] == [p.caption for p in role.scene_images]
    with pytest.raises(ChatHaruhiError, match="other files in it"):
        export_role(role, out, settings, "chatharuhi-folder")


def test_the_command_line_imports_and_exports_a_folder(env, tmp_path, capsys, monkeypatch):
    settings, inbox = env
    monkeypatch.setenv("CHATHARUHI_CACHE", str(settings.cache_dir))
    assert main(["role", "import", str(chatharuhi_folder(inbox))]) == 0
    out = capsys.readouterr().out
    assert "Imported 春日" in out
    rid = out.split("'")[1]
    assert main(["role", "export", rid, "--to", str(tmp_path / "back"), "--format", "chatharuhi-folder"]) == 0
    assert (tmp_path / "back" / "text_image_dict.txt").is_file()


def test_the_papers_form_reads_the_texts_folder_or_the_whole_folder(tmp_path):
    from chatharuhi_core.roles.parts import role_from_parts

    folder = chatharuhi_folder(tmp_path)
    by_texts = role_from_parts(folder / "system_prompt.txt", folder / "texts")
    whole = role_from_parts(folder / "system_prompt.txt", folder)
    assert by_texts.name == whole.name == "春日"
    assert [s.text for s in whole.stories] == [s.text for s in by_texts.stories] == HARUHI_STORIES
    assert len(whole.scene_images) == 2


def _zip_with_raw_names(folder, encoding: str, unicode_field: bool = False) -> bytes:
    """A zip of `folder` whose names are stored as `encoding`'s bytes WITHOUT the UTF-8 flag, as macOS's Archive
    Utility and Linux's `zip` store UTF-8 and Chinese Windows stores GBK (with `unicode_field`, Info-ZIP's UTF-8
    copy of the name rides along, and the stored bytes are GBK). Written as ASCII stand-ins of the same length,
    then the stand-ins' bytes swapped for the real ones in the local headers and the central directory."""
    import struct
    import zlib

    buf, swaps = io.BytesIO(), []
    with zipfile.ZipFile(buf, "w") as zf:
        for n, p in enumerate(sorted(folder.rglob("*"))):
            if not p.is_file():
                continue
            name = p.relative_to(folder).as_posix()
            stored = name.encode("gbk" if unicode_field else encoding)
            stand_in = f"{n:04d}".encode() + b"_" * (len(stored) - 4) if not name.isascii() else stored
            info = zipfile.ZipInfo(stand_in.decode("ascii"))
            if unicode_field and not name.isascii():
                utf8 = name.encode("utf-8")
                body = b"\x01" + struct.pack("<I", zlib.crc32(stored)) + utf8
                info.extra = struct.pack("<HH", 0x7075, len(body)) + body
            zf.writestr(info, p.read_bytes())
            if stand_in != stored:
                swaps.append((stand_in, stored))
    data = buf.getvalue()
    for stand_in, stored in swaps:
        assert data.count(stand_in) == 2  # its local header and its central directory entry
        data = data.replace(stand_in, stored)
    return data


@pytest.mark.parametrize("encoding, unicode_field", [("utf-8", False), ("gbk", False), ("gbk", True)])
def test_a_zip_whose_chinese_names_lack_the_utf8_flag_keeps_its_names_and_pictures(env, encoding, unicode_field):
    """Names stored as UTF-8 or GBK bytes without the flag were read as cp437 ("场景" as "σ£║µÖ»"): the scenes' ids
    and the pictures named after their line came out garbled, and such pictures were passed over."""
    settings, inbox = env
    folder = chatharuhi_folder(inbox / "src")
    named = folder / "images" / "今天也要加油.jpg"
    named.write_bytes((folder / "images" / "001.jpg").read_bytes())
    (inbox / "up.zip").write_bytes(_zip_with_raw_names(folder, encoding, unicode_field))
    with zipfile.ZipFile(inbox / "up.zip") as zf:  # the test's zip is what it claims: no flag, names not cp437-clean
        assert not any(i.flag_bits & 0x800 for i in zf.infolist())
        assert "texts/春日_001.txt" not in zf.namelist()
    role = import_file(inbox / "up.zip", settings, ImportOptions(display_name="haruhi.zip"))
    assert [s.id for s in role.stories] == [f"春日_{n:03d}" for n in range(1, 5)]
    assert [p.caption for p in role.scene_images] == ["普通的人类我没有兴趣！", "不可思议探索之旅！全体在车站前集合。",
                                                     "今天也要加油"]


def test_a_folder_greets_with_its_characters_first_line_to_its_partner(env):
    """A folder names no greeting: the chat opened on nothing. The character's first line said to the one it talks
    with most (阿虚 to 春日) opens it, that partner is the visitor's name until they give one, and the partner's
    lines are the questions offered."""
    settings, inbox = env
    role = import_file(chatharuhi_folder(inbox), settings)
    assert role.greeting == "我要成立一个社团！找外星人、未来人和超能力者，和他们一起玩！"
    assert role.visitor_name == "阿虚"
    assert role.examples[:2] == ["你又想干什么？", "普通人不行吗？"]
