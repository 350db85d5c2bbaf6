"""Dialogue synthesis (paper, sec. 5.1-5.2): fine-tuning data answered by the chatbot itself.

Two sources of messages for each role:
- `scene`: a scene's opening, everything said before the character's first answer, is sent
  as the message (the scene itself is held out of retrieval, so the answer is not copied);
- `question`: new questions written Alpaca-style: an engine is shown a few (cue, answer) pairs
  from the role's scenes and asked for new things someone might say to the character. The
  script engine cannot write, so with it the questions come from the scenes' later cues and the
  role's example questions instead.

Each message is answered through ChatHaruhi (retrieval, system message, prompt) and the whole prompt
plus the reply becomes one training row. The work is a list of tasks with stable ids; every
finished one is appended to `dialogues.jsonl` at once, so a re-run skips what is done. The
OpenAI-chat and ShareGPT files are rewritten from it at the end of every run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..chat.engines import ChatRequest, Engine, EngineChoice, as_choice, writes
from ..chat.prompt import Exchange
from ..config import Settings
from ..deprecated import old_keyword
from ..embedding import Embedder
from ..errors import ChatHaruhiError, InputError
from ..jsonl import append_record, read_records, replace_text, write_all
from ..roles.role import Role
from .holdout import HoldOut, leaked_lines
from .scene_turns import scene_turns
from .training_data import openai_problems, openai_row, sharegpt_problems, sharegpt_row, training_messages

log = logging.getLogger(__name__)

DIALOGUES = "dialogues.jsonl"
QUESTIONS = "questions.jsonl"
OPENAI_FILE = "openai.jsonl"
SHAREGPT_FILE = "sharegpt.jsonl"
SEED_EXAMPLES = 3  # (cue, answer) pairs shown per request, as Alpaca's self-instruct does
ASK_PER_ROUND = 5
MAX_ROUNDS_PER_QUESTION = 3  # a weak model repeats itself; stop asking after this many rounds per wanted question


def normalize(text: str) -> str:
    """For de-duplication: case, width, punctuation and spacing do not make a new question."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[\W_]+", "", text)


def task_id(role_id: str, kind: str, text: str) -> str:
    return hashlib.sha1(f"{role_id}\n{kind}\n{normalize(text)}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Task:
    """One message to be answered by the chatbot."""

    role: Role
    kind: str  # "scene" or "question"
    user_role: str
    text: str
    context: tuple[Exchange, ...] = ()
    scene_id: str = ""

    @property
    def id(self) -> str:
        return task_id(self.role.id, self.kind, self.text)


def scene_tasks(role: Role, limit: int | None = None) -> list[Task]:
    """A scene's opening lines as the message the character answers first."""
    tasks = []
    for story in role.stories:
        turns = scene_turns(role, story)
        if turns:
            t = turns[0]
            tasks.append(Task(role, "scene", t.user_role, t.text, (), t.scene_id))
    return tasks[:limit] if limit is not None else tasks


def seed_pairs(role: Role) -> list[tuple[str, str, str]]:
    """(speaker, cue, answer) from every turn of every scene: the examples new questions imitate."""
    return [(t.user_role, t.text, t.reply) for s in role.stories for t in scene_turns(role, s)
            if len(t.text) <= 300]


def question_prompt(role: Role, examples: Sequence[tuple[str, str, str]], n: int) -> list[dict]:
    """The self-instruct request: a few real exchanges, then 'write n new ones'."""
    zh = (role.language or "").lower().startswith("zh")
    shown = "\n".join(
        f"{i}. {who}: {cue}\n   {role.name}: {answer}" for i, (who, cue, answer) in enumerate(examples, 1))
    if zh:
        ask = (f"下面是故事里别人对{role.name}说的话，以及{role.name}的回答：\n\n{shown}\n\n"
               f"请另写{n}句故事里的人可能会对{role.name}说的新话或提的新问题，和上面的不同。"
               f"每行一句，编号1到{n}，只写问题，不写回答。")
    else:
        ask = (f"Here are things people said to {role.name}{f' ({role.series})' if role.series else ''} "
               f"and what {role.name} answered:\n\n{shown}\n\n"
               f"Write {n} new things someone in the story might say or ask {role.name}, different from "
               f"these. One per line, numbered 1 to {n}. Write only the questions, no answers.")
    return [{"role": "system", "content": "You write varied, natural questions for a role-play dataset."},
            {"role": "user", "content": ask}]


# "Watson:", "Jonathan Harker:", "唐僧：" at the start of a line; "Tell me: why?" is left alone
_SPEAKER = re.compile(r"^(?:[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,3}|[\u4e00-\u9fff]{1,6})\s*[:：]\s*")
_NUMBERED = re.compile(r"^\s*(?:\d{1,2}\s*[.)、:：]|[-*•])\s*(.+?)\s*$")


def parse_questions(text: str, role: Role) -> list[str]:
    """The numbered or bulleted lines of a reply, without speaker labels, quotes or answers."""
    out = []
    for line in text.splitlines():
        m = _NUMBERED.match(line)
        if not m:
            continue
        q = m.group(1).strip().strip("\"'“”「」*").strip()
        q = _SPEAKER.sub("", q).strip().strip("\"'“”「」").strip()
        if any(q.startswith(f"{n}:") or q.startswith(f"{n}：") for n in role.speaker_names):
            continue
        if 4 <= len(q) <= 200 and _addressed(q):
            out.append(q)
    return out


_SECOND_PERSON = re.compile(r"\b(you|your|yours|yourself)\b|你|您", re.IGNORECASE)


def _addressed(line: str) -> bool:
    """A question, or words said to the character; small models also write narration about it."""
    return line.rstrip().endswith(("?", "？")) or bool(_SECOND_PERSON.search(line))


def generate_questions(role: Role, engine: Engine, wanted: int, seen: set[str], seed: int,
                       embedder: Embedder | None = None) -> list[str]:
    """Ask the engine for new questions until `wanted` new ones (not in `seen`) are found."""
    pairs = seed_pairs(role)
    if not pairs:
        return []
    rng = random.Random(f"{seed}:{role.id}:questions:{len(seen)}")
    found: list[str] = []
    for _ in range(max(1, wanted) * MAX_ROUNDS_PER_QUESTION):
        if len(found) >= wanted:
            break
        examples = rng.sample(pairs, min(SEED_EXAMPLES, len(pairs)))
        request = ChatRequest(messages=question_prompt(role, examples, ASK_PER_ROUND), role=role,
                              user_role=role.user_name, text="", embedder=embedder, plain=True)
        reply = "".join(engine.stream(request))
        for q in parse_questions(reply, role):
            key = normalize(q)
            if key and key not in seen:
                seen.add(key)
                found.append(q)
    return found[:wanted]


def corpus_questions(role: Role, wanted: int, seen: set[str], seed: int) -> list[str]:
    """For engines that cannot write: the scenes' later cues and the role's example questions."""
    pool = [t.text for s in role.stories for t in scene_turns(role, s)[1:]] + list(role.examples)
    random.Random(f"{seed}:{role.id}:corpus").shuffle(pool)
    found = []
    for q in pool:
        key = normalize(q)
        if len(found) < wanted and key and key not in seen:
            seen.add(key)
            found.append(q)
    return found


@dataclass
class SynthesisResult:
    out: Path
    done_before: int = 0
    answered: int = 0
    failed: int = 0
    duplicates: int = 0
    leaked: int = 0  # answers that copied a held-out line (near enough), left out
    rows: int = 0
    invalid: int = 0
    notes: list[str] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)


Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SynthesisOptions:
    """What a synthesis run makes, besides its roles and engine: one value the command line builds."""

    scenes: int | None = None  # scene openings per role (None: every one)
    questions: int = 10  # new questions per role
    seed: int = 0  # which examples are shown, which corpus questions are drawn
    holdout: HoldOut | None = HoldOut()  # the scenes eval holds out, left out of everything; None for none


@dataclass
class _Questions:
    """Where a run's questions come from and go: its engine (when it can write), folder, seed and result; one
    value, asked role by role."""

    engine: Engine
    can_write: bool
    wanted: int
    out: Path
    seed: int
    result: SynthesisResult
    embedder: Embedder

    def for_role(self, role: Role, seen: set[str]) -> list[str]:
        """This role's questions: those kept by an earlier run, topped up to `wanted`."""
        out, wanted = self.out, self.wanted
        kept = [r["question"] for r in read_records(out / QUESTIONS).records if r.get("role") == role.id]
        missing = wanted - len(kept)
        if missing > 0:
            seen |= {normalize(q) for q in kept}
            if self.can_write:
                new = generate_questions(role, self.engine, missing, seen, self.seed, self.embedder)
                origin = "generated"
            else:
                new = corpus_questions(role, missing, seen, self.seed)
                origin = "scenes"
            for q in new:
                append_record(out / QUESTIONS, {"role": role.id, "question": q, "origin": origin})
            kept += new
            if len(new) < missing:
                self.result.notes.append(f"{role.name}: {len(kept)} of {wanted} questions found (not enough new ones).")
        return kept[:wanted]


@old_keyword("llm", "engine")  # the paper's name for it
def synthesize(roles: Sequence[Role], out: Path, engine: str | Engine | EngineChoice = "script",
               options: SynthesisOptions = SynthesisOptions(), *, settings: Settings | None = None,
               progress: Progress | None = None) -> SynthesisResult:
    """Answer every scene opening and question of these roles; append each to `out/dialogues.jsonl`.

    The scenes eval holds out (`options.holdout`; None for none) are neither answered, nor shown as examples,
    nor retrieved, so that `finetune --data` can train on the result without leaking the test.
    """
    from ..chat.chatbot import ChatHaruhi

    settings = settings or Settings.from_env()
    if not roles:
        raise InputError("No roles to synthesize dialogues for.")
    engine = as_choice(engine).open(settings)
    can_write = writes(engine)
    out.mkdir(parents=True, exist_ok=True)
    result = SynthesisResult(out)
    questions, holdout = options.questions, options.holdout
    if not can_write and questions:
        result.notes.append("The script engine cannot write new questions; the questions come "
                            "from the scenes' later cues and the roles' example questions.")
    done = {r["id"] for r in read_records(out / DIALOGUES).records if "id" in r}
    result.done_before = len(done)
    probe = ChatHaruhi(role=roles[0], engine=engine, settings=settings)
    probe.load()
    held_cases = {r.id: holdout.cases(r) if holdout else [] for r in roles}
    held: dict[str, set[str]] = {rid: {c.turn.scene_id for c in cs} for rid, cs in held_cases.items()}
    asker = _Questions(engine, can_write, questions, out, options.seed, result, probe.embedder)
    tasks = _tasks(roles, held, options.scenes, asker.for_role if questions else lambda role, seen: [], result)
    todo = [t for t in tasks if t.id not in done]
    total = len(tasks)
    if progress:
        progress(total - len(todo), total)
    full = {r.id: r for r in roles}
    try:
        for i, task in enumerate(todo):
            role = full[task.role.id]
            bot = ChatHaruhi(role=role, engine=engine, settings=settings, embedder=probe.embedder,
                             history=list(task.context), user_role=task.user_role,
                             exclude_scenes=[*held[role.id], *([task.scene_id] if task.scene_id else ())],
                             read_ahead=False)
            if _answer_task(bot, task, i, held_cases[role.id], out, result) and progress:
                progress(total - len(todo) + i + 1, total)
    finally:
        export_formats(out, result)
    return result


def _tasks(roles: Sequence[Role], held: dict[str, set[str]], scenes: int | None, questions_for,
           result: SynthesisResult) -> list[Task]:
    """Each role's scene openings (up to `scenes`) and new questions (`questions_for(role, seen)`), once each,
    from the scenes eval does not hold out."""
    tasks: list[Task] = []
    seen_tasks: set[tuple[str, str]] = set()
    for role in roles:
        role = replace(role, stories=[s for s in role.stories if s.id not in held[role.id]])  # what synthesis sees
        openings = scene_tasks(role)
        seen = {normalize(t.text) for t in openings}
        role_tasks = openings[:scenes] if scenes is not None else openings
        role_tasks += [Task(role, "question", role.user_name, q) for q in questions_for(role, seen)]
        for t in role_tasks:
            key = (role.id, normalize(t.text))
            if key in seen_tasks:
                result.duplicates += 1
                continue
            seen_tasks.add(key)
            tasks.append(t)
    return tasks


def _answer_task(bot, task: Task, i: int, held_cases: list, out: Path, result: SynthesisResult) -> bool:
    """Answer one task and append it to dialogues.jsonl, unless it failed or quotes a held-out line (False)."""
    try:
        said = bot.answer(task.text, role=task.user_role)
    except ChatHaruhiError as exc:
        result.failed += 1
        log.warning("%s: %s", task.role.id, exc)
        if result.failed == i + 1 >= 3:  # nothing has worked: the engine is down
            raise ChatHaruhiError(f"The first {result.failed} answers all failed; stopping. {exc}") from None
        return False
    if leaked_lines(held_cases, said.text):  # eval would score a line the model was taught
        result.leaked += 1
        return False
    append_record(out / DIALOGUES, {
        "id": task.id, "role": task.role.id, "name": task.role.name, "kind": task.kind,
        "scene": task.scene_id, "user_role": task.user_role, "text": task.text, "reply": said.text,
        "engine": bot.engine_label, "model": bot.model_label,
        "messages": training_messages(said.messages, task.role.name, said.text),
    })
    result.answered += 1
    return True


def export_formats(out: Path, result: SynthesisResult | None = None) -> dict[str, Path]:
    """Rewrite openai.jsonl and sharegpt.jsonl from dialogues.jsonl: de-duplicated, turn order checked."""
    result = result or SynthesisResult(out)
    rows, seen = [], set()
    for rec in read_records(out / DIALOGUES).records:
        key = (rec.get("role"), normalize(rec.get("text", "")))
        if rec.get("id") in seen or key in seen:
            result.duplicates += 1
            continue
        seen |= {rec.get("id"), key}
        a, b = openai_row(rec["messages"]), sharegpt_row(rec["messages"])
        if openai_problems(a) or sharegpt_problems(b):
            result.invalid += 1
            continue
        rows.append((a, b))
    result.rows = len(rows)
    result.files = {"openai": out / OPENAI_FILE, "sharegpt": out / SHAREGPT_FILE, "dialogues": out / DIALOGUES,
                    "llamafactory": out / "dataset_info.json"}
    write_all(result.files["openai"], (a for a, _ in rows))
    write_all(result.files["sharegpt"], (b for _, b in rows))
    replace_text(result.files["llamafactory"], json.dumps(LLAMAFACTORY_INFO, indent=2) + "\n")
    return result.files


# How LLaMA-Factory reads the two files (copy this folder into its data/ and name a dataset in training)
LLAMAFACTORY_INFO = {
    "chatharuhi_sharegpt": {
        "file_name": SHAREGPT_FILE, "formatting": "sharegpt",
        "columns": {"messages": "conversations", "system": "system"},
    },
    "chatharuhi_openai": {
        "file_name": OPENAI_FILE, "formatting": "sharegpt",
        "columns": {"messages": "messages"},
        "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant",
                 "system_tag": "system"},
    },
}
