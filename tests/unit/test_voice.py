"""Voices: espeak-ng makes real audio, edge-tts falls back fast offline, files are fresh each time."""

from __future__ import annotations

import time
import wave

import pytest
from support.app import run_cli

from chatharuhi_core.chat.voice import speak, speakable
from chatharuhi_core.roles.sources import load_role


def test_what_is_read_aloud():
    assert speakable("孙悟空:「*挠头* 俺老孙（笑）来也！」") == "俺老孙 来也！"
    assert speakable("Sherlock Holmes:「(lighting his pipe) Elementary, [pause] my dear Watson.」") == \
        "Elementary, my dear Watson."
    assert speakable("*smiles*") == ""


@pytest.mark.parametrize("role_id, text", [("sunwukong", "俺老孙来也！吃俺一棒！"), ("dracula", "Welcome to my house.")])
def test_espeak_speaks_each_language_to_a_real_wav(settings, role_id, text):
    role = load_role(role_id)
    speech = speak(role, text, settings, engines=("espeak-ng",))
    assert speech.engine == "espeak-ng" and speech.voice == ("cmn" if role.language == "zh" else "en")
    with wave.open(str(speech.path)) as w:
        seconds = w.getnframes() / w.getframerate()
    assert 0.5 < seconds < 10
    assert "espeak-ng" in speech.notice


def test_edge_tts_offline_falls_back_quickly_and_each_call_gets_a_fresh_file(settings):
    role = load_role("sherlock")
    start = time.monotonic()
    first = speak(role, "The game is afoot.", settings)
    assert time.monotonic() - start < 6
    assert first.engine == "espeak-ng" and "edge-tts could not be used" in first.notice
    again = speak(role, "The game is afoot.", settings)
    assert again.path != first.path and again.path.read_bytes() == first.path.read_bytes()  # cached, but fresh


def test_no_voice_at_all_leaves_text_with_a_notice(settings):
    speech = speak(load_role("alice"), "Curiouser and curiouser!", settings, engines=())
    assert speech.path is None and "stays text" in speech.notice
    assert speak(load_role("alice"), "*curtsies*", settings).path is None


def test_cli_speak(cache_dir, tmp_path):
    out = run_cli("speak", "--role", "lindaiyu", "-o", str(tmp_path / "daiyu.wav"), "我哪里认得你。", cache=cache_dir)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "daiyu.wav").read_bytes()[:4] == b"RIFF" and "espeak-ng (cmn)" in out.stdout
