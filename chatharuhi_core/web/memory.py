"""The page's memory panel: the character's pinned memories of this conversation, listed, added, pinned from
the visitor's last message, rewritten and forgotten. Each function takes the visitor's Conversation and
returns a new one (page state is replaced, never changed in place), with a sentence for the visitor."""

from __future__ import annotations

import html

from ..chat.engines.base import engine_info, engine_names
from ..chat.lexical import tokens
from ..chat.memory import Memory
from ..chat.notes import valid_notes
from ..chat.when import shown
from ..errors import InputError
from ..i18n import N_, _, ngettext
from .chat import Conversation

SHOWN_RECALLS = 5  # recalled exchanges listed one by one; the rest are counted
QUOTES_ONLY = N_("The offline engine quotes the character's own lines, so its replies cannot use memories; "
                 "pick a model engine (local, OpenAI-compatible, Hugging Face) for replies that do.")

EMPTY = N_("No memories yet. Write a fact below (“my sister is Anna”) or pin your last message: the character "
           "keeps them for the rest of this conversation.")


def uses(reply: str, fact: str, asked: str = "") -> bool:
    """Whether a reply shows it used a fact: it repeats one of the words the fact adds to the message it answers
    (`asked`): "Gladstone" for "What is my dog called?", not "dog". Names, numbers and Chinese words of two
    characters count; function words and the speaker's name before ":" do not."""
    body = fact.split(":", 1)[1] if ":" in fact[:30] else fact
    said, known = set(tokens(reply)), set(tokens(asked))
    return any(t in said for t in tokens(body)
               if t not in known and len(t) > 1 and (not t.isascii() or len(t) > 2 or t.isdigit()))


def _quotes_only(conv: Conversation) -> bool:
    """Whether the last reply came from an engine that only quotes (it cannot use what it remembers)."""
    label = conv.last.stats.engine if conv.last is not None else ""
    return any(engine_info(n).label == label and not engine_info(n).writes for n in engine_names())


def memory_markdown(conv: Conversation | None) -> str:
    """The pins, numbered as the Forget list numbers them, each marked by whether the last reply's prompt held
    it (a pin made since then is waiting for the next reply) and, apart from that, whether the reply's words show
    it used it; then what else the last reply's prompt held."""
    pins = conv.memory.pins if conv else []
    last = conv.last if conv else None
    used = "\n\n".join(part for part in (used_memory_markdown(conv), notes_markdown(conv)) if part) if conv else ""
    if not pins:
        return "_" + _(EMPTY) + "_" + ("\n\n" + used if used else "")
    prompt = last.messages[0]["content"] if last is not None and last.messages else ""
    quotes = _quotes_only(conv)
    asked = conv.history[-1].text if conv.history else ""
    rows = []
    for n, pin in enumerate(pins, 1):
        where = " · " + _("from exchange {turn}", turn=pin.turn) if pin.turn else ""
        if last is None:
            mark = ""  # no reply yet: the first one will hold it
        elif pin.made_at >= len(conv.history):
            mark = " · ⏳ " + _("pinned after the last reply: the next one will hold it")
        elif f"- {pin.text}" in prompt:
            shown_use = "" if quotes else (" · ✅ " + _("the reply uses it") if uses(last.text, pin.text, asked)
                                           else " · " + _("the reply does not show it"))
            mark = " · 📥 " + _("in the last reply's prompt") + shown_use
        else:
            mark = " · ✂️ " + _("over the memory budget: not in the last reply's prompt")
        rows.append(f"{n}. {html.escape(pin.text, quote=False)}{where}{mark}")
    head = "**" + _("What the character remembers") + "**\n\n"
    return head + "\n".join(rows) + ("\n\n" + used if used else "")


def notes_markdown(conv: Conversation) -> str:
    """The conversation's dated notes still valid (an exchange they cover edited or deleted drops them until they
    are written again), with what they cover and who wrote them; "" when there are none."""
    notes = valid_notes(conv.memory.notes, conv.history)
    if not notes:
        return ""
    rows = ["- " + _("{heading} · by {engine}: {text}", heading=html.escape(n.heading(conv.history).strip("[]"),
                                                                           quote=False),
                     engine=html.escape(n.engine or _("an engine"), quote=False), text=html.escape(n.text, quote=False))
            for n in notes]
    return "**" + _("Notes on older stretches") + "**\n\n" + "\n".join(rows)


def used_memory_markdown(conv: Conversation) -> str:
    """What the last reply's prompt held beyond its system prompt: the history window, the notes and the earlier
    exchanges recalled, each with when it was said and why it came back, those the reply's words show it used
    first; how far indexing had got; and, for an engine that only quotes, that it cannot use them."""
    last = conv.last
    if last is None or not conv.history:
        return ""
    n = len(conv.history) - 1  # the last reply's own exchange is not part of what it remembered
    window = min(last.window, n)
    quotes = _quotes_only(conv)
    lines = ["**" + _("In the last reply's prompt") + "**"]
    if quotes and (conv.memory.pins or last.recalled or last.notes):
        lines.append("- 🎭 " + _(QUOTES_ONLY))
    if not n:
        lines.append("- 🪟 " + _("nothing earlier: it answered the conversation's first message"))
    elif window >= n:
        lines.append("- 🪟 " + ngettext("the whole conversation so far ({n} exchange) is in its history window; "
                                        "recall starts when older exchanges leave it",
                                        "the whole conversation so far ({n} exchanges) is in its history window; "
                                        "recall starts when older exchanges leave it", n))
    else:
        lines.append("- 🪟 " + (_("history window: exchanges {first}-{last}", first=n - window + 1, last=n) if window
                               else _("history window: empty (the budget holds no whole exchange)")))
    for note in last.notes:
        lines.append("- 🗒️ " + _("{heading} (written by {engine}): {text}",
                                 heading=html.escape(note.heading(conv.history).strip("[]"), quote=False),
                                 engine=html.escape(note.engine or _("an engine"), quote=False),
                                 text=html.escape(note.text, quote=False)))
    asked = conv.history[-1].text
    # each recalled exchange with whether the reply's words show it used it, those first
    marked = sorted(((r, not quotes and uses(last.text, r.text, asked)) for r in last.recalled), key=lambda x: not x[1])
    for r, used_it in marked[:SHOWN_RECALLS]:
        when = f" · {shown(r.at)}" if r.at else ""
        why = f" · {html.escape(r.why, quote=False)}" if r.why else ""
        mark = " · ✅ " + _("the reply uses it") if used_it else ""
        first = html.escape(r.text.splitlines()[0] if r.text else "", quote=False)
        turn = _("turn {turn}", turn=r.turn)
        lines.append(f"- 🔎 {turn}{when}{why}{mark}: {first[:160]}{'…' if len(first) > 160 else ''}")
    rest = marked[SHOWN_RECALLS:]
    if rest and (quotes or any(u for _r, u in rest)):
        lines.append("- 🔎 " + ngettext("and {n} more recalled exchange", "and {n} more recalled exchanges", len(rest)))
    elif rest:
        lines.append("- 🔎 " + ngettext("and {n} more recalled exchange (none of them shown in the reply)",
                                       "and {n} more recalled exchanges (none of them shown in the reply)", len(rest)))
    if n > window and not (last.recalled or last.notes):
        lines.append("- 🔎 " + _("nothing earlier matched this message"))
    done, total = last.indexed
    if total and done < total:
        lines.append("- ⏳ " + _("still indexing this conversation: {done} of {total} earlier exchanges by meaning when "
                                "this reply was written (all of them by words); the next replies use more",
                                done=done, total=total))
    return "\n".join(lines)


def memory_choices(conv: Conversation | None) -> list[tuple[str, int]]:
    """(label, number) for the list a memory is picked from to forget or rewrite."""
    pins = conv.memory.pins if conv else []
    return [(f"{n}. {pin.text[:60]}{'…' if len(pin.text) > 60 else ''}", n) for n, pin in enumerate(pins, 1)]


def _changed(conv: Conversation, change) -> tuple[Conversation, str]:
    new = conv.copy()
    try:
        said = change(new.memory)
    except InputError as exc:
        return conv, str(exc)
    return new, said


def remember_fact(conv: Conversation | None, text: str) -> tuple[Conversation | None, str]:
    if conv is None:
        return conv, _("Pick a character first.")

    def add(memory: Memory) -> str:
        return _("Remembered: {fact}", fact=memory.remember(text or "", made_at=len(conv.history)).text)
    return _changed(conv, add)


def pin_last_message(conv: Conversation | None, user_role: str) -> tuple[Conversation | None, str]:
    """Pin what the visitor said last (with their name in the story, as the character heard it)."""
    if conv is None or not conv.history:
        return conv, _("Send a message first; then it can be pinned.")
    turn = len(conv.history)
    ex = conv.history[-1]

    def pin(memory: Memory) -> str:
        said = f"{ex.user_role or user_role}: {ex.text}"  # as the character heard it, not a message
        return _("Pinned: {fact}", fact=memory.remember(said, turn, turn).text)
    return _changed(conv, pin)


def forget_memory(conv: Conversation | None, number: int | None) -> tuple[Conversation | None, str]:
    if conv is None or not number:
        return conv, _("Choose the memory to forget in the list.")
    return _changed(conv, lambda memory: _("Forgotten: {fact}", fact=memory.forget(int(number)).text))


def rewrite_memory(conv: Conversation | None, number: int | None, text: str) -> tuple[Conversation | None, str]:
    if conv is None or not number:
        return conv, _("Choose the memory to rewrite in the list, and write its new text above.")
    return _changed(conv, lambda memory: _("Rewritten: {fact}", fact=memory.edit(int(number), text or "").text))
