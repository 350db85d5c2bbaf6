"""The call's logic without a model or a browser: sentences voiced as they finish, chunks from the browser turned
into Whisper's 16 kHz, nothing heard while the character answers, and the listening again after the last
sentence."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from chatharuhi_core.chat.voice import Speech
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.web.call import Call, hear_turn, resampled, sentences, voice_turn


def test_sentences_end_at_chinese_and_english_marks_and_the_rest_waits_for_the_end():
    text = "师父！俺老孙来也。Mr. Holmes said: “Come.” And then"
    done = [s for _, s in sentences(text, finished=False)]
    assert done == ["师父！", "俺老孙来也。", "Mr. Holmes said: “Come.”"]
    assert [s for _, s in sentences(text, finished=True)][-1] == " And then"
    assert sentences("……", finished=True) == [(2, "……")]


def test_a_browser_chunk_becomes_16_khz_mono_floats():
    stereo = np.stack([np.full(4800, 16383, np.int16), np.full(4800, 16383, np.int16)], axis=1)  # 0.1 s at 48 kHz
    out = resampled(48_000, stereo)
    assert out.dtype == np.float32 and len(out) == 1600 and abs(float(out.mean()) - 0.5) < 0.01
    assert len(resampled(16_000, np.zeros(800, np.float32))) == 800


def test_the_call_hears_nothing_while_the_character_answers(settings):
    call = Call()
    assert hear_turn(call, 48_000, np.zeros(19_200, np.int16), "en", settings, 1) == (None, "")
    call.begin()
    call.listening = False  # a turn was sent: the character is answering
    assert hear_turn(call, 48_000, np.full(19_200, 9000, np.int16), "en", settings, 1) == (None, "")
    assert call.heard == []


def test_each_finished_sentence_is_voiced_once_and_the_call_listens_after_the_last(monkeypatch, settings, tmp_path):
    said = []

    def speak(role, text, settings):
        said.append(text)
        path = Path(tmp_path / f"{len(said)}.wav")
        path.write_bytes(b"RIFF")
        return Speech(path, "espeak-ng", "cmn", "")

    monkeypatch.setattr("chatharuhi_core.chat.voice.speak", speak)
    role = load_role("sunwukong")
    call = Call()
    call.begin()
    call.listening, call.turns, call.ended_at = False, 1, 0.0
    url = lambda path: f"/file={path.name}"  # noqa: E731
    assert not voice_turn(call, "师父！俺老", True, role, settings, url)
    assert said == ["师父！"] and call.clips == [(1, "/file=1.wav")] and call.first_sound_s is not None
    assert not voice_turn(call, "师父！俺老孙来也。还有", True, role, settings, url)
    assert said == ["师父！", "俺老孙来也。"]
    assert voice_turn(call, "师父！俺老孙来也。还有", False, role, settings, url)  # the reply has ended
    assert said[-1] == "还有" and call.listening and call.done == 1
    assert not voice_turn(call, "师父！俺老孙来也。还有", False, role, settings, url)  # nothing twice
    assert len(said) == 3
    call.end()
    assert not call.on and call.clips == [] and call.turns == 0


def test_a_transcription_that_fails_mid_call_is_one_sentence_and_the_call_listens_on(monkeypatch, settings):
    def broken(*args, **kwargs):
        raise RuntimeError("the model's worker died")

    monkeypatch.setattr("chatharuhi_core.web.call.utterance", lambda call, rate, data: np.zeros(16_000, np.float32))
    monkeypatch.setattr("chatharuhi_core.web.call.transcribe", broken)
    call = Call()
    call.begin()
    words, said = hear_turn(call, 48_000, np.zeros(19_200, np.int16), "en", settings, 1)
    assert words is None and said == "Transcribing failed (RuntimeError); nothing was sent. Try again."
    assert call.on and call.listening and call.turns == 0


def test_a_streamed_chunk_is_read_and_its_file_deleted(tmp_path):
    """Gradio writes each chunk of a call's microphone to its cache: read, then gone (the voice is not kept)."""
    from support.speech import write_wav

    from chatharuhi_core.web.call import taken

    folder = tmp_path / "3f2a"
    folder.mkdir()
    chunk = write_wav(folder / "audio.wav", np.full(19_200, 0.25), rate=48_000)
    rate, samples = taken(str(chunk))
    assert rate == 48_000 and len(samples) == 19_200 and samples.dtype == np.int16
    assert not chunk.exists() and not folder.exists()
    assert len(taken(str(tmp_path / "gone.wav"))[1]) == 0  # a chunk already gone is an empty one
