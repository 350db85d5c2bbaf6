"""The paper's prompt layout and the edges of both token budgets."""

from chatharuhi_core.chat import prompt
from chatharuhi_core.chat.prompt import SCENES_HEADER, Exchange, clean_reply, pack_stories, trim_history
from chatharuhi_core.config import Budgets
from chatharuhi_core.roles.lines import format_query, parse_scene_lines
from chatharuhi_core.tokens import count_tokens


def build_messages(system_prompt, character, stories, history, user_role, text, budgets=Budgets(), count=count_tokens,
                   post_history="", scenes_last=False) -> list[dict]:
    """The whole message list for one turn, budgets applied, from its parts (as a conversation lays it out)."""
    history_part = prompt.exchange_messages(history, character, budgets.history_tokens, count)
    parts = prompt.PromptParts(system_prompt, history_part, post_history,
                               pack_stories(stories, budgets.story_tokens, count), message=format_query(user_role, text))
    return prompt.lay_out(parts, prompt.Layout(scenes_last=scenes_last))


def history_messages(system_prompt, character, history, budgets=Budgets(), count=count_tokens, post_history=""):
    """How a prompt laid out with the scenes last starts: system prompt, history, post-history text."""
    history_part = prompt.exchange_messages(history, character, budgets.history_tokens, count)
    return prompt.prompt_start(prompt.PromptParts(system_prompt, history_part, post_history))


def chars(text: str) -> int:  # a predictable counter for edge tests: one token per character
    return len(text)


def test_cl100k_counts_offline():
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0
    assert count_tokens("俺老孙") > 0


def test_message_layout_exactly_as_the_paper():
    history = [Exchange("Watson", "Hi", "Hello.")]
    msgs = build_messages("SYS", "Holmes", ["scene A", "scene B"], history, "Watson", "Who are you?")
    assert msgs == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": SCENES_HEADER + "scene A\n###\nscene B"},
        {"role": "user", "content": "Watson:「Hi」"},
        {"role": "assistant", "content": "Holmes:「Hello.」"},
        {"role": "user", "content": "Watson:「Who are you?」"},
    ]
    assert SCENES_HEADER == "Classic scenes for the role are as follows:\n"


def test_scenes_last_is_the_same_messages_with_the_scenes_just_before_the_message():
    """The local engine's order: what the last turn already had comes first, so it can be read ahead."""
    history = [Exchange("Watson", "Hi", "Hello.")]
    paper = build_messages("SYS", "Holmes", ["scene A"], history, "Watson", "Who are you?", post_history="Stay terse.")
    last = build_messages("SYS", "Holmes", ["scene A"], history, "Watson", "Who are you?", post_history="Stay terse.",
                          scenes_last=True)
    assert [m["content"] for m in last] == ["SYS", "Watson:「Hi」", "Holmes:「Hello.」", "Stay terse.",
                                            SCENES_HEADER + "scene A", "Watson:「Who are you?」"]
    assert sorted(map(str, last)) == sorted(map(str, paper))
    # how the next turn starts is known before its message: system prompt, history, post-history text
    assert last[:4] == history_messages("SYS", "Holmes", history, post_history="Stay terse.")
    assert build_messages("SYS", "Holmes", [], [], "Watson", "Hi", scenes_last=True) == [
        {"role": "system", "content": "SYS"}, {"role": "user", "content": "Watson:「Hi」"}]


def test_query_formats():
    assert format_query("Kyon", "hi") == "Kyon:「hi」"
    assert format_query("旁白", "天黑了") == "旁白:天黑了"
    assert format_query("narrator", "Night falls.") == "narrator:Night falls."
    assert format_query("", "hi") == "User:「hi」"


def test_story_budget_edges():
    stories = ["a" * 10, "b" * 10, "c" * 10]
    assert pack_stories(stories, 30, chars) == stories  # exact fit
    assert pack_stories(stories, 29, chars) == stories[:2]  # one token short drops the third
    assert pack_stories(stories, 9, chars) == []  # nothing fits
    assert pack_stories(["a" * 50, "b"], 10, chars) == []  # stops at the first that does not fit
    assert pack_stories([], 100, chars) == []


def test_history_budget_edges():
    h = [Exchange("U", "q1", "a1"), Exchange("U", "q2", "a2"), Exchange("U", "q3", "a3")]
    pair = chars(format_query("U", "q1")) + chars("R:「a1」")  # 6 + 6
    assert trim_history(h, "R", 3 * pair, chars) == h
    assert trim_history(h, "R", 3 * pair - 1, chars) == h[1:]  # oldest pair dropped whole
    assert trim_history(h, "R", pair, chars) == h[2:]
    assert trim_history(h, "R", pair - 1, chars) == []  # newest does not fit: nothing, not everything
    assert trim_history([], "R", 100, chars) == []


def test_nothing_fits_gives_system_and_query_only():
    h = [Exchange("U", "long question " * 50, "long answer " * 50)]
    msgs = build_messages("SYS", "R", ["x" * 500], h, "U", "hi", Budgets(story_tokens=5, history_tokens=5), chars)
    assert msgs == [{"role": "system", "content": "SYS"}, {"role": "user", "content": "U:「hi」"}]


def test_real_budgets_with_cl100k():
    scene = "Watson:「Where are we going?」\nHolmes:「To the station.」"
    n = count_tokens(scene)
    packed = pack_stories([scene] * 100, 1500)
    assert len(packed) == 1500 // n
    assert sum(count_tokens(s) for s in packed) <= 1500


def test_clean_reply():
    assert clean_reply("孙悟空:「俺老孙来也！」", "孙悟空") == "俺老孙来也！"
    assert clean_reply("孙悟空：「俺老孙来也！」", "孙悟空") == "俺老孙来也！"
    assert clean_reply("「Quite so.」", "Holmes") == "Quite so."
    assert clean_reply("Holmes:「Quite so.」\nWatson:「Indeed.」", "Holmes") == "Quite so."
    assert clean_reply("Plain answer", "Holmes") == "Plain answer"
    assert clean_reply("他说「好」", "X") == "他说「好」"


def test_parse_scene_lines():
    lines = parse_scene_lines("旁白:山路上。\n唐僧:「悟空。」\n孙悟空：「师父！」")
    assert lines == [(None, "旁白:山路上。"), ("唐僧", "悟空。"), ("孙悟空", "师父！")]


def test_a_reply_is_cut_where_another_scene_starts():
    """A small model that writes the prompt's scene separator has begun another scene (seen in eval's cases)."""
    raw = "The butler, Lestrade.\n###\nThe next day: Lestrade's men came."
    assert clean_reply(raw, "Sherlock Holmes") == "The butler, Lestrade."
    assert clean_reply("俺老孙去也！\n  ###\n三郎: 什么？", "孙悟空") == "俺老孙去也！"
    assert clean_reply("Number ### is not a separator here.", "Sherlock Holmes") == "Number ### is not a separator here."
