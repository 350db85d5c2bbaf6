"""A card's regex scripts where SillyTavern runs them: on the page's display (the greeting, the chat, a reply being
written, a group scene), in the prompt, on the visitor's message before it is kept, on the reply once written; a
script that does not compile is one sentence at import and skipped."""

from __future__ import annotations

import copy
import json

from support.make_inputs import KEEPER_CARD

from chatharuhi_core.chat.chatbot import ChatHaruhi
from chatharuhi_core.cli import main
from chatharuhi_core.roles.card_extras import script_problems
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.drawing import chat_messages
from chatharuhi_core.web.picker import added_status
from chatharuhi_core.web.scene import scene_messages

STATUS = {"scriptName": "status bar", "findRegex": "/<StatusPlaceHolderImpl\\/>/g",
          "replaceString": "<div class=\"status\">HP 10 · {{user}}</div>", "placement": [2], "markdownOnly": True,
          "promptOnly": False, "disabled": False}
VARIABLES = {"scriptName": "hide variables", "findRegex": "/<UpdateVariable>[\\s\\S]*?<\\/UpdateVariable>/gm",
             "replaceString": "", "placement": [2], "markdownOnly": False, "promptOnly": False}
WHISPER = {"scriptName": "prompt note", "findRegex": "/^(.*)$/s", "replaceString": "$1 (said quietly)",
           "placement": [1], "markdownOnly": False, "promptOnly": True, "maxDepth": 0}
SHOUT = {"scriptName": "no shouting", "findRegex": "/!+/g", "replaceString": ".", "placement": [1],
         "markdownOnly": False, "promptOnly": False}
BROKEN = {"scriptName": "broken", "findRegex": "/[unclosed/g", "replaceString": "", "placement": [2]}


class Saying:
    """An engine that says one thing (the reply's clean-up and scripts are the chat's own)."""

    name = "saying"

    def __init__(self, text: str):
        self.text, self.requests = text, []

    def stream(self, request):
        self.requests.append(request)
        yield self.text


def _role(env, *scripts):
    settings, inbox = env
    card = copy.deepcopy(KEEPER_CARD)
    card["data"]["first_mes"] = "Shut the door, {{user}}.<StatusPlaceHolderImpl/>"
    card["data"]["extensions"]["regex_scripts"] = list(scripts)
    (inbox / "mira.json").write_text(json.dumps(card), encoding="utf-8")
    return load_role(inbox / "mira.json", settings)


def test_a_display_script_draws_the_status_bar_on_the_page_alone(env):
    settings, _inbox = env
    role = _role(env, STATUS)
    shown = chat_messages(Conversation(role.id), role, "Ann")
    assert shown[0]["content"] == 'Shut the door, Ann.<div class="status">HP 10 · Ann</div>'
    bot = ChatHaruhi(role=role, engine=Saying("Tea?<StatusPlaceHolderImpl/>"), settings=settings, user_role="Ann")
    reply = bot.answer("Hello.")
    assert reply.text == "Tea?<StatusPlaceHolderImpl/>"  # kept as written; only the screen draws it
    conv = Conversation(role.id, history=list(bot.history))
    assert chat_messages(conv, role, "Ann")[-1]["content"].endswith('<div class="status">HP 10 · Ann</div>')


def test_a_stored_script_cuts_the_variables_from_the_reply_kept(env):
    settings, _inbox = env
    role = _role(env, VARIABLES)
    said = "Storm tonight.\n<UpdateVariable>\n_.set('mood', 'tense');\n</UpdateVariable>"
    bot = ChatHaruhi(role=role, engine=Saying(said), settings=settings)
    assert bot.answer("Weather?").text == "Storm tonight."
    assert "UpdateVariable" not in json.dumps(bot.prepare("And now?").messages)


def test_prompt_and_input_scripts_change_the_prompt_and_the_message_kept(env):
    settings, _inbox = env
    role = _role(env, WHISPER, SHOUT)
    engine = Saying("Hush.")
    bot = ChatHaruhi(role=role, engine=engine, settings=settings, user_role="Ann")
    bot.answer("Hello!!")
    assert bot.history[-1].text == "Hello."  # a stored input script: the message as kept
    assert engine.requests[-1].messages[-1]["content"] == "Ann:「Hello. (said quietly)」"  # prompt-only, depth 0
    bot.answer("Again!")
    later = engine.requests[-1].messages
    assert later[-1]["content"] == "Ann:「Again. (said quietly)」"
    assert {"role": "user", "content": "Ann:「Hello.」"} in later  # maxDepth 0: the older message as kept


def test_a_script_that_does_not_compile_is_one_sentence_and_the_others_run(env, capsys, monkeypatch):
    settings, inbox = env
    role = _role(env, BROKEN, STATUS)
    [problem] = script_problems(role)  # naming the card, the field and the script
    assert problem.startswith("character card mira.json, field 'extensions.regex_scripts': The card's regex script "
                              "'broken' was skipped: its pattern does not compile")
    assert "⚠️" in added_status(role) and "'broken' was skipped" in added_status(role)
    assert 'class="status"' in chat_messages(Conversation(role.id), role, "Ann")[0]["content"]
    monkeypatch.setenv("CHATHARUHI_CACHE", str(settings.cache_dir))
    assert main(["role", "import", str(inbox / "mira.json")]) == 0
    assert "'broken' was skipped" in capsys.readouterr().err


def test_a_group_scene_draws_a_members_line_through_its_cards_scripts(env):
    from chatharuhi_core.scene.cast import SceneLine
    from chatharuhi_core.scene.scene import Scene

    settings, _inbox = env
    role = _role(env, STATUS)
    scene = Scene([role, "sherlock"], engine="script", settings=settings, user_role="Ann")
    scene.state.lines.append(SceneLine("Mira", "Aye.<StatusPlaceHolderImpl/>", role.id))
    scene.state.lines.append(SceneLine("Sherlock Holmes", "Indeed.<StatusPlaceHolderImpl/>", "sherlock"))
    shown = [m["content"] for m in scene_messages(scene.state)]
    assert any('Aye.<div class="status">HP 10 · Ann</div>' in c for c in shown)
    assert any(c.endswith("Indeed.<StatusPlaceHolderImpl/>") for c in shown)  # Holmes has no card scripts


PANEL_PAGE = ("<!DOCTYPE html><html><head><style>.hp{color:red}</style></head><body>"
              "<div class=\"hp\" id=\"hp\">HP 10</div><script>document.getElementById('hp').textContent='ran';"
              "</script></body></html>")
PANEL = {"scriptName": "status page", "findRegex": "/<StatusPlaceHolderImpl\\/>/g",
         "replaceString": "\n```html\n" + PANEL_PAGE + "\n```\n", "placement": [2], "markdownOnly": True,
         "promptOnly": False, "disabled": False}


def test_a_display_scripts_html_page_is_a_frame_not_source_code(env):
    """Issue 67: a public card's display script turns its placeholder into a ```html block (a whole page with
    its script); the greeting showed 6,616 characters of source code. The page gets a <card-frame> naming the block
    kept beside the card (drawn as a sandboxed frame), the prompt never holds it, and the offline engine no longer
    answers every question with the greeting, code and all."""
    settings, _inbox = env
    role = _role(env, PANEL)
    shown = chat_messages(Conversation(role.id), role, "Ann")[0]["content"]
    assert "```" not in shown and "<script" not in shown and shown.startswith("Shut the door, Ann.")
    src = shown.split('<a href="')[1].split('"')[0]
    kept = src.removeprefix("/gradio_api/file=")
    assert open(kept, encoding="utf-8").read().strip() == PANEL_PAGE  # the block, kept in the card's package
    assert str(role.root) in kept and "card-frame-scripts" in shown and f'title="{role.id}"' in shown
    bot = ChatHaruhi(role=role, engine="script", settings=settings, user_role="Ann")
    prompt = json.dumps(bot.prepare("How is the weather?").messages, ensure_ascii=False)
    assert "HP 10" not in prompt and "```" not in prompt  # display scripts are the page's alone
    for question in ("How is the weather?", "Who are you?", "What is your favourite colour?"):
        said = bot.answer(question).text
        assert "StatusPlaceHolderImpl" not in said and "Shut the door" not in said, said

