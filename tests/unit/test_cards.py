"""Characters as their card authors wrote them: SillyTavern's prompt order, {{user}} at chat time,
lorebook entries that fire on their keys, and lossless round trips (role package format 2)."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
from support.make_inputs import ASH_CARD

from chatharuhi_core.chat.chatbot import ChatHaruhi
from chatharuhi_core.chat.prompt import Exchange
from chatharuhi_core.errors import RoleFormatError
from chatharuhi_core.roles.cards import role_to_card, write_card_json, write_card_png
from chatharuhi_core.roles.lorebook import Lorebook, LoreEntry, activate, book_from_json
from chatharuhi_core.roles.placeholders import hold_partial
from chatharuhi_core.roles.role import FORMAT_VERSION, load_role_package, write_role_package
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.tokens import count_tokens
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.drawing import describe_role, greeting_messages, scenes_markdown


@pytest.fixture()
def ash(tmp_path, settings):
    path = tmp_path / "ash.json"
    path.write_text(json.dumps(ASH_CARD), encoding="utf-8")
    return load_role(path, settings)


def bot_for(role, settings, embedder, user="Sam", history=()):
    return ChatHaruhi(role=role, engine="script", user_role=user, settings=settings, embedder=embedder,
                      history=list(history))


def test_card_system_prompt_keeps_the_definition_and_constant_lore(ash, settings, embedder):
    bot = bot_for(ash, settings, embedder)
    messages = bot.prepare("Good morning, captain.").messages
    system = messages[0]["content"]
    assert system.startswith("You are a narrator-free role-play partner. Write only Captain Ash's next line.")
    for part in ("commands the airship Kestrel and owes Sam a favour", "Personality: gruff, loyal",
                 "Scenario: Sam has just climbed aboard", "The crew never flies through storms."):
        assert part in system, part
    sent = json.dumps(messages, ensure_ascii=False)
    assert "Tested by ChatHaruhi" not in sent  # creator_notes never reach the model
    assert "{{user}}" not in sent and "{{char}}" not in sent


def test_original_placeholder_expands_to_the_papers_template(tmp_path, settings):
    card = copy.deepcopy(ASH_CARD)
    card["data"]["system_prompt"] = "{{original}}\nNever break character."
    (tmp_path / "c.json").write_text(json.dumps(card))
    role = load_role(tmp_path / "c.json", settings)
    assert role.system_prompt.startswith("I want you to act like Captain Ash")
    assert "Never break character.\n\nCaptain Ash commands the airship" in role.system_prompt


def test_post_history_instructions_come_after_the_history(ash, settings, embedder):
    history = [Exchange("Sam", "Hello.", "Aye."), Exchange("Sam", "Ready?", "Always.")]
    messages = bot_for(ash, settings, embedder, history=history).prepare("Then cast off!").messages
    roles = [m["role"] for m in messages]
    last_assistant = max(i for i, r in enumerate(roles) if r == "assistant")
    assert messages[-2] == {"role": "system",
                            "content": "Keep Captain Ash's answer under three sentences and call Sam by name."}
    assert len(messages) - 2 > last_assistant and messages[-1]["content"] == "Sam:「Then cast off!」"
    assert "under three sentences" not in messages[0]["content"]


def test_user_placeholder_is_the_visitors_name_everywhere_and_goes_back_on_export(ash, settings, embedder, tmp_path):
    assert greeting_messages(ash, "Sam")[0]["content"] == "Welcome aboard, Sam. Mind the ropes."
    # before a name is given: a word that reads naturally, not the card's "User" (issue 41)
    assert greeting_messages(ash)[0]["content"] == "Welcome aboard, friend. Mind the ropes."
    assert ash.user_name == "User" and ash.visitor_name == "friend"  # the card's own field is kept for export
    zh = replace(ash, language="zh", greeting="{{user}}，头一回来吧？")
    assert greeting_messages(zh)[0]["content"] == "朋友，头一回来吧？"
    assert "owes Sam a favour" in describe_role(ash, "Sam")
    bot = bot_for(ash, settings, embedder)
    request = bot.prepare("Where are we headed?")
    example = next(h for h in request.scenes if h.id == "example-001")
    assert example.text == "Sam:「Where are we headed?」\nCaptain Ash:「North, where the wind pays.」"
    bot.chat("Where are we headed?")
    card = role_to_card(load_role(ash.id, settings))
    assert card["data"]["first_mes"] == "Welcome aboard, {{user}}. Mind the ropes."
    assert card["data"]["description"] == ASH_CARD["data"]["description"]
    assert card["data"]["extensions"]["chatharuhi"]["role"]["greeting"] == "Welcome aboard, {{user}}. Mind the ropes."


class Chunks:
    """An engine that streams fixed chunks, to split a placeholder across two of them."""

    name = "chunks"

    def __init__(self, chunks):
        self.chunks = chunks

    def stream(self, request):
        yield from self.chunks


def test_a_placeholder_split_across_stream_chunks_is_never_shown_half_written(ash, settings, embedder):
    assert hold_partial("Hello {{us") == "Hello " and hold_partial("Hello <US") == "Hello "
    assert hold_partial("Hello {{user}}") == "Hello {{user}}" and hold_partial("3 < 4") == "3 < 4"
    bot = ChatHaruhi(role=ash, engine=Chunks(["Captain Ash:「Aye, {{us", "er}}, we fly", " at dawn.」"]),
                     user_role="Sam", settings=settings, embedder=embedder)
    shown = list(bot.stream("When do we leave?"))
    assert "".join(shown) == "Aye, Sam, we fly at dawn."
    assert all("{" not in part for part in shown)


# ------------------------------------------------------------------ lorebook


def entry(eid, keys, **kw):
    return LoreEntry(id=eid, content=kw.pop("content", f"note {eid}"), keys=tuple(keys), **kw)


def test_a_key_fires_within_scan_depth_and_not_beyond():
    book = Lorebook((entry("sword", ["sword"]),), scan_depth=4)
    recent = ["the sword is old", "hm", "yes", "now?"]  # 3 messages back of the one being answered
    early = ["the sword is old"] + ["nothing"] * 9
    two_ago = ["x", "a sword!", "hm", "go"]
    assert [f.reason for f in activate(book, two_ago, count_tokens)] == ["key 'sword' 2 messages back"]
    assert [f.entry.id for f in activate(book, recent, count_tokens)] == ["sword"]
    assert activate(book, early, count_tokens) == []


def test_case_sensitivity_whole_words_and_chinese_keys():
    book = Lorebook((entry("port", ["Ashfall"], case_sensitive=True), entry("art", ["art"]),
                     entry("palace", ["天宫"])))
    assert [f.entry.id for f in activate(book, ["we sail to ashfall"], count_tokens)] == []
    assert [f.entry.id for f in activate(book, ["we sail to Ashfall"], count_tokens)] == ["port"]
    assert activate(book, ["a party tonight"], count_tokens) == []  # "art" is not a word of "party"
    assert [f.entry.id for f in activate(book, ["ART lovers"], count_tokens)] == ["art"]
    assert [f.entry.id for f in activate(book, ["俺老孙大闹天宫那年"], count_tokens)] == ["palace"]


def test_selective_entries_need_a_secondary_key():
    book = Lorebook((entry("engine", ["engine"], secondary_keys=("repair", "broken"), selective=True),))
    assert activate(book, ["the engine hums"], count_tokens) == []
    fired = activate(book, ["is it broken?", "the engine hums"], count_tokens)
    assert [f.reason for f in fired] == ["key 'engine' in the message being answered, with 'broken'"]


def test_budget_keeps_high_priority_entries_and_orders_by_insertion_order():
    book = Lorebook((entry("low", ["a"], content="low " * 50, priority=1, insertion_order=0),
                     entry("high", ["a"], content="high note", priority=50, insertion_order=9),
                     entry("mid", ["a"], content="mid note", priority=20, insertion_order=5),
                     entry("always", [], content="constant note", constant=True, insertion_order=7)),
                    token_budget=20)
    fired = activate(book, ["a"], count_tokens)
    assert [(f.entry.id, f.used) for f in fired] == [("mid", True), ("always", True), ("high", True), ("low", False)]
    assert sum(count_tokens(f.entry.content) for f in fired if f.used) <= 20
    assert fired[-1].reason.endswith("over the lore budget")


def test_regex_keys_and_recursive_scanning():
    book = Lorebook((entry("re", ["/dragon(s)?\\b/"], use_regex=True, content="Dragons sleep in Vesh."),
                     entry("vesh", ["Vesh"], content="Vesh is a valley.")), recursive_scanning=True)
    assert [f.entry.id for f in activate(book, ["two dragons"], count_tokens)] == ["re", "vesh"]
    flat = Lorebook(book.entries)
    assert [f.entry.id for f in activate(flat, ["two dragons"], count_tokens)] == ["re"]


def test_the_chat_sends_fired_entries_and_the_panel_says_why(ash, settings, embedder):
    history = [Exchange("Sam", "Is the engine broken again?", "It coughs.")] + [
        Exchange("Sam", f"Small talk {i}.", "Aye.") for i in range(5)]
    bot = bot_for(ash, settings, embedder, history=history)
    said = bot.answer("Set course for Ashfall, and buy gold there.")
    system = said.messages[0]["content"]
    assert "Ashfall is the smugglers' port" in system and "The crew never flies through storms." in system
    assert "rebuilt by Sam's father" not in system  # its keys were said 12 messages ago: beyond scan_depth 4
    assert "gold gold gold" not in system  # fired, but over the book's 60-token budget
    panel = scenes_markdown(Conversation(ash.id, last=said))
    assert "📖 **Ashfall** · key 'Ashfall' in the message being answered" in panel
    assert "📖 **1** ·" not in panel
    assert "✂️ **The long gold note** · key 'gold' in the message being answered, over the lore budget" in panel
    assert "📖 **The crew never flies through storms.** · constant" in panel
    near = bot_for(ash, settings, embedder, history=history[:1])
    assert "rebuilt by Sam's father" in near.prepare("Can you fix it?").messages[0]["content"]


# ------------------------------------------------------------------ the package format


def test_round_trips_are_lossless(ash, settings, tmp_path):
    again = load_role(write_card_png(ash, tmp_path / "ash.png"), settings)
    json_again = load_role(write_card_json(ash, tmp_path / "ash-out.json"), settings)
    package = load_role_package(write_role_package(ash, tmp_path / "pkg"))
    for other in (again, json_again, package):
        assert (other.system_prompt, other.stories, other.post_history_instructions, other.lorebook, other.greeting) == (
            ash.system_prompt, ash.stories, ash.post_history_instructions, ash.lorebook, ash.greeting)
    assert json.loads((tmp_path / "pkg" / "role.json").read_text())["format_version"] == FORMAT_VERSION == 3


def test_a_version_1_package_still_reads_and_a_newer_one_is_refused(tmp_path):
    pkg = tmp_path / "old"
    pkg.mkdir()
    (pkg / "role.json").write_text(json.dumps({"format_version": 1, "id": "old-keeper", "name": "Old Keeper"}))
    (pkg / "system_prompt.txt").write_text("I want you to act like Old Keeper.")
    (pkg / "stories.jsonl").write_text(json.dumps({"id": "1", "text": "Tom:「Hi」\nOld Keeper:「Shut the door.」"}))
    role = load_role_package(pkg)
    assert (role.format_version, role.lorebook, role.post_history_instructions) == (1, None, "")
    assert "Keeper" in role.aliases  # before format 3, the names that follow from the name are added
    (pkg / "role.json").write_text(json.dumps({"format_version": 3, "id": "old-keeper", "name": "Old Keeper"}))
    assert load_role_package(pkg).aliases == []  # format 3 lists them all itself
    (pkg / "role.json").write_text(json.dumps({"format_version": 4, "id": "old-keeper", "name": "Old Keeper"}))
    with pytest.raises(RoleFormatError, match="version 4 is newer than this app reads"):
        load_role_package(pkg)
    (pkg / "role.json").write_text(json.dumps({"id": "k", "name": "K", "lorebook": {"entries": "nope"}}))
    with pytest.raises(RoleFormatError, match="lorebook"):
        load_role_package(pkg)


def test_book_from_json_reads_card_fields():
    book = book_from_json({"scan_depth": 7, "token_budget": 99, "entries": [
        {"keys": "a, b", "content": "x", "extensions": {"case_sensitive": True}, "comment": "note A"}]})
    assert (book.scan_depth, book.token_budget) == (7, 99)
    assert book.entries[0].keys == ("a", "b") and book.entries[0].case_sensitive and book.entries[0].label == "note A"
