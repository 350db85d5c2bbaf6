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
