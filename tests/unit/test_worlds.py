"""SillyTavern world-info files on their own: saved by name, linked to the card that names them (imported before or
after) or to a character chosen, firing in the prompt and shown with the character."""

from __future__ import annotations

import copy
import json

import pytest
from support.make_inputs import KEEPER_CARD

from chatharuhi_core.chat.chatbot import ChatHaruhi
from chatharuhi_core.cli import main
from chatharuhi_core.errors import ImportProblem
from chatharuhi_core.roles.sources import ImportOptions, import_file, load_role
from chatharuhi_core.roles.worlds import is_world_info, linked_world, saved_world, world_from_json
from chatharuhi_core.web.drawing import describe_role
from chatharuhi_core.web.picker import add_character, added_status

# a world-info file as SillyTavern's World Info panel exports one (written for the test)
WORLD = {"entries": {
    "0": {"uid": 0, "key": ["beacon", "lamp"], "keysecondary": [], "comment": "The beacon",
          "content": "The beacon of Gull Rock burns whale oil and must be trimmed at midnight.", "constant": False,
          "selective": False, "order": 100, "position": 0, "disable": False, "probability": 100, "depth": 4},
    "1": {"uid": 1, "key": ["smuggler"], "keysecondary": [], "comment": "Smugglers",
          "content": "Smugglers land brandy in the north cove when the beacon is dark.", "constant": False,
          "order": 90, "position": 1, "disable": False},
    "2": {"uid": 2, "key": ["ghost"], "comment": "Off", "content": "A disabled entry.", "disable": True},
}}


def _write(folder, name, obj):
    (folder / name).write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return folder / name


def _keeper(folder, world="Gull Rock Lore"):
    card = copy.deepcopy(KEEPER_CARD)
    card["data"]["extensions"]["world"] = world
    return _write(folder, "mira.json", card)


def test_a_world_file_reads_as_a_lorebook_named_for_the_file():
    assert is_world_info(WORLD) and not is_world_info(KEEPER_CARD) and not is_world_info({"name": "x"})
    book = world_from_json(WORLD, "Gull Rock Lore.json")
    assert book.name == "Gull Rock Lore"
    assert [(e.keys, e.name, e.enabled, e.insertion_order, e.position) for e in book.entries] == [
        (("beacon", "lamp"), "The beacon", True, 100, "before_char"),
        (("smuggler",), "Smugglers", True, 90, "after_char"),
        (("ghost",), "Off", False, 100, "after_char")]
    with pytest.raises(ImportProblem, match="has no entry with text"):
        world_from_json({"entries": {"0": {"key": ["x"], "content": "  "}}}, "empty.json")


def test_a_world_alone_is_saved_and_says_how_to_link_it(env):
    settings, inbox = env
    with pytest.raises(ImportProblem, match="the world 'Gull Rock Lore' \\(3 entries\\) is saved, but no character"):
        import_file(_write(inbox, "Gull Rock Lore.json", WORLD), settings)
    assert saved_world("gull rock lore", settings).name == "Gull Rock Lore"


def test_a_card_naming_a_saved_world_gets_it(env):
    settings, inbox = env
    with pytest.raises(ImportProblem):
        import_file(_write(inbox, "Gull Rock Lore.json", WORLD), settings)
    role = import_file(_keeper(inbox), settings)
    assert linked_world(role) == "Gull Rock Lore"
    assert [e.content[:12] for e in role.lorebook.entries][-3:] == ["The beacon o", "Smugglers la", "A disabled e"]
    assert any(s.id.startswith("world-") and "whale oil" in s.text for s in role.stories)
    bot = ChatHaruhi(role=role, engine="script", settings=settings)
    assert "whale oil" in bot.prepare("Is the lamp lit?").messages[0]["content"]  # fired by its key
    assert "whale oil" not in ChatHaruhi(role=role, engine="script", settings=settings).prepare(
        "Good evening.").messages[0]["content"]


def test_a_world_imported_after_its_card_links_to_that_character(env):
    settings, inbox = env
    mira = import_file(_keeper(inbox), settings)
    assert not linked_world(mira)
    linked = import_file(_write(inbox, "Gull Rock Lore.json", WORLD), settings,
                         ImportOptions(world_fallback="sherlock"))  # the card that names it wins over the page's choice
    assert linked.name == "Mira" and linked.id != mira.id and linked_world(linked) == "Gull Rock Lore"
    assert load_role(mira.id, settings).lorebook.entries == mira.lorebook.entries  # the card alone is unchanged


def _carrying(folder, world: dict, name="Gull Rock Lore"):
    """A card whose own book holds its world's entries (card fields, as SillyTavern exports a card with its world)."""
    card = copy.deepcopy(KEEPER_CARD)
    card["data"]["extensions"]["world"] = name
    card["data"]["character_book"] = {"name": name, "entries": [
        {"keys": e["key"], "content": e["content"], "enabled": not e.get("disable"), "insertion_order": e.get("order", 100),
         "comment": e.get("comment", "")} for e in world["entries"].values()]}
    return _write(folder, "mira-with-world.json", card)


def test_a_world_the_character_already_carries_is_linked_once(env):
    """The card's world file uploaded after the card made a second Mira (two tiles, two search entries) whose every
    entry was listed twice and whose fired entries went over the lore budget. Now: the same character, marked
    linked, each entry once; a world with one new entry adds that one only."""
    settings, inbox = env
    mira = add_character("", str(_carrying(inbox, WORLD)), "", settings, None, None)
    linked = add_character("", str(_write(inbox, "Gull Rock Lore.json", WORLD)), "", settings, None, None)
    assert linked.id == mira.id and linked_world(linked) == "Gull Rock Lore"
    assert len(linked.lorebook.entries) == 3 and len({e.content for e in linked.lorebook.entries}) == 3
    prompt = ChatHaruhi(role=linked, engine="script", settings=settings).prepare("Is the lamp lit?")
    assert prompt.messages[0]["content"].count("whale oil") == 1
    assert all(f.used for f in prompt.lore), [(f.entry.label, f.reason) for f in prompt.lore]
    grown = copy.deepcopy(WORLD)
    grown["entries"]["3"] = {"uid": 3, "key": ["wreck"], "comment": "The wreck", "content": "The Mary Ellen sank in 1890."}
    more = add_character("", str(_write(inbox, "Gull Rock Lore.json", grown)), "", settings, None, None)
    assert [e.content for e in more.lorebook.entries].count(WORLD["entries"]["0"]["content"]) == 1
    assert len(more.lorebook.entries) == 4 and any("Mary Ellen" in e.content for e in more.lorebook.entries)


def test_a_world_links_to_the_character_chosen(env):
    settings, inbox = env
    world = _write(inbox, "Gull Rock Lore.json", WORLD)
    holmes = import_file(world, settings, ImportOptions(world_fallback="sherlock"))
    assert holmes.name == "Sherlock Holmes" and holmes.id != "sherlock" and holmes.image_path is not None
    assert "whale oil" in ChatHaruhi(role=holmes, engine="script", settings=settings).prepare(
        "What of the beacon?").messages[0]["content"]
    again = import_file(world, settings, ImportOptions(world_for=holmes.id))  # linking again replaces, not doubles
    assert len(again.lorebook.entries) == 3
    assert "World info **Gull Rock Lore**: 2 entries" in describe_role(holmes)
    assert "Gull Rock Lore" in added_status(holmes) and "World info" not in describe_role(load_role("sherlock"))


def test_the_page_links_an_uploaded_world_to_the_character_talked_to(env):
    settings, inbox = env
    world = _write(inbox, "upload-1234.json", WORLD)
    role = add_character("", str(world), "", settings, None, "alice")
    assert role.name.startswith("Alice") and linked_world(role) == "upload-1234"


def test_the_command_line_links_a_world(env, capsys, monkeypatch):
    settings, inbox = env
    monkeypatch.setenv("CHATHARUHI_CACHE", str(settings.cache_dir))
    assert main(["role", "import", str(_write(inbox, "Gull Rock Lore.json", WORLD)), "--link-to", "sherlock"]) == 0
    assert "The world 'Gull Rock Lore' is linked" in capsys.readouterr().out
    assert main(["role", "import", str(_write(inbox, "Other.json", WORLD))]) == 1
    assert "no character is linked to it" in capsys.readouterr().err
