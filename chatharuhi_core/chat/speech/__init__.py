"""Speech in: a visitor's recording turned into the words of their message (Whisper base, on the CPU)."""

from .model import NOT_INSTALLED, SpeechUnavailable, installed
from .transcription import LIMIT_S, Heard, SpeechError, speech_language, transcribe

__all__ = ["LIMIT_S", "NOT_INSTALLED", "Heard", "SpeechError", "SpeechUnavailable", "installed",
           "speech_language", "transcribe"]
