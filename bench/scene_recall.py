"""Memory in group scenes: each character recalls what it witnessed, and nothing else.

    .venv/bin/python bench/scene_recall.py                 # 300 and 1,000 lines, English and Chinese (~3 min)
    .venv/bin/python bench/scene_recall.py --sizes 300     # a shorter run
    .venv/bin/python bench/scene_recall.py --show-misses   # and what memory brought instead of a missed fact

A scene of three characters is generated for English (Sherlock Holmes and Elizabeth Bennet, then Count
Dracula joining halfway) and Chinese (孙悟空 and 诸葛亮, then 林黛玉): the visitor's lines are the first role's
scene cues, each answered by one present character with a line of its own scenes, numbered so none repeats.
The ten facts of bench/recall.py are planted at seeded random lines, each either said to everyone or
whispered to one present character (who answers privately). At the end each fact is asked about, to
everyone, and every present character's prompt is read:

- recalled: among the facts a character witnessed, the share whose line is in its prompt (recalled from
  beyond its history window, or still inside it);
- unwitnessed: facts in a prompt of a character that did not witness them (a late joiner, a whisper to
  someone else), and recalled lines the character did not witness. The goal is 0 of both.
- added time: `Scene.prepare` for one character with memory against the same scene with recall off, one new
  exchange before each probe, embedded first as the scene does after each line (`index_ahead`).

The script engine's budgets (cl100k) and the local engine's (its model's tokenizer); no model writes.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from common import ROOT, cached_settings, median, memory_cost, percentile, publish, seeded_rows, taken, verdict  # noqa: E402
from recall import FACTS  # noqa: E402

GOALS = {"recall": 0.95, "unwitnessed": 0, "added_p95_ms": 10.0}
GOAL = f"≥ {GOALS['recall']:.0%}, {GOALS['unwitnessed']} unwitnessed, ≤ {GOALS['added_p95_ms']:g} ms p95"
CASTS = {"en": (["sherlock", "elizabeth"], "dracula", "Watson"), "zh": (["sunwukong", "zhugeliang"], "lindaiyu", "唐僧")}
WHISPER_SHARE = 0.4
SAID = ("  {size:5} {language} {budgets:8} recalled {hits}/{heard}, unwitnessed "
        "{leaks} in prompts, {unwitnessed_recalled}/{recalled_lines} recalled, "
        "added {added_p50_ms:.1f}/{added_p95_ms:.1f} ms p50/p95")  # printed as each row is done
# how a row combines a size's scenes over seeds (common.combine)
COMBINED = {"same": ("language", "size", "budgets", "recall_budget", "history_budget"),
            "total": ("heard", "hits", "leaks", "recalled_lines", "unwitnessed_recalled", "whispered", "facts"),
            "middle": ("added_p50_ms", "ahead_ms", "build_s"), "worst": ("added_p95_ms", "tokens_max"),
            "mean": ("tokens_mean",)}


def own_lines(role) -> list[str]:
    from chatharuhi_core.roles.lines import parse_scene_lines

    return [t for s in role.stories for spk, t in parse_scene_lines(s.text) if spk in role.speaker_names]


class Script:
    """The generated scene, the same for the scene with memory and its twin with recall off."""

    def __init__(self, language: str, size: int, seed: int):
        from chatharuhi_core.data.scene_turns import scene_turns
        from chatharuhi_core.roles.sources import load_role

        first, self.late, self.user = CASTS[language]
        self.first = first
        self.rng = random.Random(f"{seed}:{language}:{size}")
        role = load_role(first[0])
        self.cues = [t.text for s in role.stories for t in scene_turns(role, s)]
        self.lines = {rid: own_lines(load_role(rid)) for rid in [*first, self.late]}
        self.size, self.language = size, language
        facts = FACTS[language]
        at = sorted(self.rng.sample(range(2, size - 24, 2), len(facts)))  # visitor lines are the even ones
        self.planted = {}
        for line, (statement, question, values) in zip(at, facts):
            whisper = self.rng.random() < WHISPER_SHARE
            self.planted[line] = (statement.format(self.rng.choice(values)), question, whisper)
        self.noted = "记下了。" if language == "zh" else "Noted."

    def play(self, scenes, upto: int, start: int = 0) -> list:
        """Lines `start`..`upto` into each scene (the same lines in each); the facts planted, by line index."""
        from chatharuhi_core.scene import SceneLine

        facts = []
        k = start
        while k < upto:
            if k >= self.size // 2 and all(m.role_id != self.late for m in scenes[0].members):
                for sc in scenes:
                    sc.add(self.late)
            present = scenes[0].present
            if k in self.planted:
                statement, question, whisper = self.planted[k]
                target = self.rng.choice(present) if whisper else None
                for sc in scenes:
                    if target:
                        sc.whisper(target.role_id, statement)
                        sc.lines.append(SceneLine(target.name, self.noted, target.role_id, to=target.role_id))
                    else:
                        sc.say(statement)
                        sc.lines.append(SceneLine(present[0].name, self.noted, present[0].role_id))
                facts.append((k, statement, question, target.role_id if target else None))
            else:
                cue = f"{self.cues[(k * 7) % len(self.cues)]} ({k})"
                speaker = present[self.rng.randrange(len(present))]
                pool = self.lines[speaker.role_id]
                reply = f"{pool[(k * 5) % len(pool)]} ({k + 1})"
                for sc in scenes:
                    sc.say(cue)
                    sc.lines.append(SceneLine(speaker.name, reply, speaker.role_id))
            k += 2
        return facts


def measure(language: str, size: int, budgets_name: str, budgets, engine, settings, embedder, seed: int,
            show_misses: bool = False) -> dict:
    from chatharuhi_core.chat.engines import EngineChoice
    from chatharuhi_core.scene import Scene, SceneSetup

    script = Script(language, size, seed)
    common = dict(user_role=script.user, settings=settings,
                  setup=SceneSetup(embedder=embedder, seed=seed, read_ahead=False))
    scene = Scene(script.first, EngineChoice(engine, budgets=budgets), **common)
    off = Scene(script.first, EngineChoice(engine, budgets=replace(budgets, recall_tokens=0)), **common)
    probes = len(FACTS[language])
    facts = script.play([scene, off], size - 2 * probes)
    for sc in (scene, off):  # stores opened, tokenizers read: not part of a turn
        for m in sc.members:
            sc.bot(m).retrieve("warm")
            sc.bot(m).count_tokens("warm")
    started = time.perf_counter()
    scene.index_ahead()  # a long scene opened from a file: every member's lines embedded once
    build_s = time.perf_counter() - started
    hits = heard = leaks = unwitnessed_recalled = recalled_lines = 0
    added, ahead, tokens = [], [], []
    for n, (_line, statement, question, _to) in enumerate(facts):
        script.play([scene, off], size - 2 * probes + 2 * (n + 1), start=size - 2 * probes + 2 * n)
        t0 = time.perf_counter()
        scene.index_ahead()  # what the scene does after each line, in the background
        ahead.append(1000 * (time.perf_counter() - t0))
        for sc in (scene, off):
            sc.say(question)
        timed = scene.present[0]
        t0 = time.perf_counter()
        scene.prepare(timed)
        t1 = time.perf_counter()
        off.prepare(off.member(timed.role_id))
        t2 = time.perf_counter()
        added.append(1000 * ((t1 - t0) - (t2 - t1)))
        for m in scene.present:
            request = scene.prepare(m)
            said = "\n".join(x["content"] for x in request.messages)
            witnessed = set(scene.state.seen_at(m))
            if facts[n][0] in witnessed:  # the fact asked about, when this character heard it
                heard += 1
                hits += statement in said
                if statement not in said and show_misses:
                    print("MISS", m.role_id, statement, question, [(r.turn, round(r.similarity, 2), r.text[:40])
                                                                    for r in request.recalled])
            leaks += sum(fact in said for fact_line, fact, _, _ in facts if fact_line not in witnessed)
            recalled_lines += len(request.recalled)
            unwitnessed_recalled += sum(r.turn - 1 not in witnessed for r in request.recalled)
            block = next((x["content"] for x in request.messages if x["content"].startswith("Earlier in this")), "")
            tokens.append(scene.bot(m).count_tokens(block))
        for sc in (scene, off):
            sc.lines.pop()  # the question; the next probe comes after one more exchange
    return {"language": language, "size": size, "budgets": budgets_name, "heard": heard, "hits": hits,
            "leaks": leaks, "recalled_lines": recalled_lines, "unwitnessed_recalled": unwitnessed_recalled,
            "whispered": sum(1 for f in facts if f[3]), "facts": len(facts),
            "added_p50_ms": median(added), "added_p95_ms": percentile(added, 95), "ahead_ms": median(ahead),
            "build_s": build_s, "tokens_mean": sum(tokens) / len(tokens), "tokens_max": max(tokens),
            "recall_budget": budgets.recall_tokens, "history_budget": budgets.history_tokens}


def measure_all(args) -> list[dict]:
    """A table row per size, language and budgets: the scenes over seeds combined, each printed as it is done."""
    from chatharuhi_core.chat.engines import open_engine, options_for
    from chatharuhi_core.chat.engines.local.model import LOCAL_BUDGETS, LocalModelEngine
    from chatharuhi_core.config import Budgets

    settings, embedder = cached_settings(args.cache)
    engines = (("default", Budgets(), open_engine("script", settings)),
               ("local", LOCAL_BUDGETS, LocalModelEngine(options_for("local", settings))))
    measures = (partial(measure, language, size, name, budgets, engine, settings, embedder,
                        show_misses=args.show_misses)
                for size in args.sizes for language in CASTS for name, budgets, engine in engines)
    return seeded_rows(measures, args.seeds, COMBINED, SAID)


def section(args, rows: list[dict]) -> Iterator[str]:
    """RESULTS.md's scene-recall section: how it was taken, and a row per size, language and budgets against the goal."""
    yield from ["## Memory in group scenes: recall of witnessed facts, nothing unwitnessed", "",
                taken("bench/scene_recall.py"), "",
                f"{args.seeds} generated scenes per size and language: two characters, a third joining halfway; ten "
                f"facts planted at seeded random lines, about {WHISPER_SHARE:.0%} of them whispered to one character. "
                "Each fact is then asked about, to everyone, and every present character's prompt is read. "
                "Recalled: of the (character, fact) pairs the character witnessed, the share whose line is in its "
                "prompt. Unwitnessed: facts found in the prompt of a character that did not witness them, and "
                "recalled lines it did not witness. Added time: `prepare` for one character with memory against recall "
                "off in the same run, after `index_ahead` (its time: 'after a line'); first build: every member's "
                "index over the scene, once.", "",
                "| lines | cast | budgets (history / recall tokens) | recalled (witnessed pairs) | unwitnessed facts in "
                "prompts | unwitnessed recalled lines | added per turn p50 / p95 | after a line | first build | "
                "recall block, mean / max tokens | goal | |",
                "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        share = r["hits"] / r["heard"] if r["heard"] else float("nan")
        ok = (share >= GOALS["recall"] and r["leaks"] == 0 and r["unwitnessed_recalled"] == 0
              and r["added_p95_ms"] <= GOALS["added_p95_ms"])
        cast = "Holmes, Bennet, Dracula late" if r["language"] == "en" else "孙悟空, 诸葛亮, 林黛玉 late"
        yield (f"| {r['size']:,} | {cast} | {r['budgets']} ({r['history_budget']} / {r['recall_budget']}) | "
               f"{r['hits']}/{r['heard']} ({share:.0%}) | {r['leaks']} | "
               f"{r['unwitnessed_recalled']}/{r['recalled_lines']} | {memory_cost(r)} | {GOAL} | {verdict(ok)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 1000], help="lines in the scene")
    parser.add_argument("--seeds", type=int, default=3, help="scenes per size and language (other facts, whispers)")
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench")
    parser.add_argument("--show-misses", action="store_true", help="print each missed probe and what came instead")
    args = parser.parse_args()
    publish("scene-recall", section(args, measure_all(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
