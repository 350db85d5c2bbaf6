"""The turns of a scene: what was said to the character, and what the character answered.

Evaluation holds out a scene's last turn and asks a model for it; synthesis asks the chatbot
to answer a scene's opening. Both need the same reading of a scene as a dialogue with the role:
every line of the role answers the lines before it since its previous line.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..chat.prompt import Exchange
from ..roles.lines import format_query, parse_scene_lines
from ..roles.placeholders import fill
from ..roles.role import Role, Story


@dataclass(frozen=True)
class Turn:
    """One answer of the character in a scene, with what led to it."""

    scene_id: str
    index: int  # 0 for the scene's first answer
    context: tuple[Exchange, ...]  # the scene's earlier turns, as conversation history
    user_role: str  # who the cue is spoken by (a narrator role when several people speak)
    text: str  # the cue: everything said since the character's previous line
    reply: str  # the character's own line
    last: bool  # the scene ends with this line

    @property
    def query(self) -> str:
        return format_query(self.user_role, self.text)


def narrator_for(role: Role) -> str:
    """The narration speaker in the role's language, as the scenes write it."""
    return "旁白" if (role.language or "").lower().startswith("zh") else "narrator"


def _cue(lines: list[tuple[str | None, str]], narrator: str) -> tuple[str, str]:
    """(speaker, text) for the lines before an answer: one speaker keeps their name."""
    speakers = {spk for spk, _ in lines if spk}
    if len(speakers) == 1:
        (who,) = speakers
        parts = [t if spk else f"({t})" for spk, t in lines]
        return who, " ".join(parts)
    if not speakers:
        return narrator, " ".join(t for _, t in lines)
    return narrator, "\n".join(f"{spk}:「{t}」" if spk else t for spk, t in lines)


def scene_turns(role: Role, story: Story) -> list[Turn]:
    """Every answer of the role in the scene; two lines of the role in a row count as one answer."""
    names = role.speaker_names
    narrator = narrator_for(role)
    lines = parse_scene_lines(fill(story.text, role.name, role.user_name))  # a card's {{user}}: the default name
    turns: list[Turn] = []
    pending: list[tuple[str | None, str]] = []
    for i, (spk, text) in enumerate(lines):
        if spk not in names:
            pending.append((spk, text))
            continue
        last = i == len(lines) - 1
        if not pending:
            if turns:  # the character goes on speaking: the same answer grows
                prev = turns[-1]
                turns[-1] = Turn(prev.scene_id, prev.index, prev.context, prev.user_role, prev.text,
                                 f"{prev.reply}\n{text}", last)
            continue  # a scene opening with the character's own line has no cue to answer
        who, cue = _cue(pending, narrator)
        context = tuple(Exchange(t.user_role, t.text, t.reply) for t in turns)
        turns.append(Turn(story.id, len(turns), context, who, cue, text, last))
        pending = []
    return turns
