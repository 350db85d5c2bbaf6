"""Speech in with the real model (Whisper base from its two packages, joined into the test cache): a person's
English, Chinese (a synthetic voice: PyPI has no person's Mandarin with a licence, tests/data/speech/SOURCES.md),
noise, another language than the one chosen, and the command line."""

from __future__ import annotations

import logging
import re
import shutil

import numpy as np
import pytest
from support.app import run_cli
from support.speech import PERSON_EN, SYNTHETIC_ZH, write_wav

from chatharuhi_core.chat.speech import SpeechError, transcribe
from chatharuhi_core.i18n import speaking


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower().replace("-", " "))


def test_a_persons_english_is_heard_word_for_word(settings):
    heard = transcribe(PERSON_EN, "en", settings=settings)
    assert words(heard.text) == "he was not an ill disposed young man".split()
    assert heard.language == "en" and 2.9 < heard.seconds < 3.1


def test_chinese_is_heard_in_simplified_characters(settings):
    heard = transcribe(SYNTHETIC_ZH, "zh", settings=settings)
    assert "你好" in heard.text and "天气" in heard.text and "音乐" in heard.text, heard.text
    assert not set("們來氣還書興認識") & set(heard.text), heard.text  # nothing left in traditional characters
    assert "，" in heard.text and "," not in heard.text


@pytest.mark.parametrize("page, said", [("en", "That sounded like English, but speech is set to Chinese"),
                                        ("zh", "英语")])
def test_speech_in_another_language_than_the_one_chosen_is_named(settings, page, said):
    with speaking(page), pytest.raises(SpeechError, match=said):
        transcribe(PERSON_EN, "zh", settings=settings)
    with speaking(page), pytest.raises(SpeechError):
        transcribe(SYNTHETIC_ZH, "en", settings=settings)


def test_noise_is_not_taken_for_words(settings, tmp_path):
    noise = write_wav(tmp_path / "hiss.wav", np.random.default_rng(0).standard_normal(16_000 * 3) * 0.2)
    with pytest.raises(SpeechError, match="only noise"):
        transcribe(noise, "en", settings=settings)


def test_the_page_puts_the_words_after_the_typed_ones_and_keeps_no_recording(settings, tmp_path, caplog):
    from chatharuhi_core.web.hearing import hear

    take = shutil.copy(PERSON_EN, tmp_path / "take.wav")
    with caplog.at_level(logging.DEBUG):
        text, said = hear(str(take), "Listen:", "en", settings)
    assert text.startswith("Listen: He was not") and "edit the words or send them" in said
    assert not (tmp_path / "take.wav").exists()
    assert "disposed" not in caplog.text  # the visitor's words are theirs, not the log's


def test_chat_sends_speech_from_the_command_line(cache_dir):
    done = run_cli("chat", "--role", "sunwukong", "--engine", "script", "--audio", str(PERSON_EN), cache=cache_dir)
    assert done.returncode == 0, done.stderr
    assert "(heard: He was not an ill" in done.stderr and done.stdout.strip()
    done = run_cli("transcribe", "--speech-language", "zh", str(SYNTHETIC_ZH), cache=cache_dir)
    assert done.returncode == 0 and "你好" in done.stdout
    done = run_cli("chat", "--role", "sunwukong", "--engine", "script", "--audio", "README.md", cache=cache_dir)
    assert done.returncode == 1 and "README.md is not a recording" in done.stderr
    assert "Traceback" not in done.stderr


def browser_chunks(samples, seconds: float = 0.4, rate: int = 48_000):
    """16 kHz floats as the browser streams them: 48 kHz int16 chunks."""
    up = np.interp(np.linspace(0, len(samples) - 1, len(samples) * 3), np.arange(len(samples)), samples)
    pcm = (np.clip(up, -1, 1) * 32767).astype(np.int16)
    step = int(rate * seconds)
    return [pcm[i:i + step] for i in range(0, len(pcm), step)]


def test_a_call_ends_the_visitors_turn_at_the_pause_after_their_speech(settings):
    """Silero VAD (faster-whisper's wheel): silence before, the words, then a pause; the turn ends within a second
    of the pause, and its words are the message."""
    from faster_whisper.audio import decode_audio

    from chatharuhi_core.web.call import PAUSE_S, Call, hear_turn

    speech = decode_audio(str(PERSON_EN), sampling_rate=16_000)
    stream = np.concatenate([np.zeros(16_000), speech, np.zeros(16_000 * 2)])
    call = Call()
    call.begin()
    heard_at = 0.0
    for chunk in browser_chunks(stream):
        heard_at += 0.4
        words, said = hear_turn(call, 48_000, chunk, "en", settings, chat_length=1)
        if words is not None:
            break
    assert words == "He was not an ill-disposed young man." and said == ""
    assert 1 + len(speech) / 16_000 + PAUSE_S - 0.1 <= heard_at <= 1 + len(speech) / 16_000 + PAUSE_S + 1.0
    assert not call.listening and call.turns == 1 and call.messages == 1


def test_a_silent_call_keeps_listening_and_holds_no_growing_buffer(settings):
    from chatharuhi_core.web.call import KEEP_S, Call, hear_turn

    call = Call()
    call.begin()
    quiet = np.random.default_rng(1).standard_normal(16_000 * 20) * 0.002
    for chunk in browser_chunks(quiet):
        assert hear_turn(call, 48_000, chunk, "en", settings, chat_length=1) == (None, "")
    assert sum(len(c) for c in call.heard) <= (KEEP_S + 0.5) * 16_000 and call.listening
