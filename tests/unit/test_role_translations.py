"""A character described in the visitor's language: role.json's `translations` (the description, the work and the
questions to try in other languages), the About text and the picker's search in the page's language."""

import json

import pytest

from chatharuhi_core import i18n
from chatharuhi_core.errors import RoleFormatError
from chatharuhi_core.roles.hub import hub_roles
from chatharuhi_core.roles.names import is_cjk
from chatharuhi_core.roles.role import Described, load_role_package, write_role_package
from chatharuhi_core.roles.sources import bundled_ids, load_role
from chatharuhi_core.web.drawing import describe_role
from chatharuhi_core.web.picker import picker_entries, tiles_html

OTHER = {"en": "zh", "zh": "en"}


def found(words: str, online: bool = False) -> list[str]:
    """The refs the search box lists for `words`: Gradio's filter, the words anywhere in a label, any case."""
    return [e.ref for e in picker_entries() if e.online == online and words.casefold() in e.label.casefold()]


@pytest.mark.parametrize("rid", bundled_ids())
def test_every_bundled_role_is_described_in_the_other_language_too(rid):
    role = load_role(rid)
    other = OTHER[role.language]
    assert set(role.translations) == {other}
    text = role.described(other)
    assert text.description and text.series and len(text.examples) == len(role.examples)
    for line in (text.description, text.series, *text.examples):
        assert is_cjk(line) == (other == "zh"), line  # written in that language, not copied
    assert text.description != role.description and text.examples != tuple(role.examples)
    assert role.described(role.language) == Described(role.description, role.series, tuple(role.examples))


def test_described_follows_the_language_and_falls_back_to_the_packages_own():
    alice = load_role("alice")
    assert alice.described("zh").series == "刘易斯·卡罗尔《爱丽丝梦游仙境》"
    assert alice.described("zh-CN") == alice.described("zh")  # a browser's tag
    assert alice.described("en").description == alice.description == alice.described(None).description
    assert alice.described("fr").examples == tuple(alice.examples)  # a language the package does not give
    wukong = load_role("sunwukong")
    assert wukong.described("en").series == "Journey to the West"
    assert wukong.described("en").examples[0] == "Who are you?" and wukong.described("zh").series == "西游记"



def _edit(package, **changes):
    path = package / "role.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    for key, value in changes.items():
        if value is None:
            del data[key]
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def test_a_package_without_translations_loads_as_before_and_speaks_its_own_language(package):
    _edit(package, translations=None)
    role = load_role_package(package)
    assert role.translations == {} and role.format_version == 3 and "translations" not in role.to_json()
    assert role.described("zh") == Described(role.description, role.series, tuple(role.examples))
    with i18n.speaking("zh"):
        about = describe_role(role)
    assert "consulting detective" in about and "Arthur Conan Doyle" in about and about.startswith('<div lang="en">')


def test_a_partial_translation_falls_back_part_by_part_and_survives_a_round_trip(package, tmp_path):
    _edit(package, translations={"zh-CN": {"series": "福尔摩斯探案集"}, "ja": {"description": "世界で唯一の諮問探偵。"}})
    role = load_role_package(package)
    zh = role.described("zh")
    assert (zh.series, zh.description, zh.examples) == ("福尔摩斯探案集", role.description, tuple(role.examples))
    assert role.described("ja").description == "世界で唯一の諮問探偵。"
    again = load_role_package(write_role_package(role, tmp_path / "copy"))
    assert again.translations == role.translations and again.to_json() == role.to_json()
    assert again.to_json()["translations"]["zh"] == {"series": "福尔摩斯探案集"}


@pytest.mark.parametrize(
    "translations, field, words",
    [
        ("中文", "translations", "expected an object"),
        ({"zh": "中文"}, "translations.zh", "expected an object"),
        ({"zh": {"description": 5}}, "translations.zh.description", "expected text"),
        ({"zh": {"examples": "你是谁？"}}, "translations.zh.examples", "list of texts"),
    ],
)
def test_bad_translations_name_the_field(package, translations, field, words):
    _edit(package, translations=translations)
    with pytest.raises(RoleFormatError) as err:
        load_role_package(package)
    assert err.value.field == field and words in str(err.value)


def test_the_about_text_is_in_the_visitors_language_the_name_as_the_story_has_it():
    alice, wukong = load_role("alice"), load_role("sunwukong")
    with i18n.speaking("zh"):
        about = describe_role(alice)
    assert "一个好奇、有礼貌、很讲道理的小女孩" in about and "《爱丽丝梦游仙境》" in about
    assert about.startswith('<div lang="zh">') and '<span lang="en">Alice</span>' in about
    with i18n.speaking("en"):
        assert alice.description in describe_role(alice)
        about = describe_role(wukong)
    assert "Journey to the West" in about and "Sun Wukong, the Great Sage" in about and "孙悟空" in about
    with i18n.speaking("zh"):
        assert wukong.description in describe_role(wukong) and "西游记" in describe_role(wukong)


SEARCHED = {  # what a visitor types on each page, and the character it finds
    "zh": [("Alice", "alice"), ("爱丽丝", "alice"), ("爱丽丝梦游仙境", "alice"), ("西游记", "sunwukong"),
           ("美猴王", "sunwukong"), ("孙悟空", "sunwukong"), ("福尔摩斯探案集", "sherlock"), ("Holmes", "sherlock"),
           ("红楼梦", "lindaiyu"), ("水浒", "luzhishen"), ("三国演义", "zhugeliang"), ("傲慢与偏见", "elizabeth"),
           ("德古拉", "dracula"), ("孔明", "zhugeliang")],
    "en": [("Alice", "alice"), ("Journey to the West", "sunwukong"), ("monkey king", "sunwukong"),
           ("孙悟空", "sunwukong"), ("Holmes", "sherlock"), ("Dream of the Red Chamber", "lindaiyu"),
           ("林黛玉", "lindaiyu"), ("Water Margin", "luzhishen"), ("Romance of the Three Kingdoms", "zhugeliang"),
           ("Kongming", "zhugeliang"), ("Pride and Prejudice", "elizabeth"), ("Dracula", "dracula")],
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_picker_finds_a_character_by_name_alias_or_work_in_the_pages_language(lang):
    with i18n.speaking(lang):
        for words, rid in SEARCHED[lang]:
            assert found(words) == [rid], (words, found(words))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_picker_lists_one_language_at_a_time_the_names_as_written_kept(lang):
    """The list line is what the search box shows once picked: on a Chinese page no English work or alias beside
    the Chinese, and the other way round (issue 67). A character's own name stays as its story writes it."""
    elsewhere = {"zh": ["Journey to the West", "monkey king", "Dream of the Red Chamber", "Kongming",
                        "Pride and Prejudice", "Sun Wukong", "Melancholy of Haruhi"],
                 "en": ["西游记", "美猴王", "红楼梦", "孔明", "傲慢与偏见", "爱丽丝", "夏洛克", "凉宫春日的忧郁"]}[lang]
    with i18n.speaking(lang):
        for words in elsewhere:
            assert not found(words) and not found(words, online=True), (lang, words)
        entries = picker_entries()
    by_ref = {e.ref: e.label for e in entries}
    names = {load_role(rid).name for rid in bundled_ids()} | {r.name for r in hub_roles()}  # as written
    for label in (e.label for e in entries):
        parts = label.replace(" ☁", "").split(" · ")
        shown = [p for p in parts[1:] if not p.startswith("Hub: ")] + [parts[0]] * (parts[0] not in names)
        for part in shown:
            words = part.split(" (")
            for w in [words[0], *(words[1].rstrip(")").split(", ") if len(words) > 1 else [])]:
                if w in names:
                    continue
                assert is_cjk(w) == (lang == "zh") or not any(c.isalpha() for c in w), (lang, label, w)
    if lang == "zh":
        assert by_ref["sunwukong"] == "孙悟空 · 西游记 (孙行者, 美猴王, 齐天大圣, 猴哥)"
        assert by_ref["sherlock"].startswith("Sherlock Holmes · 夏洛克·福尔摩斯 · ")
    else:
        assert by_ref["sunwukong"] == "孙悟空 · Sun Wukong · Journey to the West (the Monkey King, Great Sage)"


def test_the_tiles_name_the_work_in_the_visitors_language():
    with i18n.speaking("zh"):
        tiles = tiles_html(picker_entries())
        entries = {e.ref: e for e in picker_entries()}
    assert 'title="孙悟空 · 西游记"' in tiles and 'title="Alice · 刘易斯·卡罗尔《爱丽丝梦游仙境》"' in tiles
    assert entries["alice"].label == "Alice · 爱丽丝 · 刘易斯·卡罗尔《爱丽丝梦游仙境》 (艾丽丝)"
    with i18n.speaking("en"):
        tiles = tiles_html(picker_entries())
    assert 'title="孙悟空 · Journey to the West"' in tiles


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_hub_catalogue_is_searched_by_its_names_and_titles_in_the_pages_language(lang):
    searched = {"zh": [("凉宫春日", "凉宫春日的忧郁"), ("赫敏", "哈利·波特"), ("杰克·斯派洛", "加勒比海盗")],
                "en": [("Haruhi Suzumiya", "The Melancholy of Haruhi"), ("Hermione Granger", "Harry Potter"),
                       ("Jack Sparrow", "Pirates of the Caribbean")]}[lang]
    refs = ["silk-road/ChatHaruhi-RolePlaying/haruhi", "silk-road/ChatHaruhi-RolePlaying/Hermione",
            "silk-road/ChatHaruhi-from-RoleLLM/Jack Sparrow"]
    with i18n.speaking(lang):
        for ref, words in zip(refs, searched, strict=True):
            for w in words:
                assert ref in found(w, online=True), (lang, w)
        assert "silk-road/ChatHaruhi-RolePlaying/haruhi" in found("凉宫春日", online=True)  # her name as written
        wrong = "The Melancholy of Haruhi" if lang == "zh" else "凉宫春日的忧郁"
        assert not found(wrong, online=True)


def test_the_hub_list_is_drawn_in_the_pages_language():
    """The folded Hub list's rows, like the search list's lines: a Chinese page's had 'The Melancholy of Haruhi
    Suzumiya' beside 凉宫春日的忧郁 in every row."""
    from page.chat_tab import hub_list_in, hub_samples

    zh, en = hub_samples("zh"), hub_samples("en")
    assert zh[0] == ["凉宫春日", "凉宫春日的忧郁", "ChatHaruhi-54K"]
    assert en[0] == ["凉宫春日 · Haruhi Suzumiya", "The Melancholy of Haruhi Suzumiya", "ChatHaruhi-54K"]
    assert not any(is_cjk(work) for _name, work, _source in en)
    assert hub_list_in("zh").constructor_args["samples"] == zh  # an update of the list drawn with the page
    assert hub_list_in("en") == {"__type__": "update"}  # English: as drawn
