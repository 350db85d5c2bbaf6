"""Memory in a scene with several characters: each recalls only lines it witnessed. A late joiner recalls
nothing said before it came; a whisper is heard, answered and recalled by the one it was whispered to alone;
whispers and recalled lines travel with the scene file."""

from __future__ import annotations

import json
import random

import pytest

from chatharuhi_core.chat.engines import EngineChoice
from chatharuhi_core.config import Budgets
from chatharuhi_core.errors import InputError
from chatharuhi_core.scene import Scene, SceneLine, SceneSetup
from chatharuhi_core.scene.saved import dump_scene, load_scene
from chatharuhi_core.scene.scene import SCENE_RECALL_HEADER

SMALL = Budgets(story_tokens=200, history_tokens=120, memory_tokens=60, recall_tokens=200, recall_k=4)
EN = ["sherlock", "elizabeth", "dracula"]
FILLER = ["What a foggy evening it is.", "Shall we ring for tea?", "The fire needs another log.",
          "Did anyone hear the carriage outside?", "These chairs are most uncomfortable.",
          "The clock on the mantel has stopped again.", "Is that rain against the window?"]
FACT = "My sister is called Anna, and she lives in Bath."
QUESTION = "Where does my sister live?"


@pytest.fixture()
def scene(settings, embedder):
    return Scene(EN[:2], EngineChoice("script", budgets=SMALL), user_role="Watson", settings=settings,
                 setup=SceneSetup(embedder=embedder, seed=0))


def chatter(scene: Scene, n: int, start: int = 0) -> None:
    """Lines without an engine: the visitor's filler, each answered by whoever is present, in turn."""
    for k in range(start, start + n):
        scene.say(f"{FILLER[k % len(FILLER)]} ({k})")
        for m in scene.present:
            scene.lines.append(SceneLine(m.name, f"Indeed. ({k})", m.role_id))


def recalled_text(request) -> list[str]:
    return [r.text for r in request.recalled]


def prompt_text(request) -> str:
    return "\n".join(m["content"] for m in request.messages)


def test_a_character_recalls_an_early_line_it_heard_with_its_line_number(scene):
    scene.say(FACT)
    chatter(scene, 12)
    scene.say(QUESTION)
    request = scene.prepare(scene.member("sherlock"))
    assert request.recalled and request.recalled[0].turn == 1  # the transcript's line 1
    assert max(request.recalled, key=lambda r: r.similarity).text == f"Watson:「{FACT}」"
    assert SCENE_RECALL_HEADER.strip() in prompt_text(request) and "[line 1]" in prompt_text(request)
    # never a line the history already holds: every recalled line is older than the prompt's history
    history = [m["content"] for m in request.messages if m["role"] in ("user", "assistant")][2:]
    for r in request.recalled:
        assert not any(r.text.split("「", 1)[1] in h for h in history)


def test_a_late_joiner_recalls_nothing_from_before_it_joined(scene):
    scene.say(FACT)
    chatter(scene, 10)
    scene.add("dracula")
    chatter(scene, 10, start=10)
    scene.say(QUESTION)
    late = scene.prepare(scene.member("dracula"))
    joined = scene.member("dracula").spans[0][0]
    assert late.recalled, "it recalls what it did hear"
    assert all(r.turn > joined for r in late.recalled)
    assert FACT not in prompt_text(late)
    assert FACT in prompt_text(scene.prepare(scene.member("sherlock")))


def test_a_whisper_is_heard_answered_and_recalled_by_one_character_alone(scene):
    scene.state.order = "natural"
    scene.whisper("Miss Bennet", FACT)  # by alias
    assert scene.lines[-1].to == "elizabeth"
    assert [m.role_id for m in scene.responders()] == ["elizabeth"]  # nobody else answers it
    line = scene.turn(scene.member("elizabeth"))
    assert line.to == "elizabeth", "the answer to a whisper is private too"
    assert FACT not in prompt_text(scene.prepare(scene.member("sherlock")))
    chatter(scene, 12)
    scene.say(QUESTION)
    holmes, lizzy = scene.prepare(scene.member("sherlock")), scene.prepare(scene.member("elizabeth"))
    assert all(FACT not in t and line.text not in t for t in recalled_text(holmes))
    assert FACT not in prompt_text(holmes)
    assert any(FACT in t for t in recalled_text(lizzy))
    # the director never reads a whisper either
    assert scene.state.witnessed(scene.member("elizabeth"), 0) and not scene.state.witnessed(scene.member("sherlock"), 0)


def test_a_whisper_to_someone_absent_or_muted(scene):
    scene.add("dracula")
    scene.leave("dracula")
    with pytest.raises(InputError, match="left the scene"):
        scene.whisper("dracula", "psst")
    scene.mute("elizabeth")
    scene.whisper("elizabeth", "psst")
    assert scene.responders() == []
    assert any("muted" in n for n in scene.unheard("psst", to="elizabeth"))
    scene.state.order = "manual"
    scene.mute("elizabeth", False)
    assert scene.responders() == []  # manual order: the visitor picks who answers
    scene.state.order = "natural"
    assert [m.role_id for m in scene.responders()] == ["elizabeth"]
    # a name in a whisper calls nobody else
    scene.whisper("elizabeth", "Do not tell Holmes.")
    assert [m.role_id for m in scene.responders()] == ["elizabeth"]


def test_nothing_recalled_was_unwitnessed_in_random_scenes(settings, embedder):
    """Joins, leaves, whispers at random; every member's recall and history hold only lines it witnessed."""
    rng = random.Random(7)
    scene = Scene(EN, EngineChoice("script", budgets=SMALL), user_role="Watson", settings=settings,
                  setup=SceneSetup(embedder=embedder, seed=1))
    for k in range(60):
        roll = rng.random()
        if roll < 0.08:
            m = rng.choice(scene.members)
            if m.present and len(scene.present) > 2:
                scene.leave(m.role_id)
            elif not m.present:
                scene.add(m.role_id)
        elif roll < 0.35:
            target = rng.choice(scene.present)
            scene.whisper(target.role_id, f"secret {k}: {FILLER[k % len(FILLER)]}")
            scene.lines.append(SceneLine(target.name, f"(quietly) noted {k}", target.role_id, to=target.role_id))
        else:
            scene.say(f"{FILLER[k % len(FILLER)]} ({k})")
            speaker = rng.choice(scene.present)
            scene.lines.append(SceneLine(speaker.name, f"Indeed. ({k})", speaker.role_id))
    checked = 0
    for m in scene.present:
        request = scene.prepare(m)
        witnessed = set(scene.state.seen_at(m))
        for r in request.recalled:
            assert r.turn - 1 in witnessed, (m.role_id, r.turn)
            checked += 1
        for i, ln in enumerate(scene.lines):
            if i not in witnessed and ln.private:
                assert ln.text not in prompt_text(request), (m.role_id, i)
    assert checked > 0


def test_whispers_and_recalled_lines_round_trip_the_scene_file(scene):
    scene.whisper("elizabeth", FACT)
    scene.turn(scene.member("elizabeth"))
    chatter(scene, 12)
    scene.say(QUESTION)
    scene.turn(scene.member("elizabeth"))
    assert scene.lines[-1].recalled and scene.lines[-1].to is None
    # the page's scenes panel says what the character recalled, with line numbers and similarity
    from chatharuhi_core.web.scene import scenes_markdown

    panel = scenes_markdown(scene.state, 1)
    assert "Recalled from earlier in the scene" in panel and "- line 1 · similarity" in panel
    text = dump_scene(scene.state)
    assert json.loads(text.splitlines()[0])["version"] == 3
    back = load_scene(text)
    assert [(ln.to, ln.recalled) for ln in back.lines] == [(ln.to, ln.recalled) for ln in scene.lines]
    # a version 1 file (no whispers) still opens
    rows = [json.loads(r) for r in text.splitlines()]
    rows[0]["version"] = 1
    for r in rows[1:]:
        r.pop("to"), r.pop("recalled")
    old = load_scene("".join(json.dumps(r) + "\n" for r in rows))
    assert all(ln.to is None and ln.recalled == [] for ln in old.lines)


@pytest.mark.parametrize("change, sentence", [
    (lambda r: r.update(to="moriarty"), "whispered to 'moriarty', who is not in its cast"),
    (lambda r: r.update(to="sherlock", role="elizabeth"), "private line can only be its answer to a whisper"),
    (lambda r: r.update(recalled="line 3"), "malformed 'recalled'"),
])
def test_a_bad_whisper_in_a_scene_file_is_one_sentence(scene, change, sentence):
    scene.say("Hello.")
    scene.lines.append(SceneLine("Elizabeth Bennet", "Good day.", "elizabeth"))
    rows = [json.loads(r) for r in dump_scene(scene.state).splitlines()]
    change(rows[2])
    with pytest.raises(InputError, match=sentence):
        load_scene("".join(json.dumps(r) + "\n" for r in rows))


def test_the_command_line_whispers(cache_dir, fake_openai, tmp_path):
    """`/whisper NAME TEXT` in the loop and `--to NAME` for one line: the echo model shows what each heard."""
    import os
    import subprocess
    import sys

    from support.app import run_cli
    from support.fake_openai import GOOD_KEY
    from support.loopback import ROOT

    session = tmp_path / "scene.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHATHARUHI_"))}
    env["CHATHARUHI_CACHE"] = str(cache_dir)
    steps = "/whisper Miss Bennet My sister is Anna.\n/next Holmes\n/whisper Moriarty hello\n/quit\n"
    out = subprocess.run([sys.executable, "-m", "chatharuhi_core", "chat", "--role", "sherlock", "--role",
                          "elizabeth", "--order", "list", "--user-role", "Watson", "--engine", "openai", "--model",
                          "echo", "--base-url", fake_openai.base_url, "--api-key", GOOD_KEY, "--session",
                          str(session)], cwd=ROOT, env=env, input=steps, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "(privately) Elizabeth Bennet:「Echo: Watson:「My sister is Anna.」」" in out.stdout
    holmes = next(x for x in out.stdout.splitlines() if "Sherlock Holmes:「" in x)
    assert "Anna" not in holmes and "(privately)" not in holmes
    assert "'Moriarty' is not in this scene" in out.stdout
    saved = Scene.load(session.read_bytes())
    assert [ln.to for ln in saved.lines] == ["elizabeth", "elizabeth", None]
    out = run_cli("chat", "--role", "sherlock", "--role", "elizabeth", "--session", str(session), "--engine", "script",
                  "--to", "sherlock", "Say nothing to Miss Bennet.", cache=cache_dir)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("(privately) Sherlock Holmes:「")
    assert [ln.to for ln in Scene.load(session.read_bytes()).lines][-2:] == ["sherlock", "sherlock"]
