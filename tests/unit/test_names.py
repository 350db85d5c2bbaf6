"""The names a character answers to (role format 3), and what a scene does with them."""

import json

import pytest

from chatharuhi_core.roles.names import derived_names, find_name
from chatharuhi_core.roles.role import load_role_package
from chatharuhi_core.roles.sources import ImportOptions, load_role
from chatharuhi_core.scene import Scene, SceneSetup
from chatharuhi_core.web.scene import edit_line, feedback_values, line_at, scene_messages


@pytest.mark.parametrize("role_id, said", [
    ("sherlock", "Sherlock,"), ("sherlock", "Holmes, look"), ("sherlock", "Mr. Holmes?"), ("sherlock", "福尔摩斯先生好"),
    ("lindaiyu", "Lin Daiyu, good day"), ("lindaiyu", "林姑娘，你好"), ("lindaiyu", "黛玉"),
    ("sunwukong", "Sun Wukong!"), ("sunwukong", "大圣"), ("zhugeliang", "Kongming, advise me"),
    ("dracula", "The Count is here"), ("elizabeth", "Lizzy, come"), ("alice", "爱丽丝"),
])
def test_every_bundled_character_answers_to_its_other_names(role_id, said):
    role = load_role(role_id)
    assert role.format_version == 3
    assert find_name(said, [role.name, *role.aliases]) is not None


@pytest.mark.parametrize("said", ["will you come?", "the count of votes", "an old man", "Holmesian logic", "sherlocked"])
def test_everyday_words_call_nobody(said):
    assert find_name(said, ["Will", "the Count", "Count Dracula", "Old", "Holmes", "Sherlock"]) is None


def test_names_that_follow_from_a_name():
    assert derived_names("Sherlock Holmes") == ["Sherlock", "Holmes"]
    assert derived_names("Count Dracula") == ["Dracula"]
    assert derived_names("林黛玉") == ["黛玉"]
    assert derived_names("诸葛孔明") == ["孔明"]
    assert derived_names("诸葛亮") == []  # one character is too common a word to be a name
    assert derived_names("夏洛克·福尔摩斯") == ["夏洛克", "福尔摩斯"]


def test_older_packages_and_imports_get_the_names_that_follow(tmp_path, settings):
    pkg = tmp_path / "old"
    pkg.mkdir()
    (pkg / "role.json").write_text(json.dumps({"format_version": 2, "id": "jack", "name": "Jack Sparrow",
                                               "aliases": ["Captain Jack"]}))
    (pkg / "system_prompt.txt").write_text("I want you to act like Jack Sparrow.")
    (pkg / "stories.jsonl").write_text(json.dumps({"id": "1", "text": "Will:「Hi」\nJack Sparrow:「Savvy?」"}))
    assert load_role_package(pkg).aliases == ["Captain Jack", "Jack", "Sparrow"]
    script = tmp_path / "storm.txt"
    script.write_text("TOM: Who's there?\nMIRA KEEL: Only the sea.\nTOM: Again?\nMIRA KEEL: Always.\n")
    role = load_role(str(script), settings, ImportOptions(name="Mira Keel"))
    assert role.name == "Mira Keel" and {"Mira", "Keel"} <= set(role.aliases)


def _scene(roles, seed=1, **kw):
    scene = Scene(roles, engine="script", **kw, setup=SceneSetup(seed=seed))
    for m in scene.members:
        m.talkativeness = 0.0  # only a named character answers
    return scene


@pytest.mark.parametrize("roles, said, first", [
    (["elizabeth", "sherlock", "dracula"], "Sherlock,", "Sherlock Holmes"),
    (["elizabeth", "dracula", "sherlock"], "福尔摩斯，你怎么看？", "Sherlock Holmes"),
    (["sunwukong", "zhugeliang", "lindaiyu"], "Lin Daiyu, what do you think?", "林黛玉"),
    (["sunwukong", "lindaiyu", "zhugeliang"], "林姑娘，你说呢？", "林黛玉"),
])
def test_the_name_a_visitor_uses_calls_that_character(roles, said, first):
    for seed in range(3):  # the issue saw "Sherlock," fail 3 times out of 3
        lines = _scene(roles, seed).chat(said)
        assert lines and lines[0].speaker == first


def test_naming_a_muted_gone_or_absent_character_says_so():
    scene = _scene(["sherlock", "elizabeth", "dracula"])
    scene.mute("Count Dracula")
    scene.leave("Elizabeth Bennet")
    notes = scene.unheard("Count Dracula, Lizzy, and 林黛玉, come here")
    assert any("Count Dracula is muted" in n for n in notes)
    assert any("Elizabeth Bennet has left the scene" in n for n in notes)
    assert any("林黛玉 is not in this scene" in n for n in notes)
    assert scene.unheard("Holmes?") == []


def test_joins_leaves_and_mutes_are_quiet_lines_and_survive_a_file():
    scene = _scene(["sherlock", "elizabeth"])
    scene.chat("Holmes, who is she?")
    scene.add("dracula")
    scene.mute("Count Dracula")
    scene.leave("Elizabeth Bennet")
    scene.chat("Holmes?")
    state = Scene.load(scene.dump()).state
    msgs = scene_messages(state)
    notes = [m["content"] for m in msgs if "scene-note" in m["content"]]
    assert [n.split("—")[1].strip() for n in notes] == ["Count Dracula joined the scene",
                                                          "Count Dracula was muted",
                                                          "Elizabeth Bennet left the scene"]
    assert len(msgs) == len(state.lines) + 3
    assert len(feedback_values(state)) == sum(m["role"] == "assistant" for m in msgs)
    # a click or an edit on a quiet line touches no line; the lines around it still map to themselves
    quiet = next(i for i, m in enumerate(msgs) if "scene-note" in m["content"])
    assert line_at(state, quiet) is None
    last = len(msgs) - 1
    assert state.lines[line_at(state, last)].speaker == "Sherlock Holmes"


def test_the_visitor_may_edit_their_own_line(settings):
    scene = _scene(["sherlock", "elizabeth"])
    scene.chat("Holmes, who is she?")
    state, note = edit_line(scene.state, 0, "Holmes, who is that lady?", settings.with_(feedback_off=True))
    assert state.lines[0].text == "Holmes, who is that lady?" and "lines after it stay" in note


def test_the_scene_tab_calls_the_visitor_by_their_own_name(monkeypatch):
    from chatharuhi_core.config import Settings
    from page.group_scene import GroupSceneTab

    tab = GroupSceneTab(Settings.from_env())  # the app's one Settings, as app.py hands it to the tab
    view = tab.change_cast(["sunwukong", "zhugeliang"], None, "", progress=lambda *a, **k: None).step(None)
    assert view[0].user_role == "You"  # not 唐僧, the first character's partner
    view = tab.change_cast(["sherlock", "elizabeth"], None, "Sam", progress=lambda *a, **k: None).step(None)
    assert view[0].user_role == "Sam"
