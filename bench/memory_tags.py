"""Tags for memory_public.py's `--try tags=N` simulation: the kinds of things each visitor line mentions, written
by the packaged Gemma 3 270M from a few examples (no other model ships in a package that knows "Rebecca" is a book),
so that "Which books has Priya read?" could meet "Finally got to the end of Rebecca" by a word they share.

    .venv/bin/python bench/memory_tags.py --split tuning     # ~15 min on 2 cores; cached in .cache/bench

Measured, and not built: docs/eval/memory-tags.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memory_public as mp  # noqa: E402

EN = """Tag each message with the general kinds of things it mentions.

Message: Went to see Hamlet at the Globe last night, the ghost scene gave me chills.
Tags: theatre, play, outing, Shakespeare

Message: My sister Anna is moving to Leeds next month for her new job.
Tags: family, sister, moving, job, city

Message: Burnt the lasagne again, the smoke alarm went off twice.
Tags: cooking, food, kitchen, accident

Message: {text}
Tags:"""
ZH = """给每条消息标注它提到的事物的类别。

消息：昨天去国家大剧院看了《茶馆》，演员演得太好了。
类别：戏剧、演出、外出、剧院

消息：我表姐下个月要搬去杭州上班了。
类别：家人、亲戚、搬家、工作、城市

消息：今天做红烧肉又烧糊了，锅都黑了。
类别：做饭、食物、厨房、意外

消息：{text}
类别："""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["tuning", "held-out", "both"], default="tuning")
    args = parser.parse_args()
    from chatharuhi_core.chat.engines.local import model as local_model
    from chatharuhi_core.chat.engines.local.packaged import GEMMA3_270M, packaged_spec

    cache = json.loads(mp.TAGS.read_text(encoding="utf-8")) if mp.TAGS.exists() else {}
    cases = [c for lang in ("en", "cn") for c in mp.memorybank(lang, True)] + mp.written()
    cases += [c for split, path in mp.GATHERING.items() for c in mp.written(path, "gathering, written here", split)]
    lang_of = {ex.text: c.lang for c in cases if args.split in ("both", c.split) for ex in c.history}
    todo = sorted((t for t in lang_of if t not in cache), key=lambda t: lang_of[t])  # one few-shot prefix at a time
    print(f"{len(lang_of)} visitor lines, {len(todo)} to tag", flush=True)
    llm = local_model.load_model(packaged_spec(GEMMA3_270M, mp.TAGS.parent / "models"), "cpu").handle.llm
    started = time.time()
    for n, text in enumerate(todo, 1):
        prompt = (EN if lang_of[text] == "en" else ZH).format(text=text.replace("\n", " ")[:300])
        out = llm.create_completion(prompt, max_tokens=16, temperature=0.0, stop=["\n"])
        cache[text] = out["choices"][0]["text"].strip()
        if n % 100 == 0 or n == len(todo):
            mp.TAGS.write_text(json.dumps(cache, ensure_ascii=False), encoding="utf-8")
            print(f"  {n}/{len(todo)} in {time.time() - started:.0f} s: {text[:40]!r} -> {cache[text]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
