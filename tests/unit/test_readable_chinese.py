"""bench/readable_chinese.py: the new judge (jieba's dictionary) passes the characters' real lines and fails the
gibberish of a tiny English model that the old rule (mostly CJK, no three marks in a row) lets through; the old rule
is kept as it was, for comparison."""

from __future__ import annotations

import math

import pytest

from bench.readable_chinese import (
    CJK,
    MIN_CJK_SHARE,
    MIN_WORD_GAIN,
    TUNING_ROLES,
    _gated_scores,
    _negatives,
    best_threshold,
    character_lines,
    chinese_score,
    readable_chinese,
    reads_as_chinese,
)

REAL_LINES = [
    "师父莫怕！有俺老孙在，管他什么妖魔鬼怪，一棒一个，打他个稀巴烂！",
    "呆子听好了，这如意金箍棒重一万三千五百斤，能大能小，变作绣花针藏在耳朵里。你要不要扛一扛？",
    "我哪里认得你，不过是初来乍到，看着面善罢了。你这会子倒问我，难道我该认得你不成？",
    # "。……" is three marks in a row for the old rule; the new one counts a repeated mark once
    "你倒比我还记挂我自己。放着吧，一会儿再穿。……紫鹃，亏得有你在，不然我这身子，早不知怎样了。",
]
ENGLISH = "The Monkey King laughed, leapt onto his cloud and was gone before the guards could draw their swords."


@pytest.mark.parametrize("line", REAL_LINES)
def test_real_lines_read_as_chinese(line):
    assert reads_as_chinese(line)
    assert chinese_score(line) >= MIN_WORD_GAIN


def test_smollm2s_gibberish_with_a_broken_word_fails_the_new_judge_and_passed_the_old():
    gibberish = "俺者，悟！你可以看到什义不小的。这个莫大都是一种多板制"  # "什" never stands alone: 什义 is no word
    assert readable_chinese(gibberish)
    assert not reads_as_chinese(gibberish)
    assert chinese_score(gibberish) == -math.inf


@pytest.mark.xfail(strict=True, reason="every piece is a word, 唐魏赫 reads as a name: a word dictionary cannot tell "
                                       "this nonsense from a sentence (docs/eval/readable-chinese.md)")
def test_gibberish_made_of_real_words_fails():
    assert not reads_as_chinese("父母！你是唐魏赫多少，他可以把我说明")


def test_english_and_empty_text_fail_both():
    for text in (ENGLISH, "", "  \n"):
        assert not readable_chinese(text) and not reads_as_chinese(text)
    assert chinese_score(ENGLISH) == -math.inf


def test_a_reply_that_is_not_mostly_cjk_fails_whatever_its_words():
    assert not reads_as_chinese("师父，OK, let's go to the mountain now!")


def test_the_old_rule_is_unchanged():
    assert MIN_CJK_SHARE == 0.7 and CJK.match("孙") and not CJK.match("a")
    assert not readable_chinese("什义！你是唐家大像！！；；！．．！")  # three marks in a row
    assert not readable_chinese(REAL_LINES[3])  # so the real "。……" fails it, as it always did
    assert readable_chinese("师父你莫要怕呀，ok") and not readable_chinese("师父你莫要怕，ok")  # 7 of 10 CJK; 6 of 9


def test_the_threshold_still_meets_its_tuning_criterion():
    """On the tuning set (the real lines of 孙悟空 and 林黛玉 against SmolLM2's replies), MIN_WORD_GAIN is still
    among the thresholds that pass >= 95% of the real lines and the fewest replies: a new jieba would show here."""
    positives = _gated_scores([line for role in TUNING_ROLES for line in character_lines(role)])
    negatives = _gated_scores(_negatives())
    assert len(positives) == 150 and len(negatives) == 80
    low, high = best_threshold(positives, negatives)
    assert low < MIN_WORD_GAIN <= high
