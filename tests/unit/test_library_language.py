"""The library's error sentences in the visitor's language (issue 52): each bad file, unknown name and unreachable
server below gives its sentence in Chinese under a Chinese visitor and in English, as before, under an English one."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from chatharuhi_core import i18n
from chatharuhi_core.chat.engines import engine_info
from chatharuhi_core.chat.engines.base import EngineOptions
from chatharuhi_core.chat.lanes import Waiting, waiting_line
from chatharuhi_core.chat.reply import check_input
from chatharuhi_core.chat.transcript import load_chat
from chatharuhi_core.config import Settings
from chatharuhi_core.errors import ChatHaruhiError
from chatharuhi_core.roles.safety import PNG_SIGNATURE, Limits
from chatharuhi_core.roles.sources import ImportOptions, import_file, load_role
from chatharuhi_core.scene.saved import load_scene

CJK = re.compile(r"[\u4e00-\u9fff]")



def _file(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def _unreachable_server() -> ChatHaruhiError:
    import httpx
    import openai

    from chatharuhi_core.chat.engines.openai_compat import translate_error

    exc = openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions"))
    raise translate_error(exc, EngineOptions(base_url="http://127.0.0.1:9/v1"))


def _broken_package(folder: Path) -> Path:
    package = folder / "broken"
    package.mkdir()
    (package / "role.json").write_text('{"id": "broken", "name": ', encoding="utf-8")
    return package


# (what is wrong, how to make the error from (settings, input folder), the English it gave before issue 52)
CASES: list[tuple[str, Callable, str]] = [
    ("a script that is not UTF-8",
     lambda s, d: import_file(_file(d, "play.txt", b"Ann: hello\n\xff\xfe bad"), s),
     r"^play\.txt is not UTF-8 text \(invalid byte at offset 11\)\. Save it as UTF-8 and try again\.$"),
    ("an empty script",
     lambda s, d: import_file(_file(d, "empty.txt", b""), s),
     r"^empty\.txt has no dialogue lines\. Write them as"),
    ("a card that is not JSON",
     lambda s, d: import_file(_file(d, "card.json", b'{"name": "Ann", '), s),
     r"^card\.json: the card is not valid JSON \("),
    ("a PNG with no card inside",
     lambda s, d: import_file(_file(d, "card.png", PNG_SIGNATURE + b"\0\0\0\0IEND\xaeB`\x82"), s),
     r"^card\.png is a PNG without a character card inside \(no 'chara' or 'ccv3' chunk\)\.$"),
    ("a file of an unknown type",
     lambda s, d: import_file(_file(d, "notes.docx", b"PK"), s),
     r"^notes\.docx: files of type '\.docx' are not accepted\. Send one of: "),
    ("a file that is too big",
     lambda s, d: import_file(_file(d, "big.txt", b"Ann: hi\n" * 10), s, ImportOptions(limits=Limits(max_file_bytes=20))),
     r"^big\.txt is 80 bytes; files are limited to 20 bytes\.$"),
    ("a zip that is not a zip",
     lambda s, d: import_file(_file(d, "role.zip", b"not a zip at all"), s),
     r"^role\.zip is not a readable zip file\.$"),
    ("a role package whose role.json is cut short",
     lambda s, d: load_role(_broken_package(d), s),
     r"^Role package problem in role\.json: not valid JSON \(.*, line 1\)\.$"),
    ("an unknown bundled character",
     lambda s, d: load_role("no-such-character", s),
     r"^No character called 'no-such-character'\. Bundled characters: "),
    ("an unknown engine",
     lambda s, d: engine_info("no-such-engine"),
     r"^Unknown engine 'no-such-engine'\. Known engines: "),
    ("an unreachable model server",
     lambda s, d: _unreachable_server(),
     r"^Could not reach the model server at http://127\.0\.0\.1:9/v1\. Is it running, and is the URL right\?$"),
    ("a chat file that is not UTF-8",
     lambda s, d: load_chat(b"\xff\xfe"),
     r"^That chat file is not UTF-8 text; choose a \.jsonl file exported from this page\.$"),
    ("a chat file cut short on its second line",
     lambda s, d: load_chat(json.dumps({"format": "chatharuhi-chat", "version": 3, "role": "x"}) + '\n{"text": '),
     r"^Line 2 of the chat file is not JSON; the file may be cut short\.$"),
    ("a scene file with no cast",
     lambda s, d: load_scene(json.dumps({"format": "chatharuhi-scene", "version": 3}) + "\n"),
     r"^That scene file names no characters \(line 1 has no 'members'\)\.$"),
    ("a scene file given a saved chat",
     lambda s, d: load_scene(json.dumps({"format": "chatharuhi-chat", "version": 3}) + "\n"),
     r"^That file is not a scene exported from ChatHaruhi .* It is a one-to-one chat: import it in the Chat tab\.$"),
    ("an empty message",
     lambda s, d: check_input("   "),
     r"^Please type a message first\.$"),
]


def _sentence(make: Callable, settings: Settings, folder: Path, lang: str) -> str:
    with i18n.speaking(lang), pytest.raises(ChatHaruhiError) as caught:
        make(settings, folder)
    return str(caught.value)


@pytest.mark.parametrize(("what", "make", "english"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_input_is_told_in_the_visitors_language(env, what, make, english):
    settings, folder = env
    en = _sentence(make, settings, folder, "en")
    assert re.search(english, en), en
    assert not CJK.search(en), en
    for leftover in folder.iterdir():  # the second try meets the same files, not what the first left
        if leftover.is_dir():
            shutil.rmtree(leftover)
    zh = _sentence(make, settings, folder, "zh")
    assert CJK.search(zh), f"{what}: no Chinese in {zh!r}"
    assert not re.search(english, zh), zh
    assert "{" not in zh.replace("{file, caption}", ""), zh  # every placeholder filled


def test_the_place_in_line_is_one_language_at_a_time():
    look = Waiting(2, 12.4, "the local model", 1)
    en = waiting_line(look)
    assert en == "⏳ 2nd in line for the local model, which answers one visitor at a time, about 12 s."
    with i18n.speaking("zh"):
        zh = waiting_line(look)
    assert "第 2 位" in zh and "本地模型" in zh and "约 12 秒" in zh and not re.search(r"[A-Za-z]", zh)


def test_every_library_message_has_its_chinese():
    """library.po: each message has a Chinese with the same placeholders (tools/catalogue.py check, this part)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    import catalogue

    assert [p for p in catalogue.problems() if p.startswith("library.po") or "(chatharuhi_core/" in p
            and catalogue.part_of(p.split("(")[-1].split(")")[0]) == "library"] == []
