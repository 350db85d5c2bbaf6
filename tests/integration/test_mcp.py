"""The app's tools over MCP, from the `mcp` Python client against the running app (CHATHARUHI_MCP=1), with
the operator's key set for a scripted OpenAI-compatible server: the tools are listed with described
parameters, a character answers in Chinese and in English, a bad role is a sentence, and no result
carries the key."""

from __future__ import annotations

import asyncio
import json

import pytest
from support.fake_openai import GOOD_KEY, FakeOpenAI
from support.loopback import gradio_app


@pytest.fixture(scope="module")
def mcp_app(tmp_path_factory):
    with FakeOpenAI() as srv:
        env = {"CHATHARUHI_MCP": "1", "OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": GOOD_KEY,
               "OPENAI_MODEL": "echo"}
        log = tmp_path_factory.mktemp("mcp-log") / "app.log"
        with gradio_app(tmp_path_factory.mktemp("mcp-cache"), log=log, **env) as (url, _, _):
            yield url + "gradio_api/mcp/", srv, log


def call(url: str, *calls: tuple[str, dict]):
    """List the tools, then make each call, in one MCP session; returns (tools, results)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def go():
        async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            return tools, [await session.call_tool(name, args) for name, args in calls]

    return asyncio.run(go())


def text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def payload(result):
    return json.loads(text(result))


def test_the_tools_are_listed_with_their_parameters(mcp_app):
    url, _, _ = mcp_app
    tools, _ = call(url)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"list_characters", "chat_with_character", "chat_by_voice", "continue_story",
                            "search_scenes", "speak_line"}
    chat = by_name["chat_with_character"]
    assert chat.description.startswith("Send a message to a character")
    props = chat.inputSchema["properties"]
    assert set(props) == {"role", "message", "history", "user_name", "persona", "authors_note", "note_depth"}
    assert "list_characters" in props["role"]["description"]
    assert set(by_name["continue_story"].inputSchema["properties"]) == {"role", "history", "whose", "user_name",
                                                                         "persona"}
    assert set(by_name["chat_by_voice"].inputSchema["properties"]) == {"role", "audio", "history", "user_name",
                                                                        "speech_language"}
    assert not any(name.startswith("param_") for t in tools for name in t.inputSchema["properties"])


def test_an_agent_finds_and_talks_to_characters(mcp_app):
    url, srv, log = mcp_app
    _, (found, zh, en, later, scenes, bad) = call(
        url,
        ("list_characters", {"query": "西游记"}),
        ("chat_with_character", {"role": "sunwukong", "message": "你是谁？"}),
        ("chat_with_character", {"role": "sherlock", "message": "What is your method?"}),
        ("chat_with_character", {"role": "sherlock", "message": "And then?", "user_name": "Lestrade",
                                 "history": [{"role": "user", "content": "What is your method?"},
                                             {"role": "assistant", "content": "Observation."}]}),
        ("search_scenes", {"role": "sunwukong", "query": "金箍棒", "k": 3}),
        ("chat_with_character", {"role": "nobody-at-all", "message": "hello"}),
    )
    assert any(c["role"] == "sunwukong" and c["source"] == "bundled" for c in payload(found))
    zh, en = payload(zh), payload(en)
    assert zh["reply"] == "Echo: 唐僧:「你是谁？」" and zh["engine"] == "OpenAI-compatible server" and zh["model"] == "echo"
    assert en["reply"] == "Echo: Watson:「What is your method?」" and en["scenes"][0]["similarity"] > 0
    sent = srv.requests[-1]["body"]["messages"]  # the third chat: its history and the visitor's name reached the model
    assert sent[-1]["content"] == "Lestrade:「And then?」"
    assert any("Observation." in m["content"] and m["role"] == "assistant" for m in sent)
    hits = payload(scenes)
    assert len(hits) == 3 and "金箍棒" in hits[0]["text"] and hits[0]["similarity"] >= hits[-1]["similarity"]
    assert bad.isError and "nobody-at-all" in text(bad) and "Traceback" not in text(bad)
    everything = "".join(text(r) for r in (found, scenes, bad)) + json.dumps([zh, en, payload(later)])
    assert GOOD_KEY not in everything
    assert GOOD_KEY not in log.read_text() and "Traceback" not in log.read_text()


def test_an_agent_plays_a_persona_with_a_note_and_writes_on(mcp_app):
    """The player's controls for an agent (issue 44): a persona and an author's note reach the model; the reply goes
    on; the player's next line is written; another reply to choose from is the same call again."""
    url, srv, _ = mcp_app
    history = [{"role": "user", "content": "What is your method?"}, {"role": "assistant", "content": "Observation"}]
    _, (said, more, mine, bad) = call(
        url,
        ("chat_with_character", {"role": "sherlock", "message": "And then?", "user_name": "Mary", "history": history,
                                 "persona": "Watson's wife, a former governess.", "authors_note": "Be brief.",
                                 "note_depth": 1}),
        ("continue_story", {"role": "sherlock", "history": history}),
        ("continue_story", {"role": "sherlock", "history": history, "whose": "player", "user_name": "Mary"}),
        ("continue_story", {"role": "sherlock", "history": [], "whose": "character"}),
    )
    assert payload(said)["reply"] == "Echo: Mary:「And then?」"
    sent = srv.requests[-3]["body"]["messages"]  # the chat's (continue and the player's line came after it)
    assert "About Mary, the one you are talking to: Watson's wife" in sent[0]["content"]
    assert sent[-2] == {"role": "system", "content": "Be brief."}
    more, mine = payload(more), payload(mine)
    assert more["text"].startswith("Observation ") and more["text"] == "Observation " + more["added"].strip()
    assert mine["text"] == "Echo: Write Mary's next line." and srv.requests[-1]["body"]["messages"][0]["content"] \
        .startswith("You write Mary's lines in a role-play with Sherlock Holmes.")
    assert bad.isError and "no reply to continue" in text(bad)


def test_speak_line_gives_an_audio_file(mcp_app):
    import urllib.request

    url, _, _ = mcp_app
    _, (spoken, empty) = call(url, ("speak_line", {"role": "sherlock", "text": "Elementary."}),
                              ("speak_line", {"role": "sherlock", "text": "   "}))
    link = text(spoken)
    assert link.startswith("http://127.0.0.1:") and link.endswith(".wav")
    with urllib.request.urlopen(link, timeout=10) as r:
        assert r.read(4) == b"RIFF"
    assert empty.isError and "nothing to read aloud" in text(empty)


def test_an_agent_and_an_api_client_speak_to_a_character(mcp_app):
    """chat_by_voice (issue 68): a recording in (MCP: base64 data; the API: an upload), its transcript and the
    character's answer to it out; a path on the server named in its place is refused."""
    import base64
    import urllib.request

    from gradio_client import Client, handle_file
    from support.speech import PERSON_EN

    url, _, log = mcp_app
    data = "data:audio/wav;base64," + base64.b64encode(PERSON_EN.read_bytes()).decode()
    _, (heard, bad_language, not_audio) = call(
        url,
        ("chat_by_voice", {"role": "sherlock", "audio": data, "speech_language": "en"}),
        ("chat_by_voice", {"role": "sherlock", "audio": data, "speech_language": "fr"}),
        ("chat_by_voice", {"role": "sherlock", "audio": "data:audio/wav;base64," + base64.b64encode(b"hello").decode()}),
    )
    said = payload(heard)
    assert said["transcript"] == "He was not an ill-disposed young man."
    assert said["reply"] == "Echo: Watson:「He was not an ill-disposed young man.」" and said["engine"]
    assert bad_language.isError and '"zh" or "en"' in text(bad_language)
    assert not_audio.isError and "cannot be read" in text(not_audio) or "not a recording" in text(not_audio)
    client = Client(url.removesuffix("gradio_api/mcp/"), verbose=False)
    answer = json.loads(client.predict("sunwukong", handle_file(str(PERSON_EN)), [], "", "en",
                                       api_name="/chat_by_voice"))
    assert answer["transcript"].startswith("He was not") and answer["reply"]
    # over plain HTTP, as any client could: a path on the server where the recording should be (Gradio logs its
    # refusal with a traceback: the only one allowed in this log)
    base = url.removesuffix("gradio_api/mcp/")
    named = {"path": str(PERSON_EN), "meta": {"_type": "gradio.FileData"}}
    request = urllib.request.Request(base + "gradio_api/call/chat_by_voice", method="POST",
                                     data=json.dumps({"data": ["sunwukong", named, [], "", "en"]}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as r:
        event = json.loads(r.read())["event_id"]
    with urllib.request.urlopen(f"{base}gradio_api/call/chat_by_voice/{event}", timeout=60) as r:
        stream = r.read().decode()
    assert "event: error" in stream and "ill-disposed" not in stream, stream  # Gradio refuses it before the tool
    logged = log.read_text()
    before_forgery, _, forgery = logged.partition("Traceback")
    assert "ill-disposed" not in logged  # nor the visitor's words in the log
    assert "InvalidPathError" in forgery and "Traceback" not in before_forgery


def test_gradios_own_switch_turns_mcp_on_as_well(tmp_path):
    """`GRADIO_MCP_SERVER=True`, what `launch(mcp_server=True)` users set, serves the same tools; and the project's
    CHATHARUHI_MCP=0 still wins over it."""
    from chatharuhi_core.config import Settings

    assert not Settings.from_env({"GRADIO_MCP_SERVER": "True", "CHATHARUHI_MCP": "0"}).mcp
    with gradio_app(tmp_path / "cache", log=tmp_path / "app.log", GRADIO_MCP_SERVER="True") as (url, _, _):
        tools, _ = call(url + "gradio_api/mcp/")
    assert {"list_characters", "chat_with_character"} <= {t.name for t in tools}
