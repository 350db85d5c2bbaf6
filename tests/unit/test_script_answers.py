"""The offline engine answers the message it was given, and says it to the one who asked (issue 41).

Whom a line calls is learned from the character's own scenes (roles/address.py); the shape of answer a
message wants is read from the message (chat/asking.py). The engine tests run the real embedder over the
bundled characters' real Chroma stores.
"""

import pytest

from chatharuhi_core.chat.asking import asked, fit
from chatharuhi_core.chat.chatbot import ChatHaruhi
from chatharuhi_core.chat.engines.script import score_lines
from chatharuhi_core.roles.address import learn, said_to
from chatharuhi_core.roles.lines import parse_scene_lines
from chatharuhi_core.roles.sources import load_role

SCENES = [
    "唐僧:「悟空，前面有妖怪吗？」\n孙悟空:「师父，莫怕，有俺在！」",
    "唐僧:「悟空，你去化斋。」\n孙悟空:「师父，俺这就去。」",
    "猪八戒:「猴哥，俺饿了。」\n孙悟空:「呆子，就知道吃！」",
    "猪八戒:「猴哥，歇歇吧。」\n孙悟空:「呆子，再走十里！」",
    "猪八戒:「猴哥，你笑什么？」\n孙悟空:「哈哈，笑你！」",
    "沙僧:「大师兄，你笑什么？」\n孙悟空:「哈哈，没什么。」",
    "Mr Bennet:「Did you walk?」\nElizabeth:「I did, Papa, all the way.」",
    "Mr Bennet:「Tired?」\nElizabeth:「Not in the least, Papa.」",
]


def test_nicknames_are_learned_from_whom_they_open_answers_to():
    addressing = learn(SCENES, ["孙悟空", "悟空", "Elizabeth"])
    assert addressing.terms["呆子"] == "猪八戒" and addressing.terms["师父"] == "唐僧"  # twice each, to one speaker
    assert addressing.terms["Papa"] == "Mr Bennet"  # ", Papa," twice
    assert "哈哈" not in addressing.terms  # laughter, to two speakers, and repeated syllables
    assert addressing.terms["八戒"] == "猪八戒"  # a given name follows from the full one
    assert "悟空" not in addressing.terms  # the character's own names never call someone else
    assert addressing.elsewhere("呆子听好了，这是师父的", "唐僧") == "猪八戒"
    assert addressing.elsewhere("呆子听好了", "八戒") == ""  # the visitor who plays him may be called so
    assert addressing.elsewhere("师父，俺去去就来。", "唐僧") == ""
    assert addressing.elsewhere("八戒那厮又偷懒了。", "唐僧") == ""  # named, not called
    assert addressing.elsewhere("Not now, Papa.", "Mr Darcy") == "Mr Bennet"
    assert addressing.elsewhere("呆子，走！", "") == ""  # said to no one in particular


def test_the_visitors_placeholder_is_never_someone_else():
    """In a card's examples `{{user}}` speaks: that is the visitor, whatever name they give."""
    card = learn(["{{user}}:「Hello?」\nMira:「Shut the door, {{user}}, the wind bites.」",
                  "{{user}}:「Again?」\nMira:「Quiet, Captain, quiet.」", "{{user}}:「Well?」\nMira:「No, Captain.」"],
                 ["Mira"])
    assert card.terms == {}  # no speaker but the visitor, and no word learned towards them
    assert card.elsewhere("Shut the door, {{user}}, the wind bites.", "friend") == ""


def test_a_reply_is_said_to_the_last_one_speaking_in_a_bit_of_scene():
    assert said_to("你好", "唐僧") == "唐僧"
    assert said_to("旁白:「大雾弥江。」\n赵云:「军师，这是何意？」", "旁白") == "赵云"
    assert said_to("The fog lifts.", "narrator") == ""


@pytest.mark.parametrize("message, kind", [
    ("Who are you?", "who"), ("你是谁？", "who"), ("报上名来，你是何人？", "who"),
    ("Holmes, are you ever wrong?", "yesno"), ("你会不会七十二变？", "yesno"), ("你喜欢花吗？", "yesno"),
    ("Why do you smoke?", "why"), ("你为什么要保护师父？", "why"),
    ("Tell me about the case.", ""), ("今天天气不错。", ""),
])
def test_the_shape_of_answer_a_message_wants(message, kind):
    assert asked(message).kind == kind


def test_a_line_shaped_as_the_answer_fits_and_a_reason_fits_only_a_why():
    assert fit(asked("Are you Mr Holmes?"), "I am, and you have come from the station.") == 1.0
    assert fit(asked("Do you have one?"), "I have three.") == 1.0
    assert fit(asked("Do you have one?"), "The fog is thick tonight.") == 0.0
    assert fit(asked("Who are you?"), "I am a consulting detective.") == 1.0
    assert fit(asked("你是谁？"), "俺乃齐天大圣孙悟空是也！") == 1.0
    assert fit(asked("What is my dog called?"), "Because the dog did not bark.") == -1.0
    assert fit(asked("Why so quiet?"), "Because the dog did not bark.") == 1.0


SUN_MESSAGES = ["你是谁？", "你好", "今天吃什么？", "你会不会七十二变？", "为什么要保护师父？", "你觉得八戒怎么样？",
                "猪八戒又偷懒了", "前面有妖怪吗？", "悟空，你的金箍棒有多重？", "沙僧去哪儿了？"]
SHERLOCK_MESSAGES = ["Who are you?", "What do you think of Moriarty?", "What is my dog called?", "Hello",
                     "Do you play the violin?", "Why do you smoke?", "Is Mrs Hudson at home?", "Tell me about Mycroft."]


@pytest.mark.parametrize("role_id, messages", [("sunwukong", SUN_MESSAGES), ("sherlock", SHERLOCK_MESSAGES)])
def test_the_offline_engine_never_calls_the_visitor_by_someone_elses_name(settings, embedder, role_id, messages):
    role = load_role(role_id)
    for visitor in (role.user_name, "小明" if role.language == "zh" else "Stranger"):
        bot = ChatHaruhi(role=role, engine="script", settings=settings, embedder=embedder, user_role=visitor)
        for message in messages:
            reply = bot.answer(message).text
            assert not role.addressing.elsewhere(reply, visitor), (visitor, message, reply)


def test_who_are_you_gets_the_character_saying_who_it_is(settings, embedder):
    for role_id, message in (("sherlock", "Who are you?"), ("dracula", "Who are you?"), ("sunwukong", "你是谁？")):
        role = load_role(role_id)
        reply = ChatHaruhi(role=role, engine="script", settings=settings, embedder=embedder).answer(message).text
        assert fit(asked(message), reply, role.speaker_names) == 1.0, (role_id, reply)


def test_the_next_line_ranking_reads_what_a_line_says_not_where_it_was_found(settings, embedder):
    """A held-out line has no scene; a line from a scene sent must not win for having one."""
    role = load_role("sherlock")
    bot = ChatHaruhi(role=role, engine="script", settings=settings, embedder=embedder, user_role="Watson")
    request = bot.prepare("Who are you?")
    found = next(t for s, t in (ln for hit in request.scenes[:request.packed] for ln in _lines(hit.text))
                 if s in role.speaker_names)
    alone = score_lines(request, [found])[0]
    among = score_lines(request, [found, "An unrelated line about the weather."])[0]
    assert alone == pytest.approx(among)  # each line's score is its own
    calling = score_lines(request, ["I am a consulting detective, Mrs Hudson.", "I am a consulting detective."])
    assert calling[0] < calling[1]  # calling someone other than Watson costs the line


def _lines(text):
    from chatharuhi_core.roles.lines import parse_scene_lines

    return parse_scene_lines(text)


def test_the_greeting_fits_the_visitor_who_named_themself():
    from chatharuhi_core.web.drawing import greeting_messages

    wukong = load_role("sunwukong")
    assert greeting_messages(wukong)[0]["content"] == wukong.greeting  # to 唐僧: "师父！…"
    other = greeting_messages(wukong, "小明")[0]["content"]
    assert other == wukong.alternate_greetings[0] and not wukong.addressing.elsewhere(other, "小明")


def test_titles_endearments_and_longer_names_call_and_one_person_has_one_name():
    scenes = ["Inspector Lestrade:「Well?」\nHolmes:「Look at the mud, Lestrade.」",
              "Lestrade:「And?」\nHolmes:「Nothing yet.」",
              "Jonathan Harker:「Good night.」\nHolmes:「Good night.」",
              "Mina Harker:「Good night.」\nHolmes:「Good night.」",
              "Lady Catherine:「Well?」\nHolmes:「No.」"]
    a = learn(scenes, ["Holmes"])
    assert a.speaker("Lestrade") == "Inspector Lestrade"  # one man under two names
    assert a.elsewhere("Look at the mud, Lestrade.", "Inspector Lestrade") == ""
    assert a.elsewhere("Good evening, Mr Harker.", "Watson") == "Jonathan Harker"  # a title before a shared name
    assert a.elsewhere("Good evening, Mr Harker.", "Mina Harker") == ""  # a word two share calls the one addressed
    assert a.elsewhere("Lady Catherine de Bourgh, madam, I am not afraid.", "Watson") == "Lady Catherine"
    assert a.elsewhere("Ah, dearest Lestrade, come in.", "Watson") == "Inspector Lestrade"
    assert a.mentions("Lestrade is a fool.", "Lestrade") and not a.mentions("Come in, Lestrade.", "Lestrade")


def test_the_offline_engine_deflects_in_character_when_no_line_answers(settings, embedder):
    role = load_role("sunwukong")
    bot = ChatHaruhi(role=role, engine="script", settings=settings, embedder=embedder)
    reply = bot.answer("你会打麻将吗？我三缺一。").text
    lines = {t for s in role.stories for spk, t in parse_scene_lines(s.text) if spk in role.speaker_names}
    assert reply in role.greetings or reply in lines
    assert not role.addressing.elsewhere(reply, "唐僧") and not role.addressing.mentions(reply, "唐僧")


def test_a_group_scene_knows_the_words_the_others_call_a_character_by(settings, embedder):
    from chatharuhi_core.scene import Scene, SceneSetup

    scene = Scene(["sherlock", "elizabeth", "dracula"], engine="script", user_role="Watson", settings=settings,
                  setup=SceneSetup(embedder=embedder, seed=0))
    assert "Count" in scene.member("dracula").called  # "Count, …" in the lines Dracula answers
    scene.say("Count, why are you here?")
    assert scene.responders()[0].role_id == "dracula"
    wukong = Scene(["sunwukong", "luzhishen"], engine="script", user_role="唐僧", settings=settings,
                   setup=SceneSetup(embedder=embedder))
    assert "师父" not in wukong.member("luzhishen").called  # 师父 is 唐僧 to 孙悟空, who is present


def test_a_group_scene_hears_a_name_said_once_typed_small_or_given_by_the_character_itself(settings, embedder):
    from chatharuhi_core.roles.names import written_small
    from chatharuhi_core.scene import Scene, SceneSetup

    scene = Scene(["sherlock", "elizabeth", "dracula", "alice"], engine="script", user_role="Watson", settings=settings,
                  setup=SceneSetup(embedder=embedder, seed=0))
    assert "Voivode" in scene.member("dracula").called  # "My people called me Voivode"
    for line, who in [("Voivode, did you fight the Turks?", "dracula"), ("what did the mushroom taste like, alice?",
                      "alice"), ("lizzie do you think your mother will calm down", "elizabeth")]:
        scene.say(line)
        assert scene.responders()[0].role_id == who, line
    han = Scene(["zhugeliang", "sunwukong", "lindaiyu"], engine="script", user_role="刘禅", settings=settings,
                setup=SceneSetup(embedder=embedder, seed=0))
    assert "相父" in han.member("zhugeliang").called  # "相父，你又要北伐了吗？", heard once
    assert not {"你好", "这泼猴"} & set(han.member("sunwukong").called)  # pronouns and particles name nobody
    han.say("朕读书总读不进去，相父，你能不能给朕讲讲兵法？")
    assert han.responders()[0].role_id == "zhugeliang"
    # a lower-case form only where the scenes never use it as a word
    assert written_small(["Alice", "Will", "Rose", "Holmes"], ["He will come.", "a rose"]) == ["alice", "holmes"]


def test_a_group_scene_member_calls_no_one_absent_and_a_chat_keeps_its_lines(settings, embedder):
    from chatharuhi_core.roles.vocatives import vocatives
    from chatharuhi_core.scene import Scene, SceneSetup

    scene = Scene(["elizabeth", "luzhishen", "zhugeliang"], engine="script", user_role="Watson", settings=settings,
                  setup=SceneSetup(embedder=embedder, seed=0))
    present = {"Watson", *(n for m in scene.members for n in m.names())}
    for message in ["What do you think of marriage?", "你们谁最会打仗？", "Tell me about your family."]:
        scene.say(message)
        for member in list(scene.members):
            line = scene.turn(member).text
            role = load_role(member.role_id)
            assert all(any(n in word for n in present) for word in vocatives(line, role.openers)), (member.name, line)
    # a chat is said to someone of the book: the net is not cast there ("嫂子" is fine for 王熙凤)
    bot = ChatHaruhi(role=load_role("lindaiyu"), engine="script", settings=settings, embedder=embedder,
                     user_role="王熙凤")
    assert bot.answer("妹妹，你尝尝这茶怎么样？").text
