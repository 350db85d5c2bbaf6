"""Chat files through the app: an exported chat imported back, and one whose character was added."""

import json

from support.app import page_turn

from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.chat_files import export_chat
from chatharuhi_core.web.drawing import chat_messages


def test_import_through_the_api_restores_the_chat_and_it_goes_on(app_server, settings, tmp_path):
    from gradio_client import Client, handle_file
    from support.app import send, text_of

    conv = page_turn(settings, Conversation("zhugeliang"), "先生为何出山？", "刘备")
    path = export_chat(conv, "刘备", tmp_path)
    client = Client(app_server, verbose=False)
    out = client.predict(handle_file(str(path)), api_name="/import_chat")
    chat = out[2]  # the outputs after the conversation state: portrait, about, chat, examples, name, ...
    assert [text_of(m) for m in chat] == [m["content"] for m in chat_messages(conv, load_role("zhugeliang"))]
    assert out[4] == "刘备" and "Imported a chat of 1 exchange" in out[-1]
    frames, (chat, box, scenes) = send(client, "天下大势如何？", "刘备")
    assert len(chat) == 5 and text_of(chat[1]) == "先生为何出山？"


def test_a_chat_with_an_added_character_brings_it_into_a_fresh_pickers_list(app_server, tmp_path):
    from gradio_client import Client, handle_file
    from support.app import text_of
    from support.make_inputs import KEEPER_CARD

    (tmp_path / "mira.json").write_text(json.dumps(KEEPER_CARD))
    added = Client(app_server, verbose=False).predict("", handle_file(str(tmp_path / "mira.json")), "",
                                                     api_name="/add_character")
    mira = next(c[1] for c in added[7]["choices"] if str(c[1]).startswith("mira-"))
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"format": "chatharuhi-chat", "version": 1, "role": mira, "name": "Mira",
                                "user_role": "Tom"}) + "\n"
                    + json.dumps({"user_role": "Tom", "text": "Are you lonely here?", "reply": "Never."}) + "\n")
    fresh = Client(app_server, verbose=False)
    out = fresh.predict(handle_file(str(chat)), api_name="/import_chat")
    assert [text_of(m) for m in out[2]][-2:] == ["Are you lonely here?", "Never."]
    assert out[7]["value"] == mira and any(c[1] == mira for c in out[7]["choices"])
