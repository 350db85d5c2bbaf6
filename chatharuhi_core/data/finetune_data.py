"""Training rows for `finetune`, in the paper's s-R-D-H-q format, with eval's scenes held out.

A row is what the local engine will be shown, and what the character said:

    prompt     = [system: s_R] + [user: retrieved scenes D] + [history H as user/assistant] + [user: q]
    completion = [assistant: `Name:「line」`]

Every line of the character in every scene that eval does not hold out becomes a target. Its
context is built by the real chat path (ChatHaruhi.prepare): the role's system prompt, scenes
retrieved for the cue with the row's own scene (and every held-out scene) removed from retrieval,
the scene's earlier turns as history, and the cue. Budgets are the local engine's, counted in the
base model's tokens, so the model trains on the prompts it will see. Loss is on the completion only
(TRL's prompt-completion format).

More rows come from files: synthesize's openai.jsonl, and feedback export's sft-openai.jsonl
(CharacterGLM's self-refinement: the visitors' corrections). Preference pairs for DPO come from
feedback export's preference.jsonl.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..chat.engines.local.model import LOCAL_BUDGETS
from ..chat.prompt import Layout
from ..config import Budgets, Settings
from ..errors import InputError
from ..roles.lines import format_reply
from ..roles.role import Role
from .holdout import Case, HoldOut, leaked_lines
from .scene_turns import scene_turns
from .training_data import openai_problems

Counter = Callable[[str], int]


@dataclass(frozen=True)
class Row:
    """One training example: the prompt the engine sends, and the line it should answer with."""

    source: str  # where it came from: "scene:<role>:<scene>:<turn>" or "<file>:<line>"
    role_id: str
    prompt: list[dict]
    completion: list[dict]

    def record(self) -> dict:
        return {"source": self.source, "role": self.role_id, "prompt": self.prompt, "completion": self.completion}

    def text(self) -> str:
        return "\n".join(m["content"] for m in [*self.prompt, *self.completion])


@dataclass(frozen=True)
class Pair:
    """A preference: the same prompt, the corrected reply (chosen) over the model's (rejected)."""

    source: str
    prompt: list[dict]
    chosen: list[dict]
    rejected: list[dict]

    def record(self) -> dict:
        return {"prompt": self.prompt, "chosen": self.chosen, "rejected": self.rejected}

    def text(self) -> str:
        return "\n".join(m["content"] for m in [*self.prompt, *self.chosen, *self.rejected])


def scene_rows(role: Role, holdout: HoldOut, budgets: Budgets, count: Counter,
               settings: Settings | None = None, embedder=None) -> list[Row]:
    """Every answer of the role in the scenes eval does not hold out, with the prompt the chat path builds."""
    from ..chat.chatbot import ChatHaruhi

    held = holdout.scene_ids(role)
    # laid out as the local engine lays out a prompt and counted with the base model's tokenizer (no model is
    # opened: the script engine stands by, and rows never ask for a reply), so a model trains on what it is shown
    layout = Layout(scenes_last=True)
    rows = []
    for story in role.stories:
        if story.id in held:
            continue
        for turn in scene_turns(role, story):
            bot = ChatHaruhi(role=role, engine="script", settings=settings, embedder=embedder, budgets=budgets,
                             history=list(turn.context), user_role=turn.user_role,
                             exclude_scenes=[*held, story.id], ruler=count, layout=layout, read_ahead=False)
            request = bot.prepare(turn.text, turn.user_role)
            rows.append(Row(f"scene:{role.id}:{story.id}:{turn.index}", role.id, request.messages,
                            [{"role": "assistant", "content": format_reply(role.name, turn.reply)}]))
    return rows


def _jsonl(path: Path) -> Iterable[tuple[int, dict]]:
    """(line number, object) for each non-blank line; a sentence naming the line for anything else."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file.") from None
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; expected JSON Lines.") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raise InputError(f"{path}, line {n}, is not JSON; expected one JSON object per line.") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}, line {n}, is not a JSON object.")
        yield n, obj


def file_rows(path: Path) -> list[Row]:
    """Chat rows `{"messages": [...]}` (synthesize's openai.jsonl, feedback's sft-openai.jsonl)."""
    rows = []
    for n, obj in _jsonl(path):
        if "messages" not in obj:
            hint = " (that is a preference file: give it to --dpo)" if "chosen" in obj else ""
            raise InputError(f"{path}, line {n}, has no \"messages\": expected OpenAI chat rows like synthesize's "
                             f"openai.jsonl or feedback export's sft-openai.jsonl{hint}.")
        problems = openai_problems(obj)
        if problems:
            raise InputError(f"{path}, line {n}: {problems[0]}.")
        msgs = [{"role": m["role"], "content": m["content"]} for m in obj["messages"]]
        rows.append(Row(f"{path.name}:{n}", "", msgs[:-1], msgs[-1:]))
    if not rows:
        raise InputError(f"{path} holds no rows.")
    return rows


def preference_pairs(path: Path) -> list[Pair]:
    """feedback export's preference.jsonl: `{"prompt": [...], "chosen": [...], "rejected": [...]}`."""
    pairs = []
    for n, obj in _jsonl(path):
        missing = [k for k in ("prompt", "chosen", "rejected") if not isinstance(obj.get(k), list) or not obj[k]]
        if missing:
            raise InputError(f"{path}, line {n}, lacks {', '.join(missing)}: expected preference pairs like "
                             "feedback export's preference.jsonl.")
        for key in ("prompt", "chosen", "rejected"):
            if not all(isinstance(m, dict) and isinstance(m.get("content"), str) and m.get("role") for m in obj[key]):
                raise InputError(f"{path}, line {n}: every message in \"{key}\" needs a role and text content.")
        pairs.append(Pair(f"{path.name}:{n}", obj["prompt"], obj["chosen"], obj["rejected"]))
    if not pairs:
        raise InputError(f"{path} holds no preference pairs.")
    return pairs


def check_no_leak(items: Sequence[Row | Pair], cases: Sequence[Case]) -> None:
    """Refuse any row that carries a held-out line or cue: eval would be scoring what the model was taught."""
    for item in items:
        hit = leaked_lines(cases, item.text())
        if hit:
            case = hit[0]
            raise InputError(
                f"{item.source} contains the held-out scene {case.role.id}/{case.turn.scene_id} that eval scores "
                f"(\"{case.reference[:40]}…\"); training on it would leak the test. Remove that row, or make the "
                "data again with the held-out scenes left out (synthesize leaves them out).")


@dataclass
class Dataset:
    """Everything one run trains on, and what was left out."""

    rows: list[Row] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    held_out: dict[str, list[str]] = field(default_factory=dict)  # role id -> scene ids
    too_long: int = 0  # rows over the length limit, left out

    def fingerprint(self) -> str:
        """Changes whenever any row does: a resumed run must train on the same data."""
        h = hashlib.sha256()
        for item in [*self.rows, *self.pairs]:
            h.update(json.dumps(item.record(), ensure_ascii=False, sort_keys=True).encode())
        return h.hexdigest()[:16]


@dataclass(frozen=True)
class DatasetOptions:
    """What a run trains on besides the roles' scenes, and what it keeps out: one value finetune hands on whole
    (and records in its plan and manifest)."""

    holdout: HoldOut = HoldOut()  # eval's scenes, out of every row
    budgets: Budgets = LOCAL_BUDGETS  # the prompts' budgets, in the base model's tokens (the local engine's)
    data_files: tuple[Path, ...] = ()  # more rows: synthesize's openai.jsonl, feedback export's sft-openai.jsonl
    dpo_file: Path | None = None  # preference pairs (feedback export's preference.jsonl) for a DPO pass

    def __post_init__(self) -> None:
        if not isinstance(self.data_files, tuple):  # a list given is kept as a tuple: the value stays fixed
            object.__setattr__(self, "data_files", tuple(self.data_files))


def build_dataset(roles: Sequence[Role], count: Counter, options: DatasetOptions = DatasetOptions(), *,
                  settings: Settings | None = None, embedder=None,
                  progress: Callable[[int, int], None] | None = None) -> Dataset:
    """Scene rows for every role, plus rows from files, all checked against the held-out scenes."""
    holdout, budgets, data_files, dpo_file = options.holdout, options.budgets, options.data_files, options.dpo_file
    data = Dataset()
    cases = [c for role in roles for c in holdout.cases(role)]
    for role in roles:
        data.held_out[role.id] = sorted({c.turn.scene_id for c in cases if c.role.id == role.id})
    files = [file_rows(Path(p)) for p in data_files]  # read (and refused) before the slow part
    pairs = preference_pairs(Path(dpo_file)) if dpo_file else []
    for i, role in enumerate(roles):
        data.rows += scene_rows(role, holdout, budgets, count, settings, embedder)
        if progress:
            progress(i + 1, len(roles))
    for rows in files:
        data.rows += rows
    data.pairs = pairs
    check_no_leak([*data.rows, *data.pairs], cases)
    return data
