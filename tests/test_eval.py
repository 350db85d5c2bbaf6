"""The paper's automatic metric: known answers on hand-made cases, no leakage, and real runs."""

import csv
import math

import numpy as np
import pytest
from PIL import Image

from chatharuhi_core.cli import main
from chatharuhi_core.data.evaluate import Summary, cosine_scores, held_out_cases, run_eval
from chatharuhi_core.errors import ChatHaruhiError
from chatharuhi_core.roles.role import Role, Story
from chatharuhi_core.roles.sources import load_role


class TableEmbedder:
    """Hand-made vectors, so every score is known in advance."""

    name = "table"
    dim = 2
    TABLE = {"east": [1.0, 0.0], "north": [0.0, 1.0], "north-east": [1.0, 1.0], "west": [-1.0, 0.0]}

    def embed(self, texts):
        return np.array([self.TABLE.get(t, [0.0, 0.0]) for t in texts], dtype=np.float32)


class FixedBackend:
    """Always says the same thing; records what it was shown."""

    name = "fixed"

    def __init__(self, reply):
        self.reply, self.requests = reply, []

    def stream(self, request):
        self.requests.append(request)
        yield self.reply


def tiny_role(refs):
    stories = [Story(f"s{i}", f"Kyon:「Question {i}?」\nHaruhi:「{ref}」") for i, ref in enumerate(refs)]
    return Role(id="tiny-haruhi", name="Haruhi", system_prompt="You are Haruhi.", stories=stories)


def test_cosine_scores_on_hand_made_vectors():
    got = cosine_scores(["east", "north-east", "east", ""], ["north-east", "north-east", "west", "east"],
                        TableEmbedder())
    assert got == pytest.approx([1 / math.sqrt(2), 1.0, -1.0, 0.0], abs=1e-6)


def test_the_real_embedder_scores_a_line_against_itself_as_one(embedder):
    same = "You see, but you do not observe."
    got = cosine_scores([same, "我今天吃了面条。"], [same, same], embedder)
    assert got[0] == pytest.approx(1.0, abs=1e-5)
    assert got[1] < 0.5


def test_summary_mean_and_standard_error():
    s = Summary.of([0.2, 0.4, 0.6, math.nan])
    assert (s.n, s.mean) == (3, pytest.approx(0.4))
    assert s.stderr == pytest.approx(0.2 / math.sqrt(3))


def test_a_run_with_a_known_answer(settings):
    """Replies "east" against references east, north, north-east: 1, 0 and 1/sqrt(2) under both prompts."""
    role = tiny_role(["east", "north", "north-east"])
    report = run_eval([role], FixedBackend("east"), settings=settings, per_role=10, min_tokens=1,
                      scorer=TableEmbedder())
    rows = {r["role"]: r for r in report.rows()}
    expected = (1 + 0 + 1 / math.sqrt(2)) / 3
    for cond in ("system", "full"):
        assert rows["tiny-haruhi"][f"{cond}_mean"] == pytest.approx(expected, abs=1e-6)
    assert rows["ALL"]["cases"] == 3 and rows["ALL"]["gain"] == pytest.approx(0.0, abs=1e-9)
    assert rows["ALL"]["win_rate"] == 0.0  # ties are not wins


def test_the_held_out_scene_never_reaches_the_model(settings):
    role = load_role("sherlock")
    spy = FixedBackend("I observe.")
    report = run_eval([role], spy, settings=settings, per_role=4)
    cases = held_out_cases(role, 4)
    assert len(report.results) == 8 and len(spy.requests) == 8
    for case, (system, full) in zip(cases, zip(spy.requests[::2], spy.requests[1::2])):
        prompt = "\n".join(m["content"] for m in system.messages + full.messages)
        assert case.reference not in prompt  # not in the scenes, not in the history
        assert case.turn.scene_id not in {h.id for h in full.scenes}
        assert full.scenes, "the full prompt has scenes"
        assert not system.scenes and not any("Classic scenes" in m["content"] for m in system.messages)
        assert full.messages[-1]["content"] == case.turn.query


def test_script_engine_eval_writes_table_csv_and_plot(settings, tmp_path, capsys):
    code = main(["eval", "--llm", "script", "--roles", "sunwukong", "sherlock", "--cases", "3", "--out", str(tmp_path)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "| role | cases | system prompt only | full ChatHaruhi |" in printed
    rows = list(csv.DictReader((tmp_path / "results.csv").open(encoding="utf-8")))
    assert [r["role"] for r in rows] == ["sunwukong", "sherlock", "ALL"]
    overall = rows[-1]
    assert int(overall["cases"]) == 6
    # the offline engine can only quote: with no scenes it has nothing but the greeting
    assert float(overall["full_mean"]) > float(overall["system_mean"])
    cases = list(csv.DictReader((tmp_path / "cases.csv").open(encoding="utf-8")))
    assert len(cases) == 12 and all(c["reply"] and -1 <= float(c["score"]) <= 1 for c in cases)
    with Image.open(tmp_path / "results.png") as img:
        assert img.format == "PNG" and img.width >= 600 and img.height >= 300
    assert "**all roles**" in (tmp_path / "results.md").read_text(encoding="utf-8")


def test_an_engine_that_is_down_stops_with_a_sentence(settings):
    class Down:
        name = "down"

        def stream(self, request):
            from chatharuhi_core.errors import BackendError

            raise BackendError("Cannot reach the model server.")
            yield

    with pytest.raises(ChatHaruhiError, match="Every reply failed.*Cannot reach"):
        run_eval([load_role("alice")], Down(), settings=settings, per_role=2)


@pytest.mark.local_model
def test_local_model_eval_answers_and_scores(settings, tmp_path):
    report = run_eval([load_role("sherlock")], "local", settings=settings, per_role=2)
    assert len(report.results) == 4 and not report.failures
    assert "SmolLM2" in report.model
    assert all(r.reply and -1 <= r.score <= 1 for r in report.results)
    files = report.write(tmp_path)
    assert files["plot"].stat().st_size > 10_000


def test_eval_through_an_openai_compatible_server(settings, fake_openai):
    from fake_openai import GOOD_KEY

    report = run_eval([load_role("elizabeth")], "openai", settings=settings, model="echo",
                      base_url=fake_openai.base_url, api_key=GOOD_KEY, per_role=2)
    assert not report.failures and report.model == "echo"
    full = [r for r in report.results if r.condition == "full"]
    assert all(r.reply.startswith("Echo: ") and r.query in r.reply for r in full)
