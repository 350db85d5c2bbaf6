"""`finetune` on a tiny random Llama laid out in a Hugging Face cache: rows, hold-out, mask, adapter,
chat with the result, resume after Ctrl-C, merge, and a sentence for each bad input."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from support.app import run_cli
from support.make_inputs import TINY_LLAMA, tiny_llama_hub_cache

from chatharuhi_core.chat.engines.local.model import FINETUNE_MANIFEST, find_finetuned, read_model, resolve_model
from chatharuhi_core.cli import main
from chatharuhi_core.config import Budgets
from chatharuhi_core.data.evaluate import held_out_cases
from chatharuhi_core.data.finetune import (
    FinetuneOptions,
    Interrupted,
    Trainee,
    TrainSettings,
    finetune,
    sft_trainer,
    work_dir,
)
from chatharuhi_core.data.finetune_data import DatasetOptions, build_dataset
from chatharuhi_core.data.holdout import HoldOut
from chatharuhi_core.data.scene_turns import scene_turns
from chatharuhi_core.errors import ChatHaruhiError
from chatharuhi_core.roles.sources import load_role

TINY = TrainSettings(max_steps=4, save_steps=2, grad_accum=2, max_length=1024)


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    return tiny_llama_hub_cache(tmp_path_factory.mktemp("hub"))


@pytest.fixture()
def env(hub, settings, monkeypatch):
    """The CLI's environment: the test's cache, the tiny model's Hub cache, offline."""
    monkeypatch.setenv("CHATHARUHI_CACHE", str(settings.cache_dir))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return {"CHATHARUHI_CACHE": str(settings.cache_dir), "HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def tiny(hub):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    old = os.environ.get("HF_HUB_CACHE")
    os.environ["HF_HUB_CACHE"] = str(hub)
    try:
        yield read_model(resolve_model(TINY_LLAMA))
    finally:
        if old is None:
            os.environ.pop("HF_HUB_CACHE", None)
        else:
            os.environ["HF_HUB_CACHE"] = old


def _count(tokenizer):
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else 0


def test_rows_hold_out_eval_scenes_and_follow_the_chat_path(tiny, settings):
    tokenizer, _ = tiny
    role = load_role("sherlock")
    cases = held_out_cases(role, 10)  # exactly what `eval` holds out by default
    data = build_dataset([role], _count(tokenizer), DatasetOptions(HoldOut(), Budgets(256, 192)), settings=settings)
    held = {c.turn.scene_id for c in cases}
    assert data.held_out == {"sherlock": sorted(held)} and len(held) == 10  # 3 of them after other answers
    # every line of the character in every other scene is a target
    assert len(data.rows) == sum(len(scene_turns(role, s)) for s in role.stories if s.id not in held) >= 40
    everything = "\n".join(r.text() for r in data.rows)
    for case in cases:  # no held-out line reaches the training data, as target or as context
        assert case.reference not in everything
        assert case.turn.text not in everything
        assert not any(earlier.reply in everything for earlier in case.turn.context)  # nor its scene's history
    for row in data.rows:
        scene = row.source.split(":")[2]
        assert scene not in held
        assert row.prompt[0] == {"role": "system", "content": role.system_prompt}
        assert row.prompt[-1]["content"].endswith("」") and row.prompt[-1]["role"] == "user"
        assert row.completion[0]["content"].startswith("Sherlock Holmes:「")
        own = next(s for s in role.stories if s.id == scene)
        scenes = [m["content"] for m in row.prompt if m["content"].startswith("Classic scenes")]
        if scenes:
            assert row.prompt[-2]["content"] == scenes[0]  # after the history, as the local engine orders it
            assert own.text not in scenes[0]  # its own scene is not retrieved
            assert _count(tokenizer)(scenes[0]) <= 256 + 20
    assert sum(1 for row in data.rows if row.prompt[-2]["content"].startswith("Classic scenes")) > len(data.rows) / 2


def test_the_loss_is_on_the_character_line_only(tiny, settings, tmp_path):
    tokenizer, model = tiny
    role = load_role("alice")
    data = build_dataset([role], _count(tokenizer), DatasetOptions(HoldOut(), Budgets(256, 192)), settings=settings)
    data.rows = data.rows[:3]
    trainer = sft_trainer(Trainee(model, tokenizer, "cpu"), data, tmp_path / "sft", TINY)
    for example, row in zip(trainer.train_dataset, data.rows):
        ids, labels = example["input_ids"], example["labels"]  # -100: no loss
        mask = [label != -100 for label in labels]
        target = tokenizer.decode([i for i, m in zip(ids, mask) if m])
        assert target.startswith(row.completion[0]["content"])  # the line (then the end-of-turn token)
        assert sum(mask) < len(ids) / 3  # the prompt, far longer, carries no loss


def test_finetune_then_chat_with_the_adapter_in_the_cli(env, tmp_path):
    out = tmp_path / "runs" / "sherlock-lora"
    code = main(["finetune", "--roles", "sherlock", "--base", TINY_LLAMA, "--max-steps", "3", "--save-steps", "2",
                 "--seed", "5", "--batch-size", "2", "--grad-accum", "2", "--precision", "fp32", "--out", str(out)])
    assert code == 0
    assert {"adapter_config.json", "adapter_model.safetensors", FINETUNE_MANIFEST, "README.md", "train.jsonl"} <= {
        p.name for p in out.iterdir()}
    assert not work_dir(out).exists()  # the working folder is gone once the run is done
    manifest = json.loads((out / FINETUNE_MANIFEST).read_text(encoding="utf-8"))
    held = sorted(c.turn.scene_id for c in held_out_cases(load_role("sherlock"), 10))
    assert manifest["hold_out"]["scenes"] == {"sherlock": held}
    assert manifest["hold_out"]["deep"] == 3 and sum(s >= "sherlock-062" for s in held) == 3  # cases with history
    assert manifest["base_model"] == TINY_LLAMA and manifest["training"]["steps"] == 3
    assert manifest["data"]["rows"] > 40 and manifest["data"]["tokens"] > 10_000
    hp = manifest["hyperparameters"]
    assert (hp["lora_r"], hp["seed"], hp["batch_size"], hp["grad_accum"], hp["precision"]) == (16, 5, 2, 2, "fp32")
    assert manifest["hold_out"]["seed"] == 0  # the training seed is not the hold-out's (--holdout-seed)
    assert manifest["command"].startswith("python -m chatharuhi_core finetune --roles sherlock") \
        and "--batch-size 2" in manifest["command"]  # what re-creates it
    trained_on = [json.loads(line) for line in (out / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    assert not any(r["source"].split(":")[2] in held for r in trained_on)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert TINY_LLAMA in card and held[0] in card and "LoRA r=16" in card and "--grad-accum 2" in card
    # eval refuses to score it on scenes it trained on: another hold-out seed picks such scenes
    err = _refused_eval(["eval", "--engine", "local", "--model", str(out), "--roles", "sherlock", "--seed", "1",
                         "--cases", "3", "--out", str(tmp_path / "ev")])
    assert f"The model {out} trained on the scenes of" in err and "--allow-trained" in err
    assert find_finetuned([out.parent]) == [out]
    # the local engine loads it by path, in another process, offline
    chat = run_cli("chat", "--role", "sherlock", "--engine", "local", "--model", str(out), "--stats", "Hello?",
                   cache=Path(env["CHATHARUHI_CACHE"]), env_extra=env)
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.strip() and "sherlock-lora" in chat.stderr and "Traceback" not in chat.stderr


def _refused_eval(argv) -> str:
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(argv) == 1
    return err.getvalue()


def test_ctrl_c_keeps_the_checkpoint_and_the_same_command_resumes(env, settings, tmp_path):
    from transformers import TrainerCallback

    class CtrlCAtStep3(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 3:
                os.kill(os.getpid(), signal.SIGINT)  # what the terminal sends

    out = tmp_path / "alice-lora"
    role = [load_role("alice")]
    train = TrainSettings(max_steps=5, save_steps=10, grad_accum=1)
    options = FinetuneOptions(base=TINY_LLAMA, train=train, progress=False)
    with pytest.raises(Interrupted, match="Stopped at step 3 of 5.*run the same command again"):
        finetune(role, out, options, settings=settings, callbacks=[CtrlCAtStep3()])
    assert not out.exists()  # nothing half-written
    assert (work_dir(out) / "sft" / "checkpoint-3").is_dir()
    said = []
    result = finetune(role, out, options, settings=settings, say=said.append)
    assert result.resumed_from == 3 and "Going on from the checkpoint at step 3." in said
    assert result.manifest["training"]["steps"] == 5 and result.manifest["training"]["resumed_from_step"] == 3
    assert (out / "adapter_model.safetensors").is_file() and not work_dir(out).exists()
    # other settings than the interrupted run's: a sentence, not a silent restart
    finetune_again = tmp_path / "again"
    with pytest.raises(Interrupted):
        finetune(role, finetune_again, options, settings=settings, callbacks=[CtrlCAtStep3()])
    with pytest.raises(ChatHaruhiError, match="interrupted run with other data or settings"):
        finetune(role, finetune_again, FinetuneOptions(base=TINY_LLAMA, train=TrainSettings(max_steps=6, grad_accum=1),
                                                       progress=False), settings=settings)


def test_merge_writes_a_full_model_the_local_engine_reads(env, settings, tmp_path):
    out = tmp_path / "merged"
    code = main(["finetune", "--roles", "dracula", "--base", TINY_LLAMA, "--max-steps", "2", "--merge", "--out", str(out)])
    assert code == 0
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", FINETUNE_MANIFEST} <= names and "adapter_config.json" not in names
    spec = resolve_model(str(out))
    assert spec.adapter is None and spec.source == str(out)
    from chatharuhi_core import ChatHaruhi

    bot = ChatHaruhi(role_name="dracula", engine="local", model=str(out), settings=settings)
    assert bot.chat("Good evening, Count.")
    from chatharuhi_core.chat.engines.local.model import LOCAL_BUDGETS

    assert bot.budgets == LOCAL_BUDGETS and LOCAL_BUDGETS.story_tokens == 256  # the local engine's own budgets


def _refused(capsys, *argv) -> str:
    assert main(list(argv)) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_each_bad_input_gets_a_sentence_and_nothing_is_written(env, settings, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    base = ["finetune", "--roles", "sherlock", "--max-steps", "1", "--out", str(out)]
    err = _refused(capsys, *base, "--base", "nobody/no-such-model")
    assert "nobody/no-such-model is not in the local Hugging Face cache" in err
    err = _refused(capsys, *base, "--base", str(tmp_path / "nowhere"))
    assert "is not a model folder, a .gguf file or a Hub id" in err

    pref = tmp_path / "preference.jsonl"
    pref.write_text(json.dumps({"prompt": [{"role": "user", "content": "Hi"}],
                                "chosen": [{"role": "assistant", "content": "A"}],
                                "rejected": [{"role": "assistant", "content": "B"}]}) + "\n", encoding="utf-8")
    err = _refused(capsys, *base, "--base", TINY_LLAMA, "--data", str(pref))
    assert "line 1, has no \"messages\"" in err and "give it to --dpo" in err
    junk = tmp_path / "junk.jsonl"
    junk.write_text("this is not json\n", encoding="utf-8")
    assert "junk.jsonl, line 1, is not JSON" in _refused(capsys, *base, "--base", TINY_LLAMA, "--data", str(junk))
    err = _refused(capsys, *base, "--base", TINY_LLAMA, "--dpo", str(junk))
    assert "junk.jsonl, line 1, is not JSON" in err

    case = held_out_cases(load_role("sherlock"), 10)[0]
    leak = tmp_path / "synth.jsonl"
    leak.write_text(json.dumps({"messages": [
        {"role": "system", "content": "You are Holmes."}, {"role": "user", "content": "Watson:「Well?」"},
        {"role": "assistant", "content": f"Sherlock Holmes:「{case.reference}」"}]}) + "\n", encoding="utf-8")
    err = _refused(capsys, *base, "--base", TINY_LLAMA, "--data", str(leak))
    assert f"synth.jsonl:1 contains the held-out scene sherlock/{case.turn.scene_id}" in err and "leak" in err
    words = case.reference.split()  # a near copy: other punctuation and case, one word changed
    near = " ".join(words[:-1] + ["indeed"]).upper().replace(",", ";")
    leak.write_text(json.dumps({"messages": [
        {"role": "user", "content": "Watson:「Well?」"}, {"role": "assistant", "content": near}]}) + "\n", encoding="utf-8")
    assert "contains the held-out scene" in _refused(capsys, *base, "--base", TINY_LLAMA, "--data", str(leak))

    Usage = type("Usage", (), {"free": 5_000_000})
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage)
    err = _refused(capsys, *base, "--base", TINY_LLAMA)
    assert "MB free and this run needs about" in err
    monkeypatch.undo()

    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    assert "already exists" in _refused(capsys, *base, "--base", TINY_LLAMA)
    assert (out / "keep.txt").read_text(encoding="utf-8") == "mine"
    assert not work_dir(out).exists() and not (tmp_path / "out2").exists()


def test_eval_holds_out_what_finetune_holds_out(settings):
    """The same three numbers pick the same scenes in both commands."""
    for role_id in ("sunwukong", "elizabeth"):
        role = load_role(role_id)
        assert HoldOut(10, 20, 0).scene_ids(role) == {c.turn.scene_id for c in held_out_cases(role, 10)}
        assert HoldOut(10, 20, 1).scene_ids(role) != HoldOut(10, 20, 0).scene_ids(role)


def test_synthesized_rows_and_corrections_join_the_training(env, settings, tmp_path):
    """CharacterGLM's loop: synthesize's rows and the visitors' corrections (SFT rows, then DPO pairs)."""
    from chatharuhi_core.data.synthesize import SynthesisOptions, synthesize

    role = load_role("sherlock")
    synth = tmp_path / "synth"
    synthesize([role], synth, "script", SynthesisOptions(scenes=None, questions=2), settings=settings)
    held = HoldOut().scene_ids(role)
    answered = [json.loads(line) for line in (synth / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()]
    assert answered and not {a["scene"] for a in answered} & held  # synthesize leaves eval's scenes out
    prompt = [{"role": "system", "content": role.system_prompt}, {"role": "user", "content": "Watson:「Tea?」"}]
    pref = tmp_path / "preference.jsonl"
    pref.write_text("".join(json.dumps({
        "prompt": prompt, "chosen": [{"role": "assistant", "content": f"Sherlock Holmes:「{good}」"}],
        "rejected": [{"role": "assistant", "content": "Sherlock Holmes:「As an AI, I do not drink tea.」"}]}) + "\n"
        for good in ("Black, and strong.", "Later, Watson; the game is afoot.")), encoding="utf-8")
    out = tmp_path / "loop"
    # the script engine answers with the paper's budgets: longer rows than the local engine's
    options = FinetuneOptions(base=TINY_LLAMA, data=DatasetOptions(data_files=(synth / "openai.jsonl",), dpo_file=pref),
                              train=TrainSettings(max_steps=2, grad_accum=1, max_length=4096), progress=False)
    result = finetune([role], out, options, settings=settings)
    data = result.manifest["data"]
    assert data["file_rows"] == {str(synth / "openai.jsonl"): len(answered)} and data["preference_pairs"] == 2
    assert result.manifest["dpo"]["pairs"] == 2 and result.manifest["dpo"]["steps"] >= 1
    assert "2 preference pairs" in (out / "README.md").read_text(encoding="utf-8")


def test_alternatives_kept_in_the_page_train_with_dpo(env, settings, tmp_path):
    """Issue 44's loop: a visitor swipes through three replies in the page and keeps the first; `feedback export`
    writes the kept one against each passed over, and `finetune --dpo` trains on those pairs for a step."""
    from chatharuhi_core.web.chat import Conversation
    from chatharuhi_core.web.common import EnginePanel
    from chatharuhi_core.web.controls import flip
    from chatharuhi_core.web.turn import stream_turn

    settings = settings.with_(feedback_file=tmp_path / "feedback.jsonl")
    # (a question whose replies quote none of eval's held-out scenes: finetune refuses rows that do, test above)
    *_, last = stream_turn(Conversation("sherlock"), "Tell me about Moriarty.", "", EnginePanel(), settings)
    conv = last.conversation
    for _ in range(2):
        *_, last = stream_turn(conv, "", "", EnginePanel(), settings, regenerate=True)
        conv = last.conversation
    flip(conv, None, 1, settings)
    out = tmp_path / "data"
    assert main(["feedback", "export", "--in", str(settings.feedback_path), "--out", str(out)]) == 0
    pairs = [json.loads(line) for line in (out / "preference.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(pairs) == 2 and pairs[0]["chosen"] != pairs[0]["rejected"]
    options = FinetuneOptions(base=TINY_LLAMA, data=DatasetOptions(dpo_file=out / "preference.jsonl"),
                              train=TrainSettings(max_steps=1, grad_accum=1, max_length=2048), progress=False)
    result = finetune([load_role("sherlock")], tmp_path / "model", options, settings=settings)
    assert result.manifest["dpo"]["pairs"] == 2 and result.manifest["dpo"]["steps"] >= 1
