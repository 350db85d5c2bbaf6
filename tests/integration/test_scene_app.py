"""The scene tab of the app on loopback, through gradio_client."""

from gradio_client import Client, handle_file
from support.app import text_of
from support.fake_openai import GOOD_KEY

ENGINE = ("script", "", "", "", 1500, 1200, False, 300, 400)


def cast(client, ids, user_role="唐僧"):
    return client.predict(ids, user_role, "", api_name="/scene_cast")


def send(client, text, user_role="唐僧", order="natural", engine=ENGINE, to=""):
    """The chat and status as the last frame leaves them, and the box as the page shows it after every frame (a
    run empties it as it starts and leaves it alone after that: the visitor may be typing their next line)."""
    job = client.submit(text, to, user_role, order, False, *engine, api_name="/scene_send")
    chat, _, status = job.result()
    boxes = [frame[1] for frame in job.outputs() if frame[1] != {"__type__": "update"}]
    return chat, (boxes[-1] if boxes else None), status


def roles_in(chat):
    """The role id of each character bubble (its header carries data-role)."""
    import re

    return [(re.search(r'class="speaker role-([^"]+)"', text_of(m)) or [None, None])[1] for m in chat
            if m["role"] == "assistant"]


def test_a_chinese_scene_answers_by_name_and_talks_on(app_server):
    client = Client(app_server, verbose=False)
    view = cast(client, ["sunwukong", "zhugeliang", "lindaiyu"])
    assert all(name in view[0] for name in ("孙悟空", "诸葛亮", "林黛玉"))  # who is here
    chat, box, status = send(client, "军师，这一仗该怎么打？")
    assert box == "" and text_of(chat[0]) == "军师，这一仗该怎么打？"
    assert roles_in(chat)[0] == "zhugeliang"
    assert "<img" in text_of(chat[1]) and "诸葛亮" in text_of(chat[1])
    before = len(chat)
    chat, _, _ = client.predict(3, "唐僧", "list", False, *ENGINE, api_name="/scene_talk")
    assert len(chat) == before + 3


def test_two_visitors_scenes_never_mix(app_server):
    a, b = Client(app_server, verbose=False), Client(app_server, verbose=False)
    cast(a, ["sherlock", "elizabeth", "dracula"], "Watson")
    cast(b, ["sunwukong", "lindaiyu"])
    chat_a, _, _ = send(a, "Holmes, who is at the door?", "Watson")
    chat_b, _, _ = send(b, "悟空，你好。")
    assert set(roles_in(chat_a)) <= {"sherlock", "elizabeth", "dracula"}
    assert set(roles_in(chat_b)) <= {"sunwukong", "lindaiyu"}
    assert not any("Holmes" in text_of(m) for m in chat_b)
    assert not any("悟空" in text_of(m) for m in chat_a)


def test_a_scene_with_a_model_server_and_its_failures(app_server, fake_openai):
    client = Client(app_server, verbose=False)
    cast(client, ["sherlock", "elizabeth", "dracula"], "Watson")
    engine = ("openai", "echo", fake_openai.base_url, GOOD_KEY, 1500, 1200, False, 300, 400)
    chat, _, _ = send(client, "Miss Bennet, good evening.", "Watson", engine=engine)
    assert roles_in(chat)[0] == "elizabeth"
    assert "Echo: Watson:「Miss Bennet, good evening.」" in text_of(chat[1])
    kept = len(chat)
    down = ("openai", "echo", "http://127.0.0.1:9/v1", GOOD_KEY, 1500, 1200, False, 300, 400)
    chat, box, status = client.predict(3, "Watson", "list", False, *down, api_name="/scene_talk")
    assert "Could not reach the model server" in text_of(chat[-1])
    assert len(chat) == kept + 1  # the sentence, shown once; no line was added
    chat, _, _ = client.predict(1, "Watson", "list", False, *engine, api_name="/scene_talk")
    assert len(chat) == kept + 1 and roles_in(chat)[-1] != roles_in(chat)[-2]  # carries on, transcript whole


def test_a_whisper_is_answered_privately_and_the_others_never_hear_it(app_server, fake_openai):
    client = Client(app_server, verbose=False)
    view = cast(client, ["sherlock", "elizabeth", "dracula"], "Watson")
    assert [c[1] for c in view[-1]["choices"]] == ["", "sherlock", "elizabeth", "dracula"]  # the "to" picker
    engine = ("openai", "echo", fake_openai.base_url, GOOD_KEY, 1500, 1200, False, 300, 400)
    chat, box, _ = send(client, "My sister is called Anna.", "Watson", "list", engine, to="elizabeth")
    assert box == "" and "Whispered to Elizabeth Bennet" in text_of(chat[0])
    assert roles_in(chat) == ["elizabeth"]  # list order, yet only she answers a whisper
    assert "Only you heard this" in text_of(chat[1]) and "Echo: Watson:「My sister is called Anna.」" in text_of(chat[1])
    chat, _, _ = client.predict(2, "Watson", "list", False, *engine, api_name="/scene_talk")
    for m in chat[2:]:
        assert "Anna" not in text_of(m) and "Only you heard" not in text_of(m)


def test_manual_order_and_speak_now_and_import(app_server, tmp_path):
    client = Client(app_server, verbose=False)
    cast(client, ["sherlock", "alice"], "Watson")
    chat, _, status = send(client, "Anyone?", "Watson", order="manual")
    assert len(chat) == 1 and "Manual order" in status
    chat, _, _ = client.predict("Watson", "manual", False, *ENGINE, api_name="/scene_speak")
    assert roles_in(chat) == ["sherlock"]
    from chatharuhi_core.scene import Scene

    saved = Scene(["dracula", "elizabeth"], user_role="Jonathan Harker")
    saved.chat("Count, your castle is cold.")
    path = tmp_path / "scene.jsonl"
    path.write_text(saved.dump(), encoding="utf-8")
    out = client.predict(handle_file(str(path)), api_name="/scene_import")
    assert "Imported a scene" in out[-2]
    assert roles_in(out[2]["value"]) == [ln.role_id for ln in saved.lines if ln.by_character]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "chatharuhi-chat", "version": 1, "role": "sherlock"}\n', encoding="utf-8")
    out = client.predict(handle_file(str(bad)), api_name="/scene_import")
    assert "Chat tab" in out[-2]
