"""Scenes with several characters: who speaks, who saw what, whose scenes, and files."""

import random

import pytest
from support.fake_openai import GOOD_KEY

from chatharuhi_core.chat.engines import EngineChoice
from chatharuhi_core.errors import EngineError, InputError, UnknownNameError
from chatharuhi_core.roles.lines import parse_scene_lines
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.scene import Scene, SceneLine, SceneSetup
from chatharuhi_core.scene.order import ORDERS, spoken_this_round

EN = ["sherlock", "elizabeth", "dracula"]
ZH = ["sunwukong", "zhugeliang", "lindaiyu"]


@pytest.fixture()
def scene(settings, embedder):
    return Scene(EN, engine="script", user_role="Watson", settings=settings, setup=SceneSetup(embedder=embedder, seed=0))


def said(scene, speaker_id, text="…"):
    """Put a line in the transcript without an engine (the orders only read the transcript)."""
    m = scene.member(speaker_id) if speaker_id else None
    scene.lines.append(SceneLine(m.name if m else scene.user_role, text, m.role_id if m else None))


def own_lines(role_id):
    role = load_role(role_id)
    return {t for s in role.stories for spk, t in parse_scene_lines(s.text) if spk in role.speaker_names}


# ------------------------------------------------------------ who speaks


def test_a_character_named_in_the_last_line_answers_first(scene):
    for seed in range(25):
        scene.rng = random.Random(seed)
        scene.lines.clear()
        said(scene, None, "Miss Bennet, what do you make of the Count?")
        first = scene.responders()[0]
        assert first.role_id == "elizabeth", seed
    said(scene, None, "Holmes!")
    assert scene.pick_next().role_id == "sherlock"


def test_talkativeness_zero_never_volunteers(scene):
    scene.member("dracula").talkativeness = 0.0
    scene.member("elizabeth").talkativeness = 0.0
    scene.member("sherlock").talkativeness = 1.0
    for seed in range(40):
        scene.rng = random.Random(seed)
        scene.lines.clear()
        said(scene, None, "Good evening, everyone.")
        assert [m.role_id for m in scene.responders()] == ["sherlock"]
    # with nobody willing, one present character still answers, chosen at random
    scene.member("sherlock").talkativeness = 0.0
    picked = set()
    for seed in range(40):
        scene.rng = random.Random(seed)
        picked |= {m.role_id for m in scene.responders()}
        assert len(scene.responders()) == 1
    assert picked == set(EN)


def test_pooled_order_gives_everyone_a_turn_before_anyone_repeats(scene):
    scene.state.order = "pooled"
    for seed in range(10):
        scene.rng = random.Random(seed)
        scene.lines.clear()
        order = []
        for _ in range(6):
            m = scene.pick_next()
            order.append(m.role_id)
            said(scene, m.role_id)
        assert sorted(order[:3]) == sorted(EN) and sorted(order[3:]) == sorted(EN), order
    assert spoken_this_round(scene) == set()


def test_list_order_goes_round_the_cast(scene):
    scene.state.order = "list"
    said(scene, None, "Hello.")
    assert [m.role_id for m in scene.responders()] == EN
    spoken = []
    for _ in range(4):
        m = scene.pick_next()
        spoken.append(m.role_id)
        said(scene, m.role_id)
    assert spoken == ["sherlock", "elizabeth", "dracula", "sherlock"]


@pytest.mark.parametrize("order", ["natural", "list", "pooled"])
def test_nobody_answers_their_own_line_unless_allowed(scene, order):
    scene.state.order = order
    for seed in range(20):
        scene.rng = random.Random(seed)
        scene.lines.clear()
        said(scene, "sherlock", "Holmes here. Sherlock Holmes.")  # even naming himself
        assert "sherlock" not in {m.role_id for m in scene.responders()}
        assert scene.pick_next().role_id != "sherlock"
    scene.state.allow_self = True
    scene.member("sherlock").talkativeness = 1.0
    if order == "pooled":  # allowed, but he has had his turn this round
        scene.lines.clear()
        assert scene.pick_next().role_id in {"sherlock", "elizabeth", "dracula"}
    else:
        assert "sherlock" in {m.role_id for m in scene.responders()}


def test_muted_characters_are_never_picked_but_can_be_made_to_speak(scene):
    scene.mute("Dracula")
    for order in ORDERS:
        scene.state.order = order
        for seed in range(15):
            scene.rng = random.Random(seed)
            scene.lines.clear()
            said(scene, None, "Count Dracula, say something.")
            if order != "director":  # the script engine cannot direct: natural order stands in
                assert "dracula" not in {m.role_id for m in scene.responders()}
            assert scene.pick_next().role_id != "dracula"
    line = scene.turn("Dracula")  # forced, as the page's "next" and the CLI's /next do
    # its own line, or, where none answers, one of its greetings (the offline engine's deflection)
    assert line.role_id == "dracula" and line.text in own_lines("dracula") | set(load_role("dracula").greetings)
    scene.mute("dracula", False)
    assert not scene.member("Count Dracula").muted


def test_manual_order_waits_for_the_visitor(scene):
    scene.state.order = "manual"
    assert scene.chat("Who will answer?") == []
    assert scene.turn("Elizabeth").speaker == "Elizabeth Bennet"


# ------------------------------------------------------------ witnessing, retrieval, personas


def test_a_late_joiner_sees_only_what_was_said_after_it_came(settings, embedder):
    scene = Scene(["sherlock", "elizabeth"], engine="script", user_role="Watson", settings=settings,
                  setup=SceneSetup(embedder=embedder, seed=1))
    scene.chat("Holmes, there is a letter about a secret treaty.")
    before = [ln.text for ln in scene.lines]
    scene.add("dracula")
    said(scene, None, "Count, welcome to Baker Street.")
    prompt = "\n".join(m["content"] for m in scene.prepare(scene.member("dracula")).messages)
    assert "welcome to Baker Street" in prompt
    for text in before:
        assert text not in prompt
    # one who leaves sees nothing said after it left
    scene.leave("Elizabeth")
    said(scene, None, "Now that Miss Bennet is gone: the treaty is forged.")
    assert "forged" not in " ".join(ln.text for ln in scene.state.seen(scene.member("elizabeth")))
    with pytest.raises(InputError, match="has left"):
        scene.turn("elizabeth")
    scene.add("elizabeth")  # back again: sees from now on, and still remembers what she witnessed
    seen = " ".join(ln.text for ln in scene.state.seen(scene.member("elizabeth")))
    assert "secret treaty" in seen and "forged" not in seen


def test_each_character_reads_its_own_store_and_keeps_its_own_persona(settings, embedder):
    scene = Scene(ZH, engine="script", user_role="唐僧", settings=settings, setup=SceneSetup(embedder=embedder, seed=2))
    said(scene, None, "诸位，今天我们说说兵法、猴子和桃花。")
    roles = {rid: load_role(rid) for rid in ZH}
    for rid in ZH:
        request = scene.prepare(scene.member(rid))
        own = {s.id for s in roles[rid].stories}
        assert request.scenes and {h.id for h in request.scenes} <= own
        system = request.messages[0]["content"]
        assert roles[rid].system_prompt in system
        for other in ZH:
            if other != rid:
                assert roles[other].system_prompt not in system
                assert roles[other].description not in system
        joined = "\n".join(m["content"] for m in request.messages[1:])
        for other in ZH:
            if other != rid:
                for s in roles[other].stories:
                    assert s.text not in joined


def test_the_prompt_is_the_transcript_as_name_lines(scene):
    said(scene, None, "Holmes, the Count is at the door.")
    scene.turn("sherlock")
    said(scene, "elizabeth", "How very odd.")
    msgs = scene.prepare(scene.member("sherlock")).messages
    roles = [m["role"] for m in msgs]
    assert roles[0] == "system" and roles[-1] == "user"
    assert msgs[-1]["content"] == "Elizabeth Bennet:「How very odd.」"
    assert {"role": "user", "content": "Watson:「Holmes, the Count is at the door.」"} in msgs
    assert any(m["role"] == "assistant" and m["content"].startswith("Sherlock Holmes:「") for m in msgs)


def test_script_engine_characters_quote_their_own_lines(settings, embedder):
    scene = Scene(ZH, engine="script", user_role="唐僧", settings=settings, setup=SceneSetup(embedder=embedder, seed=3))
    lines = scene.chat("悟空，前面是不是有妖怪？")
    assert lines and lines[0].role_id == "sunwukong"
    lines += list(scene.talk(4))
    assert len(lines) >= 5
    for ln in lines:  # a line of its scenes, or a greeting where none fits (it deflects)
        assert ln.text in own_lines(ln.role_id) | set(load_role(ln.role_id).greetings)
        assert ln.scenes and all("id" in s for s in ln.scenes)


# ------------------------------------------------------------ failures, files


def test_a_stopped_or_failed_turn_leaves_the_transcript_whole(fake_openai, settings, embedder):
    scene = Scene(EN, engine=EngineChoice("openai", model="cut", base_url=fake_openai.base_url, api_key=GOOD_KEY),
                  user_role="Watson", settings=settings, setup=SceneSetup(embedder=embedder, seed=4))
    said(scene, None, "Holmes, a word?")
    before = [(ln.speaker, ln.text) for ln in scene.lines]
    with pytest.raises(EngineError):
        for _ in scene.stream_turn("sherlock"):
            pass
    assert [(ln.speaker, ln.text) for ln in scene.lines] == before
    scene_ok = Scene(engine=EngineChoice("openai", model="echo", base_url=fake_openai.base_url, api_key=GOOD_KEY),
                     settings=settings, setup=SceneSetup(embedder=embedder, state=scene.state))
    stream = scene_ok.stream_turn("sherlock")
    next(stream)
    stream.close()  # the Stop button
    assert [(ln.speaker, ln.text) for ln in scene.lines] == before
    line = scene_ok.turn("sherlock")
    assert line.text.startswith("Echo: Watson:「Holmes, a word?」") and line.engine and line.model == "echo"


def test_a_server_that_dies_mid_scene_gets_a_sentence(settings, embedder):
    from support.fake_openai import FakeOpenAI

    with FakeOpenAI() as srv:
        scene = Scene(EN, engine=EngineChoice("openai", model="echo", base_url=srv.base_url, api_key=GOOD_KEY),
                      settings=settings, setup=SceneSetup(embedder=embedder, seed=5))
        scene.chat("Holmes?")
        kept = len(scene.lines)
    with pytest.raises(EngineError) as err:
        scene.turn("elizabeth")
    assert str(err.value).startswith("Could not reach the model server") and "Traceback" not in str(err.value)
    assert len(scene.lines) == kept


def test_the_director_picks_the_next_speaker_or_ends_the_scene(fake_openai, settings, embedder):
    scene = Scene(EN, engine=EngineChoice("openai", model="echo", base_url=fake_openai.base_url, api_key=GOOD_KEY),
                  user_role="Watson", settings=settings, setup=SceneSetup(order="director", embedder=embedder, seed=6))
    fake_openai.httpd.director_answer = "Dracula."
    assert [ln.role_id for ln in scene.chat("Good evening.")] == ["dracula"]
    fake_openai.httpd.director_answer = "Next: Elizabeth Bennet"
    assert [ln.role_id for ln in scene.talk(1)] == ["elizabeth"]
    fake_openai.httpd.director_answer = "END"
    assert list(scene.talk(3)) == []
    fake_openai.httpd.director_answer = "I would rather not say."  # names nobody: natural order stands in
    assert len(list(scene.talk(1))) == 1
    # the script engine cannot direct: natural order, so a named character still answers first
    plain = Scene(EN, engine="script", settings=settings, setup=SceneSetup(order="director", embedder=embedder, seed=7))
    assert plain.chat("Count Dracula, are you well?")[0].role_id == "dracula"


def test_saving_and_reading_back_gives_the_same_scene(settings, embedder, tmp_path):
    scene = Scene(ZH[:2], engine="script", user_role="唐僧", settings=settings,
                  setup=SceneSetup(order="pooled", embedder=embedder, seed=8))
    scene.chat("悟空，军师，你们好。")
    scene.add("lindaiyu")
    scene.mute("林黛玉")
    scene.member("诸葛亮").talkativeness = 0.2
    list(scene.talk(2))
    scene.leave("孙悟空")
    scene.lines[-1].rating = "like"
    text = scene.dump()
    back = Scene.load(text.encode("utf-8"), settings=settings, setup=SceneSetup(embedder=embedder))
    assert back.dump().splitlines()[1:] == text.splitlines()[1:]
    assert [(m.role_id, m.spans, m.muted, m.talkativeness) for m in back.members] == \
           [(m.role_id, m.spans, m.muted, m.talkativeness) for m in scene.members]
    assert back.state.order == "pooled" and back.user_role == "唐僧"
    assert [ln.text for ln in back.lines] == [ln.text for ln in scene.lines]
    assert back.turn("诸葛亮").role_id == "zhugeliang"


@pytest.mark.parametrize("data, sentence", [
    (b"", "not a scene exported"),
    (b'{"format": "chatharuhi-chat", "version": 1, "role": "x"}\n', "import it in the Chat tab"),
    (b'{"format": "chatharuhi-scene", "version": 9}\n', "newer ChatHaruhi"),
    (b'{"format": "chatharuhi-scene", "version": 1, "members": []}\n', "names no characters"),
    (b'{"format": "chatharuhi-scene", "version": 1, "members": [{"role": "sherlock"}]}\n'
     b'{"speaker": "X", "role": "moriarty", "text": "hi"}\n', "not in its cast"),
    (b'{"format": "chatharuhi-scene", "version": 1, "members": [{"role": "sherlock"}]}\n{"speaker": ', "not JSON"),
])
def test_a_bad_scene_file_gets_a_sentence(data, sentence):
    from chatharuhi_core.scene.saved import load_scene

    with pytest.raises(InputError, match=sentence):
        load_scene(data)


def test_cast_limits_and_names(settings, embedder):
    scene = Scene(["sherlock"], engine="script", settings=settings, setup=SceneSetup(embedder=embedder))
    with pytest.raises(InputError, match="at least 2"):
        scene.chat("Hello?")
    scene.add("alice")
    with pytest.raises(InputError, match="already in the scene"):
        scene.add("alice")
    for rid in ["dracula", "elizabeth", "sunwukong", "lindaiyu"]:
        scene.add(rid)
    with pytest.raises(InputError, match="at most 6"):
        scene.add("zhugeliang")
    with pytest.raises(InputError, match="not in this scene"):
        scene.mute("Moriarty")
    with pytest.raises(UnknownNameError, match="Known orders"):
        Scene(["sherlock", "alice"], settings=settings, setup=SceneSetup(order="alphabetical", embedder=embedder))


# ------------------------------------------------------------ command line


def test_cli_scene_one_line_and_a_loop(cache_dir, tmp_path, fake_openai):
    import os
    import subprocess
    import sys

    from support.app import run_cli
    from support.loopback import ROOT

    out = run_cli("chat", "--role", "sunwukong", "--role", "zhugeliang", "--role", "lindaiyu", "--engine", "script",
                  "--seed", "1", "军师，这一仗怎么打？", cache=cache_dir)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("诸葛亮:「") and first.endswith("」") and first[5:-1] in own_lines("zhugeliang")

    session = tmp_path / "scene.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHATHARUHI_"))}
    env["CHATHARUHI_CACHE"] = str(cache_dir)
    steps = "/who\n/mute Dracula\n/next Dracula\nMiss Bennet, good evening.\n/join alice\n/leave Elizabeth\n" \
            "/talk 2\n/who\n/quit\n"
    out = subprocess.run([sys.executable, "-m", "chatharuhi_core", "chat", "--role", "sherlock", "--role",
                          "elizabeth", "--role", "dracula", "--order", "list", "--user-role", "Watson",
                          "--engine", "openai", "--model", "echo", "--base-url", fake_openai.base_url,
                          "--api-key", GOOD_KEY, "--session", str(session)],
                         cwd=ROOT, env=env, input=steps, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Count Dracula (dracula): here, muted" in text
    assert "Count Dracula:「Echo: narrator:Count Dracula speaks next.」" in text  # forced, though muted
    assert "> Sherlock Holmes:「Echo: Count Dracula:「" in text  # list order: Holmes first, answering the Count
    assert "Alice:「Echo: narrator:Alice speaks next.」" in text  # she came late: she heard nothing before
    assert "Alice joins the scene" in text and "Elizabeth Bennet leaves the scene" in text
    assert "Elizabeth Bennet (elizabeth): left" in text
    saved = Scene.load(session.read_bytes())
    assert [m.role_id for m in saved.present] == ["sherlock", "dracula", "alice"]
    assert saved.lines[-1].role_id in {"sherlock", "alice"}  # the muted Count does not volunteer
    # going on from the file
    out = run_cli("chat", "--role", "sherlock", "--role", "elizabeth", "--session", str(session), "--engine",
                  "script", "Holmes, what now?", cache=cache_dir)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Sherlock Holmes:「")
    assert len(Scene.load(session.read_bytes()).lines) == len(saved.lines) + 3  # list order: Holmes, then Alice


def test_page_feedback_is_recorded_for_the_character_who_spoke(settings, embedder, tmp_path):
    """Thumbs and corrections in the scene tab land in the feedback file under the speaker's role."""
    import dataclasses
    import json

    from chatharuhi_core.web.scene import edit_line, rate_line, speaker_header

    fb = tmp_path / "feedback.jsonl"
    page_settings = dataclasses.replace(settings, feedback_file=fb)
    scene = Scene(EN, engine="script", user_role="Watson", settings=settings, setup=SceneSetup(embedder=embedder, seed=9))
    scene.chat("Miss Bennet, do you trust the Count?")
    state = scene.state
    k = next(i for i, ln in enumerate(state.lines) if ln.role_id == "elizabeth")
    state, note = rate_line(state, k, True, page_settings)
    assert "liked Elizabeth Bennet's line" in note and state.lines[k].rating == "like"
    shown = speaker_header("elizabeth", "Elizabeth Bennet") + "I trust nobody who sleeps in a coffin."
    state, note = edit_line(state, k, shown, page_settings)  # the bubble's header is not part of the line
    assert state.lines[k].text == "I trust nobody who sleeps in a coffin." and state.lines[k].original
    records = [json.loads(x) for x in fb.read_text(encoding="utf-8").splitlines()]
    assert [r["event"] for r in records] == ["rating", "edit"]
    assert all(r["role"] == "elizabeth" and r["text"] == "Miss Bennet, do you trust the Count?" for r in records)
    assert records[-1]["corrected"] == "I trust nobody who sleeps in a coffin." and records[-1]["messages"]
    assert rate_line(state, 0, True, page_settings)[1].startswith("Only the characters' lines")
