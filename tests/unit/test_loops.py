"""Issue 65's loop test (data/loops.py): a phrase said three times close together, or a reply whose word pairs are
under 60% distinct, is a loop; a character speaking of himself three times in a long line is not."""

import pytest

from chatharuhi_core.data.loops import distinct_2, loop_reason, loops
from chatharuhi_core.data.metrics import tokens


@pytest.mark.parametrize("reply", [
    "太平，太平，太平！太平天下太平！",  # passed the old Chinese check
    "你，你，你！你，你！！",
    "洒家是洒家，你放心不下洒家！洒家有福，洒家有死！",
    "I know, I know, I know what you mean.",
    "卖肉？卖什么？卖什么，卖什么，叫谁卖？",
])
def test_a_loop_is_found(reply):
    assert loops(reply), reply


@pytest.mark.parametrize("reply", [
    "成家？洒家是和尚，哪有什么家！兄弟们就是洒家的家，这山寨就是洒家的家。",  # the character's own line
    "长老莫赶洒家走！……罢了，是洒家闹得太过。长老待洒家恩重如山，洒家去哪里都记着长老的好，日后绝不给五台山丢脸。",
    "You have been in Afghanistan, I perceive.",
    "呆子！再叫一声，吃俺老孙一棒！",
    "好",
    "",
])
def test_a_line_is_not_a_loop(reply):
    assert not loops(reply), loop_reason(reply)


def test_the_reasons_say_what_was_repeated():
    assert loop_reason("太平，太平，太平！") == "phrase '太平' x3+"
    assert distinct_2(tokens("你，你，你！你，你！！")) == 0.25
    assert loop_reason("the cat the cat sat the") is None  # 'the cat' twice, pairs 4 of 5 distinct
