"""The prompts a turn builds, byte for byte, against prompts recorded before the house moved (issue 42).

The cases cover what shapes a prompt: classic scenes, history trimmed to its budget, pinned memories, recall of
earlier exchanges, a card's lorebook and post-history text, the local model's layout (scenes after the history),
a folded prompt, and group scenes (each member's view, a late joiner, a whisper, recall of earlier lines).
Recorded again once on purpose (issue 55): the keeper card's depth_prompt moved from the post-history text to its
depth; the four keeper cases differ by that message alone, every other case is the bytes of issue 42.
Recorded again on purpose (issue 53, second step): the recall block writes each day's date once, over its units
("[2026-11-01 09:00]" then "[turn 1] Sam:「…」"); only the five recall messages changed (keeper-recall, one
exchange a day, holds six where it held seven: a day line and a turn cost a token more than a dated turn).

    python tests/test_prompt_bytes.py --record   # write tests/data/prompts-recorded.json again (only on purpose)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

RECORDED = Path(__file__).resolve().parents[1] / "data" / "prompts-recorded.json"
CLOCK = "2026-11-20T10:00:00"


def _ruler(text: str) -> int:
    """A fixed ruler (not an engine's tokenizer), so the budgets cut in the same places on every machine."""
    return max(1, len(text) // 3)


def _keeper(settings):
    from support.make_inputs import KEEPER_CARD

    from chatharuhi_core.roles.cards import card_to_role

    return card_to_role("chara_card_v2", KEEPER_CARD["data"])


def _history(n: int, visitor: str):
    from chatharuhi_core.chat.prompt import Exchange

    topics = ["the storm last night", "my sister Anna", "a ship called the Gull", "the lamp's oil", "my dog Rex",
              "the third step", "a letter from Leeds", "the fog horn"]
    return [Exchange(visitor, f"Let me tell you about {topics[i % len(topics)]} (day {i}).",
                     f"Noted: {topics[i % len(topics)]}, number {i}.", f"2026-11-{1 + i % 19:02d}T09:00:00")
            for i in range(n)]


def _chat_cases(settings, embedder) -> dict[str, list[dict]]:
    from chatharuhi_core.chat.chatbot import ChatHaruhi
    from chatharuhi_core.config import Budgets

    keeper = _keeper(settings)
    cases = {
        "sherlock-first": dict(role_name="sherlock", text="Who was at the door this morning?"),
        "sherlock-history": dict(role_name="sherlock", text="And what of the letter?", history=6),
        "sherlock-local": dict(role_name="sherlock", llm="local", text="And what of the letter?", history=4),
        "sherlock-folded": dict(role_name="sherlock", llm="openai", fold=True, text="Tell me more.", history=3),
        "sunwukong-zh": dict(role_name="sunwukong", text="大圣，你觉得八戒怎么样？", history=2, visitor="唐僧"),
        "keeper-lore": dict(role=keeper, text="Will the storm reach us tonight?", history=2),
        "keeper-recall": dict(role=keeper, text="What was my sister called?", history=30,
                              budgets=Budgets(history_tokens=200, recall_tokens=300)),
        "keeper-pinned-local": dict(role=keeper, llm="local", text="Do you remember my dog?", history=12,
                                    pins=["My dog is called Rex."], budgets=Budgets(history_tokens=150)),
    }
    out = {}
    for name, c in cases.items():
        visitor = c.get("visitor", "Watson" if c.get("role_name") == "sherlock" else "Sam")
        bot = ChatHaruhi(role_name=c.get("role_name"), role=c.get("role"), engine=c.get("llm", "script"),
                         api_key="sk-test" if c.get("llm") == "openai" else None, settings=settings,
                         embedder=embedder, budgets=c.get("budgets"), fold_prompt=c.get("fold", False),
                         ruler=_ruler, read_ahead=False, user_role=visitor,
                         history=_history(c.get("history", 0), visitor))
        bot.clock = lambda: CLOCK
        for pin in c.get("pins", []):
            bot.remember(pin)
        bot.index_ahead()  # as after a reply: a busy machine's slow embedding must not turn recall to words alone
        out[f"chat/{name}"] = bot.prepare(c["text"]).messages
        if bot.scenes_last:
            out[f"chat/{name}/next-start"] = bot.next_prompt_start()
    return out


def _scene_cases(settings, embedder) -> dict[str, list[dict]]:
    from chatharuhi_core.chat.engines import EngineChoice
    from chatharuhi_core.config import Budgets
    from chatharuhi_core.scene.cast import SceneLine
    from chatharuhi_core.scene.scene import Scene, SceneSetup

    out = {}
    for name, fold, budgets in (("three", False, None), ("three-folded", True, None),
                                ("three-recall", False, Budgets(history_tokens=120, recall_tokens=300))):
        scene = Scene(["sherlock", "elizabeth", "alice"], EngineChoice("script", budgets=budgets, fold_prompt=fold),
                      user_role="Sam", settings=settings,
                      setup=SceneSetup(embedder=embedder, read_ahead=False, seed=1))
        ids = {m.name: m.role_id for m in scene.members}
        for i in range(6):
            scene.say(f"Everyone, remember the number {40 + i} and the colour {['red', 'blue', 'green'][i % 3]}.")
            speaker = list(ids)[i % 3]
            scene.state.lines.append(SceneLine(speaker, f"I shall keep {40 + i} in mind, Sam.", ids[speaker]))
        scene.say("Holmes, what do you make of the numbers?")
        for m in scene.members:
            out[f"scene/{name}/{m.role_id}"] = scene.prepare(m).messages
    scene = Scene(["sherlock", "elizabeth"], engine="script", user_role="Sam", settings=settings,
                  setup=SceneSetup(embedder=embedder, read_ahead=False, seed=2))
    scene.say("Good evening to you both.")
    scene.add("alice")
    scene.whisper(scene.members[0].name, "Do not tell the others about the key.")
    scene.say("Alice, how did you get here?")
    for m in scene.members:
        out[f"scene/late-and-whisper/{m.role_id}"] = scene.prepare(m).messages
    return out


def build_all(settings, embedder) -> dict[str, list[dict]]:
    return {**_chat_cases(settings, embedder), **_scene_cases(settings, embedder)}


def test_prompts_are_the_recorded_bytes(settings, embedder):
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    now = build_all(settings, embedder)
    assert sorted(now) == sorted(recorded)
    for name, messages in now.items():
        assert messages == recorded[name], name


def test_the_cases_cover_what_shapes_a_prompt():
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    text = json.dumps(recorded, ensure_ascii=False)
    from chatharuhi_core.chat.prompt import SCENES_HEADER

    assert SCENES_HEADER.strip() in text
    assert "Stay in character." in text  # post-history text
    assert "Storms on Gull Rock come from the west." in text  # a lorebook entry called up
    assert "Rex" in recorded["chat/keeper-pinned-local"][0]["content"]  # the pinned fact in the system message
    local = recorded["chat/sherlock-local"]
    assert SCENES_HEADER.strip() in local[-2]["content"]  # the local model reads the scenes last
    assert all(m["role"] != "system" for m in recorded["chat/sherlock-folded"])
    assert any("Earlier" in m["content"] for m in recorded["scene/three-recall/sherlock"])


if __name__ == "__main__" and "--record" in sys.argv:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import tempfile

    from chatharuhi_core.config import Settings
    from chatharuhi_core.embedding import get_embedder

    with tempfile.TemporaryDirectory() as cache:
        prompts = build_all(Settings.from_env({"CHATHARUHI_CACHE": cache}), get_embedder())
    RECORDED.parent.mkdir(exist_ok=True)
    RECORDED.write_text(json.dumps(prompts, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"recorded {len(prompts)} prompts in {RECORDED}")
elif __name__ == "__main__":
    pytest.main([__file__, "-q"])
