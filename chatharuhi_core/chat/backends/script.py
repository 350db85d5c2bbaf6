"""The offline engine: no language model, the character answers with its own lines.

For each retrieved scene, every line spoken to the character and answered by it is a
candidate; the answer whose cue is most similar to the visitor's message wins. This is
retrieval, not generation, and the page says so.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

from ...embedding import cosine
from ...errors import EngineError
from ...roles.lines import parse_scene_lines
from .base import ChatRequest, EngineOptions, register_engine

CHUNK_CHARS = 3
CHUNK_DELAY_S = 0.012
CUE_WEIGHT = 0.6  # how much the cue's likeness counts against the answer's own
SCENE_WEIGHT = 0.25


_SENTENCE_END = re.compile(r"(?<=[.?!。？！…])\s*")


def _pieces(cue: str) -> list[str]:
    """The cue and, when it has several, each of its sentences: "Holmes, who are you? ..." """
    parts = [p.strip() for p in _SENTENCE_END.split(cue) if len(p.strip()) > 1]
    return [cue] + (parts if len(parts) > 1 else [])


def _sent(request: ChatRequest) -> list:
    """The scenes in the prompt (those that fitted the scene budget): what a model would read, so the script
    engine quotes from nothing more (equal footing in eval; the page shows these as the scenes used)."""
    return request.scenes[:request.packed]


def _candidates(request: ChatRequest) -> list[tuple[str, str, float]]:
    """(cue, answer, scene similarity) for every exchange with the role in the scenes sent."""
    names = request.role.speaker_names
    out: list[tuple[str, str, float]] = []
    for hit in _sent(request):
        spoken = [(s, t) for s, t in parse_scene_lines(hit.text) if s is not None and t]
        for (spk, cue), (nxt, answer) in zip(spoken, spoken[1:]):
            if spk not in names and nxt in names:
                out.append((cue, answer, hit.similarity))
    return out


def _rank(request: ChatRequest, pairs: list[tuple[str, str, float]]) -> list[float]:
    """Each (cue, answer, scene similarity)'s score as an answer to the query; an empty cue (a line the
    retrieved scenes do not hold) scores on the answer's likeness alone.

    A cue like the query means the answer fits the turn; an answer like the query means it is
    on the topic (the cue "Who is your enemy?" is answered with "Moriarty...").
    """
    pieces = [_pieces(c[0]) if c[0] else [] for c in pairs]
    flat = [p for ps in pieces for p in ps]
    vecs = request.embedder.embed([request.text] + flat + [c[1] for c in pairs])
    sims = cosine(vecs[:1], vecs[1:])[0]
    cue_sims, answer_sims = sims[: len(flat)], sims[len(flat):]
    scores, at = [], 0
    for i, ps in enumerate(pieces):
        cue = float(cue_sims[at : at + len(ps)].max()) if ps else 0.0
        at += len(ps)
        scores.append(CUE_WEIGHT * cue + (1 - CUE_WEIGHT) * float(answer_sims[i]) + SCENE_WEIGHT * pairs[i][2])
    return scores


def choose_line(request: ChatRequest) -> str:
    """The role's line that best answers the query, avoiding the last few answers given."""
    cands = _candidates(request)
    recent = {ex.reply for ex in request.history[-4:]} | set(request.avoid)
    fresh = [c for c in cands if c[1] not in recent] or cands
    if fresh and request.embedder is not None:
        scores = _rank(request, fresh)
        return fresh[max(range(len(fresh)), key=scores.__getitem__)][1]
    if fresh:
        return fresh[0][1]
    for hit in _sent(request):  # no exchange found: any line of the role
        for spk, text in parse_scene_lines(hit.text):
            if spk in request.role.speaker_names and text and text not in recent:
                return text
    return request.role.greeting or "……"


def score_lines(request: ChatRequest, lines: list[str]) -> list[float]:
    """The engine's own ranking of given lines as the answer (eval's next-line choice): a line found in the
    retrieved scenes scores as choose_line would score it there; any other on its likeness to the query."""
    if request.embedder is None:
        raise EngineError("The script engine needs the role's embedder to rank lines.")
    found: dict[str, list[tuple[str, str, float]]] = {}
    for cand in _candidates(request):
        found.setdefault(cand[1], []).append(cand)
    pairs = [p for line in lines for p in found.get(line, [("", line, 0.0)])]
    scores = _rank(request, pairs)
    best: dict[str, float] = {}
    for (_, line, _), score in zip(pairs, scores):
        best[line] = max(best.get(line, float("-inf")), score)
    return [best[line] for line in lines]


@register_engine(
    "script",
    "Offline: quote the script",
    "No language model. The character answers with its own line from the original scenes that "
    "best follows your message: it quotes the script, it does not invent.",
    uses_model=False,
    writes=False,
)
class ScriptEngine:
    name = "script"

    def __init__(self, options: EngineOptions | None = None):
        self.options = options or EngineOptions()

    def languages(self) -> None:
        """Any: it quotes the character's own lines, in the character's own language."""
        return None

    def stream(self, request: ChatRequest) -> Iterator[str]:
        if request.plain:
            raise EngineError("The offline script engine only quotes the character's lines; "
                               "it cannot write new text. Pick a model engine for this.")
        line = choose_line(request)
        for i in range(0, len(line), CHUNK_CHARS):
            if i:
                time.sleep(CHUNK_DELAY_S)  # paced like typing, so the page shows it arrive
            yield line[i : i + CHUNK_CHARS]

    def score(self, request: ChatRequest, lines: list[str]) -> list[float]:
        return score_lines(request, lines)
