"""The language guard: each model records the languages it can hold a conversation in, and a visitor is told
before the first message when the chosen one cannot speak the character's (SmolLM2 and 孙悟空); the local engine's
blank model, the shipped fine-tuned Gemma, speaks both, so no bundled character is warned."""

from __future__ import annotations

import json

from support.app import run_cli

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.chat.engines.local.model import FINETUNE_MANIFEST, ModelSpec, local_offer, spec_languages
from chatharuhi_core.chat.engines.local.packaged import DEFAULT
from chatharuhi_core.chat.languages import EN, ZH_EN, engine_languages, family_languages, language_gap
from chatharuhi_core.data.evaluate import CaseResult, Report
from chatharuhi_core.data.finetune import record_eval
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.web.signin import offers

MANIFEST = {  # as `finetune` writes it (test_finetune.py makes real ones)
    "base_model": "", "base_label": "SmolLM2-135M-Instruct", "kind": "lora-adapter", "roles": ["sunwukong", "sherlock"],
    "created": "2026-11-24", "device": "cpu", "prompt_budgets": {"story_tokens": 256, "history_tokens": 192},
    "hold_out": {"scenes": {"sunwukong": ["s1"]}, "per_role": 10, "min_tokens": 8, "seed": 0},
    "data": {"scene_rows": 40, "file_rows": {}, "preference_pairs": 0, "rows": 40, "tokens": 9000,
             "target_tokens": 900, "left_out_too_long": 0},
    "training": {"steps": 3, "seconds": 10.0, "tokens_per_s": 900, "first_loss": 3.0, "final_loss": 2.5},
    "hyperparameters": {"max_length": 1024, "lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "epochs": 1,
                        "learning_rate": 2e-4, "batch_size": 2, "grad_accum": 2, "seed": 5},
}


def test_model_families():
    assert family_languages("SmolLM2-135M-Instruct") == EN
    assert family_languages("Qwen/Qwen3-235B-A22B-Instruct-2507") == ZH_EN
    assert family_languages("deepseek-ai/DeepSeek-V3.1") == ZH_EN
    assert family_languages("gpt-4o-mini") is None and family_languages("") is None  # not known: no warning


def test_engines_say_what_they_speak(settings):
    wukong = load_role("sunwukong")
    default = ChatHaruhi(role=wukong, engine="local", settings=settings).engine
    assert engine_languages(default) == ZH_EN and language_gap(default, wukong) is None  # the shipped fine-tune
    local = ChatHaruhi(role=wukong, engine="local", model="smollm2", settings=settings).engine
    assert engine_languages(local) == EN
    said = language_gap(local, wukong, "Use the offline engine.")
    assert said.startswith("SmolLM2-135M-Instruct speaks English only, and 孙悟空 speaks Chinese")
    assert said.endswith("Use the offline engine.") and "该模型" not in said  # one language at a time (issue 52)
    assert language_gap(local, load_role("sherlock")) is None
    script = ChatHaruhi(role=wukong, engine="script", settings=settings).engine
    assert engine_languages(script) is None and language_gap(script, wukong) is None  # it quotes her own lines
    hf = ChatHaruhi(role=wukong, engine="hf", settings=settings).engine
    assert engine_languages(hf) == ZH_EN  # the first suggested model
    unknown = ChatHaruhi(role=wukong, engine="openai", model="my-own-model", settings=settings).engine
    assert language_gap(unknown, wukong) is None


def test_a_fine_tuned_model_speaks_what_its_eval_measured(tmp_path):
    folder = tmp_path / "wukong-lora"
    folder.mkdir()
    (folder / FINETUNE_MANIFEST).write_text(json.dumps(MANIFEST))
    spec = ModelSpec("/nowhere", "SmolLM2-135M-Instruct.Q4_1.gguf", label="wukong-lora", adapter=str(folder))
    assert spec_languages(spec) == EN  # not measured yet: its base's
    report = Report("local", str(folder), "use", ["system", "full"])
    for i, (role, in_language) in enumerate([("sunwukong", 1.0)] * 9 + [("sunwukong", 0.0)] + [("sherlock", 1.0)] * 5):
        for condition in ("system", "full"):
            report.results.append(CaseResult("local", role, role, f"s{i}", condition, "q", "r", reply="x",
                                             in_language=in_language if condition == "full" else 0.0))
    shares = report.language_shares(lambda rid: {"sunwukong": "zh", "sherlock": "en"}[rid])
    assert shares == {"zh": 0.9, "en": 1.0}  # the full prompt's replies only
    assert record_eval(folder, "figures", shares)
    assert json.loads((folder / FINETUNE_MANIFEST).read_text())["speaks"] == {"en": 1.0, "zh": 0.9}
    assert spec_languages(spec) == ZH_EN
    assert "in the role's language, with the full prompt: en 100%, zh 90%" in (folder / "README.md").read_text()
    record_eval(folder, "figures", {"zh": 0.4, "en": 1.0})  # mostly wrong-language replies: not Chinese
    assert spec_languages(spec) == EN


def test_the_command_line_warns_before_the_first_message(cache_dir, settings, capsys):
    """The warning as the command line prints it, from a real run; then, in this process (the same function the
    command line calls, without three more model loads), no warning where the model speaks the language."""
    from chatharuhi_core.chat.languages import warn_language

    out = run_cli("chat", "--role", "sunwukong", "--engine", "local", "--model", "smollm2", "你是谁？", cache=cache_dir)
    assert out.returncode == 0, out.stderr
    warning = out.stderr.splitlines()[0]
    assert warning.startswith("warning: SmolLM2-135M-Instruct speaks English only, and 孙悟空 speaks Chinese")
    assert "--engine script" in warning and "--engine hf" in warning
    # the fine-tune the repository ships on the Gemma the local extra installs
    assert "Use --model gemma-3-270m-chatharuhi (a local model that speaks Chinese)." in warning
    capsys.readouterr()
    sherlock, wukong = load_role("sherlock"), load_role("sunwukong")
    warn_language(ChatHaruhi(role=sherlock, engine="local", model="smollm2", settings=settings).engine, sherlock)
    warn_language(ChatHaruhi(role=wukong, engine="local", settings=settings).engine, wukong)  # the default: Chinese
    for role in (sherlock, wukong):  # the script engine speaks every character's language
        warn_language(ChatHaruhi(role=role, engine="script", settings=settings).engine, role)
    assert "warning" not in capsys.readouterr().err


def test_the_page_offers_the_packaged_model_that_speaks_the_language(settings):
    """With SmolLM2 chosen, a Chinese role's warning offers the shipped fine-tuned Gemma first (on the Gemma the
    local extra installs), and nothing is offered for the role SmolLM2 speaks, or once Gemma is the model."""
    wukong, sherlock = load_role("sunwukong"), load_role("sherlock")
    local = ChatHaruhi(role=wukong, engine="local", model="smollm2", settings=settings).engine
    assert local_offer(local, wukong) == DEFAULT
    said = offers(settings, wukong, None, "local", local_offer(local, wukong))
    assert said.startswith("Choose Gemma 3 270M ChatHaruhi as the local model in Settings (it speaks Chinese), or use "
                           "the offline engine")
    assert local_offer(local, sherlock) is None  # SmolLM2 itself is the packaged model that speaks English
    gemma = ChatHaruhi(role=wukong, engine="local", model="gemma-3-270m", settings=settings).engine
    assert local_offer(gemma, wukong) is None and language_gap(gemma, wukong) is None
    assert local_offer(ChatHaruhi(role=wukong, engine="script", settings=settings).engine, wukong) is None
