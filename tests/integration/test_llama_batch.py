"""Several visitors of the local model in one batch (issue 43, item 2), on the bundled model: a greedy reply reads the
same in a batch as alone (its scores are its own, not its neighbours'), replies are written together rather than in
turn, a visitor who leaves frees their sequence, a seeded reply keeps its words while the batch is busy, and the
lane lets in as many as the batch holds."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from chatharuhi_core.chat.chatbot import ChatHaruhi
from chatharuhi_core.chat.engines import open_engine
from chatharuhi_core.chat.engines.local import model as local_model
from chatharuhi_core.chat.engines.local.llama_batch import relays_state
from chatharuhi_core.chat.engines.local.llamacpp import ngram_ban
from chatharuhi_core.chat.engines.local.packaged import SMOLLM2, packaged_spec
from chatharuhi_core.chat.engines.local.runtime import Sampling

SAMPLING = Sampling(max_tokens=40, temperature=0.8)  # sampled, as visitors get their replies
QUESTIONS = ["What do you make of the mud on my boots?", "Who is Moriarty?", "Why the violin at night?",
             "What is in the Persian slipper?", "How did you know I was in Afghanistan?"]


@pytest.fixture(scope="module")
def lm():
    return local_model.load_model(packaged_spec(SMOLLM2), "cpu")


def _tokens(lm, question: str) -> list[int]:
    messages = [{"role": "system", "content": "You are Sherlock Holmes, the detective of Baker Street."},
                {"role": "user", "content": question}]
    return lm.handle.llm.tokenize((lm.template(messages) + "Sherlock Holmes:「").encode(), add_bos=False, special=True)


def _write(lm, question: str, seed: int, out: dict, stop=lambda: False, sampling: Sampling = SAMPLING) -> None:
    pieces: list[tuple[float, str]] = []
    lm.handle.batch.reply(_tokens(lm, question), sampling, seed, lambda p: pieces.append((time.perf_counter(), p)),
                          stop, ngram_ban(sampling.no_repeat_ngram_size))
    out[question] = {"text": "".join(p for _, p in pieces), "first": pieces[0][0] if pieces else None,
                     "end": time.perf_counter()}


def _together(lm, questions, seeds, sampling: Sampling = SAMPLING) -> dict:
    out: dict = {}
    threads = [threading.Thread(target=_write, args=(lm, q, s, out), kwargs={"sampling": sampling})
               for q, s in zip(questions, seeds)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


def test_the_model_has_a_batch_and_the_lane_lets_in_as_many(settings, lm):
    batch = lm.handle.batch
    assert batch is not None and batch.slots >= 2
    assert relays_state(batch.model)  # one cache per layer: a prompt read alone can be handed to the batch
    assert open_engine("local", settings, model="smollm2").lane().slots == batch.slots


def test_a_reply_reads_the_same_in_a_batch_as_alone(lm):
    # Greedy: a reply that read its neighbours' keys would change its words, while the last-bit rounding of a
    # bigger step (which CI's CPU showed) only moves a sampled draw that sits at a near tie.
    seeds, greedy = [11, 12, 13, 14], replace(SAMPLING, temperature=0.0)
    alone = {}
    for q, s in zip(QUESTIONS, seeds):
        _write(lm, q, s, alone, sampling=greedy)
    together = _together(lm, QUESTIONS[:4], seeds, greedy)
    assert {q: r["text"] for q, r in together.items()} == {q: r["text"] for q, r in alone.items()}
    assert all(r["text"] for r in alone.values())


def test_the_batch_draws_as_create_completion_does_on_the_same_weights(lm):
    """Eval's seeded replies go through create_completion, visitors' through the batch: on the same weights a greedy
    reply reads the same both ways, the repetition penalty on its last 64 tokens included (the batch had left it out,
    and wrote other words than eval measured for 4 prompts of 4)."""
    from llama_cpp import LogitsProcessorList

    from chatharuhi_core.chat.engines.local.llama_batch import Batcher
    from chatharuhi_core.chat.engines.local.llamacpp import FLASH_ATTENTION

    llm = lm.handle.llm

    def read(head: list[int], threads: int):
        llm.reset()
        llm.eval(head)
        return llm._ctx.ctx

    batch = Batcher(llm._model, read, lm.handle.lock, lm.handle.most, slots=2, context=2048,
                    flash_attn=FLASH_ATTENTION)
    greedy = replace(SAMPLING, temperature=0.0, max_tokens=60)
    assert greedy.repetition_penalty != 1.0
    for question in QUESTIONS[:3]:
        tokens = _tokens(lm, question)
        with lm.handle.lock:
            llm.reset()
            alone = llm.create_completion(tokens, max_tokens=greedy.max_tokens, temperature=0.0, top_k=50,
                                          top_p=greedy.top_p, min_p=0.0, repeat_penalty=greedy.repetition_penalty,
                                          seed=1, logits_processor=LogitsProcessorList(
                                              [ngram_ban(greedy.no_repeat_ngram_size)]))["choices"][0]["text"]
        pieces: list[str] = []
        batch.reply(tokens, greedy, 0, pieces.append, lambda: False, ngram_ban(greedy.no_repeat_ngram_size))
        assert "".join(pieces) == alone and alone.strip()


def test_replies_are_written_together_not_in_turn(lm):
    long = replace(SAMPLING, max_tokens=60, stop=())
    out = _together(lm, QUESTIONS[:4], [1, 2, 3, 4], long)
    firsts, ends = [r["first"] for r in out.values()], [r["end"] for r in out.values()]
    assert None not in firsts
    assert max(firsts) < min(ends)  # each had its first word before anyone had finished


def test_a_visitor_who_leaves_frees_their_sequence(lm):
    batch = lm.handle.batch
    spoke, gone, pieces = threading.Event(), threading.Event(), []

    def emit(piece: str) -> None:
        pieces.append(piece)
        spoke.set()

    long = replace(SAMPLING, max_tokens=150, stop=())
    leaver = threading.Thread(target=batch.reply, args=(_tokens(lm, QUESTIONS[0]), long, 5, emit, gone.is_set))
    leaver.start()
    assert spoke.wait(30)
    gone.set()  # the tab is closed
    leaver.join(30)
    assert not leaver.is_alive() and len(pieces) < 150  # it stopped at once, not at its length
    assert batch.busy == 0 and not batch._active  # its sequence is free again
    everyone = _together(lm, [f"{QUESTIONS[0]} ({i})" for i in range(batch.slots)], list(range(batch.slots)))
    assert len(everyone) == batch.slots and all(r["first"] is not None for r in everyone.values())


def test_a_seeded_reply_keeps_its_words_while_the_batch_is_busy(settings, lm):
    def seeded() -> str:
        engine = open_engine("local", settings, model="smollm2", seed=7, temperature=0.8)
        bot = ChatHaruhi(role_name="sherlock", engine=engine, settings=settings)
        return bot.answer("What do you make of Moriarty?").text

    quiet = seeded()
    out: dict = {}
    crowd = [threading.Thread(target=_write, args=(lm, q, i, out),
                              kwargs={"sampling": replace(SAMPLING, max_tokens=120, stop=())})
             for i, q in enumerate(QUESTIONS[:3])]
    for t in crowd:
        t.start()
    busy = seeded()
    for t in crowd:
        t.join(120)
    assert busy == quiet and len(out) == 3


def test_the_batch_runs_on_the_free_cores(lm, monkeypatch):
    batch = lm.handle.batch
    monkeypatch.setattr(batch._watch, "look", lambda: 1)  # another process holds the other core
    _write(lm, QUESTIONS[1], 3, {})
    assert batch.threads == 1 and lm.handle.threads == 1  # the batch's steps and the prompt's reader
    monkeypatch.setattr(batch._watch, "look", lambda: batch.most)
    _write(lm, QUESTIONS[1], 3, {})
    assert batch.threads == batch.most


def test_the_app_loads_the_local_model_as_it_starts_and_says_it_is_warming_up(settings, monkeypatch):
    from chatharuhi_core.chat.engines.local.model import _LOADED, warm_at_start

    monkeypatch.setenv("CHATHARUHI_LOCAL_RUNTIME", "llama.cpp")  # its own load, beside the module's model
    engine = open_engine("local", settings)
    _LOADED.pop(engine._key(), None)
    try:
        thread = warm_at_start(settings)
        assert thread is not None
        said = engine.loading_message()
        if thread.is_alive():  # a visitor who comes now is told the truth
            assert said and "warming up" in said
        thread.join(120)
        assert engine._key() in _LOADED and engine.loading_message() is None  # the first reply waits for nothing
        assert warm_at_start(settings) is None  # loaded already: nothing more to do
        off = replace(settings, warm_local=False)
        _LOADED.pop(engine._key())
        assert warm_at_start(off) is None and engine._key() not in _LOADED  # CHATHARUHI_WARM_LOCAL=0
    finally:
        _LOADED.pop(engine._key(), None)


def test_without_the_start_up_load_the_first_local_reply_says_it_is_loading(tmp_path):
    """CHATHARUHI_WARM_LOCAL=0: the model loads on first use, and the page says so while it does."""
    from gradio_client import Client
    from support.loopback import gradio_app

    with gradio_app(tmp_path / "cache", timeout=120, CHATHARUHI_WARM_LOCAL="0") as (url, _app, _):
        client = Client(url, verbose=False)
        job = client.submit("Who are you?", "Watson", "local", "", "", "", 256, 192, False, 192, 128, "", "", 4,
                            api_name="/send")
        frames = list(job)
        chat = job.result()[0]
    said = [str(f[0][-1]["content"]) for f in frames if f and f[0] and f[0][-1].get("role") == "assistant"]
    assert any("Loading the local model Gemma 3 270M ChatHaruhi" in s for s in said)
    assert chat[-1]["role"] == "assistant" and "Loading the local model" not in str(chat[-1]["content"])


def test_a_first_local_reply_right_after_start_up_waits_for_no_load(tmp_path):
    """The app as README's command starts it loads the local model as it starts: once the log says so, a
    visitor's first local reply shows no loading line, and neither the load nor the reply left a traceback."""
    from gradio_client import Client
    from support.loopback import gradio_app

    log = tmp_path / "app.log"
    with gradio_app(tmp_path / "cache", log=log, timeout=120, CHATHARUHI_WARM_LOCAL="1") as (url, _app, _):
        deadline = time.time() + 300  # the first start merges the shipped adapter into copies of the base
        while "loaded Gemma 3 270M ChatHaruhi" not in log.read_text(errors="replace") and time.time() < deadline:
            time.sleep(0.25)
        assert "loaded Gemma 3 270M ChatHaruhi" in log.read_text(errors="replace")
        client = Client(url, verbose=False)
        job = client.submit("What do you make of my boots?", "Watson", "local", "", "", "", 256, 192, False, 192, 128,
                            "", "", 4, api_name="/send")
        frames = list(job)
        chat = job.result()[0]
    said = [str(f[0][-1]["content"]) for f in frames if f and f[0] and f[0][-1].get("role") == "assistant"]
    assert chat[-1]["role"] == "assistant" and chat[-1]["content"]
    assert not any("Loading the local model" in s or "warming up" in s for s in said)
    assert "Traceback (most recent call last)" not in log.read_text(errors="replace")
