"""How the page draws a conversation: the greeting and the exchanges (through the card's display scripts), the
character's name and line, the reply's stats, the scenes and lore it drew on, its scene picture and the thumbs."""

from __future__ import annotations

import html

from ..chat.chatbot import Reply, ReplyStats
from ..chat.when import shown
from ..config import Settings
from ..i18n import _, ngettext
from ..roles.card_extras import regex_scripts
from ..roles.lorebook import Fired
from ..roles.placeholders import fill
from ..roles.regex_scripts import AI_OUTPUT, USER_INPUT
from ..roles.role import Role
from .chat import Conversation
from .common import LIST_SEPARATOR, lang_of
from .frames import on_page


def as_shown(role: Role, text: str, user_role: str | None = None) -> str:
    """A role's text as the page shows it: `{{user}}` as the visitor's name in the story (the role's
    default name until one is typed)."""
    return fill(text, role.name, (user_role or "").strip() or role.visitor_name)


def greeting_messages(role: Role, user_role: str | None = None) -> list[dict]:
    """The greeting, with `{{user}}` as the visitor's name in the story: the role's first one, or, when that one
    calls someone the visitor is not ("师父！" to a visitor who named themself 小明), the first of its other
    greetings that does not."""
    greeting = role.fitting_greeting((user_role or "").strip() or role.visitor_name) or next(iter(role.greetings), "")
    text = as_shown(role, greeting, user_role)
    return [{"role": "assistant", "content": text}] if text else []


def chat_messages(conv: Conversation, role: Role, user_role: str | None = None) -> list[dict]:
    """The chat as the page shows it: the greeting, then every finished exchange (through the card's display-only
    regex scripts, by each message's depth from the end, as SillyTavern draws them)."""
    msgs = greeting_messages(role, user_role)
    for ex in conv.history:
        msgs.append({"role": "user", "content": ex.text})
        msgs.append({"role": "assistant", "content": ex.reply})
    return shown_by_scripts(role, msgs, (user_role or "").strip() or role.visitor_name)


def shown_by_scripts(role: Role, msgs: list[dict], user_role: str) -> list[dict]:
    """Messages with the card's display-only regex scripts applied (the messages themselves when it has none)."""
    if not regex_scripts(role):
        return msgs
    last = len(msgs) - 1
    return [{**m, "content": on_page(role, m["content"], USER_INPUT if m["role"] == "user" else AI_OUTPUT, last - i,
                                     user_role)} for i, m in enumerate(msgs)]


def describe_role(role: Role, user_role: str | None = None) -> str:
    """The name (a level-2 heading, under the page's title) and one line about the character and its work: in the
    visitor's language where the package gives them in it (role.json's translations), else in the role's own. The
    name stays as the character is called in its story."""
    from ..i18n import language  # the visitor's, at the time of the event

    own, about = role.described(), role.described(language())
    lang, name = lang_of(role), html.escape(role.name)
    if about != own:
        lang, name = language(), f'<span lang="{lang_of(role)}">{name}</span>'  # the name in the role's language
    series = f" · <em>{html.escape(about.series)}</em>" if about.series else ""
    line = html.escape(as_shown(role, about.description, user_role))
    return f'<div lang="{lang}">\n\n## {name}{series}\n{line}{world_line(role)}\n\n</div>'


def world_line(role: Role) -> str:
    """The character's lorebook under its description: the world it holds (a card's own book, or a linked world-info
    file) and how many entries can come up in a reply ("" without one)."""
    from ..roles.worlds import linked_world

    if not role.lorebook:
        return ""
    world = linked_world(role) or role.lorebook.name
    n = sum(e.enabled for e in role.lorebook.entries)
    said = (ngettext("World info **{world}**: {n} entry", "World info **{world}**: {n} entries", n,
                     world=html.escape(world)) if world else
            ngettext("World info: {n} entry", "World info: {n} entries", n))
    return f"\n\n📖 {said}"  # a paragraph of its own: a phone shows each of #about's paragraphs on one line


def stats_line(stats: ReplyStats | None) -> str:
    """`Answered by <engine> · <model> · first token 0.42 s · 18.3 tokens/s (66 tokens in 3.9 s)`."""
    if stats is None:
        return ""
    model = f" · `{html.escape(stats.model)}`" if stats.model else ""
    speed = _("{rate} tokens/s", rate=format(stats.tokens_per_s, ".1f")) if stats.tokens_per_s else "–"
    cut = (" · ✂️ " + _("cut short (…): the model reached its length limit ({limit} tokens); Regenerate for another",
                       limit=stats.cut_at) if stats.cut_at else "")
    timing = _("first token {first} s · {speed} ({tokens} tokens in {total} s)", first=format(stats.first_token_s, ".2f"),
               speed=speed, tokens=stats.tokens, total=format(stats.total_s, ".1f"))
    return _("Answered by **{engine}**", engine=html.escape(_(stats.engine))) + model + " · " + timing + cut


def memory_line(reply: Reply) -> str:
    """What memory the reply used, in a few words after its stats ("" when it used none): pinned facts, notes,
    earlier exchanges recalled (the Memories panel says which and why)."""
    parts = []
    if reply.pinned:
        parts.append(ngettext("{n} pinned fact", "{n} pinned facts", reply.pinned))
    if reply.notes:
        parts.append(ngettext("{n} note", "{n} notes", len(reply.notes)))
    if reply.recalled:
        turns = _(LIST_SEPARATOR).join(str(r.turn) for r in reply.recalled[:4]) + ("…" if len(reply.recalled) > 4
                                                                                  else "")
        parts.append(ngettext("turn {turns} recalled", "turns {turns} recalled", len(reply.recalled), turns=turns))
    return (" · 🧠 " + _("remembered {what}", what=_(LIST_SEPARATOR).join(parts))) if parts else ""


def lore_markdown(fired: list[Fired]) -> str:
    """The lorebook entries of the last reply: which fired, why, and which the budget left out."""
    if not fired:
        return ""
    rows = []
    for f in fired:
        mark = "📖" if f.used else "✂️"
        rows.append(f"- {mark} **{html.escape(f.entry.label, quote=False)}** · {html.escape(f.reason, quote=False)}")
    return "**" + _("Lorebook entries") + "**\n\n" + "\n".join(rows)


def scenes_markdown(conv: Conversation) -> str:
    """The lorebook entries and scenes retrieved for the last reply, marking those that fit the budgets."""
    last = conv.last
    if last is None or not (last.scenes or last.lore or last.recalled):
        return "_" + _("Send a message to see which classic scenes the reply drew on.") + "_"
    parts = [lore] if (lore := lore_markdown(last.lore)) else []
    if last.recalled:
        parts.append("**" + _("Recalled from earlier in this conversation") + "**")
        for r in last.recalled:
            when = f" · {shown(r.at)}" if r.at else ""
            why = f" · {html.escape(r.why)}" if r.why else ""
            turn, used = _("turn {turn}", turn=r.turn), _("in the prompt")
            parts.append(f"**{turn}**{when}{why} · {used}\n\n{_quoted(r.text)}")
    if last.scenes:
        parts.append("**" + _("Classic scenes") + "**")
    for i, hit in enumerate(last.scenes):
        used = _("in the prompt") if i < last.packed else _("over the budget, left out")
        similar = _("similarity {value}", value=format(hit.similarity, ".2f"))
        parts.append(f"**{i + 1}. {html.escape(hit.id)}** · {similar} · {used}\n\n{_quoted(hit.text)}")
    return "\n\n".join(parts)


def _quoted(text: str) -> str:
    return "\n>\n".join("> " + html.escape(line) for line in text.splitlines() if line.strip())


_CAPTIONS: dict[tuple, object] = {}


def scene_image_for(role: Role, reply: str, settings: Settings) -> tuple[str, str] | None:
    """(path, caption) of the role's scene picture whose caption is closest in meaning to the reply."""
    if not role.scene_images:
        return None
    if not (reply or "").strip():
        first = role.scene_images[0]
        return str(first.path), first.caption
    from ..embedding import cosine, get_embedder

    embedder = get_embedder(settings.embedder)
    key = (role.id, tuple(i.caption for i in role.scene_images), embedder.name)
    if key not in _CAPTIONS:  # shared, read-only after the first computation
        _CAPTIONS[key] = embedder.embed([i.caption for i in role.scene_images])
    scores = cosine(embedder.embed([reply]), _CAPTIONS[key])[0]
    best = role.scene_images[int(scores.argmax())]
    return str(best.path), best.caption


def feedback_values(conv: Conversation, role: Role) -> list[str | None]:
    """The thumbs to show, one per assistant message (the greeting has none)."""
    values: list[str | None] = [None] * len(greeting_messages(role))
    for meta in conv.full_meta():
        values.append({"like": "Like", "dislike": "Dislike"}.get(meta.rating or ""))
    return values
