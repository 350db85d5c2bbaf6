"""Recordings for the speech tests: the clips in tests/data/speech (SOURCES.md) and WAV files made on the spot."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

SPEECH = Path(__file__).resolve().parents[1] / "data" / "speech"
PERSON_EN = SPEECH / "librivox-0880.wav"  # a person: "he was not an ill disposed young man"
SYNTHETIC_ZH = SPEECH / "kokoro-zh.wav"  # synthetic: 你好，很高兴认识你。今天我们来聊一聊天气、音乐，还有最近看过的好书。


def write_wav(path: Path, samples: np.ndarray, rate: int = 16_000) -> Path:
    """Mono 16-bit PCM samples (floats in -1..1) as a WAV file."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes((np.clip(samples, -1, 1) * 32767).astype(np.int16).tobytes())
    return path
