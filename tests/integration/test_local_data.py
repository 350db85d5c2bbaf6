"""Eval and synthesis with a local model (SmolLM2, tens of seconds each; the shipped fine-tune is scored on its own
held-out scenes only, tests/integration/test_shipped_model.py)."""

from support.expect import check_files

from chatharuhi_core.chat.engines.base import EngineChoice
from chatharuhi_core.data.evaluate import Comparison, EvalOptions, run_eval
from chatharuhi_core.data.synthesize import SynthesisOptions, synthesize
from chatharuhi_core.jsonl import read_records
from chatharuhi_core.roles.sources import load_role


def test_local_model_eval_answers_and_scores(settings, tmp_path):
    report = run_eval([load_role("sherlock")], EngineChoice("local", "smollm2"), EvalOptions(per_role=2, deep=0),
                      settings=settings)
    assert len(report.results) == 4 and not report.failures
    assert "SmolLM2" in report.model
    assert all(r.reply and -1 <= r.score <= 1 for r in report.results)
    files = Comparison([report]).write(tmp_path)
    assert files["plot"].stat().st_size > 10_000


def test_local_model_writes_questions_and_answers_them(settings, tmp_path):
    result = synthesize([load_role("sherlock")], tmp_path, EngineChoice("local", "smollm2"),
                        SynthesisOptions(scenes=1, questions=2), settings=settings)
    assert result.failed == 0 and result.rows >= 2
    openai, _ = check_files(tmp_path, result.rows)
    kept = read_records(tmp_path / "questions.jsonl").records
    assert kept and all(q["origin"] == "generated" for q in kept)
