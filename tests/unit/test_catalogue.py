"""The catalogue: every message the code marks has its Chinese, with the same placeholders; none is left over; the
language is found the way a browser and a shell say it."""

from __future__ import annotations

import pytest

from chatharuhi_core import i18n
from tools import catalogue


def test_every_marked_message_has_chinese_with_the_same_placeholders_and_none_is_unused():
    assert catalogue.problems() == []


def test_the_catalogue_is_not_empty_and_translates():
    zh = [m for c in catalogue.catalogues().values() for m in c if m.id and isinstance(m.id, str)]
    assert len(zh) > 50
    english, chinese = zh[0].id, zh[0].string
    with i18n.speaking("zh"):
        assert i18n._(english) == chinese
    with i18n.speaking("en"):
        assert i18n._(english) == english


def test_placeholders_are_filled_in_both_languages_and_plurals_follow_each_language():
    with i18n.speaking("en"):
        assert i18n.ngettext("{n} exchange", "{n} exchanges", 1) == "1 exchange"
        assert i18n.ngettext("{n} exchange", "{n} exchanges", 3) == "3 exchanges"
    assert i18n._("{a} and {b}", a=1, b=2) == "1 and 2"  # an unknown message is its English, filled


@pytest.mark.parametrize(("tag", "lang"), [
    ("zh-CN", "zh"), ("zh_TW.UTF-8", "zh"), ("zh", "zh"), ("en-GB", "en"), ("C.UTF-8", "en"), ("fr-FR", None),
    ("", None), (None, None)])
def test_tags_name_a_language(tag, lang):
    assert i18n.normalize(tag) == lang


@pytest.mark.parametrize(("header", "lang"), [
    ("zh-CN,zh;q=0.9,en;q=0.8", "zh"), ("en-US,en;q=0.9", "en"), ("fr-FR,fr;q=0.9,zh;q=0.8,en;q=0.7", "zh"),
    ("en;q=0.5,zh-TW;q=0.9", "zh"), ("fr", None), ("", None), (None, None)])
def test_a_browser_language_is_its_best_weighted_known_one(header, lang):
    assert i18n.from_accept_language(header) == lang


@pytest.mark.parametrize(("env", "lang"), [
    ({"LANG": "zh_CN.UTF-8"}, "zh"), ({"LANG": "en_US.UTF-8"}, "en"), ({}, "en"),
    ({"LC_ALL": "C.UTF-8", "LANG": "zh_CN.UTF-8"}, "en"), ({"LANGUAGE": "fr:zh_CN", "LANG": "en_US.UTF-8"}, "zh"),
    ({"LC_MESSAGES": "zh_TW.UTF-8"}, "zh"), ({"LANG": "fr_FR.UTF-8"}, "en")])
def test_the_command_line_follows_the_locale(env, lang):
    assert i18n.from_environment(env) == lang


def test_a_chosen_language_wins_over_a_resolver_and_is_undone_after_the_block():
    i18n.follow(_zh_resolver)
    try:
        assert i18n.language() == "zh"
        with i18n.speaking("en"):
            assert i18n.language() == "en"
        assert i18n.language() == "zh"
    finally:
        i18n._resolvers.remove(_zh_resolver)
    assert i18n.language() == "en"


def _zh_resolver() -> str:
    return "zh"


def test_no_module_that_translates_hides_the_translator_behind_a_throwaway_name():
    """`x, _ = pair` in a function makes `_` local there: a `_("...")` in that function then fails at run time."""
    import ast

    hidden = []
    for path in catalogue.SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports_it = any(isinstance(node, ast.ImportFrom) and any(a.name == "_" for a in node.names)
                         for node in ast.walk(tree))
        if not imports_it:
            continue
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            elif isinstance(node, (ast.For, ast.With)):
                targets = [node.target] if isinstance(node, ast.For) else [i.optional_vars for i in node.items]
            for target in targets:
                for name in ast.walk(target) if target is not None else []:
                    if isinstance(name, ast.Name) and name.id == "_" and isinstance(name.ctx, ast.Store):
                        hidden.append(f"{path.relative_to(catalogue.ROOT)}:{name.lineno}")
    assert hidden == []
