"""The wide net for calls a group scene needs: words that look like calling someone, whoever it is."""

from chatharuhi_core.roles.role import Role, Story
from chatharuhi_core.roles.vocatives import openers, vocatives


def test_the_net_catches_calls_the_learned_words_miss():
    assert vocatives("嫂子过奖了。我不过是个初来的客。") == ["嫂子"]  # kin, no comma after it
    assert vocatives("写的是粮草几何。三将军，仗不是只在阵前打的。") == ["三将军"]  # rank, after a sentence
    assert vocatives("老儿你放心，洒家替你出这口气！") == ["老儿"]  # before 你; "洒家替你" is no call
    assert vocatives("你这土地，俺问你。") == ["你这土地"]
    assert vocatives("你们这伙鸟人，看什么看？") == ["你们这伙鸟人"]
    assert vocatives("Your ladyship has declared it to be impossible.") == ["Your ladyship"]
    assert vocatives("Likes you? Jane, he looks at you.") == ["Jane"]
    assert vocatives("Three things, Watson: observation, deduction.") == ["Watson"]
    assert vocatives("I know you are Lady Catherine de Bourgh, madam.") == ["Lady Catherine"]


def test_words_that_only_look_like_calls_pass():
    for line in ["俺问你，这山里住着什么妖怪？", "罚就罚，我还怕你不成？", "圆是圆，可惜人不团圆。", "哈哈，好！",
                 "Well, I never.", "Elementary. Your boot is muddy.", "Yes, indeed."]:
        assert vocatives(line) == [], line
    # an interjection the character opens answers to two people with is not a name
    scenes = ["甲:「去吗？」\n悟空:「好啊，走。」", "乙:「吃吗？」\n悟空:「好啊，吃。」", "丙:「来吗？」\n悟空:「来了。」"]
    general = openers(scenes, {"悟空"})
    assert general == {"好啊"} and vocatives("好啊，俺去。", general) == []


def test_a_role_learns_its_openers_from_the_scenes_it_may_learn_from():
    stories = [Story("a", "甲:「去吗？」\n悟空:「好啊，走。」"), Story("b", "乙:「吃吗？」\n悟空:「好啊，吃。」")]
    role = Role(id="wk", name="悟空", system_prompt="x", stories=stories)
    assert role.openers == {"好啊"} and role.holding_out(["b"]).openers == frozenset()
