"""The player's controls (issue 44) in the library, the chat file, the browser's record, feedback and the command
line: alternatives, branches, persona, author's note, continue and impersonate."""

import io
import json

import pytest

from chatharuhi_core.chat.chatbot import ChatHaruhi
from chatharuhi_core.chat.memory import Pin
from chatharuhi_core.chat.persona import AuthorsNote, authors_note, persona, read_persona
from chatharuhi_core.chat.prompt import Exchange, Layout, PromptParts, lay_out
from chatharuhi_core.chat.swipes import added, counter, flipped, kept, passed_over, replies_of, rewritten
from chatharuhi_core.chat.transcript import Branch, ReplyMeta, Transcript, dump_chat, load_chat
from chatharuhi_core.cli import main
from chatharuhi_core.data.feedback import build_training_data
from chatharuhi_core.errors import EngineError, InputError
from chatharuhi_core.roles.lines import parse_scene_lines
from chatharuhi_core.web.browser_store import MAX_CHARS, pack, unpack
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.chat_files import export_chat, import_chat
from chatharuhi_core.web.common import EnginePanel
from chatharuhi_core.web.controls import (
    back_to_parent,
    branch_from,
    flip,
    line_choices,
    set_note,
    switch_line,
    with_boxes,
    with_note,
    with_persona,
)
from chatharuhi_core.web.turn import continue_turn, stream_turn

VIOLIN = "Why do you play the violin at three in the morning?"


def _bot(settings, role="sherlock", **kw):
    return ChatHaruhi(role_name=role, engine="script", settings=settings, **kw)


# ------------------------------------------------------------ alternatives


def test_alternatives_are_kept_browsed_and_the_kept_one_goes_on():
    ex = Exchange("Watson", "Hi", "one")
    assert replies_of(ex) == ("one",) and counter(ex) == "1/1" and passed_over(ex) == []
    ex = added(added(ex, "two"), "three")
    assert ex.reply == "three" and replies_of(ex) == ("one", "two", "three") and counter(ex) == "3/3"
    assert added(ex, "one").reply == "one" and len(replies_of(added(ex, "one"))) == 3  # no duplicate
    assert flipped(ex, 1).reply == "one" and flipped(ex, -1).reply == "two"  # round at either end
    ex = kept(ex, 2)
    assert ex.reply == "two" and passed_over(ex) == ["one", "three"]
    ex = rewritten(ex, "two, corrected")
    assert replies_of(ex) == ("one", "two, corrected", "three")  # the correction takes its place
    with pytest.raises(InputError, match="there is no number 5"):
        kept(ex, 5)


def test_swipe_keeps_every_reply_and_the_next_prompt_has_the_kept_one(settings):
    bot = _bot(settings)
    first = bot.chat("What is your method?")
    second = "".join(bot.swipe())
    third = "".join(bot.swipe())
    assert len({first, second, third}) == 3 and bot.history[-1].alternatives == (first, second, third)
    assert len(bot.history) == 1
    assert bot.keep(1).reply == first and bot.flip(-1).reply == third
    bot.keep(1)
    messages = bot.prepare("Who are you?").messages
    assert f"Sherlock Holmes:「{first}」" in [m["content"] for m in messages]
    assert not any(second in m["content"] for m in messages)


# ------------------------------------------------------------ persona and author's note


def test_the_author_s_note_goes_its_depth_from_the_end():
    history = [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"},
               {"role": "user", "content": "u2"}, {"role": "assistant", "content": "a2"}]
    parts = PromptParts("sys", history, "", ["scene"], "", "msg", "NOTE", 2)

    def order(p, layout=Layout()):
        return [m["content"][:5] for m in lay_out(p, layout)]
    assert order(parts) == ["sys", "Class", "u1", "a1", "u2", "NOTE", "a2", "msg"]
    assert order(PromptParts("sys", history, "", ["scene"], "", "msg", "NOTE", 0))[-1] == "NOTE"
    assert order(PromptParts("sys", history, "", ["scene"], "", "msg", "NOTE", 1))[-2:] == ["NOTE", "msg"]
    assert order(PromptParts("sys", history, "", ["scene"], "", "msg", "NOTE", 20))[:3] == ["sys", "Class", "NOTE"]
    # scenes after the history (the local model's layout): the note is counted among the conversation alone
    assert order(parts, Layout(scenes_last=True)) == ["sys", "u1", "a1", "u2", "NOTE", "a2", "Class", "msg"]
    assert order(PromptParts("sys", history, "", ["scene"], "", "msg")) == ["sys", "Class", "u1", "a1", "u2", "a2",
                                                                           "msg"]  # no note: as before


def test_a_persona_enters_the_system_message_and_names_the_visitor(settings, tmp_path):
    bot = _bot(settings, persona=persona("Mary", "Watson's wife, a former governess."),
               note=AuthorsNote("Keep it short, {{user}}.", 1))
    assert bot.user_role == "Mary"
    messages = bot.prepare("Who are you?").messages
    assert messages[0]["content"].endswith("About Mary, the one you are talking to: Watson's wife, a former governess.")
    assert messages[-2] == {"role": "system", "content": "Keep it short, Mary."} and "Mary:「" in messages[-1]["content"]
    zh = _bot(settings, "sunwukong", persona=persona("小明", "一个迷路的书生。"))
    assert "关于小明（正在和你说话的人）：一个迷路的书生。" in zh.prepare("你是谁？").messages[0]["content"]
    (tmp_path / "p.json").write_text(json.dumps({"name": "Mary", "description": "A governess."}))
    (tmp_path / "p.txt").write_text("Name: Anna\nA pianist from Vienna.\nShe hates fog.")
    assert read_persona(tmp_path / "p.json") == persona("Mary", "A governess.")
    assert read_persona(tmp_path / "p.txt") == persona("Anna", "A pianist from Vienna.\nShe hates fog.")
    with pytest.raises(InputError, match="the limit is 728"):
        persona("Mary", "x" * 729)
    with pytest.raises(InputError, match="needs a name"):
        persona("", "A governess.")
    with pytest.raises(InputError, match="the limit is 1,000"):
        authors_note("x" * 1001)
    with pytest.raises(InputError, match="0 to 20 messages"):
        authors_note("Short.", 21)
    assert authors_note("  ") is None


def test_a_turn_reads_the_persona_box_even_when_its_save_has_not_landed(settings):
    """The race a visitor meets by typing a persona and pressing Send at once: the box's own save runs beside
    the turn, so the turn applies what the box shows (and an over-long one keeps what was saved)."""
    conv = Conversation("sherlock")
    assert with_persona(conv, None) is conv and with_persona(conv, "  ") is conv
    mended = with_persona(conv, "  A retired army doctor.  ")
    assert mended.persona == "A retired army doctor." and conv.persona == ""  # a copy: state is never mutated
    assert with_persona(mended, "A retired army doctor.") is mended
    assert with_persona(mended, "x" * 5000).persona == "A retired army doctor."
    ups = list(stream_turn(mended, "Who are you?", "Watson", EnginePanel(), settings))
    assert ups[-1].conversation.persona == "A retired army doctor."


def test_a_turn_reads_the_note_boxes_even_when_their_save_has_not_landed(settings):
    """The same race for the author's note: written and sent at once, its save ran beside the turn, which wrote
    the conversation back without it (the note box still showed it; 1 try in 5 on a busy machine). The turn and
    every handler that writes the conversation back carry the Story panel's boxes."""
    from page.turns import asked

    conv = Conversation("sherlock")
    assert with_note(conv, None) is conv and with_note(conv, "  ") is conv  # empty and unset: nothing to change
    noted = with_note(conv, " Answer in one sentence. ", 2)
    assert noted.note == AuthorsNote("Answer in one sentence.", 2) and conv.note is None  # a copy
    assert with_note(noted, "Answer in one sentence.", 2) is noted
    assert with_note(noted, "Answer in one sentence.").note.depth == 2  # no depth given: the saved one stays
    assert with_note(noted, "x" * 5000, 2) is noted and with_note(noted, "Short.", 99) is noted  # not valid: kept
    assert with_note(noted, "", 2).note is None  # the box emptied: the note is off
    both = with_boxes(conv, "A retired army doctor.", "Answer in one sentence.", 2)
    assert both.persona == "A retired army doctor." and both.note.depth == 2
    ask = asked(conv, {"text": "Who are you?", "user_role": "Watson", "persona": "A retired army doctor.",
                       "note": "Answer in one sentence.", "depth": 2}, None)
    assert ask.conv.note == AuthorsNote("Answer in one sentence.", 2) and ask.conv.persona == "A retired army doctor."
    ups = list(stream_turn(ask.conv, ask.text, ask.user_role, EnginePanel(), settings))
    assert ups[-1].conversation.note == AuthorsNote("Answer in one sentence.", 2)
    assert asked(noted, {"text": "Hi"}, None).conv is noted  # a caller of the API that leaves the boxes out


# ------------------------------------------------------------ continue and impersonate


def test_continue_quotes_the_next_line_of_the_scene_and_impersonate_a_line_of_the_visitor_s_role(settings):
    bot = _bot(settings)
    assert bot.chat(VIOLIN).startswith("Music untangles")
    pieces = list(streaming := bot.continue_reply())
    assert "".join(pieces) == " The neighbours are not trying to catch a murderer."  # a space, then the line
    assert streaming.reply.text == bot.history[-1].reply and bot.history[-1].reply.endswith("murderer.")
    assert len(bot.history) == 1
    with pytest.raises(EngineError, match="finds no next line"):
        "".join(bot.continue_reply())
    assert bot.history[-1].reply.endswith("murderer.")  # a failed continue changes nothing
    conv = Conversation("sherlock", history=list(bot.history), meta=[ReplyMeta("a", [], "script", "")])
    *_, last = continue_turn(conv, "Watson", EnginePanel(), settings)
    assert last.messages[-1]["content"].endswith("murderer.")  # the page's bubble keeps the reply's own words
    assert "finds no next line" in last.error and "finds no next line" in last.status  # said under the chat
    line = "".join(bot.my_line())
    watson = {t for s in bot.role.stories for spk, t in parse_scene_lines(s.text) if spk == "Watson"}
    assert line in watson and len(bot.history) == 1  # a line of Watson's, not sent
    with pytest.raises(EngineError, match="no line of Mary's"):
        "".join(_bot(settings, user_role="Mary").my_line())


# ------------------------------------------------------------ branches


def test_a_branch_shares_the_start_and_its_memory_follows_it(settings):
    bot = _bot(settings)
    bot.chat("What is your method?")
    bot.remember("My sister is Anna.")
    bot.chat("Who are you?")
    bot.pin(2)
    other = bot.branch(1)
    assert other.history == bot.history[:1] and len(bot.history) == 2
    assert [p.text for p in other.memory.pins] == ["My sister is Anna."]  # the pin of exchange 2 stays behind
    other.chat(VIOLIN)
    assert len(bot.history) == 2 and other.history[1].text == VIOLIN
    with pytest.raises(InputError, match="not after 5"):
        bot.branch(5)


# ------------------------------------------------------------ the chat file


def _transcript():
    h = [Exchange("Watson", "Hi", "Good day.", "", ("Hello.", "Good day.")), Exchange("Watson", "Tea?", "Later.")]
    meta = [ReplyMeta("r1", []), ReplyMeta("r2", [])]
    branch = Branch("b1", "Branch 2", "main", 1, [h[0], Exchange("Watson", "Coffee?", "Never.")],
                    [meta[0], ReplyMeta("r3", [])], [Pin("Anna")])
    return Transcript("sherlock", "Sherlock Holmes", "Mary", h, meta, line=Branch(), branches=[branch],
                      persona=persona("Mary", "A governess."), note=AuthorsNote("Be brief.", 2))


def test_the_chat_file_keeps_the_tree_alternatives_persona_and_note():
    text = dump_chat(_transcript())
    header = json.loads(text.splitlines()[0])
    assert header["version"] == 3 and header["branches"][0]["from"] == 1
    assert len(text.splitlines()) == 4  # header, two exchanges, and the branch's own one
    back = load_chat(text)
    assert back.history[0].alternatives == ("Hello.", "Good day.") and back.persona.description == "A governess."
    assert back.note == AuthorsNote("Be brief.", 2)
    b = back.branches[0]
    assert [e.text for e in b.history] == ["Hi", "Coffee?"] and [m.id for m in b.meta] == ["r1", "r3"]
    assert b.pins == [Pin("Anna")] and (b.parent, b.at) == ("main", 1)


@pytest.mark.parametrize("damage, sentence", [
    (lambda h, rows: h["branches"][0].update(parent="nowhere"), "which the file does not have"),
    (lambda h, rows: h["branches"][0].update(at=9, **{"from": 9}), "does not match its parent"),
    (lambda h, rows: h["branches"].append(dict(h["branches"][0])), "repeats the id"),
    (lambda h, rows: rows[-1].update(branch="ghost"), "header does not list"),
    (lambda h, rows: rows[0].update(alternatives=["a", "b"]), "not among its 'alternatives'"),
    (lambda h, rows: h.update(note={"text": "x" * 2000}), "the limit is 1,000"),
    (lambda h, rows: h.update(branches="all of them"), "should be a list"),
])
def test_a_malformed_tree_is_one_sentence(damage, sentence):
    header, *rows = [json.loads(x) for x in dump_chat(_transcript()).splitlines()]
    damage(header, rows)
    with pytest.raises(InputError, match=sentence):
        load_chat("\n".join(json.dumps(x) for x in [header, *rows]))


def test_a_version_2_file_still_opens():
    header, *rows = [json.loads(x) for x in dump_chat(_transcript()).splitlines()]
    for key in ("line", "branches", "persona", "note"):
        header.pop(key)
    header["version"] = 2
    rows = [r for r in rows if "branch" not in r]
    for r in rows:
        r.pop("alternatives", None)
    back = load_chat("\n".join(json.dumps(x) for x in [header, *rows]))
    assert len(back.history) == 2 and back.branches == [] and back.persona is None and back.line == Branch()


# ------------------------------------------------------------ the page's functions, the browser's record, feedback


def _turn(settings, conv, text):
    *_, last = stream_turn(conv, text, "", EnginePanel(), settings)
    assert last.error is None, last.error
    return last.conversation


def test_page_branches_round_trip_through_the_file_and_the_browser(settings, tmp_path):
    conv = _turn(settings, Conversation("sherlock"), "What is your method?")
    conv = _turn(settings, conv, "Who are you?")
    *_, again = stream_turn(conv, "", "", EnginePanel(), settings, regenerate=True)
    conv = again.conversation
    assert len(replies_of(conv.history[-1])) == 2 and conv.meta[-1].id == again.conversation.meta[-1].id
    # from the visitor's second message (chat index 3): the branch stops before it, the message back in the box
    branch, box, said = branch_from(conv, 3)
    assert box == "Who are you?" and len(branch.history) == 1 and "after exchange 1" in said
    branch = _turn(settings, branch, VIOLIN)
    assert [label for label, _ in line_choices(branch)[0]] == ["Main · 2 exchanges",
                                                                "Branch 2 · from Main after 1 · 2 exchanges"]
    main_line = back_to_parent(branch)
    assert len(main_line.history) == 2 and switch_line(main_line, branch.line.id).history[1].text == VIOLIN
    with pytest.raises(InputError, match="no parent"):
        back_to_parent(main_line)
    main_line, _ = set_note(main_line, "Be brief.", 2)
    main_line.persona = "A governess."
    imported, _ = import_chat(export_chat(main_line, "Mary", tmp_path))
    assert [c.line.name for c in imported.others] == ["Branch 2"] and imported.others[0].history[1].text == VIOLIN
    assert imported.history[-1].alternatives == main_line.history[-1].alternatives and imported.note.depth == 2
    kept_record = unpack(pack(main_line, {}, [], "script"), lambda _: True, {"script"})
    back = kept_record.chats["sherlock"]
    assert back.persona == "A governess." and back.note.text == "Be brief." and back.others[0].line.at == 1
    assert back.history[-1].alternatives == main_line.history[-1].alternatives


def test_a_big_tree_gives_up_its_other_lines_before_whole_chats(settings):
    big = [Exchange("Watson", "x" * 3000, "y" * 3000) for _ in range(30)]
    conv = Conversation("sherlock", big, others=[Conversation("sherlock", big, line=Branch(f"b{i}", f"B{i}", "main", 1))
                                                 for i in range(6)])
    record = pack(conv, {"alice": Conversation("alice", big[:5])}, [], "script")
    assert len(json.dumps(record, ensure_ascii=False)) <= MAX_CHARS
    assert [c["role"] for c in record["chats"]] == ["sherlock", "alice"] and len(record["chats"][0]["branches"]) < 6


def test_a_kept_alternative_becomes_preference_pairs(settings, tmp_path):
    settings = settings.with_(feedback_file=tmp_path / "feedback.jsonl")
    conv = _turn(settings, Conversation("sherlock"), "What is your method?")
    for _ in range(2):
        *_, again = stream_turn(conv, "", "", EnginePanel(), settings, regenerate=True)
        conv = again.conversation
    conv, _ = flip(conv, None, 1, settings)  # back to the first, kept over the other two
    data = build_training_data(settings.feedback_path)
    assert data.kept_over == 2 and len(data.preference) == 2
    chosen = {p["chosen"][0]["content"] for p in data.preference}
    assert chosen == {f"Sherlock Holmes:「{conv.history[0].reply}」"}
    assert {p["rejected"][0]["content"] for p in data.preference} == {f"Sherlock Holmes:「{r}」"
                                                                        for r in passed_over(conv.history[0])}


# ------------------------------------------------------------ the command line


def test_the_chat_loop_takes_the_player_s_commands(monkeypatch, capsys, tmp_path):
    session, who = tmp_path / "chat.jsonl", tmp_path / "mary.json"
    who.write_text(json.dumps({"name": "Mary", "description": "Watson's wife."}))
    lines = ["What is your method?", "/swipe", "/swipes", "/swipe 1", VIOLIN, "/continue", "/note 2 Be brief.",
             "/branch 1", "Who are you?", "/lines", "/line Main", "/impersonate", "/persona", "/bogus"]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    assert main(["chat", "--role", "sherlock", "--persona", str(who), "--session", str(session)]) == 0
    out = capsys.readouterr().out
    assert "[reply 2 of 2; /swipe N keeps another]" in out and "[kept reply 1 of 2]" in out
    assert "(goes on): … The neighbours are not trying to catch a murderer." in out
    assert "* 2. Branch 2 (from Main after 1): 2 exchanges" in out and "[now on Main, 2 exchanges]" in out
    assert "[The offline engine finds no line of Mary's" in out and "[you play Mary: Watson's wife.]" in out
    assert "[/bogus is not a command here; /help lists them]" in out
    t = load_chat(session.read_bytes())
    assert t.persona.name == "Mary" and t.note == AuthorsNote("Be brief.", 2) and len(t.branches) == 1
    assert len(t.history[0].alternatives) == 2 and t.history[1].reply.endswith("murderer.")
    # taken up again: the tree, the persona and the note come back with the file
    monkeypatch.setattr("sys.stdin", io.StringIO("/lines\n/note\n"))
    assert main(["chat", "--role", "sherlock", "--session", str(session)]) == 0
    out = capsys.readouterr().out
    assert "2. Branch 2 (from Main after 1): 2 exchanges" in out and "[author's note at depth 2: Be brief.]" in out


# ------------------------------------------------------------ the group scene


def test_a_group_scene_line_keeps_its_alternatives_through_the_file_and_feedback(settings, embedder, tmp_path):
    from chatharuhi_core.scene.saved import dump_scene, load_scene
    from chatharuhi_core.scene.scene import Scene, SceneSetup
    from chatharuhi_core.web.scene import alternatives_label, flip_line

    scene = Scene(["sherlock", "elizabeth"], engine="script", user_role="Watson", settings=settings,
                  setup=SceneSetup(embedder=embedder, seed=0))
    scene.say("What is your method?")
    "".join(scene.stream_turn("sherlock"))
    first = scene.lines[-1]
    texts = [first.text] + ["".join(scene.regenerate()) and scene.lines[-1].text for _ in range(2)]
    line = scene.lines[-1]
    assert len(set(texts)) == 3 and line.alternatives == texts and line.id == first.id
    assert scene.flip(1).text == texts[0] and scene.flip(-1).text == texts[2]
    back = load_scene(dump_scene(scene.state))
    assert back.lines[-1].alternatives == texts and back.lines[-1].text == texts[2]
    fb = settings.with_(feedback_file=tmp_path / "feedback.jsonl")
    state, _ = flip_line(back, None, 1, fb)
    assert state.lines[-1].text == texts[0] and alternatives_label(state) == "**1 / 3**"
    assert build_training_data(fb.feedback_path).kept_over == 2


class _StopsAtOnce:
    """An engine that answers, then, asked to go on, stops at once the first time (as a model that finds its reply
    whole), and goes on the second."""

    name, model = "stops-at-once", "test"

    def __init__(self) -> None:
        self.calls = 0

    def stream(self, request):
        self.calls += 1
        yield {1: "I play the violin when I think.", 2: "", 3: " And it helps."}.get(self.calls, "")


def test_continue_draws_once_more_when_the_model_stops_at_once(settings):
    engine = _StopsAtOnce()
    bot = ChatHaruhi(role_name="sherlock", engine=engine, settings=settings, read_ahead=False)
    bot.chat("Why the violin?")
    assert "".join(bot.continue_reply()).strip() == "And it helps."
    assert bot.history[-1].reply == "I play the violin when I think. And it helps." and engine.calls == 3
    with pytest.raises(EngineError, match="Sherlock Holmes has nothing to add"):  # twice nothing: said, kept
        "".join(bot.continue_reply())
    assert bot.history[-1].reply.endswith("And it helps.") and engine.calls == 5
