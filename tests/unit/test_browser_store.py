"""What a visitor's browser keeps between visits: checked on the way back, capped, never a key."""

from __future__ import annotations

import json

from chatharuhi_core.chat.memory import MAX_PINS, Memory, Pin
from chatharuhi_core.chat.prompt import Exchange
from chatharuhi_core.web.browser_store import MAX_CHARS, MAX_EXCHANGES, SET_ASIDE, browser_secret, pack, unpack
from chatharuhi_core.web.chat import Conversation

ENGINES = {"script", "local", "openai", "hf"}


def opens(rid: str) -> bool:
    return rid in {"sherlock", "sunwukong", "my-card"}


def conv(rid: str, n: int, pins=()) -> Conversation:
    history = [Exchange("Watson", f"question {i}", f"answer {i}") for i in range(n)]
    return Conversation(rid, history, memory=Memory([Pin(p) for p in pins]))


def test_a_record_comes_back_as_it_went():
    on_screen, other = conv("sherlock", 3, ["my sister is Anna"]), conv("sunwukong", 2)
    record = pack(on_screen, {"sunwukong": other, "sherlock": on_screen}, ["my-card"], "openai")
    back = unpack(json.loads(json.dumps(record)), opens, ENGINES)
    assert back.note == "" and back.engine == "openai" and back.added == ["my-card"]
    assert back.chats["sherlock"].history == on_screen.history and back.chats["sunwukong"].history == other.history
    assert [p.text for p in back.chats["sherlock"].memory.pins] == ["my sister is Anna"]


def test_caps_and_what_is_not_kept():
    long = conv("sherlock", MAX_EXCHANGES + 15)
    record = pack(long, {}, [], "script")
    assert len(record["chats"][0]["exchanges"]) == MAX_EXCHANGES  # the newest
    last = MAX_EXCHANGES + 14
    assert record["chats"][0]["exchanges"][-1] == ["Watson", f"question {last}", f"answer {last}"]
    assert set(record) == {"v", "chats", "added", "engine", "settings"}  # no key, no prompt
    assert record["settings"] == {}  # nothing given, nothing kept
    huge = {f"r{i}": Conversation(f"r{i}", [Exchange("me", "x" * 3000, "y" * 3000)] * 40) for i in range(12)}
    record = pack(None, huge, [], "script")
    assert len(json.dumps(record, ensure_ascii=False)) <= MAX_CHARS and record["chats"]
    assert pack(conv("sherlock", 0), {}, [], "script")["chats"] == []  # an empty chat is not kept


def test_stale_or_foreign_records_are_set_aside_with_a_sentence():
    for bad in ({"v": 99, "chats": []}, {"v": 1, "chats": [{"role": "sherlock", "exchanges": [[1, 2]]}]},
                {"v": 1, "chats": "nonsense"}, "a string", [1, 2]):
        back = unpack(bad, opens, ENGINES)
        assert back.note == SET_ASIDE and not back.chats
    back = unpack({"v": 1, "chats": [{"role": "gone-role", "exchanges": [["a", "b", "c"]]}], "added": ["gone-role"],
                   "engine": "no-such-engine"}, opens, ENGINES)
    assert back.note == "" and not back.chats and back.added == [] and back.engine is None  # quietly dropped
    assert unpack({}, opens, ENGINES).note == "" and unpack(None, opens, ENGINES).chats == {}
    many = {"v": 1, "chats": [{"role": "sherlock", "exchanges": [], "pins": [f"fact {i}" for i in range(500)]}]}
    assert len(unpack(many, opens, ENGINES).chats["sherlock"].memory.pins) == MAX_PINS  # no more than one may pin


def test_the_seal_is_the_same_after_a_restart(settings, tmp_path):
    s = settings.with_(cache_dir=tmp_path / "cache")
    first = browser_secret(s)
    assert len(first) == 32 and browser_secret(s) == first
    assert oct((tmp_path / "cache" / "browser-state.key").stat().st_mode & 0o777) == "0o600"


def test_the_engine_settings_come_back_but_never_a_key_or_a_secret_in_a_url():
    panel = {"model": "smollm2", "base_url": "http://127.0.0.1:8080/v1", "story_tokens": 512, "history_tokens": 256.0,
             "memory_tokens": 64, "recall_tokens": 0, "fold": True, "speak": True, "api_key": "sk-secret"}
    record = pack(conv("sherlock", 1), {}, [], "openai", panel)
    assert "sk-secret" not in json.dumps(record) and "api_key" not in record["settings"]
    back = unpack(json.loads(json.dumps(record)), opens, ENGINES)
    assert back.settings == {"model": "smollm2", "base_url": "http://127.0.0.1:8080/v1", "story_tokens": 512,
                             "history_tokens": 256, "memory_tokens": 64, "recall_tokens": 0, "fold": True,
                             "speak": True}
    for url in ("http://user:sk-secret@host/v1", "https://host/v1?api_key=sk-secret", "file:///etc/passwd",
                "javascript:alert(1)", "http://host/v1#sk-secret"):
        assert "base_url" not in pack(None, {}, [], "openai", {"base_url": url})["settings"], url
    # out of a slider's range, of the wrong type, or for an engine this server does not have: left out
    odd = {"v": 1, "engine": "openai", "settings": {"story_tokens": 10**9, "history_tokens": "9", "fold": "yes",
                                                    "model": "m" * 500, "recall_tokens": True}}
    assert unpack(odd, opens, ENGINES).settings == {}
    gone = {"v": 1, "engine": "gone-engine", "settings": {"model": "x"}}
    assert unpack(gone, opens, ENGINES).settings == {} and unpack(gone, opens, ENGINES).engine is None
