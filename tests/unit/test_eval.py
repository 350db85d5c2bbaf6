"""The paper's automatic metric: known answers on hand-made cases, no leakage, and real runs."""

import csv
import math

import numpy as np
import pytest
from PIL import Image

from chatharuhi_core.chat.engines import EngineChoice
from chatharuhi_core.cli import main
from chatharuhi_core.data.baselines import BASELINES, role_lines
from chatharuhi_core.data.evaluate import Comparison, EvalOptions, compare, cosine_scores, held_out_cases, run_eval
from chatharuhi_core.data.holdout import HoldOut
from chatharuhi_core.data.metrics import (
    bootstrap,
    clopper_pearson,
    distinct_n,
    out_of_character,
    paired_bootstrap,
    rouge_l,
    tokens,
)
from chatharuhi_core.errors import ChatHaruhiError
from chatharuhi_core.roles.lines import parse_scene_lines
from chatharuhi_core.roles.role import Role, Story
from chatharuhi_core.roles.sources import bundled_ids, load_role


class TableEmbedder:
    """Hand-made vectors, so every score is known in advance."""

    name = "table"
    dim = 2
    TABLE = {"east": [1.0, 0.0], "north": [0.0, 1.0], "north-east": [1.0, 1.0], "west": [-1.0, 0.0]}

    def embed(self, texts):
        return np.array([self.TABLE.get(t, [0.0, 0.0]) for t in texts], dtype=np.float32)


class FixedEngine:
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


def test_bootstrap_interval_of_a_mean():
    iv = bootstrap([0.2, 0.4, 0.6, math.nan])
    assert (iv.n, iv.value) == (3, pytest.approx(0.4))
    assert 0.2 <= iv.low < 0.4 < iv.high <= 0.6
    assert bootstrap([0.2, 0.4, 0.6]) == iv  # seeded: the same figures every run
    wide, narrow = bootstrap([0.0, 1.0] * 5), bootstrap([0.0, 1.0] * 50)
    assert narrow.high - narrow.low < wide.high - wide.low
    assert not bootstrap([0.1] * 10).overlaps(bootstrap([0.9] * 10))
    assert bootstrap([0.5]).text() == "0.500 [0.500, 0.500]" and math.isnan(bootstrap([]).value)


def test_rouge_l_splits_chinese_by_character_and_other_text_by_word():
    assert tokens("Elementary, my dear Watson!") == ["elementary", "my", "dear", "watson"]
    assert tokens("俺老孙来也！Go") == ["俺", "老", "孙", "来", "也", "go"]
    assert rouge_l("my dear Watson", "Elementary, my dear Watson") == pytest.approx(2 * 1 * 0.75 / 1.75)
    assert rouge_l("俺老孙来也", "俺老孙去也") == pytest.approx(0.8)  # 4 of 5 characters in order
    assert rouge_l("", "anything") == 0.0 and rouge_l("Watson", "Watson") == 1.0


def test_out_of_character_replies_are_caught():
    own = {"Sherlock Holmes", "Holmes"}
    assert out_of_character("As an AI language model, I cannot smoke a pipe.", own).startswith("speaks as a model")
    assert out_of_character("作为一个人工智能，我不能喝酒。", own).startswith("speaks as a model")
    assert out_of_character("我是AI助手。", own).startswith("speaks as a model")
    assert out_of_character("Indeed.\nWatson:「Remarkable!」", own) == "speaks as Watson"
    assert out_of_character("Sherlock Holmes:「You have been in Afghanistan, I perceive.」", own) == ""
    assert out_of_character("The game is afoot, Watson. Aid me, then.", own) == ""


# Replies the bundled SmolLM2 gave in docs/eval/compare/cases.csv that the first detector let through.
REAL_FAILURES = [
    ("sherlock", "The butler. The only one on the clock. What's he doing here?\n###\nBacon: \"Aye, Sherlock Holmes.\"",
     "speaks as Bacon"),
    ("elizabeth", "Don't look too cross, I was just saying.'\n##\nLady Catherine: 「A lady of your station…」",
     "speaks as Lady Catherine"),
    ("sherlock", "Quite so.\nMr. Watson: Indeed, Holmes.", "speaks as Mr. Watson"),
    ("sunwukong", "俺老孙去也！\n猪八戒：“猴哥等等俺！”", "speaks as 猪八戒"),
    ("zhugeliang", "但是这样的道整可以继续；☡##1069238457 #french ⬏### FINISHED!!!", "writes a separator ('###')"),
    ("sunwukong", "我还有一个更刚出现的地方！\"The One-Eye-of-the-One is a symbol that has been used by many people "
     "throughout history.\" It's said that it was created in ancient China",
     "answers in Latin letters, not the role's language"),
    ("alice", "Oh dear! 我不知道这是什么地方，兔子先生去哪儿了？", "answers in CJK characters, not the role's English"),
    ("sherlock", "Elementary. " * 500, "runs on (400+ tokens)"),
]


@pytest.mark.parametrize("role_id, reply, why", REAL_FAILURES)
def test_the_failures_seen_in_the_published_cases_are_caught(role_id, reply, why):
    role = load_role(role_id)
    found = out_of_character(reply, role.speaker_names, role.language)
    if why.startswith("runs on"):
        assert found.startswith("runs on (")
    else:
        assert found == why


def test_no_line_the_bundled_characters_say_is_out_of_character():
    checked = 0
    for role_id in bundled_ids():
        role = load_role(role_id)
        for story in role.stories:
            for speaker, line in parse_scene_lines(story.text):
                if speaker in role.speaker_names:
                    checked += 1
                    assert out_of_character(line, role.speaker_names, role.language) == "", (role_id, line)
    assert checked > 400
    # a character quoting a saying is not speaking as someone else
    assert out_of_character("孔子曰：「三人行，必有我师焉。」主公且听亮一言。", {"诸葛亮"}, "zh") == ""
    assert out_of_character("他的名言是：‘生于忧患’。", {"诸葛亮"}, "zh") == ""


def test_a_rate_of_none_has_an_exact_upper_bound():
    assert clopper_pearson(0, 80).high == pytest.approx(0.0451, abs=1e-4)  # 0 of 80 is "at most 4.5%"
    iv = clopper_pearson(5, 80)
    assert (iv.value, round(iv.low, 4), round(iv.high, 4)) == (0.0625, 0.0206, 0.1399)
    assert clopper_pearson(80, 80).low == pytest.approx(0.9549, abs=1e-4)
    assert math.isnan(clopper_pearson(0, 0).value)


def test_distinct_2_is_low_for_a_reply_that_loops():
    assert distinct_n(["and it is called the tower and it is called the tower"]) < 0.6
    assert distinct_n(["You see, but you do not observe."]) == 1.0
    assert math.isnan(distinct_n(["Yes"]))


def test_a_run_with_a_known_answer(settings):
    """Replies "east" against references east, north, north-east: 1, 0 and 1/sqrt(2) under both prompts."""
    role = tiny_role(["east", "north", "north-east"])
    report = run_eval([role], FixedEngine("east"), EvalOptions(per_role=10, min_tokens=1), settings=settings,
                      scorer=TableEmbedder())
    rows = {r["role"]: r for r in report.rows()}
    expected = (1 + 0 + 1 / math.sqrt(2)) / 3
    for cond in ("system", "full"):
        assert rows["tiny-haruhi"][f"{cond}_cosine"] == pytest.approx(expected, abs=1e-6)
        # ROUGE-L: 1 for "east", 0 for "north", 2/3 for "north-east" (one word of two, all of the reply)
        assert rows["tiny-haruhi"][f"{cond}_rouge_l"] == pytest.approx((1 + 0 + 2 / 3) / 3)
        assert rows["tiny-haruhi"][f"{cond}_ooc"] == 0.0
    assert rows["ALL"]["cases"] == 3 and rows["ALL"]["gain"] == pytest.approx(0.0, abs=1e-9)
    assert rows["ALL"]["win_rate"] == 0.0  # ties are not wins


def test_the_held_out_scene_never_reaches_the_model(settings):
    role = load_role("sherlock")
    spy = FixedEngine("I observe.")
    report = run_eval([role], spy, EvalOptions(per_role=6), settings=settings)
    cases = held_out_cases(role, 6)  # 3 of them at depth 2, by default
    assert [c.depth for c in cases].count(1) == 3 and [c.depth for c in cases].count(2) == 3
    assert len(report.results) == 12 and len(spy.requests) == 12
    for case, (system, full) in zip(cases, zip(spy.requests[::2], spy.requests[1::2])):
        prompt = "\n".join(m["content"] for m in system.messages + full.messages)
        assert case.reference not in prompt  # not in the scenes, not in the history
        assert case.turn.scene_id not in {h.id for h in full.scenes}
        assert full.scenes, "the full prompt has scenes"
        assert not system.scenes and not any("Classic scenes" in m["content"] for m in system.messages)
        assert full.messages[-1]["content"] == case.turn.query
        said = [m["content"] for m in full.messages if m["role"] == "assistant"]
        if case.depth == 1:
            assert not said  # no history: the scene's first answer
        else:  # the scene's earlier turns come first, as the conversation so far, under both prompts
            earlier = case.turn.context[-1]
            assert earlier.reply in said[-1] and earlier.reply in "\n".join(m["content"] for m in system.messages)


def test_the_held_out_scene_teaches_the_engine_nothing(settings):
    """The role a case is asked with has its scene out of the nicknames, the callers' words, the word rarity and
    the lines the offline engine may quote, while the store (and its hash) stays the role's own."""
    role = load_role("sherlock")
    spy = FixedEngine("I observe.")
    run_eval([role], spy, EvalOptions(per_role=2), settings=settings)
    cases = held_out_cases(role, 2)
    for case, request in zip(cases, spy.requests[1::2]):
        seen = request.role
        assert case.turn.scene_id in seen.held_out and seen.stories_sha256 == role.stories_sha256
        assert case.turn.scene_id not in {s.id for s in seen.known_stories}
        assert len(seen.known_stories) == len(role.stories) - 1

    # a nickname used only in the held-out scene is not learned from it
    stories = [Story("a", "Kyon:「Hi.」\nHaruhi:「Hello, Kyon.」"),
               Story("b", "Mikuru:「Hi.」\nHaruhi:「Mikuru-chan, go.」\nMikuru:「Why?」\nHaruhi:「Mikuru-chan, now.」")]
    tiny = Role(id="nick", name="Haruhi", system_prompt="x", stories=stories)
    assert "Mikuru-chan" in tiny.addressing.terms or "Mikuru" in tiny.addressing.terms
    kept = tiny.holding_out(["b"])
    assert not any(t.startswith("Mikuru") for t in kept.addressing.terms)
    assert tiny.holding_out([]) is tiny and kept.holding_out(["b"]) is kept


def deep_role():
    """Scenes s0-s3 end in the character's first answer; d0-d2 in a later one (d2 at depth 3)."""
    stories = [Story(f"s{i}", f"Kyon:「Question {i}?」\nHaruhi:「{ref}」")
               for i, ref in enumerate(["east", "north", "north-east", "west"])]
    stories += [Story("d0", "Kyon:「Where?」\nHaruhi:「north」\nKyon:「And then?」\nHaruhi:「east」"),
                Story("d1", "Kyon:「Which way?」\nHaruhi:「west」\nKyon:「Sure?」\nHaruhi:「north-east」"),
                Story("d2", "Kyon:「One?」\nHaruhi:「north」\nKyon:「Two?」\nHaruhi:「west」\nKyon:「Three?」\n"
                            "Haruhi:「east」")]
    return Role(id="deep-haruhi", name="Haruhi", system_prompt="You are Haruhi.", stories=stories)


def test_cases_with_history_are_drawn_apart_and_reported_by_depth(settings):
    role = deep_role()
    holdout = HoldOut(per_role=4, min_tokens=1, seed=0, deep=2)
    cases = holdout.cases(role)
    assert sorted(c.depth for c in cases) == [1, 1, 2, 2] or sorted(c.depth for c in cases) == [1, 1, 2, 3]
    assert [c.turn.scene_id for c in cases] == sorted((c.turn.scene_id for c in cases),
                                                      key=lambda i: [s.id for s in role.stories].index(i))
    assert holdout.scene_ids(role) == {c.turn.scene_id for c in cases}  # what finetune keeps out: all of them
    assert HoldOut(4, 1, 0, deep=2).cases(role) == cases  # seeded
    assert [c.depth for c in HoldOut(4, 1, 0, deep=0).cases(role)] == [1, 1, 1, 1]
    assert [c.depth for c in HoldOut(2, 1, 0, deep=3).cases(role)] in ([2, 2], [2, 3])  # never more than asked
    assert {c.depth for c in HoldOut(10, 1, 0, deep=10).cases(role)} == {1, 2, 3}  # all there are
    assert HoldOut(2, 1, 0, 2).as_dict()["deep"] == 2  # recorded in finetune's manifest
    from chatharuhi_core.errors import InputError

    with pytest.raises(InputError, match="cases with history must be 0 or more, not -1"):
        HoldOut(2, 1, 0, deep=-1)  # a sentence, not a traceback from random.sample
    with pytest.raises(InputError, match="cases per role must be 0 or more, not -2"):
        HoldOut(-2)

    spy = FixedEngine("east")
    report = run_eval([role], spy, EvalOptions(per_role=10, min_tokens=1, deep=10, next_line=()), settings=settings,
                      scorer=TableEmbedder())
    assert {r.depth for r in report.results} == {1, 2, 3}
    last_of_d2 = [q for q in spy.requests if q.messages[-1]["content"].endswith("Three?」")][-1]
    assert [m["content"] for m in last_of_d2.messages if m["role"] == "assistant"] == ["Haruhi:「north」",
                                                                                       "Haruhi:「west」"]
    # depth 1: east 1, north 0, north-east 1/sqrt(2), west -1; depth 2+: east 1 (d0), north-east (d1), east (d2)
    assert report.interval("cosine", "full", depth=1).value == pytest.approx((1 + 0 + 1 / math.sqrt(2) - 1) / 4)
    assert report.interval("cosine", "full", depth=2).value == pytest.approx((1 + 1 / math.sqrt(2) + 1) / 3)
    assert report.interval("cosine", "full").n == 7
    greeting = run_eval([role], "greeting", EvalOptions(per_role=10, min_tokens=1, deep=10), settings=settings,
                        scorer=TableEmbedder())
    text = Comparison([greeting, report]).markdown()
    assert "## By depth, full ChatHaruhi" in text
    assert "first answer in its scene (4 cases); at depth 2+ (3 cases)" in text
    assert "- fixed against greeting (baseline): depth 1 " in text and "; depth 2+ " in text
    flat = Comparison([run_eval([tiny_role(["east", "north"])], FixedEngine("east"), EvalOptions(min_tokens=1),
                                settings=settings, scorer=TableEmbedder())])
    assert "By depth" not in flat.markdown()  # no case with history: no table about it
    assert "Baselines read nothing of the conversation: greeting" in text  # named where they were scored
    assert "Baselines" not in flat.markdown()  # and no sentence about baselines left out


def test_script_engine_eval_writes_table_csv_and_plot(settings, tmp_path, capsys):
    code = main(["eval", "--engine", "script", "--roles", "sunwukong", "sherlock", "--cases", "3", "--deep-cases", "1",
                 "--out", str(tmp_path)])
    assert code == 0
    printed = capsys.readouterr().out
    assert ("| system | prompt | cases | cosine | ROUGE-L | out of character | calls someone else | "
            "in the role's language | distinct-2 |") in printed
    assert "| greeting (baseline) | none (baseline) | 6 |" in printed and "random line (baseline)" in printed
    assert "## By depth, full ChatHaruhi" in printed and "(4 cases); at depth 2+ (2 cases)" in printed
    rows = [r for r in csv.DictReader((tmp_path / "results.csv").open(encoding="utf-8")) if "baseline" not in r["system"]]
    assert [r["role"] for r in rows] == ["sunwukong", "sherlock", "ALL"]
    overall = rows[-1]
    assert int(overall["cases"]) == 6
    # the offline engine can only quote: with no scenes it has nothing but the greeting
    assert float(overall["full_cosine"]) > float(overall["system_cosine"])
    assert float(overall["full_cosine_low"]) <= float(overall["full_cosine"]) <= float(overall["full_cosine_high"])
    cases = list(csv.DictReader((tmp_path / "cases.csv").open(encoding="utf-8")))
    assert len(cases) == 12 * 3  # the script engine, then the greeting and a random line on the same cases
    assert {c["depth"] == "1" for c in cases} == {True, False}  # 孙悟空's later answer is at depth 3
    assert all(c["reply"] and -1 <= float(c["cosine"]) <= 1 for c in cases)
    assert all(0 <= float(c["rouge_l"]) <= 1 and c["ooc"] in {"0.0", "1.0"} for c in cases)
    with Image.open(tmp_path / "results.png") as img:
        assert img.format == "PNG" and img.width >= 600 and img.height >= 300
    assert "**all roles**" in (tmp_path / "results.md").read_text(encoding="utf-8")


def test_eval_compares_several_systems_on_the_same_cases(settings, tmp_path, capsys, fake_openai, monkeypatch):
    from support.fake_openai import GOOD_KEY

    monkeypatch.setenv("CHATHARUHI_CACHE", str(settings.cache_dir))
    code = main(["eval", "--compare", "script", "openai:echo", "--base-url", fake_openai.base_url, "--api-key",
                 GOOD_KEY, "--roles", "elizabeth", "--cases", "2", "--deep-cases", "0", "--out", str(tmp_path)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "## Head to head, full ChatHaruhi" in printed and "Offline: quote the script" in printed and "echo" in printed
    assert "echo | cannot rank given lines | cannot rank given lines |" in printed  # no logprobs asked of it
    cases = list(csv.DictReader((tmp_path / "cases.csv").open(encoding="utf-8")))
    assert {c["system"] for c in cases} == {"script", "openai:echo", "greeting", "random-line"}
    assert len(cases) == 4 * 3 + 4 * 3  # 2 cases x 2 prompts: 3 samples from the model, 1 from the others
    by_system = {}
    for c in cases:
        by_system.setdefault(c["system"], set()).add((c["scene_id"], c["condition"]))
    assert by_system["script"] == by_system["openai:echo"] == by_system["random-line"]  # the same held-out cases
    assert "| Offline: quote the script | random line (baseline) | cosine |" in printed
    assert main(["eval", "--compare", "nonsense", "--out", str(tmp_path)]) == 1
    assert "does not start with an engine name" in capsys.readouterr().err


def test_an_engine_that_is_down_stops_with_a_sentence(settings):
    class Down:
        name = "down"

        def stream(self, request):
            from chatharuhi_core.errors import EngineError

            raise EngineError("Cannot reach the model server.")
            yield

    with pytest.raises(ChatHaruhiError, match="Every reply failed.*Cannot reach"):
        run_eval([load_role("alice")], Down(), EvalOptions(per_role=2, deep=0), settings=settings)


def test_eval_through_an_openai_compatible_server(settings, fake_openai):
    from support.fake_openai import GOOD_KEY

    echo = EngineChoice("openai", model="echo", base_url=fake_openai.base_url, api_key=GOOD_KEY)
    report = run_eval([load_role("elizabeth")], echo, EvalOptions(per_role=2, deep=1, samples=2), settings=settings)
    assert not report.failures and report.model == "echo"
    # an engine that writes answers each case twice, each draw with its own recorded seed; figures per case
    assert len(report.results) == 2 * 2 * 2 and {r.seed for r in report.results} == {0, 1}
    assert report.rows()[-1]["cases"] == 2 and report.interval("cosine", "full").n == 2
    assert {r.depth for r in report.results} == {1, 2}
    full = [r for r in report.results if r.condition == "full"]
    assert all(r.reply.startswith("Echo: ") and r.query in r.reply for r in full)
    # the server is sent each draw's seed, and no temperature: a visitor's replies keep the server's own
    asked = [r["body"] for r in fake_openai.requests if r["path"].endswith("/chat/completions")]
    assert {b.get("seed") for b in asked} == {0, 1} and not any("temperature" in b for b in asked)


def test_greedy_eval_asks_once_per_case_at_temperature_zero(settings, fake_openai):
    from support.fake_openai import GOOD_KEY

    echo = EngineChoice("openai", model="echo", base_url=fake_openai.base_url, api_key=GOOD_KEY)
    report = run_eval([load_role("elizabeth")], echo,
                      EvalOptions(per_role=2, deep=0, samples=3, greedy=True, next_line=()), settings=settings)
    assert len(report.results) == 2 * 2 and report.greedy and report.samples == 1
    asked = [r["body"] for r in fake_openai.requests if r["path"].endswith("/chat/completions")]
    assert len(asked) == 4 and all(b["temperature"] == 0 for b in asked)
    assert "| greedy |" in Comparison([report]).markdown()


def test_paired_bootstrap_resamples_within_each_role():
    """Two roles whose per-case differences are constant within the role: every resample that keeps each
    role's count has the same mean, so the interval is that one number; an unstratified bootstrap would not."""
    iv = paired_bootstrap({"a": [0.3] * 4, "b": [-0.1] * 6})
    assert (iv.n, iv.value) == (10, pytest.approx(0.06))
    assert iv.low == pytest.approx(0.06) and iv.high == pytest.approx(0.06)
    loose = bootstrap([0.3] * 4 + [-0.1] * 6)
    assert loose.low < 0.06 - 0.05 and loose.high > 0.06 + 0.05
    mixed = paired_bootstrap({"a": [0.1, 0.2, 0.3, math.nan], "b": [0.0, 0.1]})
    assert mixed.n == 5 and mixed.value == pytest.approx(0.14) and mixed.low < 0.14 < mixed.high
    assert paired_bootstrap({"a": [1.0, 2.0, 3.0]}) == paired_bootstrap({"a": [1.0, 2.0, 3.0]})  # seeded
    assert math.isnan(paired_bootstrap({}).value)


def four_scene_role():
    role = tiny_role(["east", "north", "north-east", "west"])
    role.greeting = "north"
    return role


def test_the_baselines_read_nothing_and_draw_only_from_scenes_not_held_out(settings):
    role = four_scene_role()
    holdout = HoldOut(per_role=2, min_tokens=1, seed=0)
    held = holdout.scene_ids(role)
    free = {line for line in role_lines(role, held)}
    assert len(held) == 2 and len(free) == 2
    for case in holdout.cases(role):
        assert BASELINES["greeting"].answer(case, holdout, 0) == "north"
        drawn = BASELINES["random-line"].answer(case, holdout, 0)
        assert drawn in free and drawn == BASELINES["random-line"].answer(case, holdout, 0)  # seeded per case
    role.greeting = ""
    assert BASELINES["greeting"].answer(holdout.cases(role)[0], holdout, 0) == "east"  # else the first line
    report = run_eval([role], "greeting", EvalOptions(per_role=2, min_tokens=1), settings=settings,
                      scorer=TableEmbedder())
    assert report.is_baseline and report.label == "greeting (baseline)"
    assert {r.reply for r in report.results} == {"east"} and len(report.results) == 4  # both prompts, same line


def test_head_to_head_is_a_paired_difference_against_each_baseline(settings):
    """A system that always says "north-east" against the greeting ("north") on references east, north,
    north-east, west: per-case cosine differences known in advance."""
    role = four_scene_role()
    kwargs = dict(options=EvalOptions(per_role=4, min_tokens=1), settings=settings, scorer=TableEmbedder())
    reports = [run_eval([role], "greeting", **kwargs), run_eval([role], "random-line", **kwargs),
               run_eval([role], FixedEngine("north-east"), **kwargs)]
    comparison = Comparison(reports)
    pairs = {(a.label, b.label, m): iv for a, b, m, iv in comparison.head_to_head()}
    assert set(pairs) == {("fixed", base, m) for base in ("greeting (baseline)", "random line (baseline)")
                          for m in ("cosine", "rouge_l")}
    r = 1 / math.sqrt(2)
    diffs = [r - 0, r - 1, 1 - r, -r - 0]  # against east, north, north-east, west
    iv = pairs[("fixed", "greeting (baseline)", "cosine")]
    assert iv.n == 4 and iv.value == pytest.approx(sum(diffs) / 4)
    assert min(diffs) <= iv.low <= iv.value <= iv.high <= max(diffs)
    table = comparison.markdown()
    assert "| fixed | greeting (baseline) | cosine | " in table and "no difference shown" in table
    assert "| greeting (baseline) | none (baseline) | 4 |" in table


def test_distinct_2_counts_a_repeated_greeting_once_and_language_is_a_rate(settings):
    role = tiny_role(["Well then, my friend.", "Quite so, my friend.", "Indeed it is.", "我们走吧。"])
    role.greeting = "Good morning to you, my friend."
    kwargs = dict(options=EvalOptions(per_role=4, min_tokens=1), settings=settings, scorer=TableEmbedder())
    greeting = run_eval([role], "greeting", **kwargs)
    assert greeting.interval("distinct_2", "full").value == pytest.approx(5 / 20)  # 5 pairs, said 4 times
    assert greeting.interval("distinct_2", "full").text() == "0.250"  # one figure for the set, no interval
    assert distinct_n(["Good morning to you, my friend."]) == 1.0  # as one reply it looked perfectly varied
    role.language = "zh"
    chinese = run_eval([role], FixedEngine("我们走吧，朋友。"), **kwargs)
    role.language = "en"
    english = run_eval([role], FixedEngine("我们走吧，朋友。"), **kwargs)
    assert chinese.interval("in_language", "full").value == 1.0
    iv = english.interval("in_language", "full")
    assert (iv.value, iv.n) == (0.0, 4) and iv.high == pytest.approx(clopper_pearson(0, 4).high)


def test_compare_adds_the_baselines_unless_asked_not_to(settings):
    role = four_scene_role()
    kwargs = dict(settings=settings, scorer=TableEmbedder())
    options = EvalOptions(per_role=2, min_tokens=1)
    with_them = compare([role], ["script"], options, **kwargs)
    assert [r.system for r in with_them.reports] == ["greeting", "random-line", "script"]
    alone = EvalOptions(per_role=2, min_tokens=1, baselines=False)
    assert [r.system for r in compare([role], ["script"], alone, **kwargs).reports] == ["script"]
    assert [r.system for r in compare([role], ["random-line", "script"], options, **kwargs).reports] == \
        ["greeting", "random-line", "script"]


class ByMarker(FixedEngine):
    """Ranks lines by whether they carry a marker word: the "who says it" test in miniature."""

    def __init__(self, marker):
        super().__init__("east")
        self.marker, self.shown = marker, []

    def score(self, request, lines):
        self.shown.append((request, list(lines)))
        return [1.0 if self.marker in line else 0.0 for line in lines]


def marked_roles():
    def role(rid, name, mark, n):
        stories = [Story(f"{rid}{i}", f"Kyon:「Question {i}?」\n{name}:「{mark} line number {i} of {name}.」")
                   for i in range(n)]
        return Role(id=rid, name=name, system_prompt=f"You are {name}.", stories=stories, language="en")

    return role("a", "Haruhi", "SOS", 8), role("b", "Mikuru", "Ah", 8)


def test_next_line_distractors_come_from_the_right_pool_and_are_seeded():
    from chatharuhi_core.data.next_line import ChoicePool, choice_for, credit, distractors

    haruhi, mikuru = marked_roles()
    holdout = HoldOut(per_role=3, min_tokens=1, seed=0)
    held = holdout.scene_ids(haruhi)
    for case in holdout.cases(haruhi):
        same = distractors(case, "next", [haruhi, mikuru], holdout, k=4)
        assert len(same) == 4 and all("SOS" in line and line != case.reference for line in same)
        own_held = {c.reference for c in holdout.cases(haruhi)}
        assert not own_held & set(same)  # never a held-out line
        other = distractors(case, "who", [haruhi, mikuru], holdout, k=4)
        assert all("Mikuru" in line for line in other)
        assert not {c.reference for c in holdout.cases(mikuru)} & set(other)
        pool = ChoicePool((haruhi, mikuru), holdout, k=4)
        c = choice_for(case, "who", pool, "x")
        assert c.lines[c.answer] == case.reference and len(c.lines) == 5
        assert c.lines == choice_for(case, "who", pool, "x").lines  # seeded
    assert len(held) == 3
    assert credit([0.1, 0.5, 0.2], 1) == 1.0 and credit([0.5, 0.5, 0.2], 1) == 0.5 and credit([0.9, 0.5], 1) == 0


def test_next_line_choice_in_a_run_with_a_known_answer(settings, tmp_path):
    """The marker engine always finds Haruhi's line among Mikuru's (who says it: 100%) and cannot tell
    Haruhi's lines apart (what comes next: every line ties, 1/5 each, which is chance)."""
    haruhi, mikuru = marked_roles()
    engine = ByMarker("SOS")
    report = run_eval([haruhi], engine, EvalOptions(per_role=3, min_tokens=1, others=(mikuru,)), settings=settings,
                      scorer=TableEmbedder())
    assert len(report.choices) == 6 and not any(c.error for c in report.choices)
    assert report.choice_accuracy("who").value == 1.0
    assert report.choice_accuracy("next").value == pytest.approx(0.2)
    request, shown = engine.shown[0]
    assert request.text.startswith("Question") and request.scenes  # the case's cue, with the full prompt's scenes
    for (req, shown_lines), choice in zip(engine.shown, report.choices):  # the full prompt, its own scene out
        assert choice.scene_id not in {h.id for h in req.scenes} and shown_lines == choice.lines
    comparison = Comparison([run_eval([haruhi], "greeting", EvalOptions(per_role=3, min_tokens=1), settings=settings,
                                      scorer=TableEmbedder()), report])
    table = comparison.markdown()
    assert "## Next-line choice" in table and "| chance | 20.0% | 20.0% |" in table
    assert "fixed, who says it: 100.0%" in table and "above chance" in table
    files = comparison.write(tmp_path)
    rows = list(csv.DictReader(files["choices"].open(encoding="utf-8")))
    assert len(rows) == 6 and {r["variant"] for r in rows} == {"who", "next"}
    rival = run_eval([haruhi], ByMarker("SOS"), EvalOptions(per_role=3, min_tokens=1, others=(mikuru,)),
                     settings=settings, scorer=TableEmbedder())
    head_to_head = Comparison([report, rival]).markdown()  # two ranking systems: each against the other
    assert "- fixed against fixed, who says it: +0.0%" in head_to_head and "not distinguishable from chance" \
        in head_to_head


def test_an_engine_that_cannot_rank_lines_is_said_so(settings):
    report = run_eval([four_scene_role()], FixedEngine("east"), EvalOptions(per_role=2, min_tokens=1),
                      settings=settings, scorer=TableEmbedder())
    assert not report.choices and report.choice_note == "cannot rank given lines"


def test_the_script_engine_ranks_a_line_by_its_own_measure(settings, embedder):
    """Its own line whose cue matches the question ranks above an unrelated line of another character."""
    from chatharuhi_core import ChatHaruhi

    bot = ChatHaruhi(role_name="sherlock", engine="script", settings=settings, embedder=embedder)
    request = bot.prepare("Who is the most dangerous man in London?")
    own = bot.engine.stream(request)
    line = "".join(own)
    other = "大圣来也！吃俺老孙一棒！"
    scores = bot.engine.score(request, [other, line])
    assert scores[1] > scores[0]


def test_a_past_run_is_rescored_with_baselines_on_the_same_cases(settings, tmp_path):
    from chatharuhi_core.data.evaluate import rescore
    from chatharuhi_core.errors import InputError

    role = four_scene_role()
    kwargs = dict(options=EvalOptions(per_role=3, min_tokens=1), settings=settings, scorer=TableEmbedder())
    first = Comparison([run_eval([role], FixedEngine("north-east"), **kwargs)])
    first.write(tmp_path / "run")
    again = rescore(tmp_path / "run" / "cases.csv", [role], labels={"fixed": "the fixed engine"}, **kwargs)
    assert [r.label for r in again.reports] == ["greeting (baseline)", "random line (baseline)", "the fixed engine"]
    old, new = first.reports[0], again.reports[-1]
    assert new.interval("cosine", "full").value == pytest.approx(old.interval("cosine", "full").value)
    assert {(r.scene_id, r.condition) for r in new.results} == {(r.scene_id, r.condition) for r in old.results}
    assert "## Next-line choice" not in again.markdown()  # it needs the models
    with pytest.raises(InputError, match="hold-out settings do not select"):
        rescore(tmp_path / "run" / "cases.csv", [role], EvalOptions(per_role=1, min_tokens=1), settings=settings,
                scorer=TableEmbedder())
    deep = deep_role()  # a run from before cases with history: its cases are the depth-1 sample
    past = Comparison([run_eval([deep], FixedEngine("east"), EvalOptions(per_role=3, min_tokens=1, deep=0),
                                settings=settings, scorer=TableEmbedder())])
    past.write(tmp_path / "past")
    again = rescore(tmp_path / "past" / "cases.csv", [deep], EvalOptions(per_role=3, min_tokens=1),
                    settings=settings, scorer=TableEmbedder())
    assert all(r.depth == 1 for rep in again.reports for r in rep.results) and len(again.reports[0].results) == 6
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="is not an eval cases.csv"):
        rescore(tmp_path / "other.csv", [role], **kwargs)


def test_compared_systems_read_the_same_packed_prompt(settings, embedder):
    """Equal footing: one set of budgets (the smallest of the systems' own) counted with one ruler, and the
    script engine quotes only from the scenes that fitted, as a model reads only those."""
    from chatharuhi_core import ChatHaruhi
    from chatharuhi_core.chat.engines.local.model import LOCAL_BUDGETS
    from chatharuhi_core.chat.engines.script import choose_line
    from chatharuhi_core.config import Budgets
    from chatharuhi_core.data.evaluate import SystemSpec, shared_budgets
    from chatharuhi_core.tokens import count_tokens

    shared = shared_budgets([SystemSpec("script"), SystemSpec("local"), SystemSpec("greeting")], settings)
    assert (shared.story_tokens, shared.history_tokens) == (LOCAL_BUDGETS.story_tokens, LOCAL_BUDGETS.history_tokens)
    assert shared_budgets([SystemSpec("script")], settings) == settings.budgets
    bot = ChatHaruhi(role_name="sherlock", engine="script", settings=settings, embedder=embedder, ruler=count_tokens)
    first = bot.prepare("Who is the most dangerous man in London?").scenes[0]
    bot.budgets = Budgets(story_tokens=count_tokens(first.text), history_tokens=100)
    request = bot.prepare("Who is the most dangerous man in London?")
    assert request.packed == 1 and len(request.scenes) > 1
    assert choose_line(request) in request.scenes[0].text  # nothing from a scene the prompt did not carry
    report = run_eval([load_role("sherlock")], "script", EvalOptions(per_role=2, budgets=shared), settings=settings)
    full = [r for r in report.results if r.condition == "full"]
    assert max(r.scenes for r in full) >= 1 and all(0 < r.prompt_tokens for r in full)
    table = Comparison([report]).markdown()
    budgets = f"| {LOCAL_BUDGETS.story_tokens} | {LOCAL_BUDGETS.history_tokens} |"
    assert "## What each system saw" in table and budgets in table
