"""Roles from everywhere: cards, ChatHaruhi jsonl, scripts, zips, the Hub; and every bad input."""

from __future__ import annotations

import base64
import io
import json
import os
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from support.make_inputs import (
    CHINESE_SCRIPT,
    HARUHI_STORIES,
    KEEPER_CARD,
    SCREENPLAY,
    b64vec,
    bomb_png,
    chatharuhi_rows,
    haruhi_hub_cache,
    lay_out_hub_cache,
    png_bytes,
)

from chatharuhi_core.chat.chatbot import ChatHaruhi
from chatharuhi_core.embedding import register_embedder
from chatharuhi_core.errors import ChatHaruhiError, HubError, ImportProblem
from chatharuhi_core.roles.cards import V3, read_card_bytes, role_to_card, write_card_png
from chatharuhi_core.roles.chatharuhi_jsonl import write_chatharuhi_jsonl
from chatharuhi_core.roles.export import export_role
from chatharuhi_core.roles.safety import Limits
from chatharuhi_core.roles.script_scenes import cut_scenes, role_from_script
from chatharuhi_core.roles.sources import ImportOptions, bundled_ids, import_file, load_role
from chatharuhi_core.roles.store import open_store


class ColumnEmbedder:
    """An embedder that owns a ChatHaruhi column and refuses to embed stories: stored vectors must be used."""

    name = "test-column-8"
    dim = 8
    chatharuhi_column = "test_col"

    def embed(self, texts):
        if len(texts) != 1:
            raise AssertionError("stories were embedded again although the file carried their vectors")
        v = np.ones((1, self.dim), dtype=np.float32)
        return v / np.linalg.norm(v)


register_embedder("test-column-8")(ColumnEmbedder)



def outside_cache(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if "cache" not in p.relative_to(root).parts}


# ------------------------------------------------------------------ character cards


def test_v2_card_json_maps_fields_and_macros(env):
    settings, inp = env
    (inp / "mira.json").write_text(json.dumps(KEEPER_CARD))
    role = load_role(inp / "mira.json", settings)
    assert role.name == "Mira" and role.id.startswith("mira-") and role.root.parent == settings.roles_dir
    # {{user}} stays a placeholder in the package (filled at chat time); {{char}} is the name
    assert role.greeting == "Shut the door, {{user}}, the wind bites."
    assert role.alternate_greetings == ["Back again? Mind the third step."]
    texts = {s.id: s.text for s in role.stories}
    assert texts["example-001"] == ("{{user}}:「Are you lonely here?」\n"
                                    "Mira:「Lonely? I have the sea. It never stops talking.」")
    assert texts["example-002"] == "{{user}}:「What is that light?」\nMira:「A ship, two miles out. She is late.」"
    assert texts["lore-001"] == "[storm, weather] Storms on Gull Rock come from the west."
    assert not any("disabled" in t for t in texts.values())
    assert [e.constant for e in role.lorebook.entries] == [False, True, False]  # constant lore fires every turn
    assert "keeps the lighthouse on Gull Rock and talks to {{user}}" in role.system_prompt
    assert role.post_history_instructions == "Stay in character."  # the depth prompt goes at its depth
    assert "Written for the ChatHaruhi tests" not in role.system_prompt  # creator_notes never reach the model
    assert role.profile["behaviours"]["personality"] == "calm, dry humour, fond of storms"


def test_card_round_trip_keeps_every_field_and_unknown_extensions(env):
    settings, inp = env
    (inp / "mira.json").write_text(json.dumps(KEEPER_CARD))
    role = load_role(inp / "mira.json", settings)
    out = write_card_png(role, inp / "out.png")
    spec, data, image = read_card_bytes(out.read_bytes(), "out.png")
    assert spec == V3 and image is not None
    original = KEEPER_CARD["data"]
    for key, value in original.items():
        if key == "extensions":
            assert {k: v for k, v in data[key].items() if k != "chatharuhi"} == value
        else:
            assert data[key] == value, key
    # the V2 chunk carries the same card for older readers
    from chatharuhi_core.roles.cards import png_text_chunks

    chunks = png_text_chunks(out.read_bytes(), "out.png")
    v2 = json.loads(base64.b64decode(chunks["chara"]))
    assert v2["spec"] == "chara_card_v2" and v2["data"]["mes_example"] == original["mes_example"]
    assert "assets" not in v2["data"] and "assets" in json.loads(base64.b64decode(chunks["ccv3"]))["data"]
    # and reading the exported card gives back the same role
    again = load_role(out, settings)
    assert again.stories == role.stories and again.system_prompt == role.system_prompt


def test_bundled_role_survives_a_card_without_loss(env):
    settings, inp = env
    holmes = load_role("sherlock")
    back = load_role(write_card_png(holmes, inp / "holmes.png"), settings)
    assert back.id != "sherlock"  # an import never takes over a bundled id
    assert back.stories == holmes.stories and back.system_prompt == holmes.system_prompt
    assert (back.profile, back.voice, back.user_name, back.examples) == (
        holmes.profile, holmes.voice, holmes.user_name, holmes.examples)
    assert back.image_path and back.image_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    card = role_to_card(holmes)
    assert "{{char}}: " in card["data"]["mes_example"] and card["data"]["name"] == "Sherlock Holmes"


def test_v1_card_and_v3_png_prefers_ccv3(env):
    settings, inp = env
    v1 = {"name": "Old Tom", "description": "A fisherman.", "first_mes": "Fish are biting.",
          "mes_example": "<START>\n{{user}}: Any luck?\n{{char}}: Three cod and a boot."}
    (inp / "tom.json").write_text(json.dumps(v1))
    assert load_role(inp / "tom.json", settings).name == "Old Tom"
    v3 = {"spec": "chara_card_v3", "spec_version": "3.0", "data": {**v1, "name": "New Tom", "nickname": "Tommy"}}
    from chatharuhi_core.roles.cards import png_with_text

    def b64(card):
        return base64.b64encode(json.dumps(card).encode()).decode()

    png = png_with_text(png_bytes(), {"chara": b64(v1), "CCV3": b64(v3)})  # keyword matched case-insensitively
    (inp / "tom.png").write_bytes(png)
    role = load_role(inp / "tom.png", settings)
    assert role.name == "New Tom" and "Tommy" in role.aliases


# ------------------------------------------------------------------ ChatHaruhi jsonl


def test_chatharuhi_jsonl_out_and_in_uses_stored_vectors(env, embedder):
    settings, inp = env
    wukong = load_role("sunwukong")
    path = write_chatharuhi_jsonl(wukong, inp / "wukong.jsonl", embedder)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows[0]["use_m3"] == "system_prompt" and rows[1]["use_m3"] == "config"
    assert len(rows) == len(wukong.stories) + 2
    role = load_role(path, settings)
    assert [s.text for s in role.stories] == [s.text for s in wukong.stories]
    assert role.name == "孙悟空" and role.series == "西游记" and role.system_prompt == wukong.system_prompt
    assert role.embeddings["use_m3"].shape == (len(wukong.stories), 512)
    bot = ChatHaruhi(role=role, engine="script", settings=settings)
    assert bot.chat("你的金箍棒有多重？", role="唐僧")


def test_matching_column_is_used_as_is_and_other_columns_are_re_embedded(env):
    settings, inp = env
    text = chatharuhi_rows(HARUHI_STORIES, {"test_col": 8, "luotuo_openai": 1536}, "act like 春日 from 凉宫春日.",
                           enc_text=True)
    (inp / "haruhi.jsonl").write_text(text, encoding="utf-8")
    own = settings.with_(embedder="test-column-8")
    role = load_role(inp / "haruhi.jsonl", own)
    assert [s.text for s in role.stories] == HARUHI_STORIES  # enc_text decoded
    store = open_store(role, ColumnEmbedder(), own)  # would raise if it embedded the stories
    hits = store.search_vector(role.embeddings["test_col"][2], 1)
    assert hits[0].text == HARUHI_STORIES[2] and hits[0].similarity > 0.999
    # with the default embedder no column matches: the texts are embedded again and it still works
    bot = ChatHaruhi(role=load_role(inp / "haruhi.jsonl", settings), engine="script", settings=settings)
    assert bot.chat("你想成立什么社团？", role="阿虚")


# ------------------------------------------------------------------ scripts


def test_screenplay_is_cut_into_scenes_with_an_exchange():
    role = role_from_script(SCREENPLAY, "Mira", source_name="storm.txt")
    texts = [s.text for s in role.stories]
    assert texts == [
        "Rain hammers the glass.\nTom:「Keeper! Keeper, are you there?」\nMira:「Shut the door. You're letting the sea in.」"
        "\nTom:「There's a ship on the rocks.」\nMira:「Then stop talking and fetch the rope.」",
        "Tom:「Did they all live?」\nMira:「Every one. The sea was kind tonight.」",
    ]  # the kitchen scene has no line by Mira, so it is dropped; "(without turning)" is not speech
    assert role.user_name == "Tom" and role.greeting == "Shut the door. You're letting the sea in."


def test_a_script_of_two_equal_parts_asks_which_one_to_become():
    """No protagonist to guess: the sentence names both and how to choose; a name given settles it."""
    duet = "\n".join(f"Ann: Line {i} of Ann?\nBen: Line {i} of Ben." for i in range(6))
    with pytest.raises(ImportProblem, match=r"more than one main speaker: Ann \(6 lines\), Ben \(6 lines\)"):
        role_from_script(duet, None, source_name="duet.txt")
    assert role_from_script(duet, "Ben", source_name="duet.txt").name == "Ben"
    assert role_from_script(SCREENPLAY, None, source_name="storm.txt").name == "Tom"  # 4 lines against 3: Tom leads


def test_a_chatharuhi_file_of_two_equal_parts_asks_which_one_to_become():
    """A ChatHaruhi jsonl whose prompt names no speaker and says no "act like": two equal parts are not guessed
    between; a prompt that names one, or a name given, settles it."""
    from chatharuhi_core.roles.chatharuhi_jsonl import parse_chatharuhi_jsonl

    rows = [{"text": f"Ann:「Line {i} of Ann?」\nBen:「Line {i} of Ben.」"} for i in range(6)]
    body = "\n".join(json.dumps(r) for r in rows)
    with pytest.raises(ImportProblem, match=r"duet.jsonl has more than one main speaker: Ann \(6 lines\), Ben"):
        parse_chatharuhi_jsonl(body, "duet.jsonl")
    assert parse_chatharuhi_jsonl(body, "duet.jsonl", role_name="Ann").name == "Ann"
    named = json.dumps({"text": "You are Ben, a sailor.", "luotuo_openai": "system_prompt"}) + "\n" + body
    assert parse_chatharuhi_jsonl(named, "duet.jsonl").name == "Ben"
    lead = body + "\n" + json.dumps({"text": "Ben:「One more.」"})
    assert parse_chatharuhi_jsonl(lead + "\n" + json.dumps({"text": "Ben:「And one.」"}), "d.jsonl").name == "Ben"


def test_chinese_script_and_length_limit():
    role = role_from_script(CHINESE_SCRIPT, None, source_name="客栈.txt")
    assert role.name == "店小二" and role.language == "zh" and role.user_name == "老掌柜"
    assert len(role.stories) == 2
    long = "\n".join(f"A: question number {i} about the weather today?\nB: answer number {i}, it is fine."
                     for i in range(60))
    scenes = cut_scenes(long, ["B"], max_tokens=60)
    assert len(scenes) > 5
    from chatharuhi_core.tokens import count_tokens

    assert all(count_tokens(s) <= 60 for s in scenes)
    assert all(s.splitlines()[0].startswith("A:") for s in scenes)  # each starts on its cue


def test_speaker_notes_in_parentheses_are_not_part_of_the_name():
    text = "Tom (shouting): Keeper!\nMira (quietly): Shut the door.\n\n老掌柜（怒）：又偷懒？\n店小二（笑）：哪有哪有。"
    assert [s.splitlines()[-1] for s in cut_scenes(text, ["Mira"])] == ["Mira:「Shut the door.」"]
    assert cut_scenes(text, ["店小二"]) == ["老掌柜:「又偷懒？」\n店小二:「哪有哪有。」"]


def test_script_file_through_load_role(env):
    settings, inp = env
    (inp / "storm.txt").write_text(SCREENPLAY)
    role = load_role(inp / "storm.txt", settings, ImportOptions(name="MIRA"))
    assert role.name == "MIRA" and len(role.stories) == 2


# ------------------------------------------------------------------ packages and the Hub


def _zip(entries: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)
            zf.writestr(info, target)
    return buf.getvalue()


def test_package_zip_import_and_export_with_store(env):
    settings, inp = env
    out = export_role(load_role("dracula"), inp / "dracula.zip", settings)
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
    assert "dracula/role.json" in names and "dracula/store/manifest.json" in names
    role = load_role(out, settings)
    assert role.name == "Count Dracula" and role.id != "dracula" and len(role.stories) >= 60
    folder = export_role(role, inp / "folder", settings)
    assert (folder / "store" / "chroma.sqlite3").is_file()


def test_hub_jsonl_from_the_cache_while_the_hub_is_unreachable(env):
    settings, inp = env
    haruhi_hub_cache(settings.hub_cache)
    start = time.monotonic()
    role = load_role("silk-road/ChatHaruhi-RolePlaying/haruhi", settings)
    assert time.monotonic() - start < 10
    assert role.name == "凉宫春日" and "春日" in role.aliases and role.user_name == "阿虚"
    assert role.series.startswith("凉宫春日的忧郁") and len(role.stories) == 4
    bot = ChatHaruhi(role=role, engine="script", settings=settings)
    assert "外星人" in bot.chat("你对普通人有兴趣吗？", role="阿虚") or bot.history
    assert load_role(role.id, settings).stories == role.stories  # later by id, from <cache>/roles


def test_hub_package_snapshot_and_revision(env):
    settings, inp = env
    alice = load_role("alice")
    files = {
        "role.json": json.dumps(alice.to_json()).encode(),
        "system_prompt.txt": alice.system_prompt.encode(),
        "stories.jsonl": "\n".join(json.dumps({"id": s.id, "text": s.text}) for s in alice.stories).encode(),
        "image.png": png_bytes(),
    }
    lay_out_hub_cache(settings.hub_cache, {"someone/alice-role": files})
    role = load_role("someone/alice-role", settings)
    assert role.name == "Alice" and role.stories == alice.stories and role.image_path
    with pytest.raises(HubError, match="not in the local cache"):
        load_role("someone/alice-role@v2", settings)


XIAOFENG_STORIES = [
    "段誉:「大哥，你这是要去哪里？」\n萧峰:「契丹人也好，汉人也罢，萧某行事，但求问心无愧。」",
    "阿朱:「萧大哥，你喝了多少碗了？」\n萧峰:「好酒！再来二十碗，今日与诸位英雄喝个痛快。」",
]
SPARROW_STORIES = [
    "Gibbs:「Captain, the compass is spinning again.」\nJack Sparrow:「It points to what I want most, mate. Rum, mostly.」",
    "Will:「You cheated!」\nJack Sparrow:「Pirate. Honesty is a very dangerous word on the open sea.」",
]


def test_community_dataset_owner_name_is_read_as_a_chatharuhi_jsonl(env):
    settings, inp = env
    text = chatharuhi_rows(XIAOFENG_STORIES, {"luotuo_openai": 1536}, "你正在扮演萧峰。")
    lay_out_hub_cache(settings.hub_cache, {"hhhwmws/xiaofeng": {"xiaofeng.jsonl": text.encode()}})
    role = load_role("hhhwmws/xiaofeng", settings)  # as ChatHaruhi's role_from_hf="hhhwmws/xiaofeng"
    assert role.name == "萧峰" and "Xiao Feng" in role.aliases and role.series.startswith("天龙八部")
    assert "community" in role.description and role.id.startswith("xiaofeng-") and len(role.stories) == 2
    assert "二十碗" in ChatHaruhi(role=role, engine="script", settings=settings).chat("萧大哥，再喝一碗？")


def test_rolellm_role_with_a_space_in_its_name_and_a_bge_en_column(env):
    settings, inp = env
    text = chatharuhi_rows(SPARROW_STORIES, {"bge_en_s15": 384, "luotuo_openai": 1536},
                           "I want you to act like Jack Sparrow from Pirates of the Caribbean.")
    lay_out_hub_cache(settings.hub_cache, {"silk-road/ChatHaruhi-from-RoleLLM": {"Jack Sparrow.jsonl": text.encode()}})
    role = load_role("silk-road/ChatHaruhi-from-RoleLLM/Jack Sparrow", settings)
    assert role.name == "Jack Sparrow" and "杰克·斯派洛船长" in role.aliases and "RoleLLM" in role.description
    assert role.embeddings == {}  # neither column is the active embedder's: the texts are embedded again
    store = open_store(role, ChatHaruhi(role=role, engine="script", settings=settings).embedder, settings)
    assert store.search("Does your compass work?", 1)[0].text.startswith("Gibbs:「Captain, the compass")
    wrong = chatharuhi_rows(SPARROW_STORIES, {"bge_en_s15": 512}, "act like Jack Sparrow from x.")
    lay_out_hub_cache(settings.hub_cache, {"silk-road/ChatHaruhi-from-RoleLLM": {"Will Turner.jsonl": wrong.encode()}})
    with pytest.raises(ImportProblem, match="column 'bge_en_s15': the embedding has 512 dimensions, expected 384"):
        load_role("silk-road/ChatHaruhi-from-RoleLLM/Will Turner", settings)


def test_a_dataset_that_is_neither_kind_says_so(env):
    settings, inp = env
    lay_out_hub_cache(settings.hub_cache, {"someone/notes": {"README.md": b"# notes"},
                                           "someone/two": {"a.jsonl": b"{}", "b.jsonl": b"{}"}})
    with pytest.raises(HubError, match="neither a role package .role.json. nor a ChatHaruhi jsonl"):
        load_role("someone/notes", settings)
    with pytest.raises(HubError, match="several jsonl files .a.jsonl, b.jsonl.; name the role too"):
        load_role("someone/two", settings)


def test_the_catalogue_lists_chatharuhis_142_roles_by_source():
    from chatharuhi_core.roles.hub import hub_roles, parse_hub_id
    from chatharuhi_core.web.picker import picker_entries

    roles = hub_roles()
    counts = {src: sum(r.source == src for r in roles) for src in ("ChatHaruhi-54K", "community", "RoleLLM")}
    assert counts == {"ChatHaruhi-54K": 32, "community": 15, "RoleLLM": 95} and len({r.ref for r in roles}) == 142
    for r in roles:
        parsed = parse_hub_id(r.ref)
        assert parsed is not None and parsed.label == r.ref, r.ref
    hal = parse_hub_id("silk-road/ChatHaruhi-from-RoleLLM/HAL 9000")
    assert (hal.repo_id, hal.filename) == ("silk-road/ChatHaruhi-from-RoleLLM", "HAL 9000.jsonl")
    labels = [e.label for e in picker_entries(lang="zh") if e.online]
    assert len(labels) == 142
    assert any("杰克·斯派洛船长" in x and "加勒比海盗" in x for x in labels)  # the Chinese name and work
    assert any("令狐冲" in x and "笑傲江湖" in x and "community" in x for x in labels)
    assert any(x.startswith("Jack Sparrow") and "Pirates of the Caribbean" in x
               for x in (e.label for e in picker_entries(lang="en") if e.online))


def test_unreachable_hub_fails_fast_with_a_sentence_and_bundled_roles_still_work(env):
    settings, inp = env
    start = time.monotonic()
    with pytest.raises(HubError) as err:
        load_role("silk-road/ChatHaruhi-RolePlaying/Snape", settings)
    assert time.monotonic() - start < 5
    assert "cannot be reached" in str(err.value) and "Traceback" not in str(err.value)
    offline = settings.with_(hub_offline=True, hf_endpoint=None)
    with pytest.raises(HubError, match="not in the local cache"):
        load_role("someone/nothing", offline)
    assert load_role("sherlock").name == "Sherlock Holmes" and len(bundled_ids()) >= 8


def test_bundled_roles_meet_the_bar():
    roles = [load_role(i) for i in bundled_ids()]
    assert len(roles) >= 8
    assert sum(r.language == "zh" for r in roles) >= 4 and sum(r.language == "en" for r in roles) >= 4
    for r in roles:
        assert len(r.stories) >= 60, r.id
        assert r.image_path and r.image_path.is_file(), r.id
        assert set(r.profile) == {"attributes", "behaviours"}, r.id
        assert r.greeting and r.examples and r.user_name, r.id


# ------------------------------------------------------------------ safety


BAD = {
    "zip-slip": ("evil.zip", lambda: _zip({"pkg/role.json": b"{}", "../../escaped.txt": b"gotcha"}), "outside the target"),
    "zip-absolute": ("abs.zip", lambda: _zip({"/tmp/abs-escaped.txt": b"x"}), "absolute path"),
    "zip-link": ("link.zip", lambda: _zip({"pkg/role.json": b"{}"}, {"pkg/stories.jsonl": "/etc/passwd"}), "symbolic link"),
    "zip-bomb": ("bomb.zip", lambda: _zip({"pkg/stories.jsonl": b"\x00" * (30 * 1024 * 1024)}), "zip bomb"),
    "not-a-zip": ("broken.zip", lambda: b"PK\x03\x04 this is not a zip", "not a readable zip"),
    "image-bomb": ("bomb.png", lambda: bomb_png(KEEPER_CARD), "decompression bomb"),
    "bad-dims": ("dims.jsonl", lambda: chatharuhi_rows(["A:「hi」\nB:「yo」", "A:「x」\nB:「y」"], {"use_m3": 300},
                                                        "act like B from C.").encode(), "300 dimensions, expected 512"),
    "ragged-dims": ("ragged.jsonl", lambda: (
        json.dumps({"text": "A:「hi」\nB:「yo」", "luotuo_openai": b64vec(np.ones(1536))}) + "\n"
        + json.dumps({"text": "A:「x」\nB:「y」", "luotuo_openai": b64vec(np.ones(12))}) + "\n").encode(), "expected 1536"),
    "bad-base64": ("b64.jsonl", lambda: (json.dumps({"text": "A:「hi」", "bge_zh_s15": "@@@"}) + "\n").encode(),
                   "not valid base64"),
    "not-utf8-jsonl": ("gbk.jsonl", lambda: "A:「你好」".encode("gbk"), "not UTF-8"),
    "not-utf8-script": ("gbk.txt", lambda: "店小二：客官里边请".encode("gbk"), "not UTF-8"),
    "not-utf8-card": ("gbk.json", lambda: json.dumps({"name": "王"}, ensure_ascii=False).encode("gbk"), "not UTF-8"),
    "empty-jsonl": ("empty.jsonl", lambda: chatharuhi_rows([], {"use_m3": 512}, "act like A from B.").encode(),
                    "holds no scenes"),
    "sceneless-card": ("plain.json", lambda: json.dumps({"name": "Nobody", "description": "Quiet."}).encode(),
                       "no example dialogue"),
    "nameless-card": ("anon.json", lambda: json.dumps({"description": "x", "first_mes": "hi"}).encode(), "has no name"),
    "card-png-without-card": ("plain.png", png_bytes, "without a character card"),
    "no-dialogue-script": ("notes.txt", lambda: b"Just some notes.\nNothing said here.", "no dialogue lines"),
    "wrong-name-script": ("storm2.txt", lambda: SCREENPLAY.encode(), "speakers found are"),
    "zip-without-package": ("none.zip", lambda: _zip({"readme.txt": b"hello"}), "holds no character"),
    "bad-package": ("badpkg.zip", lambda: _zip({"pkg/role.json": b'{"id": "x"}'}), "field 'name'"),
    "unknown-type": ("song.mp3", lambda: b"ID3", "are not accepted"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_gets_a_clear_error_and_writes_nothing_outside_the_cache(env, case):
    settings, inp = env
    name, make, expected = BAD[case]
    (inp / name).write_bytes(make())
    before = outside_cache(inp.parent)
    options = ImportOptions(name="Nobody" if case == "wrong-name-script" else None)
    with pytest.raises(ChatHaruhiError) as err:
        import_file(inp / name, settings, options)
    assert expected in str(err.value), str(err.value)
    assert name in str(err.value) or case in {"bad-package"}
    assert outside_cache(inp.parent) == before
    assert not (settings.roles_dir.exists() and any(p for p in settings.roles_dir.iterdir() if not p.name.startswith(".")))
    assert not Path("/tmp/abs-escaped.txt").exists()


def test_oversized_file_and_links_are_refused(env):
    settings, inp = env
    big = inp / "huge.jsonl"
    with big.open("wb") as f:  # sparse: 101 MB on paper, nothing on disk
        f.truncate(101 * 1024 * 1024)
    with pytest.raises(ImportProblem, match="files are limited to 100.0 MB"):
        import_file(big, settings)
    small = Limits(max_file_bytes=1000)
    (inp / "card.json").write_text(json.dumps(KEEPER_CARD))
    with pytest.raises(ImportProblem, match="huge|limited"):
        import_file(inp / "card.json", settings, ImportOptions(limits=small))
    os.symlink("/etc/hostname", inp / "linked.json")
    with pytest.raises(ImportProblem, match="is a link"):
        import_file(inp / "linked.json", settings)
    pkg = inp / "pkg"
    export_role(load_role("alice"), pkg, settings, "folder-no-store")
    os.symlink("/etc/hostname", pkg / "notes.txt")
    from chatharuhi_core.roles.sources import import_folder

    with pytest.raises(ImportProblem, match="may not contain links"):
        import_folder(pkg, settings)


def test_a_chinese_named_card_gets_a_readable_id_that_loads_and_chats(env, embedder):
    """蓝掌柜 → 蓝掌柜-<hash>: the name in the id, in any script; old ASCII ids are still valid."""
    from chatharuhi_core import ChatHaruhi
    from chatharuhi_core.roles.role import ROLE_ID_RE

    settings, inp = env
    card = json.loads(json.dumps(KEEPER_CARD))
    card["data"]["name"] = "蓝掌柜"
    (inp / "card.json").write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    role = load_role(inp / "card.json", settings)
    assert role.id.startswith("蓝掌柜-") and len(role.id) == len("蓝掌柜-") + 10
    assert role.root.name == role.id and (role.root / "role.json").is_file()
    again = load_role(role.id, settings)  # by its id, from the cache, as the page and the CLI do
    assert again.name == "蓝掌柜"
    assert ChatHaruhi(role=again, engine="script", settings=settings, embedder=embedder).chat("你好")
    assert ROLE_ID_RE.match("role-53c060d601") and ROLE_ID_RE.match("sherlock")
    assert not ROLE_ID_RE.match("../etc") and not ROLE_ID_RE.match("a b")
