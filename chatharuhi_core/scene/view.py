"""What one member of a group scene sees: the lines it witnessed, what it recalls of those beyond its history
window, and the prompt for its turn. Memory follows witnessing (cast.SceneState.witnessed): a late joiner recalls
nothing said before it came."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ..chat.chatbot import ChatHaruhi
from ..chat.engines import ChatRequest
from ..chat.lexical import tokens
from ..chat.memory import Ask, Recalled, RecallQuery, Units, recall_block
from ..chat.prompt import Exchange, PromptParts, lay_out
from ..roles.lines import format_query
from .cast import Member, SceneLine, SceneState, mention_at

SCENE_RECALL_HEADER = "Earlier in this scene:\n"


def recall(state: SceneState, bot: ChatHaruhi, older: Sequence[int], vector, texts: Sequence[str] = ()) -> list[Recalled]:
    """The witnessed lines `older` (indices, beyond the member's history window) the cue brings up (by the
    meaning of `vector`'s rows and the words of `texts`), within the member's recall budget; each numbered
    as the transcript's line (1-based). `bot`: the member's conversation core."""
    b = bot.budgets
    lines = [state.lines[i] for i in older]
    query = RecallQuery(vector, tuple(tokens(" ".join(texts))))
    units = Units([_line_views(ln) for ln in lines], [format_query(ln.speaker, ln.text) for ln in lines],
                  [i + 1 for i in older])
    ask = Ask(query, bot.embedder, b.recall_tokens, b.recall_k, bot.count_tokens)
    return bot.memory.recall_among(units, ask, SCENE_RECALL_HEADER, "line")


def index_lines(state: SceneState, bot_of: Callable[[Member], ChatHaruhi]) -> None:
    """Embed every present member's witnessed lines now, after a line, while the visitor reads: its next
    turn's recall is then a matrix product. Each member's index holds what it heard, in order; a turn
    searches the part beyond its history window."""
    for m in state.present:
        bot = bot_of(m)
        if bot.budgets.recall_tokens > 0:
            bot.memory.index.sync([_line_views(state.lines[i]) for i in state.seen_at(m)], bot.embedder)


def member_request(state: SceneState, member: Member, bot: ChatHaruhi, avoid: Sequence[str] = ()) -> ChatRequest:
    """The member's prompt: its system prompt, its scenes, what it recalls of the lines it witnessed
    beyond its history, the recent lines it saw, and the lines for it to answer."""
    role = bot.role
    at = state.seen_at(member)
    seen = [state.lines[i] for i in at]
    own = [i for i, ln in enumerate(seen) if ln.role_id == member.role_id]
    cut = own[-1] + 1 if own else 0
    earlier, fresh = seen[:cut], seen[cut:]
    addressed = [ln for ln in fresh if mention_at(ln.text, member) is not None]
    cue = (addressed or fresh or seen[-1:] or [None])[-1]
    query = cue.text if cue else role.name
    recent, kept = _history_messages(earlier, member, bot.budgets.history_tokens, bot.count_tokens)
    older = at[:cut - kept]
    remembering = bool(older) and bot.budgets.recall_tokens > 0
    # memory is asked with the line addressed to it and with the newest line it heard (a question to
    # everyone after Holmes was named): the earlier lines nearest either come back
    newest = fresh[-1].text if fresh and fresh[-1].text != query else None
    texts = [query, newest] if remembering and newest else [query]
    vectors = bot.embed_turn(texts, remembering)
    drawn = bot.draw(query, vectors, state.user_role, [ln.text for ln in seen])
    recalled = recall(state, bot, older, vectors[::-1], texts) if remembering else []  # the newest line first
    others = [m.name for m in state.present if m.role_id != member.role_id]
    note = (f"\n\nThis is a scene with {', '.join(others)} and {state.user_role}. Speak only as {role.name}: "
            "one line, and never write the others' lines.")
    if fresh:
        last = "\n".join(format_query(ln.speaker, ln.text) for ln in fresh)
    else:  # it spoke last (a forced turn) or nothing was said yet: the narrator hands it the word
        last = (f"旁白:{role.name}接着说。" if role.language.startswith("zh")
                else f"narrator:{role.name} speaks next.")
    memory = recall_block(recalled, SCENE_RECALL_HEADER, "line") if recalled else ""
    parts = PromptParts(drawn.system + note, recent, drawn.after, drawn.packed, memory, last,
                        character_note=bot.character_note(state.user_role))
    # the classic scenes right after the system prompt, whatever the engine: a member's prompt changes with
    # every line, so there is no start to read ahead
    messages = lay_out(parts, replace(bot.layout, scenes_last=False))
    history = [Exchange(a.speaker, a.text, b.text) for a, b in zip(seen, seen[1:])
               if b.role_id == member.role_id and a.role_id != member.role_id]
    return ChatRequest(messages=messages, role=role, user_role=cue.speaker if cue else state.user_role,
                       text=query, scenes=drawn.scenes, history=history, embedder=bot.embedder,
                       avoid=tuple(avoid), visitor=state.user_role, packed=len(drawn.packed), lore=drawn.lore,
                       cast=(state.user_role, *(n for m in state.present for n in m.names())),
                       recalled=recalled, pinned=len(bot.pinned()))


def _line_views(ln: SceneLine) -> tuple[str, str]:
    """What a line is indexed by for recall: with its speaker, and its words alone (see chat.memory)."""
    return format_query(ln.speaker, ln.text), ln.text


def _history_messages(lines: Sequence[SceneLine], member: Member, budget: int, count) -> tuple[list[dict], int]:
    """Earlier lines, newest first while they fit; the member's own as assistant, the rest grouped as user.
    Also how many of the last `lines` are held (the older ones are for memory to recall)."""
    kept: list[SceneLine] = []
    used = 0
    for ln in reversed(lines):
        n = count(format_query(ln.speaker, ln.text))
        if used + n > budget:
            break
        kept.append(ln)
        used += n
    kept.reverse()
    while kept and kept[0].role_id == member.role_id:  # a prompt's history opens with someone else's line
        kept.pop(0)
    messages: list[dict] = []
    for ln in kept:
        role = "assistant" if ln.role_id == member.role_id else "user"
        text = format_query(member.name if role == "assistant" else ln.speaker, ln.text)
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": role, "content": text})
    return messages, len(kept)
