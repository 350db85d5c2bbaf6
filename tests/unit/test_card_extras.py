"""A SillyTavern card's extensions where this app has the concept: the character's note at its depth, talkativeness
in a group scene, and every extension kept on export."""

from __future__ import annotations

import copy
import json

from support.make_inputs import KEEPER_CARD

from chatharuhi_core.chat.chatbot import ChatHaruhi
from chatharuhi_core.chat.persona import AuthorsNote
from chatharuhi_core.chat.prompt import Exchange, PromptParts, lay_out
from chatharuhi_core.roles.card_extras import DepthNote, character_note, talkativeness, world_name
from chatharuhi_core.roles.cards import read_card_bytes, write_card_json
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.scene.cast import DEFAULT_TALKATIVENESS
from chatharuhi_core.scene.scene import Scene


def _card(env, name: str = "mira.json", **extensions):
    settings, inbox = env
    card = copy.deepcopy(KEEPER_CARD)
    card["data"]["extensions"].update(extensions)
    (inbox / name).write_text(json.dumps(card), encoding="utf-8")
    return load_role(inbox / name, settings)


def test_the_depth_prompt_is_the_characters_note_at_its_depth(env):
    settings, _inbox = env
    role = _card(env, depth_prompt={"prompt": "{{char}} smells of salt; {{user}} notices.", "depth": 1,
                                    "role": "system"})
    assert character_note(role) == DepthNote("{{char}} smells of salt; {{user}} notices.", 1, "system")
    bot = ChatHaruhi(role=role, engine="script", settings=settings, user_role="Ann",
                     history=[Exchange("Ann", "Good evening.", "Evening. Shut the door.")])
    messages = bot.prepare("Is a storm coming?").messages
    assert messages[-2] == {"role": "system", "content": "Mira smells of salt; Ann notices."}
    assert "smells of salt" not in messages[0]["content"]  # not in the system prompt, not after the history
    assert sum("smells of salt" in m["content"] for m in messages) == 1


def test_the_characters_note_comes_before_the_authors_note_at_the_same_depth():
    history = [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"}]
    parts = PromptParts("sys", history, "", (), "", "msg", "AUTHOR", 1, DepthNote("CHAR", 1, "user"))
    assert [m["content"] for m in lay_out(parts)] == ["sys", "u1", "a1", "CHAR", "AUTHOR", "msg"]
    assert lay_out(parts)[3]["role"] == "user"
    deep = PromptParts("sys", history, "", (), "", "msg", "AUTHOR", 0, DepthNote("CHAR", 2))
    assert [m["content"] for m in lay_out(deep)] == ["sys", "u1", "CHAR", "a1", "msg", "AUTHOR"]
    assert lay_out(PromptParts("sys", history, "", (), "", "msg")) == [{"role": "system", "content": "sys"},
                                                                      *history, {"role": "user", "content": "msg"}]


def test_a_player_note_and_the_characters_note_both_reach_the_prompt(env):
    settings, _inbox = env
    role = _card(env, depth_prompt={"prompt": "Salt.", "depth": 0})
    bot = ChatHaruhi(role=role, engine="script", settings=settings, note=AuthorsNote("Be brief.", 0))
    assert [m["content"] for m in bot.prepare("Hello?").messages[-2:]] == ["Salt.", "Be brief."]


def test_odd_depth_prompts_and_talkativeness_are_read_as_sillytavern_reads_them(env):
    assert character_note(_card(env, "a.json", depth_prompt={"prompt": "x", "depth": "7", "role": "narrator"})) == \
        DepthNote("x", 7, "system")
    assert character_note(_card(env, "b.json", depth_prompt={"prompt": "  "})) is None
    assert character_note(_card(env, "c.json", depth_prompt="not a note")) is None
    assert talkativeness(_card(env, "d.json", talkativeness="0.9")) == 0.9
    assert talkativeness(_card(env, "e.json", talkativeness=3)) == 1.0
    assert talkativeness(_card(env, "f.json", talkativeness="chatty")) is None
    assert talkativeness(load_role("sherlock")) is None and character_note(load_role("sherlock")) is None
    assert world_name(_card(env, "g.json", world=" Gull Rock ")) == "Gull Rock"


def test_a_cards_talkativeness_is_its_members_in_a_group_scene(env):
    settings, _inbox = env
    shy = _card(env, "shy.json", talkativeness="0.1")
    scene = Scene([shy, "sherlock"], engine="script", settings=settings)
    talk = {m.name: m.talkativeness for m in scene.members}
    assert talk == {"Mira": 0.1, "Sherlock Holmes": DEFAULT_TALKATIVENESS}


def test_export_keeps_every_extension_the_app_does_not_know(env):
    settings, inbox = env
    role = _card(env, regex_scripts=[{"scriptName": "s", "findRegex": "/a/g", "replaceString": "b"}],
                 world="Gull Rock", talkativeness="0.3", fav=True, someone_else={"deep": [1, {"x": None}]})
    _spec, data, _image = read_card_bytes(write_card_json(role, inbox / "out.json").read_bytes(), "out.json")
    ext = {k: v for k, v in data["extensions"].items() if k != "chatharuhi"}
    assert ext == {**KEEPER_CARD["data"]["extensions"], "regex_scripts": [
        {"scriptName": "s", "findRegex": "/a/g", "replaceString": "b"}], "world": "Gull Rock", "talkativeness": "0.3",
        "fav": True, "someone_else": {"deep": [1, {"x": None}]}}
