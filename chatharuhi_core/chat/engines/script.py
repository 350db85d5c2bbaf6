"""The offline engine: no language model, the character answers with its own lines.

For each retrieved scene, every line spoken to the character and answered by it is a
candidate. The one that best answers the visitor's message wins: like the message in meaning and words,
shaped as its answer ("who are you" wants the character saying who it is), following a cue like the
message, and never calling someone else by name ("呆子" is for 八戒, not for the master). This is
retrieval, not generation, and the page says so.
"""

from __future__ import annotations

import functools
import math
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ...embedding import cosine
from ...errors import EngineError
from ...i18n import N_, _
from ...roles.address import said_to
from ...roles.lines import parse_scene_lines
from ...roles.names import find_name, is_cjk
from ...roles.vocatives import vocatives
from ..asking import asked, fit, is_question
from ..lexical import tokens
from .base import ChatRequest, EngineBase, register_engine
from .cpu_share import foreground

CHUNK_CHARS = 3
CHUNK_DELAY_S = 0.012
# A line's score as the answer. What it says: its likeness to the message (the embedder), the message's
# rarer words it repeats, and its shape (asking.py). Where it was said: how like the message its cue was,
# the scene's likeness, and whether its cue came from the visitor's role. Chosen on held-out cases of
# other seeds than eval's default (see docs/eval).
W_MEANING = 0.4
W_CONTEXT = 0.2  # likeness to the exchange before (an elliptical "And do you have one?")
W_WORDS = 0.3
W_SHAPE = 0.1
W_ASKS_BACK = 0.05  # an answer that only asks back, to a question
W_CUE = 0.6
W_SCENE = 0.5
W_FROM_VISITOR = 0.1
W_CALLS_THEM = 0.05  # a line that calls the one it answers by name ("Watson", "师父")
ELSEWHERE = 1.0  # a line that calls someone else by name: last, unless nothing else is left
# Below this score no line answers the message, and the character deflects (`deflection`). Chosen on the
# tuning split of the visitor questions (bench/questions.py); the held-out split only measures it.
ANSWERS_AT = 0.525


_SENTENCE_END = re.compile(r"(?<=[.?!。？！…])\s*")


@dataclass(frozen=True)
class Candidate:
    """A line of the character in a scene sent, with the line before it (its cue) and who said that."""

    line: str
    cue: str = ""
    cue_by: str = ""
    scene_similarity: float = 0.0


def _pieces(cue: str) -> list[str]:
    """The cue and, when it has several, each of its sentences: "Holmes, who are you? ..." """
    parts = [p.strip() for p in _SENTENCE_END.split(cue) if len(p.strip()) > 1]
    return [cue] + (parts if len(parts) > 1 else [])


def _sent(request: ChatRequest) -> list:
    """The scenes in the prompt (those that fitted the scene budget): what a model would read, so the script
    engine quotes from nothing more (equal footing in eval; the page shows these as the scenes used)."""
    return request.scenes[:request.packed]


def _candidates(request: ChatRequest) -> list[Candidate]:
    """Every line of the role in the scenes sent that answers someone's line."""
    names = request.role.speaker_names
    out: list[Candidate] = []
    for hit in _sent(request):
        spoken = [(s, t) for s, t in parse_scene_lines(hit.text) if s is not None and t]
        for (spk, cue), (nxt, answer) in zip(spoken, spoken[1:]):
            if spk not in names and nxt in names:
                out.append(Candidate(answer, cue, spk, hit.similarity))
    return out


@functools.lru_cache(maxsize=32)
def _rarity(texts: tuple[str, ...]) -> dict[str, float]:
    """Inverse document frequency of each word over a role's scenes (a word in every scene counts little)."""
    df: dict[str, int] = {}
    for text in texts:
        for tok in set(tokens(text)):
            df[tok] = df.get(tok, 0) + 1
    n = len(texts)
    return {tok: math.log(1 + n / k) for tok, k in df.items()}


def _word_overlap(request: ChatRequest, lines: list[str]) -> list[float]:
    """The share of the message's words (weighted by rarity) that each line repeats: "Moriarty", "猴哥"."""
    rarity = _rarity(tuple(s.text for s in request.role.known_stories))
    unknown = math.log(1 + len(request.role.known_stories))
    asked_words = set(tokens(request.text))
    total = sum(rarity.get(t, unknown) for t in asked_words)
    if not total:
        return [0.0] * len(lines)
    return [sum(rarity.get(t, unknown) for t in asked_words & set(tokens(line))) / total for line in lines]


def _said_to(request: ChatRequest) -> str:
    """Who the reply is said to (roles/address.py), by the scenes' name for them; "" for no one in particular."""
    return request.role.addressing.speaker(said_to(request.text, request.user_role))


def _what_it_says(request: ChatRequest, lines: list[str], meaning: np.ndarray, context: np.ndarray,
                  to: str) -> list[float]:
    """Each line's score from its own words: likeness to the message and to the exchange before it, words
    repeated, shape, and whom it calls (`to`: who the reply is said to)."""
    ask = asked(request.text)
    own = request.role.speaker_names
    words = _word_overlap(request, lines)
    addressing = request.role.addressing
    unfit = _unfit(request, to)
    out = []
    for line, sim, before, overlap in zip(lines, meaning, context, words):
        score = W_MEANING * float(sim) + W_CONTEXT * float(before) + W_WORDS * overlap + W_SHAPE * fit(ask, line, own)
        if ask.question and is_question(line):
            score -= W_ASKS_BACK
        if unfit(line):
            score -= ELSEWHERE
        elif to and to in addressing.called(line, to):
            score += W_CALLS_THEM
        out.append(score)
    return out


def _likeness(request: ChatRequest, texts: list[str], lines: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cosine of each of `texts` and each line to the message, and of each line to the exchange before it
    (zeros when the conversation has none)."""
    before = request.history[-1] if request.history else None
    context = [f"{before.text}\n{before.reply}"] if before else []
    vecs = request.embedder.embed([request.text, *context, *texts, *lines])
    sims = cosine(vecs[: 1 + len(context)], vecs[1 + len(context):])
    n = len(texts)
    after = sims[1][n:] if context else np.zeros(len(lines))
    return sims[0][:n], sims[0][n:], after


def _rank(request: ChatRequest, cands: list[Candidate], to: str) -> list[float]:
    """Each candidate's score as the answer: what it says, and (for a line found in a scene) where it was said.
    A cue like the message means the answer fits the turn; an answer like the message means it is on the
    topic (the cue "Who is your enemy?" is answered with "Moriarty...")."""
    pieces = [_pieces(c.cue) if c.cue else [] for c in cands]
    flat = [p for ps in pieces for p in ps]
    lines = [c.line for c in cands]
    cue_sims, line_sims, context = _likeness(request, flat, lines)
    scores = _what_it_says(request, lines, line_sims, context, to)
    at = 0
    for i, (c, ps) in enumerate(zip(cands, pieces)):
        if ps:
            scores[i] += W_CUE * float(cue_sims[at : at + len(ps)].max()) + W_SCENE * c.scene_similarity
            scores[i] += W_FROM_VISITOR * (request.role.addressing.speaker(c.cue_by) == to)
        at += len(ps)
    return scores


MAX_SAID_CHARS = 300  # a greeting longer than this sets a scene: it is not said again as a reply
_MARKUP = re.compile(r"<[A-Za-z/][^>]*>|```")


def sayable(line: str) -> bool:
    """A line the character can say as a reply: not a page of markup (a card's greeting that carries a status
    panel's placeholder, which the page's display script turns into a whole HTML page) nor a scene-setting opening
    longer than MAX_SAID_CHARS."""
    return len(line) <= MAX_SAID_CHARS and not _MARKUP.search(line)


def _spare_lines(request: ChatRequest, taken: set[str]) -> list[Candidate]:
    """The role's other lines in the scenes sent (a scene's opening line, a line after narration), with no cue:
    what is left when every answer found calls someone else."""
    names = request.role.speaker_names
    return [Candidate(text, "", "", hit.similarity) for hit in _sent(request)
            for spk, text in parse_scene_lines(hit.text) if spk in names and text and text not in taken
            and sayable(text)]


def _unfit(request: ChatRequest, to: str) -> Callable[[str], bool]:
    """A line not to say to `to`: it calls someone else by name, or it speaks of `to` in the third person, or it
    holds a word that looks like calling someone (roles/vocatives.py) that calls no one there: not a name of
    `to` (or, in a group scene, of anyone present), nor a word the character said in its scenes to one of them.
    The learned names miss "哥哥" for 宋江 and "三将军" for 张飞; 宋江 is not the visitor."""
    addressing, role = request.role.addressing, request.role
    names = tuple(n for n in (request.cast or (to, request.user_role, request.visitor)) if n)
    present = {addressing.speaker(n) for n in names} | {to}
    own = tuple(n for n in role.speaker_names if n)

    def fits(word: str) -> bool:
        return (find_name(word, names) is not None or any(is_cjk(n) and len(n) >= 2 and n in word for n in names)
                or addressing.speaker(addressing.terms.get(word, "")) in present
                or any(addressing.speaker(w) in present for w in role.said_to.get(word, ()))
                or word.startswith(own))  # "亮惭愧": the character naming itself

    return lambda line: addressing.wrong_for(line, to) or not all(map(fits, vocatives(line, role.openers)))


def deflection(request: ChatRequest, to: str, avoid: set[str]) -> str:
    """What the character says when none of its lines answers: one of its greetings that fits `to` (written to
    open a talk, they ask the visitor what brings them), the one nearest the message; once those were all said
    lately, one of its own lines that asks back, said to no one else. Ends an unanswerable question in character
    instead of with an unrelated line. Empty when every one of them is in `avoid` (a regenerate that has had
    them all)."""
    role, unfit = request.role, _unfit(request, to)
    greetings = [g for g in role.greetings if not unfit(g) and sayable(g)]
    pool = [g for g in greetings if g not in avoid]
    if not pool:
        pool = list(dict.fromkeys(t for s in role.known_stories for spk, t in parse_scene_lines(s.text)
                                  if spk in role.speaker_names and t and is_question(t) and not unfit(t)
                                  and t not in avoid))
    if not pool:
        return ""
    if request.embedder is None or len(pool) == 1:
        return pool[0]
    sims = cosine(request.embedder.embed([request.text]), request.embedder.embed(pool))[0]
    return pool[int(np.argmax(sims))]


def _opening(role, to: str) -> str:
    """The last resort: the greeting that fits `to`, or any, when it can be said as a reply; else a silence."""
    said = role.fitting_greeting(to) or next(iter(role.greetings), "")
    return said if said and sayable(said) else "……"


@dataclass(frozen=True)
class _Ranked:
    """The lines a message could be answered with, fresh ones first tried, their scores, the best, and whether it
    answers (its score clears ANSWERS_AT, or it is the self-introduction a "who are you" asks for) and is fit to
    say to whom it answers."""

    fresh: list[Candidate]
    scores: list[float]
    best: int
    answers: bool


def _ranked(request: ChatRequest, recent: set[str]) -> _Ranked | None:
    """The candidates' ranking (None without candidates or an embedder)."""
    role, to = request.role, _said_to(request)
    unfit = _unfit(request, to)
    cands = _candidates(request)
    fresh = [c for c in cands if c.line not in recent] or cands
    if not fresh or request.embedder is None:
        return None
    if all(unfit(c.line) for c in fresh):
        fresh += [c for c in _spare_lines(request, recent | {c.line for c in fresh}) if not unfit(c.line)]
    scores = _rank(request, fresh, to)
    best = max(range(len(fresh)), key=scores.__getitem__)
    ask = asked(request.text)  # "who are you" is answered by the character saying who it is, whatever its score
    shaped = ask.kind == "who" and fit(ask, fresh[best].line, role.speaker_names) == 1.0
    return _Ranked(fresh, scores, best, not unfit(fresh[best].line) and (scores[best] >= ANSWERS_AT or shaped))


def _recent(request: ChatRequest) -> tuple[list[str], set[str]]:
    """The last few things it said, the greeting that opened the chat among them while the chat is short."""
    said = [request.role.fitting_greeting(_said_to(request)), *(ex.reply for ex in request.history)]
    return said, set(said[-4:]) | set(request.avoid)


def answers(request: ChatRequest) -> bool:
    """Whether one of the character's lines answers the message (else it would deflect): a group scene asks it
    of each character who might speak up to a line said to everyone (scene/order.py)."""
    ranked = _ranked(request, _recent(request)[1])
    return ranked is not None and ranked.answers


def choose_line(request: ChatRequest) -> str:
    """The role's line that best answers the query, avoiding the last few answers given; never one calling
    someone other than the one it answers, or speaking of them in the third person, while a line that does not
    is at hand; and when no line answers well enough (ANSWERS_AT), a deflection in character."""
    role, to = request.role, _said_to(request)
    unfit = _unfit(request, to)
    _said, recent = _recent(request)
    ranked = _ranked(request, recent)
    if ranked is not None:
        fresh, scores = ranked.fresh, ranked.scores
        if not ranked.answers:
            # a deflection; once a regenerate has had them all, the best line that is fit to say to them
            if said_back := deflection(request, to, recent):
                return said_back
            fit_ones = [i for i in range(len(fresh)) if not unfit(fresh[i].line)]
            if fit_ones:
                return fresh[max(fit_ones, key=scores.__getitem__)].line
            return _opening(role, to)
        return fresh[ranked.best].line
    cands = _candidates(request)
    fresh = [c for c in cands if c.line not in recent] or cands
    fit_for_visitor = [c for c in fresh if not unfit(c.line)]
    if fit_for_visitor or fresh:
        return (fit_for_visitor or fresh)[0].line
    for hit in _sent(request):  # no exchange found: any line of the role
        for spk, text in parse_scene_lines(hit.text):
            if spk in role.speaker_names and text and text not in recent and not unfit(text):
                return text
    return _opening(role, to)


def score_lines(request: ChatRequest, lines: list[str]) -> list[float]:
    """The engine's own ranking of given lines as the answer (eval's next-line choice), by what each line says:
    a held-out line has no scene to be found in, so where a line was said is left out for every line alike."""
    if request.embedder is None:
        raise EngineError(_("The script engine needs the role's embedder to rank lines."))
    if not lines:
        return []
    _score, meaning, context = _likeness(request, [], list(lines))
    return _what_it_says(request, list(lines), meaning, context, _said_to(request))


def next_line(request: ChatRequest) -> str:
    """Continue: the character's next line in the scene the reply so far ends with (a line quoted from it)."""
    names, reply = request.role.speaker_names, request.continuing.strip()
    for story in request.role.known_stories:
        own = [t for s, t in parse_scene_lines(story.text) if s in names and t]
        for line, after in zip(own, own[1:]):
            if reply.endswith(line.strip()):
                return after
    raise EngineError(_("The offline engine finds no next line of {name}'s after this reply in the classic scenes; "
                        "Regenerate for another, or pick a model engine to continue it.", name=request.role.name))


def visitor_line(request: ChatRequest) -> str:
    """Impersonate: a line of the visitor's role from the scenes sent (else from any of the character's scenes),
    not one they said already: the one most like the reply they answer (`request.text`), by the line or by the
    character's line it answered, in the scenes most like it."""
    who = request.role.addressing.speaker(request.user_role) or request.user_role
    said = {ex.text for ex in request.history}
    found: list[Candidate] = []
    anywhere = [(s.text, 0.0) for s in request.role.known_stories]
    for texts in ([(h.text, h.similarity) for h in _sent(request)], anywhere):
        for text, similarity in texts:
            spoken = [(s, t) for s, t in parse_scene_lines(text) if s is not None and t]
            for (spk, cue), (nxt, line) in zip([(None, "")] + spoken, spoken):
                if nxt == who and line not in said:
                    found.append(Candidate(line, cue if spk in request.role.speaker_names else "", spk or "",
                                           similarity))
        if found:
            break
    if not found:
        raise EngineError(_("The offline engine finds no line of {user}'s in {name}'s classic scenes to offer; type "
                            "your own, or pick a model engine.", user=request.user_role, name=request.role.name))
    if request.embedder is None or len(found) == 1:
        return found[0].line
    vecs = request.embedder.embed([request.text, *(c.cue or c.line for c in found)])
    sims = cosine(vecs[:1], vecs[1:])[0] + np.array([c.scene_similarity for c in found])
    return found[int(np.argmax(sims))].line


@register_engine(
    "script",
    N_("Offline: quote the script"),
    N_("No language model. The character answers with its own line from the original scenes that "
       "best follows your message: it quotes the script, it does not invent."),
    writes=False,
)
class ScriptEngine(EngineBase):
    def languages(self) -> None:
        """Any: it quotes the character's own lines, in the character's own language."""
        return None

    def stream(self, request: ChatRequest) -> Iterator[str]:
        if request.plain and request.task not in ("continue", "my_line"):
            raise EngineError(_("The offline script engine only quotes the character's lines; it cannot write new "
                                "text. Pick a model engine for this."))
        with foreground():  # a visitor's short work: a local model running beside it leaves it a core
            line = (next_line(request) if request.task == "continue" else
                    visitor_line(request) if request.task == "my_line" else choose_line(request))
        for i in range(0, len(line), CHUNK_CHARS):
            if i:
                time.sleep(CHUNK_DELAY_S)  # paced like typing, so the page shows it arrive
            yield line[i : i + CHUNK_CHARS]

    def score(self, request: ChatRequest, lines: list[str]) -> list[float]:
        return score_lines(request, lines)

    def answers(self, request: ChatRequest) -> bool:
        with foreground():
            return answers(request)
