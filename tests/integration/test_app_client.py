"""The app launched on loopback (python app.py) and driven through gradio_client."""

import threading
import time

import pytest
from gradio_client import Client
from support.app import send, text_of
from support.expect import lines_of
from support.fake_openai import GOOD_KEY


def test_page_serves_and_lists_endpoints(app_server):
    """The documented API is the tools (also the MCP server's); the page's own events are callable but not
    documented: they take the page's state and sliders."""
    client = Client(app_server, verbose=False)
    names = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert set(names) == {"/list_characters", "/chat_with_character", "/chat_by_voice", "/continue_story",
                          "/search_scenes", "/speak_line"}
    assert client.predict("sherlock", api_name="/switch_role")  # undocumented, still there


def test_every_field_the_page_listens_to_starts_with_a_value(app_server):
    """A text field that started as None (Base URL) and was filled in by the session's load could fire `change`
    without end in the browser, a round trip each (tests/browser/test_browser.py: the page goes quiet):
    every field that a `change` or `input` event listens to starts with a value, "" for an empty one."""
    import httpx

    config = httpx.get(app_server.rstrip("/") + "/config", timeout=30).json()
    components = {c["id"]: c for c in config["components"]}
    listened = {target for dep in config["dependencies"] for target, event in dep["targets"]
                if target is not None and event in ("change", "input")}
    fields = ("textbox", "dropdown", "slider", "checkbox", "number", "radio")
    unset = [components[i]["props"].get("elem_id") or i for i in sorted(listened)
             if components[i]["type"] in fields and components[i]["props"].get("value") is None
             and components[i]["props"].get("choices") != []]  # a list with nothing in it yet has nothing to pick
    assert not unset, unset


@pytest.mark.parametrize("role_id, text", [("sunwukong", "你的金箍棒有多重？"), ("sherlock", "What is your method?")])
def test_a_streamed_reply_in_character(app_server, role_id, text):
    client = Client(app_server, verbose=False)
    view = client.predict(role_id, api_name="/switch_role")
    chat = view[2]
    assert text_of(chat[0]) == __import__("chatharuhi_core").load_role(role_id).greeting
    frames, (chat, box, scenes) = send(client, text)
    assert len(frames) > 2  # it streamed
    assert text_of(chat[-2]) == text and text_of(chat[-1]) in lines_of(role_id)
    # the sent message leaves the box with the first frame; later frames leave alone what the visitor types
    assert "similarity" in scenes and frames[0][1] == "" and box != text


def test_openai_engine_faults_then_recovery(app_server, fake_openai):
    client = Client(app_server, verbose=False)
    client.predict("sherlock", api_name="/switch_role")
    _, (chat, box, _) = send(client, "Who are you?", "Watson", "openai", "echo", fake_openai.base_url, "sk-wrong")
    assert text_of(chat[-1]).startswith("⚠️ The model server refused the API key")
    assert box == "Who are you?"  # the visitor's words are kept
    _, (chat, _, _) = send(client, "Who are you?", "Watson", "openai", "echo", fake_openai.base_url, GOOD_KEY)
    assert text_of(chat[-1]) == "Echo: Watson:「Who are you?」"
    assert len(chat) == 3  # greeting + one exchange: the failed turn left no trace in the history
    down = "http://127.0.0.1:9/v1"
    _, (chat, _, _) = send(client, "Still there?", "Watson", "openai", "echo", down, GOOD_KEY)
    assert "Could not reach the model server" in text_of(chat[-1])
    _, (chat, _, _) = send(client, "x" * 9000, "Watson")
    assert len(chat) == 3  # refused input: the chat is as it was
    key_seen = [r for r in fake_openai.requests if r["headers"].get("authorization") == f"Bearer {GOOD_KEY}"]
    assert key_seen


def test_regenerate_and_clear(app_server):
    client = Client(app_server, verbose=False)
    client.predict("sherlock", api_name="/switch_role")
    _, (chat, _, _) = send(client, "What is your method?")
    first = text_of(chat[-1])
    chat, _, _ = client.predict("", "", "script", "", "", "", 1500, 1200, False, 300, 400, "", "", 4, api_name="/regenerate")
    assert len(chat) == 3 and text_of(chat[-1]) != first
    out = client.predict(api_name="/clear_chat")
    assert len(out[2]) == 1  # only the greeting


def test_two_visitors_at_once_stay_apart(app_server):
    results = {}

    def visitor(role_id, words):
        client = Client(app_server, verbose=False)
        client.predict(role_id, api_name="/switch_role")
        for w in words:
            _, (chat, _, _) = send(client, w)
        results[role_id] = [text_of(m) for m in chat]

    a = threading.Thread(target=visitor, args=("sunwukong", ["你好", "你想家吗？", "你的金箍棒有多重？"]))
    b = threading.Thread(target=visitor, args=("sherlock", ["hello", "What is your method?", "Do you play the violin?"]))
    a.start(), b.start()
    a.join(120), b.join(120)
    assert results["sunwukong"][1::2] == ["你好", "你想家吗？", "你的金箍棒有多重？"]
    assert results["sherlock"][1::2] == ["hello", "What is your method?", "Do you play the violin?"]
    assert all(r in lines_of("sunwukong") for r in results["sunwukong"][2::2])
    assert all(r in lines_of("sherlock") for r in results["sherlock"][2::2])


def test_add_a_character_by_upload_and_chat_with_it(app_server, tmp_path):
    import json

    from gradio_client import handle_file
    from support.make_inputs import KEEPER_CARD, SCREENPLAY

    client = Client(app_server, verbose=False)
    (tmp_path / "mira.json").write_text(json.dumps(KEEPER_CARD))
    out = client.predict("", handle_file(str(tmp_path / "mira.json")), "", api_name="/add_character")
    status = out[-2]
    assert "Added **Mira**" in status
    assert text_of(out[2][0]) == "Shut the door, friend, the wind bites."  # the greeting opens the chat
    choices = [c[1] if isinstance(c, (list, tuple)) else c for c in out[7]["choices"]]
    assert any(str(c).startswith("mira-") for c in choices)  # the new role is in this visitor's list
    frames, (chat, box, scenes) = send(client, "Are you lonely here?")
    assert text_of(chat[-1]) == "Lonely? I have the sea. It never stops talking."

    (tmp_path / "storm.txt").write_text(SCREENPLAY)
    out = client.predict("", handle_file(str(tmp_path / "storm.txt")), "Mira", api_name="/add_character")
    assert "Added **Mira** (2 scenes)" in out[-2]
    frames, (chat, box, scenes) = send(client, "There's a ship on the rocks.")
    assert text_of(chat[-1]) == "Then stop talking and fetch the rope."


def test_a_bad_upload_is_a_sentence_and_the_chat_goes_on(app_server, tmp_path):
    from gradio_client import handle_file

    client = Client(app_server, verbose=False)
    client.predict("sherlock", api_name="/switch_role")
    (tmp_path / "gbk.txt").write_bytes("店小二：客官里边请".encode("gbk"))
    out = client.predict("", handle_file(str(tmp_path / "gbk.txt")), "", api_name="/add_character")
    assert "gbk.txt is not UTF-8 text" in out[-3] and "Traceback" not in out[-3]
    frames, (chat, box, scenes) = send(client, "What is your method?")
    assert text_of(chat[-1]) in lines_of("sherlock")


def test_hub_roles_cached_work_offline_and_uncached_say_so(app_server):
    from support.make_inputs import HARUHI_STORIES

    client = Client(app_server, verbose=False)
    out = client.predict("silk-road/ChatHaruhi-RolePlaying/haruhi", api_name="/switch_role")
    assert "凉宫春日" in out[1] and out[-1] == ""
    frames, (chat, box, scenes) = send(client, "普通的人类你有兴趣吗？", user_role="阿虚")
    reply = text_of(chat[-1])
    assert reply and any(reply in s for s in HARUHI_STORIES)
    out = client.predict("silk-road/ChatHaruhi-RolePlaying/Snape", api_name="/switch_role")
    assert "not in the local cache" in out[-1]
    frames, (chat, box, scenes) = send(client, "还在吗？", user_role="阿虚")  # still talking to Haruhi
    assert any(text_of(chat[-1]) in s for s in HARUHI_STORIES)


def test_speak_replies_gives_fresh_audio_in_the_role_language(app_server):
    import wave

    client = Client(app_server, verbose=False)
    client.predict("sunwukong", api_name="/switch_role")
    chat, box, stats = client.predict("你的金箍棒有多重？", "", "script", "", "", "", 1500, 1200, False, 300, 400, "", "", 4,
                                      api_name="/send")
    scenes, audio, note, picture = client.predict(True, api_name="/after_turn")
    assert client.predict(True, api_name="/after_turn")[1] == {"__type__": "update"}  # nothing new: not spoken again
    assert "staff.png" in str(picture)  # the scene picture follows the reply
    assert "espeak-ng (cmn)" in note and "edge-tts could not be used" in note
    with wave.open(audio) as w:
        assert w.getnframes() / w.getframerate() > 0.5
    again, note2 = client.predict("", api_name="/speak_last")  # the visitor's name in the story
    assert again != audio and "espeak-ng (cmn)" in note2  # a new file, so the browser plays it again
    assert stats.startswith("Answered by **Offline: quote the script**")


def _english(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return len(letters) > 10 and sum(c.isascii() for c in letters) / len(letters) > 0.95


def test_local_model_loaded_as_the_app_started_answers_with_its_speed(app_server):
    """README's command loads the local model as the app starts: a visitor meets no load on first use (or, if
    they come while it loads, a sentence saying it is warming up, never the first-use loading line)."""
    client = Client(app_server, verbose=False)
    client.predict("sherlock", api_name="/switch_role")
    job = client.submit("Who are you?", "", "local", "", "", "", 1500, 1200, False, 300, 400, "", "", 4, api_name="/send")
    frames = list(job)
    chat, box, stats = job.result()
    shown = [text_of(f[0][-1]) for f in frames if f and f[0]]
    assert not any(s.startswith("Loading the local model") for s in shown)
    assert all("is warming up" in s for s in shown if s.startswith("The local model"))
    assert len(frames) > 4 and _english(text_of(chat[-1]))
    assert "Answered by **Local model** · `Gemma 3 270M ChatHaruhi (llama.cpp, cpu)` · first token" in stats
    assert "tokens/s" in stats
    job = client.submit("What is your method?", "", "local", "", "", "", 1500, 1200, False, 300, 400, "", "", 4,
                        api_name="/send")
    frames = list(job)
    assert not any(text_of(f[0][-1]).startswith("Loading the local model") for f in frames if f and f[0])
    assert len(job.result()[0]) == 5  # greeting + two exchanges


def test_two_visitors_of_the_local_model_are_written_together_and_the_offline_one_is_not_held(app_server):
    """The in-process model writes several visitors' replies in one batch: neither of two local visitors waits in
    line, both are answered (no error, no timeout), and a visitor of the offline engine is not held up meanwhile."""
    clients = [Client(app_server, verbose=False) for _ in range(3)]
    for client in clients:
        client.predict("sherlock", api_name="/switch_role")
    local = [c.submit(f"Tell me about case {i}.", "", "local", "", "", "", 1500, 1200, False, 300, 400, "", "", 4,
                      api_name="/send") for i, c in enumerate(clients[:2])]
    time.sleep(0.3)
    offline = clients[2].submit("Who are you?", "", "script", "", "", "", 1500, 1200, False, 300, 400, "", "", 4,
                                api_name="/send")
    offline.result()
    assert not all(job.done() for job in local)  # the offline reply did not wait for the local model's lines
    for job in local:
        frames = list(job)
        chat, _box, stats = job.result()
        assert not text_of(chat[-1]).startswith(("⚠", "⏳")) and "Local model" in stats
        assert not any(text_of(f[0][-1]).startswith("⏳") for f in frames if f and f[0])  # nobody waited in line
    assert "Offline" in offline.result()[2]


def test_the_page_streams_from_a_llama_cpp_server(app_server, llama_server):
    client = Client(app_server, verbose=False)
    client.predict("sherlock", api_name="/switch_role")
    job = client.submit("Who are you?", "Watson", "openai", "smollm2", llama_server, "", 1500, 1200, False, 300, 400,
                        "", "", 4, api_name="/send")
    frames = list(job)
    chat, *_, stats = job.result()
    assert len(frames) > 4 and _english(text_of(chat[-1]))
    assert "**OpenAI-compatible server** · `smollm2`" in stats


def test_a_fine_tuned_adapter_answers_through_the_api(app_server, tiny_adapter):
    client = Client(app_server, verbose=False)
    client.predict("sherlock", api_name="/switch_role")
    job = client.submit("Who are you?", "", "local", str(tiny_adapter), "", "", 256, 192, False, 300, 400, "", "", 4,
                        api_name="/send")
    list(job)
    chat, _box, stats = job.result()
    assert text_of(chat[-2]) == "Who are you?" and text_of(chat[-1]) and not text_of(chat[-1]).startswith("⚠")
    assert tiny_adapter.name in stats and "first token" in stats


def test_memories_are_each_visitors_own_and_reach_the_prompt(app_server):
    """Two visitors at once: each one's pins are listed for them alone and survive their replies; the last
    message can be pinned; a bad memory is a sentence with the list unchanged (the prompt: test_memory)."""
    anna, bob = Client(app_server, verbose=False), Client(app_server, verbose=False)
    for client in (anna, bob):
        client.predict("sherlock", api_name="/switch_role")
    listed, _pick, note, box = anna.predict("My sister is called Anna.", api_name="/remember")
    assert "1. My sister is called Anna." in listed and note.startswith("Remembered") and box == ""
    listed_b, _pick, _note, _box = bob.predict("I take my tea black.", api_name="/remember")
    assert "I take my tea black." in listed_b and "Anna" not in listed_b
    send(anna, "Who am I looking for?")
    listed, _pick, note, _box = anna.predict("Watson", api_name="/pin_last")
    assert "2. Watson: Who am I looking for? · from exchange 1" in listed and note.startswith("Pinned")
    listed, _pick, note, box = anna.predict("   ", api_name="/remember")
    assert note.startswith("Write what the character should remember") and "2. Watson" in listed
    listed, _pick, note, _box = anna.predict(1, api_name="/forget_memory")
    assert note == "Forgotten: My sister is called Anna." and "1. Watson: Who am I" in listed
    listed_b, *_ = bob.predict("And I live in Kent.", api_name="/remember")
    assert "1. I take my tea black.\n2. And I live in Kent." in listed_b and "Who am I" not in listed_b
