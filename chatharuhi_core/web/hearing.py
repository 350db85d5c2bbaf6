"""The page's microphone: a recording becomes words in the message box, or one sentence under it.

The recording is deleted once heard (the visitor's voice is not kept on the server, and nothing of it is
logged); the box's own text stays, the words go after it, for the visitor to edit or send.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from ..chat.speech import SpeechError, SpeechUnavailable, transcribe
from ..config import Settings
from ..i18n import N_, _

log = logging.getLogger(__name__)

HEARD = N_("Heard {seconds} s of speech in {took} s: edit the words or send them.")


def hear(audio: str | None, box: str, speech: str | None, settings: Settings,
         waiting: Callable[[int], None] | None = None) -> tuple[str | None, str]:
    """(the box's new text or None to leave it, the sentence under the mic) for a recording file."""
    if not audio:
        return None, ""
    try:
        heard = transcribe(audio, speech or None, settings=settings, waiting=waiting)
    except (SpeechError, SpeechUnavailable) as error:
        return None, str(error)
    finally:
        forget(audio)
    text = f"{box.rstrip()} {heard.text}" if (box or "").strip() else heard.text
    return text, _(HEARD, seconds=round(heard.seconds, 1), took=round(heard.took, 1))


def forget(audio: str) -> None:
    """The visitor's recording off the disk once heard."""
    try:
        Path(audio).unlink(missing_ok=True)
    except OSError:
        log.warning("a recording could not be deleted after transcribing")
