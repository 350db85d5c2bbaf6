"""Inputs the tests make for themselves: cards, scripts, ChatHaruhi files, a Hugging Face cache.

Nothing here is copied from a real dataset; the texts are written for the tests.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from chatharuhi_core.chat.prompt import Exchange

COMMIT = "0123456789abcdef0123456789abcdef01234567"

KEEPER_CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Mira",
        "description": "{{char}} keeps the lighthouse on Gull Rock and talks to {{user}} about ships.",
        "personality": "calm, dry humour, fond of storms",
        "scenario": "A stormy night at the lighthouse.",
        "first_mes": "Shut the door, {{user}}, the wind bites.",
        "mes_example": "<START>\n{{user}}: Are you lonely here?\n{{char}}: Lonely? I have the sea.\nIt never stops talking."
                       "\n<START>\n<USER>: What is that light?\n<BOT>: A ship, two miles out. She is late.",
        "creator_notes": "Written for the ChatHaruhi tests.",
        "system_prompt": "",
        "post_history_instructions": "Stay in character.",
        "alternate_greetings": ["Back again? Mind the third step."],
        "character_book": {"name": "Gull Rock", "entries": [
            {"keys": ["storm", "weather"], "content": "Storms on Gull Rock come from the west.", "enabled": True,
             "insertion_order": 0, "position": "before_char"},
            {"keys": [], "content": "The lighthouse was built in 1821.", "enabled": True, "constant": True,
             "insertion_order": 1, "position": "before_char"},
            {"keys": ["secret"], "content": "A disabled entry.", "enabled": False, "insertion_order": 2},
        ]},
        "tags": ["original", "sea"],
        "creator": "tests",
        "character_version": "1.2",
        "extensions": {"depth_prompt": {"prompt": "She smells of salt.", "depth": 4}, "someone_else": [1, 2, 3]},
    },
}

# a card with a lorebook: keys, a secondary key, a constant entry, one too long, one disabled
ASH_CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Captain Ash",
        "description": "{{char}} commands the airship Kestrel and owes {{user}} a favour.",
        "personality": "gruff, loyal, counts every coin",
        "scenario": "{{user}} has just climbed aboard the Kestrel at dawn.",
        "first_mes": "Welcome aboard, {{user}}. Mind the ropes.",
        "mes_example": "<START>\n{{user}}: Where are we headed?\n{{char}}: North, where the wind pays.",
        "creator_notes": "Tested by ChatHaruhi; never for the model.",
        "system_prompt": "You are a narrator-free role-play partner. Write only {{char}}'s next line.",
        "post_history_instructions": "Keep {{char}}'s answer under three sentences and call {{user}} by name.",
        "alternate_greetings": [],
        "tags": ["airship"],
        "creator": "tests",
        "character_version": "1",
        "extensions": {},
        "character_book": {
            "name": "Kestrel", "scan_depth": 4, "token_budget": 60,
            "entries": [
                {"id": 1, "keys": ["Ashfall"], "content": "Ashfall is the smugglers' port under the volcano.",
                 "enabled": True, "insertion_order": 20, "priority": 10, "case_sensitive": True},
                {"id": 2, "keys": ["engine"], "secondary_keys": ["repair", "broken"], "selective": True,
                 "content": "The Kestrel's engine was rebuilt by {{user}}'s father.", "enabled": True,
                 "insertion_order": 10, "priority": 5},
                {"id": 3, "keys": [], "constant": True, "content": "The crew never flies through storms.",
                 "enabled": True, "insertion_order": 0, "priority": 100},
                {"id": 4, "keys": ["gold"], "content": "gold " * 80, "enabled": True, "insertion_order": 30,
                 "priority": 1, "name": "The long gold note"},
                {"id": 5, "keys": ["mutiny"], "content": "A disabled note.", "enabled": False},
            ],
        },
    },
}

SCREENPLAY = """\
INT. LIGHTHOUSE - NIGHT

Rain hammers the glass.

TOM
Keeper! Keeper, are you there?

MIRA
(without turning)
Shut the door. You're letting the sea in.

TOM
There's a ship on the rocks.

MIRA
Then stop talking and fetch the rope.

EXT. CLIFF - DAWN

TOM
Did they all live?

MIRA (V.O.)
Every one. The sea was kind tonight.

INT. KITCHEN - LATER

TOM
Who taught you to read the weather?

SARA
Nobody asked you.
"""

CHINESE_SCRIPT = """\
第一场 客栈
店小二:「客官里边请！」
老掌柜：你又偷懒了？
店小二:「哪有哪有，我这不是在招呼客人嘛。」

老掌柜：明天早点起来。
店小二：知道了知道了，天一亮我就起。
"""


def png_bytes(size=(64, 96), color=(90, 120, 160)) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def chunk(ctype: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + ctype + body + struct.pack(">I", zlib.crc32(ctype + body) & 0xFFFFFFFF)


def card_png(card: dict, keywords=("chara",), image: bytes | None = None) -> bytes:
    """A PNG with the card in tEXt chunks under the given keywords."""
    from chatharuhi_core.roles.cards import png_with_text

    b64 = base64.b64encode(json.dumps(card).encode("utf-8")).decode("ascii")
    return png_with_text(image or png_bytes(), {k: b64 for k in keywords})


def bomb_png(card: dict) -> bytes:
    """A tiny file whose header claims 100,000 x 100,000 pixels, with a card inside."""
    sig = b"\x89PNG\r\n\x1a\n"
    ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0))
    idat = chunk(b"IDAT", zlib.compress(b"\x00" * 1024))
    b64 = base64.b64encode(json.dumps(card).encode("utf-8")).decode("ascii").encode("ascii")
    text = chunk(b"tEXt", b"chara\x00" + b64)
    return sig + ihdr + text + idat + chunk(b"IEND", b"")


def b64vec(v) -> str:
    return base64.b64encode(np.asarray(v, dtype=">f4").tobytes()).decode("ascii")


def chatharuhi_rows(stories: list[str], columns: dict[str, int], prompt: str, enc_text: bool = False) -> str:
    """A ChatHaruhi 2.0 jsonl with random vectors of the given dimension per column."""
    rng = np.random.default_rng(0)
    rows = [{"text": prompt, **dict.fromkeys(columns, "system_prompt")},
            {"text": "Reserve Config Setting Here", **dict.fromkeys(columns, "config")}]
    for s in stories:
        row = {"enc_text": base64.b64encode(s.encode()).decode()} if enc_text else {"text": s}
        row.update({c: b64vec(rng.normal(size=d)) for c, d in columns.items()})
        rows.append(row)
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n"


HARUHI_STORIES = [
    "阿虚:「你又想干什么？」\n春日:「我要成立一个社团！找外星人、未来人和超能力者，和他们一起玩！」",
    "阿虚:「普通人不行吗？」\n春日:「普通的人类我没有兴趣！如果你们当中有外星人，就来找我吧。」",
    "阿虚:「今天的活动是什么？」\n春日:「不可思议探索之旅！全体在车站前集合，迟到的人请大家喝饮料。」",
    "阿虚:「你为什么每天换发型？」\n春日:「星期一是一个马尾，星期二两个，这样每天都不一样嘛。你这都看不出来？」",
]


def lay_out_hub_cache(hub: Path, files: dict[str, dict[str, bytes]], kind: str = "datasets") -> Path:
    """A huggingface_hub cache (datasets--owner--name/refs/main + snapshots/<commit>/...) for offline reads."""
    for repo_id, content in files.items():
        repo = hub / (f"{kind}--" + repo_id.replace("/", "--"))
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(COMMIT)
        snap = repo / "snapshots" / COMMIT
        for name, data in content.items():
            (snap / name).parent.mkdir(parents=True, exist_ok=True)
            (snap / name).write_bytes(data)
    return hub


def haruhi_hub_cache(hub: Path) -> Path:
    """The test's stand-in for silk-road/ChatHaruhi-RolePlaying/haruhi, cached as if fetched before."""
    prompt = "I want you to act like 凉宫春日 from 凉宫春日的忧郁. You are now cosplay 凉宫春日."
    text = chatharuhi_rows(HARUHI_STORIES, {"luotuo_openai": 1536}, prompt)
    return lay_out_hub_cache(hub, {"silk-road/ChatHaruhi-RolePlaying": {"haruhi.jsonl": text.encode("utf-8")}})


TINY_LLAMA = "tiny/chatharuhi-llama"


def tiny_llama_hub_cache(hub: Path) -> Path:
    """A tiny random Llama (two layers, 32 wide, reads 1,024 tokens) with SmolLM2's tokenizer and chat
    template, cached as the Hub model TINY_LLAMA: big enough to train, save, merge and chat with."""
    import tempfile

    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from chatharuhi_core.chat.engines.local.packaged import SMOLLM2, packaged_spec

    spec = packaged_spec(SMOLLM2)
    tokenizer = AutoTokenizer.from_pretrained(spec.source, gguf_file=spec.gguf_file)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        files = {p.name: p.read_bytes() for p in Path(tmp).iterdir() if p.is_file()}
    return lay_out_hub_cache(hub, {TINY_LLAMA: files}, kind="models")


CHATTER = [("How are you this morning?", "Tolerably well. The fog is thick."),
           ("Did you sleep at all?", "Three hours. Sleep is a habit, not a need."),
           ("What are you reading?", "A monograph on the ash of 140 tobaccos."),
           ("Shall I open the window?", "Only if you wish to let the fog in."),
           ("Is there any tea left?", "Mrs. Hudson took the pot away an hour ago."),
           ("Have you eaten?", "Digestion slows the mind; I shall eat tonight.")]


def long_chat(user: str, planted: dict[int, tuple[str, str]], total: int, day0: str = "2024-03-01") -> list[Exchange]:
    """`total` exchanges of chatter, one day per ten exchanges, with `planted` ones (turn -> lines): a long chat
    whose few telling exchanges memory has to find."""
    from chatharuhi_core.chat.prompt import Exchange

    start = date.fromisoformat(day0).toordinal()
    out = []
    for turn in range(1, total + 1):
        text, reply = planted.get(turn) or CHATTER[turn % len(CHATTER)]
        at = date.fromordinal(start + (turn - 1) // 10).isoformat()
        out.append(Exchange(user, text if turn in planted else f"{text} ({turn})", reply, at))
    return out


HARUHI_PROMPT = "你正在扮演凉宫春日，你正在cosplay涼宮ハルヒ。\n春日说话直接，充满活力，总想找到不可思议的事情。"


def chatharuhi_folder(root: Path, name: str = "haruhi", pictures: bool = True, suffix: str = ".jpg") -> Path:
    """A ChatHaruhi 1.0 character folder as the original repository lays one out (written by the test):
    system_prompt.txt, texts/<n>.txt, and with `pictures` images/ and text_image_dict.txt, whose picture names
    leave off `.jpg` as ChatHaruhi 1.0 wrote them; an embedding cache (.pkl) that must never be read."""
    import io

    from PIL import Image

    folder = root / name
    (folder / "texts").mkdir(parents=True)
    (folder / "system_prompt.txt").write_text(HARUHI_PROMPT + "\n", encoding="utf-8")
    for n, text in enumerate(HARUHI_STORIES, start=1):
        (folder / "texts" / f"春日_{n:03d}.txt").write_text(text + "\n", encoding="utf-8")
    (folder / "texts_embeddings.pkl").write_bytes(b"\x80\x04not a pickle anyone should open")
    if pictures:
        (folder / "images").mkdir()
        rows = []
        for n, (line, color) in enumerate([("普通的人类我没有兴趣！", (200, 40, 40)),
                                           ("不可思议探索之旅！全体在车站前集合。", (40, 40, 200))], start=1):
            fmt = {".jpg": "JPEG", ".png": "PNG"}[suffix]
            buf = io.BytesIO()
            Image.new("RGB", (48, 32), color).save(buf, fmt)
            (folder / "images" / f"{n:03d}{suffix}").write_bytes(buf.getvalue())
            rows.append(f"{line}\n{n:03d}" + ("" if suffix == ".jpg" else suffix))
        (folder / "text_image_dict.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder
