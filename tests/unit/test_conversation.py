"""One conversation value for the library, the command line and the page (issue 66): the bot answers on it and keeps
no history of its own, the library's tree and the page branch it the same way, and a chat's reply and a group
scene's line are flipped, rated and corrected by the same code."""

import json
from dataclasses import replace

from chatharuhi_core import ChatHaruhi, ChatTree, Conversation
from chatharuhi_core.chat.core import ChatCore
from chatharuhi_core.chat.prompt import Exchange
from chatharuhi_core.chat.swipes import Choices
from chatharuhi_core.chat.transcript import dump_chat, load_chat
from chatharuhi_core.web.chat_files import export_chat
from chatharuhi_core.web.controls import branch_from
from chatharuhi_core.web.feedback import edit_message
from chatharuhi_core.web.said import Answered, Said, edit_said, flip_said

ASKED = ["What is your method?", "Who is Moriarty?", "Why the violin?"]


def _bot(settings):
    return ChatHaruhi(role_name="sherlock", engine="script", user_role="Watson", settings=settings)


def test_the_bot_answers_on_a_conversation_value_and_keeps_no_history_of_its_own(settings):
    assert all(isinstance(getattr(ChatCore, name), property) for name in ("history", "memory", "note"))
    bot = _bot(settings)
    bot.chat(ASKED[0])
    assert bot.history is bot.conversation.history and len(bot.conversation.history) == 1
    given = Conversation("sherlock", [Exchange("Watson", "Hello.", "Good morning, Watson.")])
    bot.conversation = given
    bot.remember("Watson's sister is Anna.")
    bot.chat(ASKED[1])
    assert len(given.history) == 2 and given.history[0].reply == "Good morning, Watson."
    assert given.memory.pins[-1].text == "Watson's sister is Anna."


def test_the_library_s_tree_and_the_page_branch_a_chat_alike_and_write_the_same_file(settings, tmp_path):
    bot = _bot(settings)
    for text in ASKED[:2]:
        bot.chat(text)
    page_side = bot.conversation.copy()
    tree = ChatTree(bot)
    tree.branch(1)
    # the page's ↳ Branch on the first reply (message 1 after the greeting's one message)
    page_line, box, _said = branch_from(page_side, 2)
    library_line = tree.conversation
    assert box == "" and page_line.line.at == library_line.line.at == 1
    assert page_line.line.name == library_line.line.name == "Branch 2"
    assert [o.line.id for o in page_line.others] == [o.line.id for o in library_line.others] == ["main"]
    assert page_line.history == library_line.history == bot.history[:1]
    tree.switch("Main")
    assert len(bot.history) == 2 and tree.listing()[0].startswith("* 1. Main")

    from_library = load_chat(dump_chat(tree.transcript()))
    from_page = load_chat(export_chat(bot.conversation, "Watson", tmp_path).read_bytes())
    for got in (from_library, from_page):
        assert [ex.text for ex in got.history] == ASKED[:2]
        assert [b.at for b in got.branches] == [1] and got.user_role == "Watson"


def test_a_reply_and_a_scene_line_are_flipped_and_corrected_by_the_same_code(settings, tmp_path):
    from chatharuhi_core.chat.transcript import ReplyMeta
    from chatharuhi_core.scene.cast import SceneLine

    fb = settings.with_(feedback_file=tmp_path / "feedback.jsonl")
    texts = ("Elementary.", "I observe.", "Data, data, data.")
    reply, line = ReplyMeta("r1", []), SceneLine("Sherlock Holmes", texts[2], "sherlock", alternatives=list(texts))
    seen = []
    for record in (reply, line):
        said = Said(Choices.of(texts[2], texts), record, Answered("sherlock", "Sherlock Holmes", "Watson", ASKED[0]))
        flipped, _note = flip_said(said, 1, fb)
        corrected, _note = edit_said(replace(said, choices=flipped), "You see, but you do not observe.", fb)
        seen.append((flipped, corrected, record.original))
    assert seen[0] == seen[1]
    flipped, corrected, original = seen[0]
    assert flipped.kept == texts[0] and original == texts[0]
    assert corrected.texts == ("You see, but you do not observe.", *texts[1:])
    rows = [json.loads(x) for x in fb.feedback_path.read_text().splitlines()]
    assert [r["event"] for r in rows] == ["swipe", "edit"] * 2


def test_a_corrected_reply_takes_its_old_text_s_place_among_its_alternatives(settings):
    conv = Conversation("sherlock", [Exchange("Watson", ASKED[0], "B", alternatives=("A", "B", "C"))])
    conv, _said = edit_message(conv, 2, "B, better put.", settings)
    assert conv.history[0].alternatives == ("A", "B, better put.", "C")
