"""What web/ writes for the page speaks one language at a time (issue 52): in English no Chinese at all; in Chinese
no English word left outside names, brands, markup and what the visitor or a character said."""

from __future__ import annotations

import re

import pytest

from chatharuhi_core import i18n

CJK = re.compile(r"[\u3400-\u9fff]")
BRANDS = {"Hugging", "Face", "Inference", "Space", "GPU", "OpenAI", "API", "HF", "token", "Hub", "SmolLM", "Instruct",
          "Gemma", "ChatHaruhi", "gguf", "runs"}


def english_left(text: str, kept: set[str] = frozenset()) -> list[str]:
    """The English words (three letters or more) in `text` outside markup, code spans, link targets, brands and the
    names `kept`."""
    text = re.sub(r"<[^>]+>|`[^`]*`|\]\([^)]*\)", " ", text)
    return [w for w in re.findall(r"[A-Za-z]{3,}", text) if w not in BRANDS and w not in kept]


def both(make, kept: set[str] = frozenset()) -> tuple[str, str]:
    """`make()` in English and in Chinese, each checked to be in its language alone."""
    with i18n.speaking("en"):
        en = make()
    with i18n.speaking("zh"):
        zh = make()
    assert en and not CJK.search(en), en
    assert CJK.search(zh) and not english_left(zh, kept), (zh, english_left(zh, kept))
    return en, zh


def test_the_memory_panel_in_each_language(settings):
    from chatharuhi_core.web.chat import Conversation
    from chatharuhi_core.web.common import EnginePanel
    from chatharuhi_core.web.memory import forget_memory, memory_markdown, pin_last_message, remember_fact
    from chatharuhi_core.web.turn import stream_turn

    en, zh = both(lambda: memory_markdown(None))
    assert en.startswith("_No memories yet.") and zh.startswith("_还没有记忆。")
    en, zh = both(lambda: remember_fact(Conversation("sherlock"), "Anna is 42.")[1], {"Anna"})
    assert en == "Remembered: Anna is 42." and zh == "记住了：Anna is 42."
    both(lambda: pin_last_message(Conversation("sherlock"), "Watson")[1])
    both(lambda: forget_memory(None, None)[1])

    conv, _said = remember_fact(Conversation("sherlock"), "Anna is 42.")
    *_frames, last = stream_turn(conv, "Who am I looking for?", "Watson", EnginePanel(), settings)
    en, zh = both(lambda: memory_markdown(last.conversation), {"Anna"})
    assert "📥 in the last reply's prompt" in en and "cannot use memories" in en  # the offline engine only quotes
    assert "📥 在上一条回复的提示里" in zh and "🎭 离线引擎" in zh


def test_the_group_scene_panel_and_status_in_each_language(settings):
    from chatharuhi_core.errors import InputError
    from chatharuhi_core.scene.cast import MAX_MEMBERS, SceneState
    from chatharuhi_core.web.scene import (
        SceneEvent,
        _closing_status,
        present_html,
        rate_line,
        scenes_markdown,
        set_cast,
        target_choices,
    )

    both(lambda: present_html(SceneState()))
    both(lambda: scenes_markdown(SceneState(), 0))
    both(lambda: target_choices(SceneState())[0][0])
    en, zh = both(lambda: _closing_status(SceneEvent(text="Hello"), False, 0, None, []))
    assert en.startswith("Manual order") and "▶" in zh
    both(lambda: _closing_status(SceneEvent(turns=3), True, 1, None, []))
    both(lambda: rate_line(SceneState(), 0, True, settings)[1])

    def too_many() -> str:
        with pytest.raises(InputError) as caught:
            set_cast(SceneState(), [f"r{i}" for i in range(MAX_MEMBERS + 1)], settings)
        return str(caught.value)
    both(too_many)


def test_the_engine_notes_in_each_language(settings):
    from chatharuhi_core.web.common import engine_note
    from chatharuhi_core.web.panel_hints import panel_hints
    from chatharuhi_core.web.signin import sign_in_note

    space = settings.with_(sign_in=True)
    en, zh = both(lambda: sign_in_note(space, None, "script"))
    assert en.startswith("**Now:** the offline engine") and "](/login/huggingface)" in zh
    both(lambda: panel_hints("local").model_hint)
    assert both(lambda: panel_hints("openai").key_label) == ("API key", "API 密钥")
    assert panel_hints("script").model_hint == ""  # no message: never the catalogue's header
    both(lambda: engine_note("script"))  # its label and description are the library's messages


def test_toasts_and_stores_in_each_language():
    from chatharuhi_core.chat.prompt import Exchange
    from chatharuhi_core.web.browser_store import Restored, unpack
    from chatharuhi_core.web.chat import Conversation
    from chatharuhi_core.web.user_store import welcome_back

    both(lambda: unpack({"v": -1}, lambda _rid: True, set()).note)
    kept = Restored(chats={"sherlock": Conversation("sherlock", [Exchange("Watson", "Hi", "Hm.")])})
    en, zh = both(lambda: welcome_back("Ada", kept, lambda _rid: "Sherlock Holmes"), {"Ada", "Sherlock", "Holmes"})
    assert "Sherlock Holmes (1 exchange)" in en and "Sherlock Holmes（1 轮）" in zh


def test_the_stats_line_lore_reasons_and_a_bad_file_speak_the_visitors_language(env):
    """A zh-CN walk found "token" in the stats line, English lore reasons ("key 'x' in the message being answered"),
    Python's English in a bad file's sentence ("Expecting value") and a group name of "You"."""
    from chatharuhi_core.chat.chatbot import ReplyStats
    from chatharuhi_core.errors import ImportProblem
    from chatharuhi_core.roles.lorebook import Lorebook, LoreEntry, activate
    from chatharuhi_core.roles.sources import import_file
    from chatharuhi_core.web.drawing import lore_markdown, stats_line
    from page.visit import scene_name

    stats = ReplyStats(engine="Offline: quote the script", model="", first_token_s=0.4, total_s=2.0, tokens=30)
    _en, zh = both(lambda: stats_line(stats))
    assert "token" not in zh and "词元" in zh
    book = Lorebook(name="Ash", entries=(LoreEntry("1", "The ash falls.", keys=("ash",)),
                                         LoreEntry("2", "Always.", constant=True),
                                         LoreEntry("3", "Too long " * 200, keys=("ash",))), token_budget=60)
    fired = activate(book, ["ash here", "hm", "and?"], lambda text: len(text.split()))
    both(lambda: lore_markdown(activate(book, ["ash here", "hm", "and?"], lambda text: len(text.split()))),
         {"ash", "Ash", "Always", "The", "falls", "Too", "long"})
    assert any(not f.used for f in fired)
    settings, inbox = env
    (inbox / "broken.json").write_text('{"name": "Mira", "first_mes": }', encoding="utf-8")

    def bad_card() -> str:
        with pytest.raises(ImportProblem) as caught:
            import_file(inbox / "broken.json", settings)
        return str(caught.value)
    en, zh = both(bad_card, {"broken", "json", "JSON"})
    assert "Expecting" not in zh
    assert both(lambda: scene_name(""))[1] == "你"


def test_a_partner_a_switch_put_in_the_name_field_never_becomes_the_visitors_name():
    """Issue 67: an English page's group-scene name was 唐僧. The name field's change runs with the conversation as
    it is by then, which after quick switches may hold another character than the one whose partner filled the
    field; any bundled character's partner is a switch's doing, and a name the visitor wrote is kept."""
    import gradio as gr

    from chatharuhi_core.web.chat import Conversation
    from page.chat_tab import remember_name

    sherlock = Conversation("sherlock")
    with i18n.speaking("en"):
        assert remember_name("唐僧", "You", sherlock) == ("", gr.skip())  # Wukong's partner, Holmes on screen
        assert remember_name("Watson", "You", Conversation("sunwukong")) == ("", gr.skip())
        assert remember_name("Sam", "You", sherlock) == ("Sam", "Sam")
        assert remember_name("", "Sam", sherlock) == ("", "You")



def test_gradios_own_done_line_is_said_in_the_pages_language():
    """Gradio 6.31 tells a screen reader an event is done with a key none of its languages defines: a zh-CN
    walk's reader said "common.complete" (seen in the page's screen-reader text after any event)."""
    from page.language import GRADIO_DONE, page_i18n

    said = page_i18n().translations
    assert said["en"][GRADIO_DONE] == "Complete"
    assert said["zh-CN"][GRADIO_DONE] == said["zh-TW"][GRADIO_DONE] == "完成"
