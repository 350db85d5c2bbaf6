"""Memory on the page: a long chat written elsewhere, imported through the app and asked about."""

from support.make_inputs import long_chat


def test_a_long_chat_imported_on_the_page_recalls_by_words_and_day_in_the_panel(app_server, tmp_path):
    """From the page: a 300-exchange chat written elsewhere, with its days, imported as a file and asked about;
    the scenes panel lists the recalled exchange with its day and why."""
    import json

    from gradio_client import Client, handle_file
    from support.app import text_of

    planted = {7: ("We took the ferry over to Gulangyu on Sunday and walked until dark.", "A pleasant excursion.")}
    lines = [{"format": "chatharuhi-chat", "version": 2, "role": "sherlock", "name": "Sherlock Holmes",
              "user_role": "Anna"}]
    lines += [{"user_role": ex.user_role, "text": ex.text, "reply": ex.reply, "at": ex.at}
              for ex in long_chat("Anna", planted, 300)]
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    client = Client(app_server, verbose=False)
    out = client.predict(handle_file(str(path)), api_name="/import_chat")
    assert "Imported a chat of 300 exchanges" in out[-1] and "indexed in the background" in out[-1]
    job = client.submit("Where did Anna go on the ferry?", "Anna", "script", "", "", "", 1500, 1200, False, 300, 1200, "",
                        "", 4, api_name="/send")
    chat = job.result()[0]
    assert len(chat) == 1 + 2 * 301 and text_of(chat[-2]) == "Where did Anna go on the ferry?"
    scenes = client.predict(False, api_name="/after_turn")[0]
    assert "**turn 7** · 2024-03-01 · " in scenes and "same words" in scenes and "Gulangyu" in scenes
