"""Dialogue synthesis: turn order trainers accept, de-duplication, resuming, question writing."""

import json

import pytest
from support.expect import check_files, rows

from chatharuhi_core.chat.engines import EngineChoice
from chatharuhi_core.cli import main
from chatharuhi_core.data.scene_turns import scene_turns
from chatharuhi_core.data.synthesize import SynthesisOptions, parse_questions, synthesize
from chatharuhi_core.errors import EngineError
from chatharuhi_core.jsonl import read_records
from chatharuhi_core.roles.role import Role, Story
from chatharuhi_core.roles.sources import load_role


def test_script_synthesis_files_load_as_chat_datasets(settings, tmp_path):
    out = tmp_path / "synth"
    result = synthesize([load_role("sherlock"), load_role("sunwukong")], out, "script",
                        SynthesisOptions(scenes=3, questions=2), settings=settings)
    assert (result.answered, result.failed, result.rows) == (10, 0, 10)
    assert any("cannot write new questions" in n for n in result.notes)
    openai, _ = check_files(out, 10)
    first = openai[0]["messages"]
    assert first[1]["content"].startswith("Classic scenes for the role are as follows:")
    assert first[-1]["content"].startswith("Sherlock Holmes:「")

    info = json.loads((out / "dataset_info.json").read_text(encoding="utf-8"))  # for LLaMA-Factory
    assert {v["file_name"] for v in info.values()} == {"openai.jsonl", "sharegpt.jsonl"}

    datasets = pytest.importorskip("datasets")
    ds = datasets.load_dataset("json", data_files=str(out / "sharegpt.jsonl"), split="train")
    assert ds.num_rows == 10 and set(ds.column_names) == {"system", "conversations"}
    assert ds[0]["conversations"][0]["from"] == "human" and ds[0]["conversations"][-1]["from"] == "gpt"
    ds = datasets.load_dataset("json", data_files=str(out / "openai.jsonl"), split="train")
    assert ds.num_rows == 10 and ds[3]["messages"][-1]["role"] == "assistant"


def test_rerunning_skips_what_is_done_and_an_interrupted_run_goes_on(settings, tmp_path):
    out = tmp_path / "synth"
    roles = [load_role("alice")]
    first = synthesize(roles, out, "script", SynthesisOptions(scenes=4, questions=0), settings=settings)
    assert first.answered == 4
    again = synthesize(roles, out, "script", SynthesisOptions(scenes=4, questions=0), settings=settings)
    assert (again.done_before, again.answered, again.rows) == (4, 0, 4)

    class Interrupted:
        """The script engine, until Ctrl-C after two answers."""

        name = "script"

        def __init__(self):
            from chatharuhi_core.chat.engines import create_engine

            self.inner, self.calls = create_engine("script"), 0

        def stream(self, request):
            self.calls += 1
            if self.calls > 2:
                raise KeyboardInterrupt
            yield from self.inner.stream(request)

    with pytest.raises(KeyboardInterrupt):
        synthesize(roles, out, "script" and Interrupted(), SynthesisOptions(scenes=8, questions=0), settings=settings)
    assert len(read_records(out / "dialogues.jsonl").records) == 6
    check_files(out, 6)  # the files were rewritten on the way out
    done = synthesize(roles, out, "script", SynthesisOptions(scenes=8, questions=0), settings=settings)
    assert (done.done_before, done.answered) == (6, 2)
    openai, _ = check_files(out, 8)
    assert len({r["id"] for r in read_records(out / "dialogues.jsonl").records}) == 8


def test_the_same_opening_in_two_scenes_is_kept_once(settings, tmp_path):
    stories = [Story("a", "Kyon:「Why?」\nHaruhi:「Because it is boring!」"),
               Story("b", "Kyon:「why」\nHaruhi:「Because I said so.」"),
               Story("c", "Kyon:「Where are we going?」\nHaruhi:「To find aliens!」")]
    role = Role(id="dup-haruhi", name="Haruhi", system_prompt="You are Haruhi.", stories=stories)
    result = synthesize([role], tmp_path, "script", SynthesisOptions(questions=0), settings=settings)
    assert (result.rows, result.duplicates) == (2, 1)


class Writer:
    """A model that writes numbered questions, with the mistakes small models make."""

    name = "writer"

    def __init__(self):
        self.plain = []

    def stream(self, request):
        self.plain.append(request.plain)
        if request.plain:
            yield ("Here are some questions:\n1. Watson: What is in the box?\n2. \"Do you fear Moriarty?\"\n"
                   "3. What is in the box?\n4. Sherlock Holmes: I never guess.\n5. Ok\n- Who taught you to fence?")
        else:
            yield "Sherlock Holmes:「Data, Watson, data.」"


def test_questions_are_written_alpaca_style_parsed_and_deduplicated(settings, tmp_path):
    role = load_role("sherlock")
    assert parse_questions("1. Watson: What is in the box?\n2) Why?\n* Ok\n- Tell me of your brother.\n"
                           "3. Holmes enjoyed long walks in the park.", role) == [
        "What is in the box?", "Why?", "Tell me of your brother."]  # narration about him is not a question
    writer = Writer()
    result = synthesize([role], tmp_path, writer, SynthesisOptions(scenes=0, questions=3), settings=settings)
    kept = read_records(tmp_path / "questions.jsonl").records
    assert [q["question"] for q in kept] == ["What is in the box?", "Do you fear Moriarty?", "Who taught you to fence?"]
    assert {q["origin"] for q in kept} == {"generated"}
    assert writer.plain[0] is True and writer.plain[-1] is False  # writing asks are plain, answers are role-play
    assert result.rows == 3
    openai, _ = check_files(tmp_path, 3)
    assert openai[0]["messages"][-1]["content"] == "Sherlock Holmes:「Data, Watson, data.」"
    # a re-run keeps the questions it has instead of asking again
    again = Writer()
    synthesize([role], tmp_path, again, SynthesisOptions(scenes=0, questions=3), settings=settings)
    assert again.plain == []


def test_cli_synthesize_and_an_engine_that_is_down(settings, tmp_path, capsys, fake_openai):
    assert main(["synthesize", "--roles", "lindaiyu", "--scenes", "2", "--questions", "1", "--out", str(tmp_path)]) == 0
    assert "3 new dialogues" in capsys.readouterr().out
    code = main(["synthesize", "--engine", "openai", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "k",
                 "--roles", "alice", "--scenes", "3", "--questions", "0", "--out", str(tmp_path / "down")])
    assert code == 1
    assert "failed" in capsys.readouterr().err


def test_script_engine_refuses_a_writing_task():
    from chatharuhi_core.chat.engines import ChatRequest, create_engine

    request = ChatRequest(messages=[{"role": "user", "content": "Write questions."}], role=load_role("alice"),
                          user_role="", text="", plain=True)
    with pytest.raises(EngineError, match="cannot write"):
        list(create_engine("script").stream(request))


def test_synthesis_through_an_openai_compatible_server(settings, tmp_path, fake_openai):
    from support.fake_openai import GOOD_KEY

    echo = EngineChoice("openai", model="echo", base_url=fake_openai.base_url, api_key=GOOD_KEY)
    result = synthesize([load_role("dracula")], tmp_path, echo, SynthesisOptions(scenes=2, questions=1),
                        settings=settings)
    # the echo server repeats the request, whose numbered lines are the role's own cues: at most one
    # of them (a later turn's cue, not a scene opening) can pass as new
    assert result.failed == 0 and result.rows in (2, 3)
    role = load_role("dracula")
    cues = {t.text for s in role.stories for t in scene_turns(role, s)}
    assert all(q["question"] in cues for q in read_records(tmp_path / "questions.jsonl").records)
    openai, _ = check_files(tmp_path, result.rows)
    assert openai[0]["messages"][-1]["content"].startswith("Count Dracula:「Echo: ")


def test_an_output_folder_that_cannot_be_made_is_a_sentence(settings, capsys):
    assert main(["synthesize", "--roles", "alice", "--scenes", "1", "--questions", "0", "--out", "/proc/nope"]) == 1
    err = capsys.readouterr().err
    assert "could not read or write a file (/proc/nope)" in err and "Traceback" not in err


def test_an_answer_that_copies_a_held_out_line_is_left_out(settings, tmp_path):
    """Synthesis never answers a held-out scene, but a model could still write a held-out line nearly word for
    word: such answers are dropped (eval would score what the model was taught), and the CLI counts them."""
    from chatharuhi_core.data.holdout import HoldOut, leaked_lines

    role = load_role("sherlock")
    case = HoldOut(10, 20, 0).cases(role)[0]

    class Copier:
        name = "copier"

        def stream(self, request):
            yield case.reference.upper().replace(",", ";")  # punctuation and case aside, the same line

    result = synthesize([role], tmp_path, Copier(), SynthesisOptions(scenes=3, questions=0), settings=settings)
    assert result.answered == 0 and result.leaked == 3 and not rows(tmp_path / "openai.jsonl")
    assert leaked_lines([case], "我们 " + case.reference.replace(".", "!") + " 走吧")
    assert not leaked_lines([case], "An unrelated line about the weather in Baker Street this morning.")
    zh = HoldOut(10, 20, 0).cases(load_role("sunwukong"))[0]
    reworded = zh.reference[:-3] + "罢了。"  # the last characters changed
    assert leaked_lines([zh], f"孙悟空:「{reworded}」")
