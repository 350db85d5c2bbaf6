"""Retrieval plus prompt assembly per turn (ChatHaruhi.prepare: embed the query, the 19 nearest
scenes from Chroma, pack them to the budget, trim the history, lay out the messages), for roles
of 100 to 100,000 scenes.

The big roles are made from the bundled scenes: each copy gets its own words (a numbered line) and
the vector of its original with a little noise, so Chroma indexes N distinct points without
embedding N texts (search cost depends on N and the dimension, not on what the texts say). Stores
are kept in the bench cache, so a second run skips the building.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from common import percentile

QUERIES = [
    "Who are you?", "What is your method?", "你的金箍棒有多重？", "Tell me about your enemies.",
    "Do you ever feel afraid?", "你想家吗？", "What would you do with a fortune?", "How did we first meet?",
    "明天出发吗？", "Will you help me?", "What do you see in this letter?", "你最喜欢什么？",
]


def synthetic_role(n: int, embedder):
    from chatharuhi_core.roles.role import Role, Story
    from chatharuhi_core.roles.sources import bundled_roles

    base = [s for role in bundled_roles() for s in role.stories]
    vectors = embedder.embed([s.text for s in base])
    rng = np.random.default_rng(n)
    stories, rows = [], []
    for i in range(n):
        j = i % len(base)
        stories.append(Story(f"s{i:06d}", f"{base[j].text}\n(copy {i})"))
        v = vectors[j] + rng.normal(0, 0.02, vectors.shape[1]).astype(np.float32)
        rows.append(v / np.linalg.norm(v))
    role = Role(id=f"bench-{n}", name="Sherlock Holmes", system_prompt=bundled_roles()[1].system_prompt,
                stories=stories)
    return role, np.stack(rows).astype(np.float32)


def measure(sizes: list[int], cache: Path, turns: int = 200) -> list[dict]:
    from chatharuhi_core import ChatHaruhi
    from chatharuhi_core.chat.prompt import Exchange
    from chatharuhi_core.config import Settings
    from chatharuhi_core.embedding import get_embedder
    from chatharuhi_core.roles.store import open_store

    settings = Settings.from_env({"CHATHARUHI_CACHE": str(cache)})
    embedder = get_embedder(settings.embedder)
    history = [Exchange("Watson", f"Question {i}?", f"Answer {i}, my dear Watson.") for i in range(6)]
    rows = []
    for n in sizes:
        role, vectors = synthetic_role(n, embedder)
        started = time.perf_counter()
        open_store(role, embedder, settings, vectors=vectors)
        build_s = time.perf_counter() - started
        bot = ChatHaruhi(role=role, engine="script", settings=settings, embedder=embedder, history=history)
        for q in QUERIES:  # warm the caches of the query path
            bot.prepare(q)
        times = []
        for i in range(turns):
            t = time.perf_counter()
            request = bot.prepare(QUERIES[i % len(QUERIES)] + f" ({i})")
            times.append((time.perf_counter() - t) * 1000)
        rows.append({"scenes": n, "p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95),
                     "store_s": build_s, "packed": request.packed})
        print(f"  {n:>7,} scenes: p50 {rows[-1]['p50_ms']:.2f} ms, p95 {rows[-1]['p95_ms']:.2f} ms "
              f"(store opened/built in {build_s:.1f} s)", flush=True)
    return rows
