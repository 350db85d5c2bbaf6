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


def test_a_chat_leaves_out_a_call_the_character_made_to_someone_else_and_keeps_one_made_to_the_visitor():
    from chatharuhi_core.chat.engines.base import ChatRequest
    from chatharuhi_core.chat.engines.script import _unfit
    from chatharuhi_core.roles.sources import load_role

    zhuge = load_role("zhugeliang")
    assert "刘备" in zhuge.said_to["主公"]  # "主公，…" answers 刘备 in its scenes
    to_liubei = _unfit(ChatRequest(messages=[], role=zhuge, user_role="刘备", text="你怎么看？"), "刘备")
    assert not to_liubei("主公，哪有什么神机。")
    assert not to_liubei("不过是乡里朋友的戏称罢了。水镜先生说，卧龙凤雏。亮惭愧，不敢当此虚名。")  # 亮: itself
    assert to_liubei("写的是粮草几何。三将军，仗不是只在阵前打的。")  # 张飞's, not 刘备's
    lu = load_role("luzhishen")
    to_linchong = _unfit(ChatRequest(messages=[], role=lu, user_role="林冲", text="你去吗？"), "林冲")
    assert to_linchong("哥哥要去，洒家拦不住。可洒家不去！")  # 宋江's


def test_an_exclamation_is_no_call():
    assert vocatives("好酒！再来二十碗，今日与诸位英雄喝个痛快。") == []
    assert vocatives("嫂嫂！借扇子一用。") == ["嫂嫂"]
