"""Several visitors' replies written together: one llama.cpp context with a stream of keys and values per reply,
one step of the model giving every one of them its next token.

A step reads the weights once for all the replies in it, while the arithmetic grows with them: on these 2
cores a step for eight costs about four times a step for one, so eight replies together come to about twice
the tokens per second of one alone (bench/crowd.py, the model alone: 1.9x and 2.8x in two runs). A newcomer's
prompt is read first, between two steps of the others, by the copy of the weights that reads prompts fastest
(16- or 8-bit, local_llamacpp.py; the batch decodes with the same copy), and its keys and values are handed to
a free stream: its first word comes after one prompt's reading, not after everyone's replies. The steps run on the
cores no other process is using and step aside for a visitor's short work in this process (cpu_share.py).

Each reply draws its tokens as llama-cpp-python's `create_completion` does (the n-gram ban, the repetition
penalty on the tokens among its last 64, top-k 50, top-p, temperature, then a draw from the reply's seed), and
attends over its own stream alone, so its scores for the next token are the ones it gets alone, up to rounding:
a step for several may add its sums in another order on some CPUs (CI's did), so a greedy reply reads the same
in a batch as alone (tests/integration/test_llama_batch.py) while a sampled draw at a near tie can fall the
other way. That is why a seeded reply (eval's, tests') keeps the one-at-a-time path and its words. A reply is
dropped, and its stream freed, as soon as its visitor stops listening. The thread that runs the steps lives
while there are replies to write.

A model whose prompts the batch reads itself (sliding-window layers, as Gemma 3's) keeps each finished reply's
stream, and reads ahead a visitor's next prompt start (system prompt and history) into one: a prompt whose start
another stream holds copies it from there and reads only the rest, where a model that hands its prompts over
starts from the reader's saved states (about 35% of a page prompt to Sherlock Holmes for another visitor, most
of it for the same visitor's next turn; docs/eval/candidates/step2/crowd.md, "Kept streams").
"""

from __future__ import annotations

import codecs
import ctypes
import logging
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ....errors import EngineError
from ....i18n import _
from ..cpu_share import CoreWatch, foreground_busy, less_for_foreground
from .llama_cpu import llama
from .runtime import Emit, Sampling

log = logging.getLogger(__name__)

SLOTS = 16  # replies written at once (bench/crowd.py: a 17th waits in the lane, where it is told its place)
SEQ_CONTEXT = 2048  # tokens each reply may hold: the local budgets' longest prompt and reply fit in 1,600
KV_BUDGET_BYTES = 1 << 30  # keys and values of all sequences together (SmolLM2-135M: 16 × 2048 × 23 KB = 754 MB)
TOP_K = 50  # as the single reply's create_completion is asked
PENALTY_LAST_N = 64  # the reply's tokens the repetition penalty looks back over (llama-cpp-python's last_n_tokens_size)
YIELD_S = 0.1  # the longest a step waits for a visitor's short work (bench/crowd.py, the mix)
STATE_MAGIC = 0xAF143CD8  # the first word of a sequence's saved state (llama.cpp 0.3.36's llama_state_seq_get_data)
REUSE_MIN = 32  # shared tokens worth copying a stream for (a copy and its cut: about 20 ms; 32 tokens of Gemma
# read: about 55 ms)


@dataclass(eq=False)
class BatchReply:
    """One visitor's reply in the batch: its tokens so far (prompt, then reply), what it has said, its sequence."""

    tokens: list[int]
    sampling: Sampling
    seed: int
    emit: Emit
    should_stop: Callable[[], bool]
    ban: Callable | None = None
    prompt: int = 0  # how many of `tokens` are the prompt's (the rest: the reply, which the penalty looks at)
    seq: int = -1
    cached: int = 0  # tokens (from the start) whose keys and values the sequence holds
    inherited: tuple[int, ...] = ()  # what the sequence held when the reply was given it (a kept stream)
    written: int = 0
    text: str = ""
    said: int = 0  # characters of `text` already emitted
    decoder: codecs.IncrementalDecoder = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("ignore"))
    done: threading.Event = field(default_factory=threading.Event)
    failure: BaseException | None = None

    def add(self, piece: bytes) -> bool:
        """Take a token's bytes; emit what is sure to be said; True when a stop string has ended the reply."""
        self.text += self.decoder.decode(piece)
        stops = [self.text.find(s, max(0, self.said - len(s))) for s in self.sampling.stop]
        cut = min((i for i in stops if i >= 0), default=-1)
        if cut >= 0:
            self.text = self.text[:cut]
            self._say(cut)
            return True
        held = max((_overlap(self.text, s) for s in self.sampling.stop), default=0)  # may be a stop's start
        self._say(len(self.text) - held)
        return False

    def finish(self) -> None:
        self._say(len(self.text))

    def _say(self, upto: int) -> None:
        if upto > self.said:
            self.emit(self.text[self.said:upto])
            self.said = upto


def streams(state: bytes, count: int, seq: int) -> bytes:
    """A sequence's state saved from a context with one stream of keys and values, as a context with `count`
    streams reads it into sequence `seq`. llama.cpp writes a sequence's state as a magic number, the sequence,
    the stream count, then per stream a cell count and, if not 0, its cells; it puts the cells into the
    destination sequence's own stream, so the others are written empty."""
    magic, _seq, had = struct.unpack_from("<III", state)
    if magic != STATE_MAGIC or had != 1:
        raise EngineError(_("llama.cpp saved the prompt in a layout this version does not know."))
    return struct.pack("<III", magic, seq, count) + state[12:] + b"\0\0\0\0" * (count - 1)


def relays_state(model) -> bool:
    """Whether a prompt read by the model's own reader can be handed to the batch: `streams` re-lays one cache of
    keys and values per layer. A model with sliding-window layers (Gemma 3 keeps two caches) or a recurrent state
    saves a sequence in another layout, which llama.cpp then refuses to load: the batch reads a sliding-window
    model's prompts itself (Batcher._read_in_place), and a recurrent one is not batched (`batches`)."""
    llama_cpp = llama()
    return (llama_cpp.llama_model_n_swa(model.model) == 0 and not llama_cpp.llama_model_is_recurrent(model.model)
            and not llama_cpp.llama_model_is_hybrid(model.model))


def batches(model) -> bool:
    """Whether the batch can write the model's replies: every model but a recurrent or hybrid one, whose state per
    sequence is not keys and values (one reply at a time for those)."""
    llama_cpp = llama()
    return not llama_cpp.llama_model_is_recurrent(model.model) and not llama_cpp.llama_model_is_hybrid(model.model)


def kv_bytes_per_token(model) -> int:
    """Bytes of 16-bit keys and values one token takes in every layer."""
    llama_cpp = llama()
    layers, width = llama_cpp.llama_model_n_layer(model.model), llama_cpp.llama_model_n_embd(model.model)
    heads, kv_heads = llama_cpp.llama_model_n_head(model.model), llama_cpp.llama_model_n_head_kv(model.model)
    return 2 * 2 * layers * kv_heads * (width // max(1, heads))


def shared_prefix(a, b) -> int:
    """How many tokens `a` and `b` share from their start (the batch's streams, the reader's saved prompts)."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _overlap(text: str, stop: str) -> int:
    """How many of `text`'s last characters are the start of `stop`."""
    for n in range(min(len(stop) - 1, len(text)), 0, -1):
        if text.endswith(stop[:n]):
            return n
    return 0


class Batcher:
    """The batch of one loaded model. `reply` is called from each visitor's worker thread and returns when the
    reply is done; `read_head(tokens, threads) -> context` reads a prompt's head into a context (the model's
    own reader, sequence 0; called with `lock` held), from which it is handed to the batch."""

    def __init__(self, model, read_head: Callable[[list[int], int], object], lock: threading.Lock, threads: int,
                 slots: int = SLOTS, context: int = SEQ_CONTEXT, flash_attn: bool = True):
        llama_cpp = llama()
        from llama_cpp import _internals

        # a stream of keys and values per sequence (not one shared by all): a reply then attends over its own
        # tokens alone, laid out as when it is alone, so its neighbours neither slow it nor change its sums
        params = llama_cpp.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_ubatch = slots * context, max(512, slots), max(512, slots)
        params.n_seq_max, params.kv_unified = slots, False
        params.n_threads = params.n_threads_batch = threads
        params.flash_attn_type = (llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attn
                                  else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED)
        self.ctx = _internals.LlamaContext(model=model, params=params, verbose=False)
        self.model = model
        self.vocab = llama_cpp.llama_model_get_vocab(model.model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self.slots, self.context, self.most = slots, context, threads
        self.threads = threads
        self._read_head, self._lock = read_head, lock
        self._batch = llama_cpp.llama_batch_init(slots, 0, 1)
        self.relays = relays_state(model)  # else each prompt is read in its own stream here (_read_in_place)
        self._prompt_batch = None if self.relays else llama_cpp.llama_batch_init(params.n_batch, 0, 1)
        self._prompt_tokens = params.n_batch
        self._cond = threading.Condition()
        self._waiting: list[BatchReply] = []
        self._active: list[BatchReply] = []
        self._thread: threading.Thread | None = None
        self._starting: BatchReply | None = None  # the newcomer whose prompt is being handed over
        self._watch = CoreWatch()
        # streams of finished replies, kept for the prompts that start as theirs did (read in place only): the
        # sequence and the tokens it holds, least recently used first; a newcomer takes one over when none is free
        self._kept: dict[int, tuple[int, ...]] = {}
        self._ahead: list[tuple[list[int], threading.Event]] = []  # prompt starts to read into a kept stream
        self.tokens_read = self.tokens_reused = 0  # prompt tokens read in place, and taken from another stream

    # what a visitor's thread calls

    def reply(self, tokens: list[int], sampling: Sampling, seed: int, emit: Emit, should_stop: Callable[[], bool],
              ban: Callable | None = None) -> None:
        """Write a reply to `tokens` into `emit`, among the others; returns when it is done or its visitor left."""
        if len(tokens) + sampling.max_tokens > self.context:  # the page's budgets never come near it
            raise EngineError(_("The prompt ({count} tokens) and the reply do not fit the {limit} tokens each "
                                "visitor has on the local model; shorten the budgets in Settings.", count=len(tokens),
                                limit=self.context))
        job = BatchReply(list(tokens), sampling, seed, emit, should_stop, ban, prompt=len(tokens))
        with self._cond:
            self._waiting.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="local-batch", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        job.done.wait()
        if job.failure is not None:
            raise job.failure

    def read_ahead(self, tokens: list[int], wait_s: float = 10.0) -> None:
        """Read how a prompt will start (a visitor's next turn: system prompt and history) into a kept stream
        now, between steps, so the prompt that follows reads only the rest; returns once it is read (a process
        ending right after must not tear the batch's thread down inside llama.cpp). Only where prompts are read
        in place; a start the kept streams nearly hold already is skipped."""
        if self.relays:
            return
        done = threading.Event()
        with self._cond:
            self._ahead.append((list(tokens), done))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="local-batch", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        done.wait(wait_s)

    @property
    def busy(self) -> int:
        """Replies being written or waiting for a sequence."""
        with self._cond:
            return len(self._active) + len(self._waiting)

    # the batch's own thread

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    self._drop_left()
                    if not self._active and not self._waiting and not self._ahead:
                        self._thread = None
                        return
                    ahead = self._ahead.pop(0) if self._ahead and len(self._active) < self.slots else None
                    newcomer = self._admit() if ahead is None else None
                if ahead is not None:
                    self._read_ahead(*ahead)
                    continue
                self._make_room()
                self._starting = newcomer
                if newcomer is not None and not self._start(newcomer):
                    with self._cond:  # the reader is busy (a seeded reply holds it): after the next step
                        self._waiting.insert(0, newcomer)
                        if not self._active:
                            self._cond.wait(0.05)
                if self._active:
                    self._step()
        except BaseException as exc:  # every reply in hand hears of it, and the thread starts afresh next time
            log.error("the batch of local replies failed: %r", exc)
            with self._cond:
                hit = self._active + self._waiting + ([self._starting] if self._starting is not None else [])
                for job in dict.fromkeys(hit):
                    self._end(job, exc if isinstance(exc, EngineError) else
                              EngineError(_("The local model failed while answering ({why}).", why=type(exc).__name__)))
                for _tokens, done in self._ahead:
                    done.set()
                self._active, self._waiting, self._thread, self._starting, self._ahead = [], [], None, None, []
                self.forget_kept()

    def _make_room(self) -> None:
        """Hold the next step a moment while a visitor's short work runs in this process (reading a message,
        the offline engine choosing a line: tens of milliseconds of CPU that the batch's threads would share),
        at most YIELD_S a step, so the batch keeps writing under any load."""
        waited = 0.0
        while waited < YIELD_S and foreground_busy():
            time.sleep(0.005)
            waited += 0.005

    def _drop_left(self) -> None:
        """Replies whose visitor stopped listening leave the batch now, their sequence freed."""
        for job in [j for j in self._active if j.should_stop()]:
            self._active.remove(job)
            self._end(job)
        for job in [j for j in self._waiting if j.should_stop()]:
            self._waiting.remove(job)
            job.done.set()

    def _admit(self) -> BatchReply | None:
        """The next waiting reply, with the sequence it gets (`_place`), if one is free."""
        if not self._waiting or len(self._active) >= self.slots:
            return None
        job = self._waiting.pop(0)
        job.seq, job.inherited = self._place(job.tokens[:-1])
        return job

    def _place(self, head: list[int]) -> tuple[int, tuple[int, ...]]:
        """A sequence for a prompt (with a free one left) and what it holds: the kept stream that starts as the
        prompt does, else one nobody holds, else the kept stream used longest ago."""
        used = {j.seq for j in self._active}
        seq, shared = self._source(head, self._kept)
        if shared < REUSE_MIN:
            seq = next((s for s in range(self.slots) if s not in used and s not in self._kept), None)
            if seq is None:
                seq = next(iter(self._kept))
        return seq, self._kept.pop(seq, ())

    def _streams(self) -> dict[int, tuple[int, ...]]:
        """Every stream that holds a prompt's start now, and the tokens it holds: the replies being written and
        the kept ones."""
        return {j.seq: tuple(j.tokens[:j.cached]) for j in self._active} | self._kept

    def _source(self, head: list[int], streams: dict[int, tuple[int, ...]]) -> tuple[int, int]:
        """(sequence, tokens shared) of the stream among `streams` holding the longest start of `head`."""
        best = (-1, 0)
        for seq, held in streams.items():
            shared = shared_prefix(held, head)
            if shared > best[1]:
                best = (seq, shared)
        return best

    def _keep(self, job: BatchReply) -> None:
        """A finished reply's stream stays, for a prompt that starts as its did (the same role's system prompt,
        the same visitor's history): read in place only, where no reader keeps prompts."""
        if not self.relays and job.seq >= 0 and job.cached:
            self._kept[job.seq] = tuple(job.tokens[:job.cached])
            job.seq = -1

    def forget_kept(self) -> None:
        """Drop the kept streams (after a failure, whose streams may be half written; tests)."""
        llama_cpp = llama()
        for seq in self._kept:
            llama_cpp.llama_memory_seq_rm(self.ctx.memory, seq, -1, -1)
        self._kept = {}

    def _start(self, job: BatchReply) -> bool:
        """Read the prompt's head and hand its keys and values to the job's sequence; False if the reader is busy."""
        llama_cpp = llama()
        if not self.relays:
            return self._read_in_place(job)
        if not self._lock.acquire(timeout=0.05):
            job.seq = -1
            return False
        head, state = job.tokens[:-1], b""
        try:
            if head:
                reader = self._read_head(head, self._use_free_cores())
                size = llama_cpp.llama_state_seq_get_size(reader, 0)
                data = (ctypes.c_uint8 * size)()
                written = llama_cpp.llama_state_seq_get_data(reader, data, size, 0)
                state = streams(ctypes.string_at(data, written), self.slots, job.seq)
        except EngineError as exc:  # this visitor hears why; the others write on
            self._end(job, exc)
            return True
        finally:
            self._lock.release()
        llama_cpp.llama_memory_seq_rm(self.ctx.memory, job.seq, -1, -1)
        if head and llama_cpp.llama_state_seq_set_data(
                self.ctx.ctx, (ctypes.c_uint8 * len(state)).from_buffer_copy(state), len(state), job.seq) == 0:
            self._end(job, EngineError(_("llama.cpp could not take the prompt into the batch of replies.")))
            return True
        with self._cond:
            self._active.append(job)
        return True

    def _read_in_place(self, job: BatchReply) -> bool:
        """A model whose saved state cannot be re-laid (Gemma 3's sliding-window layers keep a second cache)
        has the prompt's head read by the batch's own context into the job's stream, between two steps: the
        others wait for it as they wait for a hand-over, and the reply then writes beside theirs. What another
        stream holds of the prompt's start is copied, not read again (`_fill`)."""
        if not self._fill(job.seq, job.inherited, job.tokens[:-1]):
            self._end(job, EngineError(_("llama.cpp could not take the prompt into the batch of replies.")))
            return True
        job.cached = len(job.tokens) - 1
        with self._cond:
            self._active.append(job)
        return True

    def _read_ahead(self, tokens: list[int], done: threading.Event) -> None:
        """A prompt's start read into a stream kept for the prompt to come (`read_ahead`)."""
        try:
            if len(tokens) - self._source(tokens, self._streams())[1] < REUSE_MIN:
                return
            seq, inherited = self._place(tokens)
            if self._fill(seq, inherited, tokens):
                self._kept[seq] = tuple(tokens)
            else:
                llama().llama_memory_seq_rm(self.ctx.memory, seq, -1, -1)
        finally:
            done.set()

    def _fill(self, seq: int, inherited: tuple[int, ...], head: list[int]) -> bool:
        """Put `head`'s keys and values into `seq`, which holds `inherited`: keep what of it starts `head`, or
        copy the stream holding the longest start of `head` (a reply being written, or a kept one; llama.cpp
        copies a stream whole, then the copy is cut where the prompts part), and read the rest; False when
        llama.cpp refuses a chunk. A cut is exact for sliding-window layers too: their cache is full-size, so no
        cell of a stream is written over before the stream is full."""
        llama_cpp = llama()
        batch, memory = self._prompt_batch, self.ctx.memory
        source, shared = self._source(head, self._streams())
        own = shared_prefix(inherited, head)
        if own >= max(shared, REUSE_MIN):
            llama_cpp.llama_memory_seq_rm(memory, seq, own, -1)
            shared = own
        elif shared >= REUSE_MIN:
            llama_cpp.llama_memory_seq_rm(memory, seq, -1, -1)
            llama_cpp.llama_memory_seq_cp(memory, source, seq, -1, -1)
            llama_cpp.llama_memory_seq_rm(memory, seq, shared, -1)
            if source in self._kept:  # used: the last to go
                self._kept[source] = self._kept.pop(source)
        else:
            llama_cpp.llama_memory_seq_rm(memory, seq, -1, -1)
            shared = 0
        self._use_free_cores()
        for start in range(shared, len(head), self._prompt_tokens):
            chunk = head[start:start + self._prompt_tokens]
            for i, token in enumerate(chunk):
                batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, start + i, 1, 0
                batch.seq_id[i][0] = seq
            batch.n_tokens = len(chunk)
            if llama_cpp.llama_decode(self.ctx.ctx, batch) != 0:
                return False
        self.tokens_read += len(head) - shared
        self.tokens_reused += shared
        return True

    def _use_free_cores(self) -> int:
        """The batch's context on as many threads as cores are free now, one fewer while a visitor's short work
        runs in this process (a thread whose core is taken stalls the others at every layer: cpu_share.py); the
        count is given to the reader too."""
        threads = less_for_foreground(min(self.most, self._watch.look()))
        if threads != self.threads:
            llama().llama_set_n_threads(self.ctx.ctx, threads, threads)
            self.threads = threads
        return threads

    def _step(self) -> None:
        """One token for every reply in the batch."""
        llama_cpp = llama()
        self._use_free_cores()
        batch = self._batch
        for i, job in enumerate(self._active):
            batch.token[i] = job.tokens[-1]
            batch.pos[i] = len(job.tokens) - 1
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = job.seq
            batch.logits[i] = 1
        batch.n_tokens = len(self._active)
        code = llama_cpp.llama_decode(self.ctx.ctx, batch)
        if code != 0:
            raise EngineError(_("llama.cpp could not write the next tokens (code {code}).", code=code))
        finished = []
        for i, job in enumerate(self._active):
            job.cached = len(job.tokens)
            token = self._draw(job, i)
            if llama_cpp.llama_vocab_is_eog(self.vocab, token) or job.add(self._piece(token)):
                finished.append(job)
                continue
            job.tokens.append(token)
            job.written += 1
            if job.written >= job.sampling.max_tokens:
                finished.append(job)
        if finished:
            with self._cond:
                for job in finished:
                    self._active.remove(job)
                    job.finish()
                    self._end(job)

    def _piece(self, token: int) -> bytes:
        """The token's bytes as the reply's text has them (not control tokens' names)."""
        llama_cpp = llama()
        buffer = ctypes.create_string_buffer(64)
        n = llama_cpp.llama_token_to_piece(self.vocab, token, buffer, 64, 0, False)
        return buffer.raw[:max(0, n)]

    def _draw(self, job: BatchReply, i: int) -> int:
        """The next token from the batch's i-th logits, drawn as create_completion draws (see the docstring)."""
        import numpy as np

        llama_cpp = llama()
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.ctx.ctx, i), shape=(self.n_vocab,))
        if job.ban is not None:
            logits[:] = job.ban(job.tokens, logits)
        penalise(logits, job.tokens[job.prompt:][-PENALTY_LAST_N:], job.sampling.repetition_penalty)
        chain = _chain(job.sampling, job.seed)
        try:
            return llama_cpp.llama_sampler_sample(chain, self.ctx.ctx, i)
        finally:
            llama_cpp.llama_sampler_free(chain)

    def _end(self, job: BatchReply, failure: BaseException | None = None) -> None:
        if failure is None:
            self._keep(job)
        if job.seq >= 0:
            llama().llama_memory_seq_rm(self.ctx.memory, job.seq, -1, -1)
        job.failure = failure
        job.done.set()


def penalise(logits, recent: list[int], penalty: float) -> None:
    """llama.cpp's repetition penalty, as create_completion's sampler applies it after the logits processors: each
    token among the reply's `recent` ones has its score divided by `penalty` where positive, multiplied where not
    (the sampler counts only the tokens it drew, not the prompt's). Without it the batch wrote other words than
    create_completion on the same weights (greedy: 4 of 4 prompts differed; with it, all 4 the same)."""
    import numpy as np

    if penalty == 1.0 or not recent:
        return
    seen = np.unique(np.asarray(recent, dtype=np.int64))
    scores = logits[seen]
    logits[seen] = np.where(scores <= 0, scores * penalty, scores / penalty)


def _chain(sampling: Sampling, seed: int):
    """The rest of the sampler chain llama-cpp-python builds for create_completion, after its penalties
    (`penalise`), made afresh for each token of the batch."""
    llama_cpp = llama()
    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())

    def add(sampler) -> None:
        llama_cpp.llama_sampler_chain_add(chain, sampler)

    if sampling.temperature == 0.0:
        add(llama_cpp.llama_sampler_init_greedy())
        return chain
    add(llama_cpp.llama_sampler_init_top_k(TOP_K))
    add(llama_cpp.llama_sampler_init_typical(1.0, 1))
    add(llama_cpp.llama_sampler_init_top_p(sampling.top_p, 1))
    add(llama_cpp.llama_sampler_init_min_p(0.0, 1))
    add(llama_cpp.llama_sampler_init_temp(sampling.temperature))
    add(llama_cpp.llama_sampler_init_dist(seed))
    return chain
