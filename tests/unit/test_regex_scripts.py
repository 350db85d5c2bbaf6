"""A card's regex scripts run as SillyTavern runs them: where (shown, prompt, stored), on what (input, reply), at what
depth, with JavaScript's pattern and replacement syntax; and a card can neither hang the app nor break the reading of
its other scripts."""

from __future__ import annotations

import logging
import time

import pytest

from chatharuhi_core import i18n
from chatharuhi_core.roles import regex_scripts as rs
from chatharuhi_core.roles.regex_scripts import (
    AI_OUTPUT,
    DISPLAY,
    PROMPT,
    STORED,
    USER_INPUT,
    RunContext,
    read_scripts,
    run_scripts,
)

LOGGER = "chatharuhi_core.roles.regex_scripts"


@pytest.fixture(autouse=True)
def english():
    with i18n.speaking("en"):
        yield


def script(find: str, replace: str = "", **fields) -> dict:
    """A card's script as SillyTavern exports it: a reply's, changing the stored message, unless told otherwise."""
    return {"id": "0000", "scriptName": fields.pop("scriptName", "test"), "findRegex": find, "replaceString": replace,
            "trimStrings": [], "placement": [AI_OUTPUT], "disabled": False, "markdownOnly": False,
            "promptOnly": False, "runOnEdit": True, "substituteRegex": 0, "minDepth": None, "maxDepth": None,
            **fields}


def run(raw: list, text: str, where: str = STORED, placement: int = AI_OUTPUT, char: str = "Haruhi",
        **context) -> str:
    scripts, problems = read_scripts(raw, char)
    assert problems == []
    return run_scripts(scripts, text, RunContext(where, placement, **context))


STATUS = script(r"/<StatusPlaceHolderImpl\/>/g", '<div class="status">{{char}}: {{match}}</div>',
                scriptName="status bar", placement=[AI_OUTPUT], markdownOnly=True)


@pytest.mark.parametrize(("where", "expected"), [
    (DISPLAY, 'Hi.\n<div class="status">Haruhi: <StatusPlaceHolderImpl/></div>'),
    (PROMPT, "Hi.\n<StatusPlaceHolderImpl/>"), (STORED, "Hi.\n<StatusPlaceHolderImpl/>")])
def test_a_status_bar_is_drawn_only_where_the_reply_is_shown(where, expected):
    assert run([STATUS], "Hi.\n<StatusPlaceHolderImpl/>", where) == expected


def test_update_variable_blocks_are_cut_from_the_stored_reply_only():
    cut = script(r"/<UpdateVariable>[\s\S]*?<\/UpdateVariable>/gm")
    reply = "早上好。<UpdateVariable>\n_.set('好感', 1);\n</UpdateVariable>再见。<UpdateVariable>x</UpdateVariable>"
    assert run([cut], reply, STORED) == "早上好。再见。"
    assert run([cut], reply, DISPLAY) == reply
    assert run([cut], reply, PROMPT) == reply


def test_a_prompt_only_script_changes_only_what_goes_to_the_model():
    note = script("/$/", " (stay in character)", promptOnly=True, placement=[USER_INPUT])
    assert run([note], "hello", PROMPT, USER_INPUT) == "hello (stay in character)"
    assert run([note], "hello", STORED, USER_INPUT) == "hello"
    assert run([note], "hello", DISPLAY, USER_INPUT) == "hello"


def test_a_script_marked_both_display_and_prompt_runs_in_both_but_does_not_change_the_message():
    both = script("/x/", "y", markdownOnly=True, promptOnly=True)
    assert [run([both], "x", where) for where in (DISPLAY, PROMPT, STORED)] == ["y", "y", "x"]


def test_placement_picks_the_visitors_input_or_the_reply():
    on_input = script("/cat/g", "dog", placement=[USER_INPUT])
    assert run([on_input], "cat", placement=USER_INPUT) == "dog"
    assert run([on_input], "cat", placement=AI_OUTPUT) == "cat"
    on_both = script("/cat/g", "dog", placement=[USER_INPUT, AI_OUTPUT])
    assert run([on_both], "cat", placement=AI_OUTPUT) == "dog"


def test_the_old_markdown_placement_means_the_replies_as_shown():
    old = script("/cat/g", "dog", placement=[0])
    assert run([old], "cat", DISPLAY, AI_OUTPUT) == "dog"
    assert run([old], "cat", STORED, AI_OUTPUT) == "cat"
    assert run([old], "cat", DISPLAY, USER_INPUT) == "cat"


@pytest.mark.parametrize(("find", "text", "expected"), [
    ("/a/g", "banana", "bXnXnX"), ("/a/", "banana", "bXnana"), ("a", "banana", "bXnana"),
    ("/A/gi", "bAnana", "bXnXnX"), ("/A/g", "bAnana", "bXnana"),
    ("/a.b/g", "a\nb", "a\nb"), ("/a.b/gs", "a\nb", "X"), ("/a.b/g", "a\rb", "a\rb"),
    ("/^x$/g", "x\nx", "x\nx"), ("/^x$/gm", "x\nx\r\nx", "X\nX\r\nX"), ("/a$/", "a\n", "a\n"),
    ("/x/gy", "xx", "XX"), ("/x/gu", "xx", "XX"), ("/x/gd", "xx", "XX"), ("/x*/g", "ab", "XaXbX")])
def test_flags(find, text, expected):
    assert run([script(find, "X")], text) == expected


@pytest.mark.parametrize(("replace", "expected"), [
    ("[$1]", "[ab] [cd]"), ("[$<second>$<first>]", "[ba] [dc]"), ("[$&]", "[<ab>] [<cd>]"),
    ("[{{match}}]", "[<ab>] [<cd>]"), ("[{{MATCH}}]", "[<ab>] [<cd>]"), ("[$0]", "[<ab>] [<cd>]"),
    ("$$1 = $$", "$1 = $ $1 = $"), ("$3$4$<nope>|", "b| d|"), ("$10", "ab0 cd0"), (r"\1\g<1>", r"\1\g<1> \1\g<1>"),
    ("{{char}} & {{user}}", "Haruhi & Kyon Haruhi & Kyon"), ("", " ")])
def test_replacement_syntax(replace, expected):
    find = r"/<((?<first>\w)(?<second>\w))>/g"
    assert run([script(find, replace)], "<ab> <cd>", user_role="Kyon") == expected


def test_a_group_that_took_no_part_is_empty():
    assert run([script("/(a)|(b)/g", "[$1$2]")], "ab") == "[a][b]"


def test_trim_strings_are_taken_out_of_the_match_and_its_groups_before_they_go_in():
    trimmed = script(r"/<(think)>([\s\S]*?)<\/think>/g", "«{{match}}» $2", trimStrings=["<think>", "</think>", "{{char}}"])
    assert run([trimmed], "<think>Haruhi plans</think>") == "« plans»  plans"


def test_names_in_the_replacement_are_text_even_when_they_look_like_references():
    assert run([script("/x/", "{{user}}")], "x", user_role="$1 $& {{match}}") == "$1 $& {{match}}"


@pytest.mark.parametrize(("substitute", "text", "expected"), [
    (1, "A.B and AxB", "[] and []"), (2, "A.B and AxB", "[] and AxB"), (0, "A.B and {{char}}", "A.B and []"),
    (True, "AxB", "[]"), (False, "A.B and {{char}}", "A.B and []")])
def test_substitute_regex_puts_the_names_into_the_pattern(substitute, text, expected):
    assert run([script("/{{char}}/g", "[]", substituteRegex=substitute)], text, char="A.B") == expected


def test_the_visitors_name_is_put_into_the_pattern_when_the_text_is_run():
    scripts, problems = read_scripts([script("/{{user}}/g", "<b>{{user}}</b>", substituteRegex=2)], "Haruhi")
    assert problems == []
    assert run_scripts(scripts, "Hi K.O, not KxO", RunContext(STORED, AI_OUTPUT, user_role="K.O")) == \
        "Hi <b>K.O</b>, not KxO"
    assert run_scripts(scripts, "Hi Kyon", RunContext(STORED, AI_OUTPUT, user_role="Kyon")) == "Hi <b>Kyon</b>"


def test_a_name_that_breaks_a_raw_pattern_at_run_time_leaves_the_text_and_is_logged(caplog):
    scripts, problems = read_scripts([script("/{{user}}/g", "x", substituteRegex=1, scriptName="raw")], "Haruhi")
    assert problems == []
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert run_scripts(scripts, "A(B", RunContext(STORED, AI_OUTPUT, user_role="A(B")) == "A(B"
    assert "The card's regex script 'raw' was skipped: its pattern does not compile" in caplog.text


def test_named_groups_and_their_backreferences():
    double = script(r"/(?<w>[a-z]+) \k<w>/g", "$<w>!")
    assert run([double], "the the cat cat dog") == "the! cat! dog"
    assert run([script(r"/\k<w>/g", "Q")], "k<w>") == "Q"  # no named group: JavaScript reads \k as k


@pytest.mark.parametrize(("depth", "ran"), [(None, True), (0, False), (1, True), (3, True), (4, False)])
def test_min_and_max_depth(depth, ran):
    bounded = script("/x/", "y", minDepth=1, maxDepth=3)
    assert run([bounded], "x", depth=depth) == ("y" if ran else "x")


@pytest.mark.parametrize("bounds", [{"minDepth": -1, "maxDepth": -1}, {"minDepth": None}, {"maxDepth": "x"},
                                    {"minDepth": True}])
def test_no_bound(bounds):
    assert run([script("/x/", "y", **bounds)], "x", depth=99) == "y"


def test_run_on_edit():
    assert run([script("/x/", "y", runOnEdit=True)], "x", edit=True) == "y"
    assert run([script("/x/", "y", runOnEdit=False)], "x", edit=True) == "x"
    assert run([script("/x/", "y", runOnEdit=False)], "x") == "y"


def test_a_disabled_script_never_runs():
    assert run([script("/x/", "y", disabled=True)], "x") == "x"
    assert run([script("/x/", "y", disabled=True, markdownOnly=True)], "x", DISPLAY) == "x"


def test_scripts_run_in_the_cards_order():
    assert run([script("/a/g", "b"), script("/b/g", "c")], "ab") == "cc"


def test_a_pattern_that_does_not_compile_is_one_sentence_and_the_others_still_run():
    raw = [script("/[a/g", "x", scriptName="status bar"), script("/b/g", "B")]
    scripts, problems = read_scripts(raw, "Haruhi")
    assert problems == ["The card's regex script 'status bar' was skipped: its pattern does not compile "
                        "(unterminated character set)."]
    assert [s.find for s in scripts] == ["/b/g"]
    assert run_scripts(scripts, "[a b", RunContext(STORED, AI_OUTPUT)) == "[a B"


def test_a_nested_quantifier_returns_quickly_and_unchanged():
    text = "a" * 40 + "b"
    start = time.monotonic()
    assert run([script("/(a+)+$/", "x")], text) == text  # the regex module sees through this one
    assert time.monotonic() - start < 1


def test_catastrophic_backtracking_is_stopped_and_reported(caplog):
    text = "a" * 40 + "b"
    scripts, _problems = read_scripts([script("/(a|a)+$/", "x", scriptName="slow"), script("/b/", "c")], "Haruhi")
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert run_scripts(scripts, text, RunContext(STORED, AI_OUTPUT)) == "a" * 40 + "c"
    assert time.monotonic() - start < 1.5
    assert "The card's regex script 'slow' was skipped: it took too long on a message." in caplog.text


def test_a_huge_fixed_repeat_is_refused_before_it_is_compiled():
    scripts, problems = read_scripts([script("/(?:(?:a{1000}){1000}){1000}/", "x", scriptName="big")], "Haruhi")
    assert scripts == []
    assert problems == ["The card's regex script 'big' was skipped: its repeat counts are too large."]
    assert read_scripts([script("/a{1000}b{1000}/", "x")], "Haruhi")[1] == []


def test_a_result_that_would_swamp_the_app_is_skipped(caplog):
    scripts, _problems = read_scripts([script("/(?:)/g", "$&" * 20 + "x" * 1000, scriptName="wide")], "Haruhi")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert run_scripts(scripts, "y" * 1000, RunContext(STORED, AI_OUTPUT)) == "y" * 1000
    assert "The card's regex script 'wide' was skipped: its result would be longer than" in caplog.text


def test_an_over_long_text_is_left_as_it_is(caplog):
    text = "x" * (rs.MAX_TEXT_CHARS + 1)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert run([script("/x/g", "y")], text) == text
    assert "left as it is" in caplog.text
    assert run([script("/x/g", "y")], "x" * rs.MAX_TEXT_CHARS) == "y" * rs.MAX_TEXT_CHARS


@pytest.mark.parametrize(("raw", "problems"), [
    (None, []), ([], []),
    ("/x/g", ["The card's regex scripts were not read: they are not a list."]),
    ({"findRegex": "/x/"}, ["The card's regex scripts were not read: they are not a list."]),
    ([1], ["The card's regex script '#1' was skipped: it is not a script (an object with a pattern)."]),
    ([{"scriptName": "nothing"}], ["The card's regex script 'nothing' was skipped: it has no pattern."]),
    ([{"id": "id-7", "findRegex": 5}], ["The card's regex script 'id-7' was skipped: it has no pattern."]),
    ([{"findRegex": ""}], ["The card's regex script '#1' was skipped: it has no pattern."]),
    ([{"findRegex": "x", "replaceString": 3, "placement": [2]}],
     ["The card's regex script '#1' was skipped: its replacement is not text."]),
    ([{"findRegex": "x"}], ["The card's regex script '#1' was skipped: it names no place to run (placement)."]),
    ([{"findRegex": "x", "placement": "2"}],
     ["The card's regex script '#1' was skipped: it names no place to run (placement)."]),
    ([script("/x/q")], ["The card's regex script 'test' was skipped: its flags 'q' are not valid."]),
    ([script("/x/gg")], ["The card's regex script 'test' was skipped: its flags 'gg' are not valid."]),
    ([script("\\")], ["The card's regex script 'test' was skipped: its pattern does not compile "
                      "(bad escape (end of pattern))."]),
])
def test_junk_gives_sentences_not_exceptions(raw, problems):
    assert read_scripts(raw, "Haruhi")[1] == problems


def test_missing_fields_take_sillytaverns_defaults():
    scripts, problems = read_scripts([{"findRegex": "x", "placement": [2], "substituteRegex": "junk"}], "Haruhi")
    assert problems == []
    assert run_scripts(scripts, "xx", RunContext(STORED, AI_OUTPUT)) == "x"  # no replaceString: the match goes
    assert run_scripts(scripts, "xx", RunContext(STORED, AI_OUTPUT, edit=True)) == "xx"  # runOnEdit defaults off


def test_chinese_text():
    status = script(r"/【状态】([\s\S]*?)【\/状态】/g", '<div class="状态">{{char}}：$1</div>', markdownOnly=True)
    reply = "你好，阿虚。【状态】心情：好【/状态】"
    assert run([status], reply, DISPLAY, char="凉宫春日") == '你好，阿虚。<div class="状态">凉宫春日：心情：好</div>'
    assert run([script("/春日/g", "{{user}}")], "春日说春日", user_role="阿虚") == "阿虚说阿虚"


@pytest.mark.parametrize(("find", "text", "expected"), [
    (r"/\w+/g", "你好abc世界", "你好X世界"),  # JavaScript's \w is ASCII
    (r"/\d/g", "1１", "X１"),  # and so is \d: a full-width digit is not one
    (r"/\bcat\b/g", "猫cat猫 concat", "猫X猫 concat"),
    (r"/[^]+/", "a\nb", "X"), (r"/a[]/", "a", "a"), (r"/a{,2}/", "a{,2}", "X"), (r"/a{e<=1}/", "b", "b"),
    (r"/\u{1F600}/u", "😀", "X"), (r"/\cJ/", "\n", "X"), (r"/\//g", "a/b", "aXb"),
])
def test_javascript_pattern_syntax(find, text, expected):
    assert run([script(find, "X")], text) == expected


def test_the_context_names_where_the_text_goes():
    with pytest.raises(ValueError, match="where must be one of"):
        RunContext("screen", AI_OUTPUT)
