"""Text to speech in a role's voice: edge-tts first, espeak-ng when it fails, else text only.

Synthesizers register by name and are tried in order. Audio is cached by (engine, voice, rate,
pitch, text) under <cache>/audio; every call hands back a fresh copy with its own name, so a
browser that already played one reply still plays the next one, even when the words repeat.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..config import Settings
from ..i18n import _
from ..roles.role import Role, Voice

log = logging.getLogger(__name__)

EDGE_TIMEOUT_S = 4.0
ESPEAK_VOICES = {"zh": "cmn", "en": "en", "ja": "ja", "fr": "fr", "de": "de", "es": "es"}
_WRAPPER = re.compile(r"^\s*[^:：「」\n]{1,24}\s*[:：]\s*「(.*)」\s*$", re.DOTALL)
_STAGE = re.compile(r"\*[^*\n]{0,200}\*|（[^）\n]{0,80}）|\([^)\n]{0,80}\)|\[[^\]\n]{0,80}\]|【[^】\n]{0,80}】")


def speakable(text: str) -> str:
    """What should be read aloud: no `Name:「」` wrapper, no *actions* or (stage directions)."""
    text = (text or "").strip()
    m = _WRAPPER.match(text)
    if m:
        text = m.group(1)
    text = _STAGE.sub(" ", text).replace("「", "").replace("」", "")
    return re.sub(r"\s+", " ", text).strip()


class Synthesizer(Protocol):
    """Writes speech for text to a file; returns a description of the voice it used."""

    name: str
    suffix: str

    def voice_for(self, voice: Voice, language: str) -> str | None: ...

    def synthesize(self, text: str, voice: Voice, language: str, out: Path) -> str: ...


SYNTHESIZERS: dict[str, Callable[[], Synthesizer]] = {}
DEFAULT_ORDER = ("edge-tts", "espeak-ng")


def register_synthesizer(name: str):
    def wrap(factory):
        SYNTHESIZERS[name] = factory
        return factory

    return wrap


@register_synthesizer("edge-tts")
class EdgeTTS:
    """Microsoft Edge's online voices (needs the network); given up after a few seconds."""

    name = "edge-tts"
    suffix = ".mp3"

    def __init__(self, timeout_s: float = EDGE_TIMEOUT_S):
        self.timeout_s = timeout_s

    def voice_for(self, voice: Voice, language: str) -> str | None:
        return voice.edge_tts

    def synthesize(self, text: str, voice: Voice, language: str, out: Path) -> str:
        import asyncio

        import edge_tts

        name = self.voice_for(voice, language)
        if not name:
            raise RuntimeError("the role names no edge-tts voice")

        async def run() -> None:
            comm = edge_tts.Communicate(text, name, rate=voice.rate, pitch=voice.pitch,
                                        connect_timeout=int(self.timeout_s) or 1)
            await asyncio.wait_for(comm.save(str(out)), self.timeout_s)

        asyncio.run(run())
        if not out.is_file() or out.stat().st_size == 0:
            raise RuntimeError("edge-tts returned no audio")
        return name


def _percent(rate: str) -> float:
    m = re.match(r"^\s*([+-]?\d+)\s*%\s*$", rate or "")
    return int(m.group(1)) / 100 if m else 0.0


def _hertz(pitch: str) -> int:
    m = re.match(r"^\s*([+-]?\d+)\s*Hz\s*$", pitch or "", re.IGNORECASE)
    return int(m.group(1)) if m else 0


@register_synthesizer("espeak-ng")
class ESpeakNG:
    """Debian's espeak-ng: robotic but offline, in milliseconds."""

    name = "espeak-ng"
    suffix = ".wav"

    def voice_for(self, voice: Voice, language: str) -> str | None:
        return voice.espeak or ESPEAK_VOICES.get(language.split("-")[0], "en")

    def synthesize(self, text: str, voice: Voice, language: str, out: Path) -> str:
        exe = shutil.which("espeak-ng")
        if exe is None:
            raise RuntimeError("espeak-ng is not installed")
        name = self.voice_for(voice, language)
        speed = max(80, min(400, int(175 * (1 + _percent(voice.rate)))))
        pitch = max(0, min(99, 50 + _hertz(voice.pitch) * 2))
        subprocess.run([exe, "-v", name, "-s", str(speed), "-p", str(pitch), "-w", str(out), "--", text],
                       check=True, capture_output=True, timeout=30)
        return name


@dataclass(frozen=True)
class Speech:
    """The outcome of speaking one reply: a file (or none) and a sentence for the page."""

    path: Path | None
    engine: str | None
    voice: str | None
    notice: str


def _cache_key(engine: str, voice_name: str, voice: Voice, text: str) -> str:
    raw = "\x00".join((engine, voice_name, voice.rate, voice.pitch, text))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


KEEP_FRESH = 200


def _prune(folder: Path, keep: int = KEEP_FRESH) -> None:
    """The per-call copies are throw-away; keep only the newest few hundred."""
    files = sorted((p for p in folder.iterdir() if p.is_file()), key=lambda p: p.stat().st_mtime)
    for old in files[: max(0, len(files) - keep)]:
        old.unlink(missing_ok=True)


def speak(role: Role, text: str, settings: Settings, engines: tuple[str, ...] = DEFAULT_ORDER) -> Speech:
    """Speak text in the role's voice, falling back down the engine list; never raises for a failure."""
    words = speakable(text)
    if not words:
        return Speech(None, None, None, _("There is nothing to read aloud in this reply."))
    try:
        return _speak(role, words, settings, engines)
    except OSError as exc:  # the cache folder cannot be written: say so, the reply stays text
        log.error("voice not saved: %s", exc)
        return Speech(None, None, None, _("The voice could not be saved on this server (its disk refused the "
                                          "write), so the reply stays text."))


def _speak(role: Role, words: str, settings: Settings, engines: tuple[str, ...]) -> Speech:
    fresh_dir = settings.spoken_dir
    cache = fresh_dir.parent
    fresh_dir.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    for engine_name in engines:
        if engine_name not in SYNTHESIZERS:
            continue
        synth = SYNTHESIZERS[engine_name]()
        voice_name = synth.voice_for(role.voice, role.language)
        if not voice_name:
            continue
        cached = cache / (_cache_key(synth.name, voice_name, role.voice, words) + synth.suffix)
        if not cached.is_file():
            tmp = cache / f".{uuid.uuid4().hex}{synth.suffix}"
            try:
                synth.synthesize(words, role.voice, role.language, tmp)
                tmp.replace(cached)
            except Exception as exc:  # offline, blocked, slow, missing: try the next engine
                log.info("%s failed: %s", synth.name, type(exc).__name__)
                failed.append(synth.name)
                tmp.unlink(missing_ok=True)
                continue
        _prune(fresh_dir)
        fresh = fresh_dir / f"{role.id}-{uuid.uuid4().hex[:12]}{synth.suffix}"
        shutil.copyfile(cached, fresh)
        if failed:
            notice = _("Spoken by {engine} ({voice}); {failed} could not be used.", engine=synth.name,
                       voice=voice_name, failed=_(" and ").join(failed))
        else:
            notice = _("Spoken by {engine} ({voice}).", engine=synth.name, voice=voice_name)
        return Speech(fresh, synth.name, voice_name, notice)
    return Speech(None, None, None, _("No voice is available here (edge-tts is offline and espeak-ng is not "
                                      "installed), so the reply stays text."))
