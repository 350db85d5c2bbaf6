"""A character's memory of one conversation: pinned facts always in the prompt within their budget, earlier
exchanges recalled by similarity from beyond the history window (never one the history holds), the two kept
with the chat file, and the chat command's /remember, /memories and /forget."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.loopback import ROOT

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.chat.memory import PINNED_HEADER, RECALL_HEADER, Memory, Pin, RecallIndex
from chatharuhi_core.chat.prompt import Exchange, trim_history
from chatharuhi_core.chat.transcript import ReplyMeta, Transcript, dump_chat, load_chat
from chatharuhi_core.config import Budgets
from chatharuhi_core.errors import InputError

SMALL = Budgets(story_tokens=300, history_tokens=120, memory_tokens=60, recall_tokens=160, recall_k=4)

FILLER_EN = [("What is the weather like in London today?", "Fog, as ever, and a cab horse with a limp."),
             ("Have you read the morning papers?", "Only the agony column; the rest is noise."),
             ("Do you play the violin often?", "When a problem refuses to open, yes."),
             ("Is Mrs. Hudson well?", "She is furious about the bullet holes, so she is well."),
             ("What did you have for breakfast?", "Nothing. Digestion slows the mind."),
             ("Any new cases this week?", "A stolen bicycle and a missing parrot; both dull.")]
FILLER_ZH = [("大圣，今天天气怎么样？", "晴得很，俺老孙一个筋斗就能看遍十万八千里。"),
             ("你吃过早饭了吗？", "吃了几个蟠桃，还是花果山的桃子最甜。"),
             ("八戒在做什么？", "那呆子又在树下睡觉，打鼾打得山响。"),
             ("沙师弟挑担累不累？", "他老实得很，从来不喊一声累。"),
             ("今天要走多少路？", "师父说要过那座山，少说也有八十里。"),
             ("你的金箍棒放在哪里？", "变成绣花针，藏在俺耳朵里了。")]


def _conversation(user: str, planted: tuple[str, str], filler: list[tuple[str, str]], at: int, total: int):
    history = []
    for turn in range(1, total + 1):
        text, reply = planted if turn == at else filler[turn % len(filler)]
        history.append(Exchange(user, text if turn == at else f"{text} ({turn})", reply))
    return history


@pytest.mark.parametrize("role_id, planted, question, filler", [
    ("sherlock", ("My sister is called Anna, and she lives in Bath.", "Anna, in Bath. I shall not forget it."),
     "Where does my sister live?", FILLER_EN),
    ("sunwukong", ("我妹妹叫小红，她住在长安城。", "小红，长安城，俺老孙记下了。"), "我妹妹住在哪里？", FILLER_ZH),
])
def test_an_early_fact_is_recalled_from_beyond_the_history_window(settings, role_id, planted, question, filler):
    bot = ChatHaruhi(role_name=role_id, settings=settings, budgets=SMALL)
    bot.history = _conversation(bot.user_role, planted, filler, at=3, total=40)
    request = bot.prepare(question)
    in_window = len(trim_history(bot.history, bot.role.name, SMALL.history_tokens, bot.count_tokens))
    assert 0 < in_window < 37  # turn 3 is long gone from the history
    turns = [r.turn for r in request.recalled]
    assert 3 in turns and max(request.recalled, key=lambda r: r.similarity).turn == 3
    assert all(t <= 40 - in_window for t in turns)  # nothing the history already holds
    assert turns == sorted(turns)  # in the prompt in the order they were said
    block = next(m["content"] for m in request.messages if m["content"].startswith(RECALL_HEADER))
    assert "[turn 3]" in block and planted[0] in block
    assert bot.count_tokens(block) <= SMALL.recall_tokens
    assert sum(1 if "\n" in r.text else 0.5 for r in request.recalled) <= SMALL.recall_k  # a line alone: half


def test_no_recall_while_the_whole_conversation_fits_or_when_the_budget_is_off(settings):
    bot = ChatHaruhi(role_name="sherlock", settings=settings, budgets=SMALL)
    bot.history = [Exchange("Watson", "My sister is Anna.", "Noted.")]
    assert bot.prepare("Who is my sister?").recalled == []
    bot.history = _conversation("Watson", ("My sister is Anna.", "Noted."), FILLER_EN, at=2, total=30)
    off = ChatHaruhi(role_name="sherlock", settings=settings, history=bot.history,
                     budgets=Budgets(story_tokens=300, history_tokens=120, recall_tokens=0))
    request = off.prepare("Who is my sister?")
    assert request.recalled == [] and not any(m["content"].startswith(RECALL_HEADER) for m in request.messages)


def test_the_index_embeds_each_exchange_once_and_follows_a_rewritten_history(embedder):
    calls: list[int] = []

    class Counting:
        name, dim = embedder.name, embedder.dim

        def embed(self, texts):
            calls.append(len(texts))
            return embedder.embed(texts)

    def views(*texts):
        return [(t, t.split()[-1]) for t in texts]  # two views an exchange, as the index takes them

    index = RecallIndex()
    index.sync(views("a cat", "a dog", "a ship"), Counting())
    index.sync(views("a cat", "a dog", "a ship", "a storm at sea"), Counting())
    assert calls == [6, 2]  # only the new exchange's views
    index.sync(views("a cat", "a horse", "a ship", "a storm at sea"), Counting())  # exchange 2 was edited
    assert calls == [6, 2, 6] and len(index) == 4
    best = index.search(embedder.embed(["a horse in a field"])[0], 2)
    assert best[0][0] == 1 and best[0][1] >= best[1][1]


def test_pinned_memories_are_always_in_the_prompt_within_their_budget(settings):
    bot = ChatHaruhi(role_name="sherlock", settings=settings, budgets=SMALL)
    bot.history = [Exchange("Watson", "I was wounded at Maiwand.", "I perceive it from your shoulder.")]
    bot.remember("My sister is called Anna.")
    pin = bot.pin(1)
    assert pin == Pin("Watson: I was wounded at Maiwand.", 1)
    system = bot.prepare("Hello again.").messages[0]["content"]
    assert PINNED_HEADER.format(name="Sherlock Holmes") + "- My sister is called Anna.\n- Watson: I was wounded" in system
    for n in range(12):  # more than 60 tokens of pins: the first ones stay, the rest are counted out
        bot.remember(f"Fact number {n}: the butler keeps a second key in the left boot.")
    request = bot.prepare("Hello again.")
    assert 2 <= request.pinned < len(bot.memory.pins) == 14
    assert "Fact number 11" not in request.messages[0]["content"]
    assert bot.forget(1).text == "My sister is called Anna."
    assert "My sister" not in bot.prepare("Hello again.").messages[0]["content"]
    for bad, said in (("   ", "Write what the character should remember"), ("x" * 501, "at most 500 characters")):
        with pytest.raises(InputError, match=said):
            bot.remember(bad)
    with pytest.raises(InputError, match="There is no memory 99"):
        bot.forget(99)
    with pytest.raises(InputError, match="There is no exchange 5 to pin"):
        bot.pin(5)


def test_two_conversations_never_share_a_memory(settings):
    one = ChatHaruhi(role_name="sherlock", settings=settings)
    two = ChatHaruhi(role_name="sherlock", settings=settings)
    one.remember("My sister is called Anna.")
    assert two.memory.pins == [] and "Anna" not in two.prepare("Hello").messages[0]["content"]


def test_the_local_engines_read_ahead_start_holds_the_pins(settings):
    """The pins close the system prompt, so what the local engine reads ahead is still the next prompt's start."""
    bot = ChatHaruhi(role_name="sherlock", engine="local", model="smollm2", settings=settings)
    bot.history = [Exchange(bot.user_role, "Good morning.", "Good morning. Sit down.")]
    bot.remember("My sister is called Anna.")
    start = bot.next_prompt_start()
    assert "My sister is called Anna." in start[0]["content"]
    assert bot.prepare("What do you make of it?").messages[:len(start)] == start


def test_memories_travel_with_the_chat_file_and_older_files_still_open():
    history = [Exchange("Watson", "Hello", "Good day.")]
    t = Transcript("sherlock", "Sherlock Holmes", "Watson", history, [ReplyMeta("r1", [])],
                   [Pin("My sister is called Anna."), Pin("Watson: Hello", 1)])
    text = dump_chat(t)
    assert json.loads(text.splitlines()[0])["version"] == 3
    back = load_chat(text)
    assert back.pins == t.pins and back.history == history
    header, *rest = text.splitlines()
    old = json.loads(header)
    old.pop("memories")
    old["version"] = 1
    assert load_chat("\n".join([json.dumps(old), *rest])).pins == []  # a file from before memories


@pytest.mark.parametrize("memories, said", [
    ("Anna", "'memories' should be a list"),
    ([{"turn": 1}], "memory 1 has no 'text'"),
    ([{"text": "a fact", "turn": 7}], "memory 1 points at exchange 7"),
    ([{"text": "y" * 600}], "memory 1: A memory is at most 500 characters"),
    ([{"text": "f"}] * 201, "keeps 201 memories; a chat holds at most 200"),
])
def test_a_malformed_memory_in_a_chat_file_is_one_sentence(memories, said):
    header = {"format": "chatharuhi-chat", "version": 2, "role": "sherlock", "memories": memories}
    line = {"user_role": "Watson", "text": "Hello", "reply": "Good day."}
    with pytest.raises(InputError, match=said):
        load_chat(json.dumps(header) + "\n" + json.dumps(line) + "\n")


def test_the_chat_command_remembers_lists_and_forgets(cache_dir, tmp_path):
    path = tmp_path / "holmes.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHATHARUHI_"))}
    env["CHATHARUHI_CACHE"] = str(cache_dir)
    lines = "/remember my sister is Anna\n/remember I take my tea black\n/memories\n/forget 1\n/forget 9\n" \
            "/forget one\nWhat is your method?\n/quit\n"
    out = subprocess.run([sys.executable, "-m", "chatharuhi_core", "chat", "--role", "sherlock", "--engine", "script",
                          "--session", str(path)], cwd=ROOT, env=env, input=lines, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "[Sherlock Holmes will remember: my sister is Anna]" in out.stdout
    assert "  1. my sister is Anna" in out.stdout and "  2. I take my tea black" in out.stdout
    assert "[forgotten: my sister is Anna]" in out.stdout
    assert "[There is no memory 9; they are numbered 1 to 1.]" in out.stdout
    assert "Say which memory to forget by its number" in out.stdout
    saved = load_chat(path.read_bytes())
    assert saved.pins == [Pin("I take my tea black")] and len(saved.history) == 1
    assert "I take my tea black" in saved.meta[0].messages[0]["content"]  # it was in the reply's prompt
    again = subprocess.run([sys.executable, "-m", "chatharuhi_core", "chat", "--role", "sherlock", "--engine", "script",
                            "--session", str(path)], cwd=ROOT, env=env, input="/memories\n/quit\n",
                           capture_output=True, text=True, timeout=120)
    assert "  1. I take my tea black" in again.stdout  # kept in the session file


def test_a_reply_indexes_what_left_the_window_before_the_next_message(settings):
    """The exchange that leaves the history window is embedded after the reply (in the background), so the next
    message does not wait for it."""
    import threading

    bot = ChatHaruhi(role_name="sherlock", settings=settings, budgets=SMALL)
    bot.history = _conversation(bot.user_role, ("My sister is Anna.", "Noted."), FILLER_EN, at=2, total=20)
    bot.chat("Any news of the fog?")
    for thread in threading.enumerate():
        if thread.name == "memory-index":
            thread.join()
    in_window = len(trim_history(bot.history, bot.role.name, SMALL.history_tokens, bot.count_tokens))
    assert len(bot.memory.index) == len(bot.history) - in_window > 0
    # a bot that answers one message and is dropped (eval, synthesize) prepares nothing after it
    once = ChatHaruhi(role_name="sherlock", settings=settings, budgets=SMALL, history=list(bot.history),
                      read_ahead=False)
    once.after_reply = lambda: pytest.fail("a one-message bot read ahead")
    assert once.chat("And the rain?")


def test_memory_objects_start_empty():
    assert Memory().pins == [] and len(Memory().index) == 0


def test_the_pages_turn_sends_the_pins_and_keeps_them(settings):
    from chatharuhi_core.web.chat import Conversation
    from chatharuhi_core.web.chat_files import export_chat, import_chat
    from chatharuhi_core.web.common import EnginePanel
    from chatharuhi_core.web.memory import forget_memory, memory_markdown, remember_fact
    from chatharuhi_core.web.turn import stream_turn

    conv, said = remember_fact(Conversation("sherlock"), "My sister is called Anna.")
    assert said == "Remembered: My sister is called Anna."
    *_, last = stream_turn(conv, "Who am I looking for?", "Watson", EnginePanel(), settings)
    done = last.conversation
    assert "My sister is called Anna." in done.meta[-1].messages[0]["content"]
    assert done.memory.pins == conv.memory.pins and "1. My sister is called Anna." in memory_markdown(done)
    back, _ = import_chat(export_chat(done, "Watson", settings.cache_dir))
    assert back.memory.pins == done.memory.pins
    same, said = forget_memory(done, 3)
    assert same is done and said == "There is no memory 3; they are numbered 1 to 1."


def test_the_settings_panel_sets_memory_budgets_over_the_engines_own(settings):
    """The page's two memory sliders; left unsent (an older API client), the engine's own budgets stand."""
    from chatharuhi_core.chat.engines.local.model import LOCAL_BUDGETS
    from chatharuhi_core.web.common import EnginePanel

    assert EnginePanel("local").budgets(settings).recall_tokens == LOCAL_BUDGETS.recall_tokens
    assert EnginePanel("script").budgets(settings).memory_tokens == Budgets().memory_tokens
    b = EnginePanel("script", memory_tokens=32, recall_tokens=0).budgets(settings)
    assert (b.memory_tokens, b.recall_tokens) == (32, 0)
    bot = ChatHaruhi(role_name="sherlock", settings=settings, budgets=b)
    bot.history = _conversation(bot.user_role, ("My sister is Anna.", "Noted."), FILLER_EN, at=3, total=40)
    assert bot.prepare("Who is my sister?").recalled == []  # recall off
