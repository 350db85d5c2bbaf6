"""A voice call with a character: the visitor speaks, the end of their speech is heard, the words are sent, and the
reply is spoken sentence by sentence as it streams; then the character listens again.

The page streams the microphone here in short chunks while the call listens. Silero VAD (the model inside
faster-whisper's wheel) finds speech in what has come so far; once the speech is followed by a pause, the words
are the visitor's message. Listening stops while the character answers (the browser's microphone is paused, so
the character does not hear itself), and each finished sentence of the streaming reply is voiced at once, so the
first one is heard long before the reply ends. One Call per visitor and page (a gr.State), nothing in module
state.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field

import numpy as np

from ..chat.speech import SpeechError, SpeechUnavailable, transcribe
from ..chat.speech.transcription import LIMIT_S, RATE
from ..config import Settings
from ..roles.role import Role

log = logging.getLogger(__name__)

PAUSE_S = 0.8  # silence after speech that ends the visitor's turn
KEEP_S = 8.0  # with no speech yet, only the last seconds are kept (a silent call holds no growing buffer)
PAD_S = 0.2  # around the speech handed to Whisper
# a sentence's end: Chinese marks, or . ! ? … followed by a space, a closing quote or bracket, or the end
_SENTENCE = re.compile(r"[。！？!?…]+[」』”\"）)]*|\.(?=\s|$|[」”\"）)])[」”\"）)]*")


@dataclass
class Call:
    """One visitor's call: whether it is on, what the microphone sent since the last turn, and how much of the
    current reply has been voiced."""

    on: bool = False
    listening: bool = False
    heard: list = field(default_factory=list)  # 16 kHz float chunks since the last turn
    turns: int = 0  # messages the call has sent
    messages: int = 0  # the chat's length when the last one was sent: the reply is what comes after
    voiced: int = 0  # characters of that reply already spoken
    clips: list = field(default_factory=list)  # (turn, url) of each spoken sentence, in order
    done: int = 0  # the last turn whose reply has been spoken to its end
    exchanges: int = 0  # the conversation's exchanges when the last turn was sent: one more means it was answered
    seen: str | None = None  # the reply as last looked at, and for how many looks it has not changed
    still: int = 0
    ended_at: float = 0.0  # when the last turn's speech ended (monotonic), for the latency figure
    first_sound_s: float | None = None  # end of speech to the first sentence's audio, for the last turn

    def begin(self) -> None:
        """On, listening, nothing heard yet (in place: the page's events share this one object)."""
        self.__dict__.update(Call(on=True, listening=True).__dict__)

    def end(self) -> None:
        self.__dict__.update(Call().__dict__)


def resampled(rate: int, data: np.ndarray) -> np.ndarray:
    """A chunk from the browser (int16 or float, mono or stereo, any rate) as 16 kHz mono floats."""
    samples = np.asarray(data)
    scale = float(np.iinfo(samples.dtype).max) if samples.dtype.kind == "i" else 1.0
    samples = samples.astype(np.float32) / scale
    if samples.ndim > 1:
        samples = samples.mean(axis=1)
    if rate != RATE and len(samples):
        count = int(round(len(samples) * RATE / rate))
        samples = np.interp(np.linspace(0, len(samples) - 1, count), np.arange(len(samples)), samples)
    return samples.astype(np.float32)


def taken(path: str) -> tuple[int, np.ndarray]:
    """A chunk Gradio wrote to its cache as a WAV file: (rate, samples), the file deleted at once (the visitor's
    voice is not kept; Gradio would keep every chunk of a call)."""
    import wave
    from pathlib import Path

    from .hearing import forget

    try:
        with wave.open(path, "rb") as chunk:
            rate, width, channels = chunk.getframerate(), chunk.getsampwidth(), chunk.getnchannels()
            raw = chunk.readframes(chunk.getnframes())
        samples = np.frombuffer(raw, dtype={1: np.int8, 2: np.int16, 4: np.int32}.get(width, np.int16))
        return rate, samples.reshape(-1, channels) if channels > 1 else samples
    except (OSError, EOFError, wave.Error):
        return RATE, np.zeros(0, np.float32)
    finally:
        forget(path)
        try:
            Path(path).parent.rmdir()  # Gradio's folder for this one file
        except OSError:
            pass


def utterance(call: Call, rate: int, data: np.ndarray) -> np.ndarray | None:
    """Add a chunk; the speech so far when it has ended (a pause after it, or the length limit), else None. The
    moment the speech ended is kept (`ended_at`): the call's latency is counted from it."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    call.heard.append(resampled(rate, data))
    audio = np.concatenate(call.heard)
    if len(audio) < RATE // 2:
        return None
    found = get_speech_timestamps(audio, VadOptions(min_silence_duration_ms=int(PAUSE_S * 1000) // 2))
    if not found:
        if len(audio) > KEEP_S * RATE:
            call.heard = [audio[-int(RATE * 2):]]
        return None
    start, end = found[0]["start"], found[-1]["end"]
    paused = len(audio) - end >= PAUSE_S * RATE
    if not paused and len(audio) - start < LIMIT_S * RATE:
        return None
    call.heard = []
    call.ended_at = time.monotonic() - (len(audio) - end) / RATE
    pad = int(PAD_S * RATE)
    return audio[max(0, start - pad): end + pad]


def hear_turn(call: Call, rate: int, data: np.ndarray, speech: str | None, settings: Settings,
              chat_length: int) -> tuple[str | None, str]:
    """A chunk of the call's microphone: (the words to send when the visitor's turn has ended, else None; a
    sentence for the page when those words could not be heard, else ""). Nothing is heard while the character
    answers."""
    if not call.on or not call.listening:
        return None, ""
    said = utterance(call, rate, data)
    if said is None:
        return None, ""
    call.listening = False  # chunks that come while these words are heard make no second turn
    try:
        words = transcribe(said, speech or None, settings=settings).text
    except SpeechError as error:  # noise, another language: said, and the call listens on
        call.listening, call.heard = True, []
        return None, str(error)
    except SpeechUnavailable as error:
        call.on = False
        return None, str(error)
    except Exception as error:  # the model failed mid-call: said once, and the call listens on
        log.warning("a call's transcription failed: %s", type(error).__name__)
        from ..chat.speech.transcription import FAILED
        from ..i18n import _

        call.listening, call.heard = True, []
        return None, _(FAILED, reason=type(error).__name__)
    call.turns += 1
    call.messages, call.voiced, call.first_sound_s = chat_length, 0, None
    return words, ""


_ABBREVIATIONS = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Prof|Sr|Jr|vs|etc|e\.g|i\.e)|\b[A-Z])\.$")


def sentences(text: str, finished: bool) -> list[tuple[int, str]]:
    """(end, sentence) for each whole sentence of `text`; the rest too when the text is finished. "Mr." and an
    initial end no sentence."""
    found, begin = [], 0
    for m in _SENTENCE.finditer(text):
        if text[m.start()] == "." and _ABBREVIATIONS.search(text[:m.start() + 1]):
            continue
        if text[begin:m.end()].strip():
            found.append((m.end(), text[begin:m.end()]))
        begin = m.end()
    if finished and text[begin:].strip():
        found.append((len(text), text[begin:]))
    return found


def voice_turn(call: Call, reply: str, streaming: bool, role: Role, settings: Settings,
               spoken_url) -> bool:
    """Voice the sentences of the current reply finished since the last look (`spoken_url(path)` turns a spoken
    file into what the browser plays); True once the whole reply has been voiced."""
    from ..chat.voice import speak

    if not call.on or call.listening or call.done >= call.turns:
        return False
    for end, sentence in sentences(reply, finished=not streaming):
        if end <= call.voiced:
            continue
        speech = speak(role, sentence, settings)
        call.voiced = end
        if speech.path is not None:
            call.clips.append((call.turns, spoken_url(speech.path)))
            if call.first_sound_s is None:
                call.first_sound_s = time.monotonic() - call.ended_at
    if not streaming and call.voiced >= len(reply.rstrip()):
        call.done = call.turns
        call.listening, call.heard = True, []  # what the microphone sent meanwhile is not the next turn
        return True
    return False
