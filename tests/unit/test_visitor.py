"""What a new visitor hit (issue 21), at the level of the page's functions: Regenerate that moves on,
one's own message edited and answered again, a long load that shows it is alive, the chats kept per
character, a .png that is not a picture."""

import time

import pytest

from chatharuhi_core.errors import ChatHaruhiError
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.common import EnginePanel, while_running
from chatharuhi_core.web.feedback import answers_again, edit_message
from chatharuhi_core.web.turn import stream_turn


def _last(conv, text, settings, regenerate=False):
    *_, last = stream_turn(conv, text, "", EnginePanel(), settings, regenerate=regenerate)
    assert last.error is None
    return last.conversation


def test_regenerate_goes_through_the_candidates_instead_of_swinging_between_two(settings):
    conv = _last(Conversation("sherlock"), "What is your method?", settings)
    replies = [conv.history[-1].reply]
    for _ in range(4):
        conv = _last(conv, "", settings, regenerate=True)
        replies.append(conv.history[-1].reply)
    assert len(set(replies)) == len(replies), replies  # five different lines, no A, B, A, B
    assert len(conv.history) == 1


def test_editing_ones_own_last_message_asks_for_a_new_answer(settings):
    off = settings.with_(feedback_off=True)
    conv = _last(Conversation("sherlock"), "What is your method?", settings)
    conv = _last(conv, "Who is Moriarty?", settings)
    role = load_role("sherlock")
    edited, note = edit_message(conv, 3, "Who is Irene Adler?", off)  # 0 greeting, 1 and 3 the visitor's
    assert edited.history[-1].text == "Who is Irene Adler?" and "answers it again" in note
    assert answers_again(edited, role, 3) and not answers_again(edited, role, 1)
    again = _last(edited, "", settings, regenerate=True)  # what the page runs next
    assert again.history[-1].text == "Who is Irene Adler?" and len(again.history) == 2


def test_a_long_load_yields_its_seconds_and_hands_back_its_failure():
    assert list(while_running(lambda: time.sleep(2.2), every_s=1.0)) == [1, 2]

    def broken():
        raise ChatHaruhiError("the model file is damaged")

    with pytest.raises(ChatHaruhiError, match="damaged"):
        list(while_running(broken))


def test_switching_keeps_each_characters_chat(settings):
    from chatharuhi_core.web.chat import reopen

    holmes = _last(Conversation("sherlock"), "What is your method?", settings)
    wukong, chats = reopen(holmes, {}, "sunwukong")
    assert wukong.history == [] and chats["sherlock"] is holmes
    wukong = _last(wukong, "你是谁？", settings)
    back, chats = reopen(wukong, chats, "sherlock")
    assert back.history == holmes.history and chats["sunwukong"] is wukong
    cleared, chats = reopen(Conversation("sherlock"), chats, "sunwukong")  # a cleared chat is not kept
    assert "sherlock" not in chats and cleared is wukong


def test_random_bytes_named_png_are_not_called_text(tmp_path, settings):
    import os

    bad = tmp_path / "portrait.png"
    bad.write_bytes(os.urandom(4000))
    with pytest.raises(ChatHaruhiError) as err:
        load_role(str(bad), settings)
    assert "portrait.png is not a PNG image" in str(err.value) and "UTF-8" not in str(err.value)
