"""Speech to text: a recording in, the words a visitor said out, or one sentence saying why not.

Whisper is asked for the visitor's language (the page's, unless they chose one): left to guess, it took a short
Chinese clip for Thai. Its Chinese comes out in traditional characters, so it is turned into simplified with the
punctuation of Chinese text. A recording that cannot help is refused before the model runs (empty, not audio,
too long, silent); one the model hears nothing in is called noise; one that sounds like another language is named.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...config import Settings
from ...errors import InputError
from ...i18n import N_, _, language
from .model import in_line, model

log = logging.getLogger(__name__)

RATE = 16_000  # what Whisper hears
LIMIT_S = 60  # one message's speech: a minute is a long turn, and 2 cores transcribe it in about 10 s
SILENT_PEAK = 0.01  # under -40 dBFS everywhere: nothing was picked up
LANGUAGES = ("zh", "en")  # what the speech language may be set to (the page's languages)
BEAM = 5  # beam 1 is as fast here and once heard nothing (REFERENCE.md); bench/speech.py measures both
DOUBTFUL_LOGPROB = -0.6  # below this, what was heard may be another language forced into the chosen one
SURE = 0.6  # a detected language this likely is named to the visitor
AUDIO_SUFFIXES = {".wav", ".mp3", ".ogg", ".oga", ".opus", ".webm", ".m4a", ".mp4", ".aac", ".flac", ".wma"}
AUDIO_MAGIC = (b"RIFF", b"ID3", b"OggS", b"fLaC", b"\x1aE\xdf\xa3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf1")


class SpeechError(InputError):
    """A recording that gives no words: the sentence says what was wrong and what to do."""


EMPTY = N_("The recording is empty: nothing was recorded. Record again, holding the button while you speak.")
NOT_AUDIO = N_("{name} is not a recording: send speech as WAV, MP3, OGG, WEBM or M4A, or use the microphone.")
DAMAGED = N_("{name} looks like a recording but cannot be read (it is damaged or cut short): record it again.")
TOO_LONG = N_("The recording is {seconds} s long; speech is limited to {limit} s a message. Say it in shorter "
              "messages.")
SILENT = N_("The recording is silent: check that the microphone is on, not muted, and the one the browser uses.")
NOISE = N_("No words could be made out in the recording, only noise: speak closer to the microphone or somewhere "
           "quieter.")
OTHER_LANGUAGE = N_("That sounded like {heard}, but speech is set to {chosen}: speak {chosen}, or set the speech "
                    "language to {heard}.")
OTHER_UNSUPPORTED = N_("That sounded like {heard}; speech can be {choices}: speak one of them.")
FAILED = N_("Transcribing failed ({reason}); nothing was sent. Try again.")


@dataclass(frozen=True)
class Heard:
    """What a recording said: the text, its language, how long the speech was and how long hearing it took."""

    text: str
    language: str
    seconds: float
    took: float


def speech_language(chosen: str | None = None) -> str:
    """The language to hear: the one chosen, else the visitor's page language."""
    if chosen in LANGUAGES:
        return chosen
    return "zh" if language().startswith("zh") else "en"


def language_label(code: str) -> str:
    """A Whisper language code as the visitor's language names it ("English", "日语")."""
    from babel import Locale, UnknownLocaleError

    try:
        return Locale.parse(code).get_display_name(language().replace("-", "_")) or code
    except (ValueError, UnknownLocaleError):
        return code


def decode(audio: str | Path, name: str | None = None):
    """The recording as 16 kHz mono floats; a SpeechError for an empty, unreadable or non-audio file."""
    path = Path(audio)
    name = name or path.name
    try:
        head = path.open("rb").read(12)
    except OSError:
        raise SpeechError(_(EMPTY)) from None
    if not head:
        raise SpeechError(_(EMPTY))
    from faster_whisper.audio import decode_audio

    try:
        samples = decode_audio(str(path), sampling_rate=RATE)
    except Exception:  # av's errors for a file it cannot read: which one says nothing a visitor can use
        looks_audio = path.suffix.lower() in AUDIO_SUFFIXES or head.startswith(AUDIO_MAGIC)
        raise SpeechError(_(DAMAGED if looks_audio else NOT_AUDIO, name=name)) from None
    if not len(samples):
        raise SpeechError(_(EMPTY))
    return samples


def transcribe(audio, speech: str | None = None, *, settings: Settings | None = None,
               waiting: Callable[[int], None] | None = None, name: str | None = None) -> Heard:
    """The words in a recording (a file, or 16 kHz mono float samples: a call's utterance), in `speech` (zh or en;
    None: the page's language). `waiting(place)` hears the caller's place while others are transcribed. Raises
    SpeechError with the visitor's sentence, and SpeechUnavailable when the model is not installed."""
    chosen = speech_language(speech)
    samples = audio if hasattr(audio, "dtype") else decode(audio, name)
    if not len(samples):
        raise SpeechError(_(EMPTY))
    seconds = len(samples) / RATE
    if seconds > LIMIT_S:
        raise SpeechError(_(TOO_LONG, seconds=round(seconds), limit=LIMIT_S))
    if float(abs(samples).max()) < SILENT_PEAK:
        raise SpeechError(_(SILENT))
    settings = settings or Settings.from_env()
    whisper = model(settings.cache_dir / "models")
    with in_line(waiting):
        start = time.perf_counter()
        try:
            text, logprob = hear(whisper, samples, chosen)
            heard = _other_language(whisper, samples, chosen, text, logprob)
        except Exception as error:  # the model failed on this input: the visitor hears it, the app goes on
            log.warning("transcription failed: %s", type(error).__name__)
            raise SpeechError(_(FAILED, reason=type(error).__name__)) from None
        took = time.perf_counter() - start
    if heard:
        if heard in LANGUAGES:
            raise SpeechError(_(OTHER_LANGUAGE, heard=language_label(heard), chosen=language_label(chosen)))
        raise SpeechError(_(OTHER_UNSUPPORTED, heard=language_label(heard),
                            choices=" / ".join(language_label(c) for c in LANGUAGES)))
    if not text:
        raise SpeechError(_(NOISE))
    log.info("transcribed %.1f s of speech in %.1f s", seconds, took)  # never the words: they are the visitor's
    return Heard(simplified(text) if chosen == "zh" else text, chosen, seconds, took)


def hear(whisper, samples, chosen: str, beam: int = BEAM) -> tuple[str, float]:
    """The words a loaded Whisper hears in `chosen`, and their mean log-probability; the segments it finds no speech
    in (the VAD's leftovers, Whisper's "Thank you." on noise) are left out. (The bench runs other models and beams
    through this, the app the shared model through `transcribe`.)"""
    segments, _info = whisper.transcribe(samples, language=chosen, beam_size=beam, vad_filter=True,
                                         condition_on_previous_text=False)
    kept = [s for s in segments if not (s.no_speech_prob > 0.6 and s.avg_logprob < -1.0)]
    joiner = "" if chosen == "zh" else " "
    text = joiner.join(s.text.strip() for s in kept).strip()
    logprob = sum(s.avg_logprob for s in kept) / len(kept) if kept else 0.0
    return text, logprob


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


def _other_language(whisper, samples, chosen: str, text: str, logprob: float) -> str | None:
    """Another language the speech sounds like, when it plainly is one: English letters where Chinese was asked
    for, Chinese or Japanese characters where English was, or a doubtful transcript whose detected language is
    sure. Detection costs one more pass of the encoder, so it runs only on a doubtful transcript."""
    if not text:
        return None
    cjk, latin = len(_CJK.findall(text)), len(_LATIN.findall(text))
    wrong_script = (chosen == "zh" and latin > 3 * cjk) or (chosen == "en" and cjk > latin)
    if not wrong_script and logprob >= DOUBTFUL_LOGPROB:
        return None
    detected, probability, _all = whisper.detect_language(samples, vad_filter=True)
    if detected != chosen and (probability >= SURE or wrong_script):
        return detected
    return None


_FULL_WIDTH = {",": "，", "?": "？", "!": "！", ":": "：", ";": "；"}


def simplified(text: str) -> str:
    """Whisper's Chinese in simplified characters, with Chinese punctuation between Chinese words."""
    from opencc import OpenCC

    text = OpenCC("t2s").convert(text)
    text = re.sub(r"(?<=[\u4e00-\u9fff])\s*([,?!:;])\s*", lambda m: _FULL_WIDTH[m.group(1)], text)
    return re.sub(r"(?<=[\u4e00-\u9fff])\.$", "。", text)
