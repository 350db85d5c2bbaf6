"""Cut a script into classic scenes for one character (the paper, section 3.2).

Accepted lines: `Name:「line」` (ChatHaruhi style), `Name: line` / `名字：台词`, and screenplay
blocks (a NAME in capitals on its own line, the speech below it). Everything else is narration.

A small state machine walks the lines. A scene closes at a break (a slugline such as
`INT. ROOM - NIGHT`, `第三场`, `Scene 2`, a `***` rule, or a blank line where speeches are one
line each) or when the next line would push it past the length limit; then it carries the last
line over as the cue of the next. A closed scene is kept only if it holds at least one exchange:
someone speaks and the character answers.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..errors import ImportProblem
from ..i18n import _
from ..tokens import count_tokens
from .lines import lead_speaker
from .names import with_derived
from .role import HAN, Role, Story, derive_role_id, fill_system_prompt, guess_language

MAX_SCENE_TOKENS = 500
NARRATOR_NAMES = frozenset({"旁白", "narrator", "narration", "scene", "场景", "action"})

_BREAK = re.compile(
    r"^\s*(?:(?:INT|EXT|INT\./EXT|I/E)[.\s]|scene\s+\w+|act\s+\w+|第\s*[0-9一二三四五六七八九十百零两]+\s*[场幕回集章节]"
    r"|[-=*#~_·]{3,}\s*$|\[?\s*(?:cut to|fade in|fade out|dissolve to)\b)",
    re.IGNORECASE,
)
_BRACKETED = re.compile(r"^\s*([^:：「」\n]{1,30}?)\s*[:：]?\s*「(.*)」\s*$")
_COLON = re.compile(r"^\s*([^:：「」\n。，,.!?！？]{1,30}?)\s*[:：]\s*(.+)$")
_CUE = re.compile(r"^\s*([A-Z][A-Z0-9 .'\-]{0,30}?)\s*(?:\((?:V\.O\.|O\.S\.|O\.C\.|CONT'D|CONT’D)\))?\s*$")
_PAREN = re.compile(r"^\s*\(.*\)\s*$")


@dataclass(frozen=True)
class ScriptLine:
    kind: str  # "say", "narration" or "break"
    text: str = ""
    speaker: str = ""


def _speaker_name(raw: str) -> str:
    """`WATSON` -> `Watson`; `Holmes (quietly)` / `孙悟空（笑）` -> the name alone."""
    raw = re.sub(r"\s*[(（][^)）]*[)）]\s*", " ", raw).strip() or raw.strip()
    return raw.title() if raw.isupper() else raw


def read_lines(text: str) -> list[ScriptLine]:
    """Classify every line of a script; screenplay blocks become one `say` each."""
    raw = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks = any(_CUE.match(a) and b.strip() and not _CUE.match(b) and not _BREAK.match(a)
                 for a, b in zip(raw, raw[1:]) if a.strip() and any(ch.isalpha() for ch in a))
    out: list[ScriptLine] = []
    blanks = 0
    i = 0
    while i < len(raw):
        line = raw[i].strip()
        i += 1
        if not line:
            blanks += 1
            continue
        if blanks and (blanks >= 2 or not blocks):
            out.append(ScriptLine("break"))
        blanks = 0
        if _BREAK.match(line):
            out.append(ScriptLine("break"))
            continue
        m = _BRACKETED.match(line)
        if m:
            out.append(ScriptLine("say", m.group(2).strip(), _speaker_name(m.group(1))))
            continue
        if blocks and _CUE.match(line) and i < len(raw) and raw[i].strip():
            speech = []
            while i < len(raw) and raw[i].strip():
                if not _PAREN.match(raw[i]):
                    speech.append(raw[i].strip())
                i += 1
            out.append(ScriptLine("say", " ".join(speech), _speaker_name(_CUE.match(line).group(1))))
            continue
        m = _COLON.match(line)
        if m and m.group(1).strip().lower() not in NARRATOR_NAMES:
            out.append(ScriptLine("say", m.group(2).strip().strip("「」"), _speaker_name(m.group(1))))
            continue
        out.append(ScriptLine("narration", line))
    return out


@dataclass
class _Scene:
    lines: list[ScriptLine] = field(default_factory=list)
    tokens: int = 0


class SceneCutter:
    """The state machine: feed lines, collect finished scenes."""

    def __init__(self, is_role: Callable[[str], bool], role_name: str, max_tokens: int = MAX_SCENE_TOKENS):
        self.is_role = is_role
        self.role_name = role_name
        self.max_tokens = max_tokens
        self.scene = _Scene()
        self.scenes: list[str] = []

    def render(self, line: ScriptLine) -> str:
        if line.kind == "narration":
            return line.text
        who = self.role_name if self.is_role(line.speaker) else line.speaker
        return f"{who}:「{line.text}」"

    def _has_exchange(self) -> bool:
        other = False
        for line in self.scene.lines:
            if line.kind != "say":
                continue
            if self.is_role(line.speaker):
                if other:
                    return True
            else:
                other = True
        return False

    def close(self) -> None:
        if self._has_exchange():
            self.scenes.append("\n".join(self.render(x) for x in self.scene.lines))
        self.scene = _Scene()

    def feed(self, line: ScriptLine) -> None:
        if line.kind == "break":
            self.close()
            return
        n = count_tokens(self.render(line)) + 1
        if self.scene.lines and self.scene.tokens + n > self.max_tokens:
            last = self.scene.lines[-1]
            self.close()
            if last.kind == "say" and not self.is_role(last.speaker):  # the cue opens the next scene
                self.feed(last)
        self.scene.lines.append(line)
        self.scene.tokens += n

    def finish(self) -> list[str]:
        self.close()
        return self.scenes


def name_matcher(names: Iterable[str]) -> Callable[[str], bool]:
    """True for any spelling of the character's names: case-free, and for a surname in capitals."""
    wanted = {n.strip().casefold() for n in names if n.strip()}
    return lambda speaker: speaker.strip().casefold() in wanted


def cut_scenes(text: str, names: Iterable[str], max_tokens: int = MAX_SCENE_TOKENS) -> list[str]:
    names = [n for n in names if n.strip()]
    cutter = SceneCutter(name_matcher(names), names[0], max_tokens)
    for line in read_lines(text):
        cutter.feed(line)
    return cutter.finish()


def speakers(text: str) -> Counter:
    return Counter(line.speaker for line in read_lines(text) if line.kind == "say")


@dataclass(frozen=True)
class ScriptOptions:
    """What a role built from a script may be told besides its character's name: one value that `role build`
    and the importer fill in."""

    aliases: tuple[str, ...] = ()  # other names the character speaks under
    series: str = ""
    personality: str = ""
    role_id: str | None = None  # default: derived from the name (or the file's) and the text
    max_tokens: int = MAX_SCENE_TOKENS  # a scene is cut before it grows past this


def role_from_script(text: str, name: str | None, *, source_name: str,
                     options: ScriptOptions = ScriptOptions()) -> Role:
    """A role from a script: its scenes, a filled system prompt, a guessed partner and greeting."""
    aliases, series = options.aliases, options.series
    counts = speakers(text)
    if not counts:
        raise ImportProblem(
            _("{name} has no dialogue lines. Write them as `Name:「line」`, `NAME: line` or screenplay blocks "
              "(a NAME in capitals, the speech below).", name=source_name)
        )
    name = (name or "").strip() or lead_speaker(counts, source_name)
    names = [name, *aliases]
    scenes = cut_scenes(text, names, options.max_tokens)
    if not scenes:
        found = ", ".join(s for s, _n in counts.most_common(8))
        raise ImportProblem(
            _("No scene in {file} has {name} answering someone, so there are no scenes to use. Check the "
              "character's name; the speakers found are: {found}.", file=source_name, name=name, found=found)
        )
    is_role = name_matcher(names)
    lines = [x for x in read_lines(text) if x.kind == "say"]
    partners = Counter(a.speaker for a, b in zip(lines, lines[1:]) if is_role(b.speaker) and not is_role(a.speaker))
    cues = [a.text for a, b in zip(lines, lines[1:]) if is_role(b.speaker) and not is_role(a.speaker)
            and 4 <= len(a.text) <= 80]
    first = next((x.text for x in lines if is_role(x.speaker)), "")
    language = guess_language(" ".join(scenes[:10]))
    stories = [Story(f"scene-{i:04d}", s) for i, s in enumerate(scenes, 1)]
    return Role(
        id=options.role_id or derive_role_id(
            name if re.search(rf"[A-Za-z0-9{HAN}]", name) else source_name.rsplit(".", 1)[0], text),
        name=name,
        aliases=with_derived(name, [*aliases, *(s for s in counts if is_role(s))]),  # the forms it speaks under
        system_prompt=fill_system_prompt(name, series, options.personality),
        stories=stories,
        series=series,
        language=language,
        description=f"{len(stories)} scenes cut from {source_name}.",
        greeting=first,
        user_name=partners.most_common(1)[0][0] if partners else ("用户" if language == "zh" else "User"),
        examples=cues[:4],
        source=f"built from the script {source_name}",
    )
