"""The player's controls in `chat`'s loop: /swipe, /continue, /myline, /branch, /lines, /line, /persona, /note.

Each acts on the chat's tree (chat/tree.py) and the session file is written after it, as after a reply.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from dataclasses import replace

from .chat.persona import authors_note, read_persona
from .chat.swipes import position, replies_of
from .chat.transcript import ReplyMeta
from .chat.tree import ChatTree
from .errors import ChatHaruhiError, InputError
from .i18n import N_, _

HELP = N_("""  /swipe           another reply to your last message, kept beside the others (/swipes lists them)
  /swipe N         keep reply N of the last message: the story goes on from it
  /continue        the last reply goes on from where it stopped
  /myline          your next line written for you, to edit and send (your persona's voice)
  /branch [N]      a new line of the story after exchange N (default: the last); the old one is kept
  /lines, /line X  the story's lines; go to line X (its number or name); /parent goes back
  /persona [FILE]  whom you play (a .json or .txt file: name, then description); /persona off
  /note [D] TEXT   an author's note, D messages from the end (default 4); /note off
  /remember TEXT, /memories, /forget N   what the character keeps""")


def story_command(tree: ChatTree, line: str, save: Callable[[object | None], None],
                  prefill: Callable[[str], None]) -> bool:
    """Run `line` when it is one of the player's commands (True), else False. `save(reply)` writes the session
    (recording a reply's prompt when given); `prefill(text)` offers text as the next input."""
    command, _sep, rest = line.partition(" ")
    rest = rest.strip()
    handlers = {"/swipe": _swipe, "/swipes": _swipes, "/continue": _continue, "/myline": _my_line,
                "/branch": _branch, "/lines": _lines, "/line": _line, "/parent": _parent, "/persona": _persona,
                "/note": _note, "/help": _help}
    if command == "/impersonate":  # the old name (SillyTavern's), until the next release
        from .deprecated import renamed

        renamed("/impersonate", "/myline")
        command = "/myline"
    handler = handlers.get(command)
    if handler is None:
        return False
    try:
        handler(tree, rest, save, prefill)
    except ChatHaruhiError as exc:
        print(f"\n[{exc}]" if command in ("/swipe", "/continue", "/myline") and not rest else f"[{exc}]")
    return True


def _stream(streaming) -> None:
    for piece in streaming:
        print(piece, end="", flush=True)
    print()


def _slot(tree: ChatTree, reply) -> None:
    """The last exchange's metadata after a new reply to the same message: its id kept, the new prompt."""
    meta = tree.meta
    if meta and len(meta) >= len(tree.bot.history):
        meta[-1] = replace(meta[-1], messages=reply.messages, engine=reply.stats.engine, model=reply.stats.model)
    else:
        meta.append(ReplyMeta(uuid.uuid4().hex, reply.messages, reply.stats.engine, reply.stats.model))


def _swipe(tree: ChatTree, rest: str, save, prefill) -> None:
    bot = tree.bot
    if rest:
        if not rest.isdigit():
            raise InputError(_("Say which reply to keep by its number: /swipe 2 (/swipes lists them)."))
        ex = bot.keep(int(rest))
        print(f"{bot.role.name}: {ex.reply}\n"
              + _("[kept reply {n} of {total}]", n=position(ex) + 1, total=len(replies_of(ex))))
        save(None)
        return
    print(f"{bot.role.name}: ", end="", flush=True)
    streaming = bot.swipe()
    _stream(streaming)
    ex = bot.history[-1]
    print(_("[reply {n} of {total}; /swipe N keeps another]", n=position(ex) + 1, total=len(replies_of(ex))))
    _slot(tree, streaming.reply)
    save(None)


def _swipes(tree: ChatTree, rest: str, save, prefill) -> None:
    if not tree.bot.history:
        raise InputError(_("There is no reply yet."))
    ex = tree.bot.history[-1]
    for n, reply in enumerate(replies_of(ex), 1):
        print(f"{'*' if n == position(ex) + 1 else ' '} {n}. {reply}")


def _continue(tree: ChatTree, rest: str, save, prefill) -> None:
    bot = tree.bot
    streaming = bot.continue_reply()
    print(_("{name} (goes on): …", name=bot.role.name), end="", flush=True)
    _stream(streaming)
    _slot(tree, streaming.reply)
    save(None)


def _my_line(tree: ChatTree, rest: str, save, prefill) -> None:
    streaming = tree.bot.my_line()
    for _piece in streaming:
        pass
    text = streaming.reply.text.strip()
    print(_("[your line, to edit and send: {text}]", text=text))
    prefill(text)


def _branch(tree: ChatTree, rest: str, save, prefill) -> None:
    if rest and not rest.isdigit():
        raise InputError(_("Say after which exchange the branch starts: /branch 2 (0: from the greeting)."))
    before = tree.place.name
    bot = tree.branch(int(rest) if rest else None)
    if bot.history:
        print(_("[{line}: a new line of the story after exchange {n} of {before}; /lines lists them]",
                line=tree.place.name, n=len(bot.history), before=before))
    else:
        print(_("[{line}: a new line of the story from the greeting of {before}; /lines lists them]",
                line=tree.place.name, before=before))
    save(None)


def _lines(tree: ChatTree, rest: str, save, prefill) -> None:
    print("\n".join(tree.listing()))


def _show_last(tree: ChatTree) -> None:
    bot = tree.bot
    if bot.history:
        last = bot.history[-1]
        print(f"{last.user_role}: {last.text}\n{bot.role.name}: {last.reply}")


def _line(tree: ChatTree, rest: str, save, prefill) -> None:
    tree.switch(rest)
    print(_("[now on {line}, {n} exchanges]", line=tree.place.name, n=len(tree.bot.history)))
    _show_last(tree)
    save(None)


def _parent(tree: ChatTree, rest: str, save, prefill) -> None:
    tree.parent()
    print(_("[back on {line}, {n} exchanges]", line=tree.place.name, n=len(tree.bot.history)))
    _show_last(tree)
    save(None)


def _persona(tree: ChatTree, rest: str, save, prefill) -> None:
    bot = tree.bot
    if not rest:
        p = bot.player
        print(_("[you play {name}: {description}]", name=bot.user_role, description=p.description)
              if p and p.description else _("[you play {name}; no persona set]", name=bot.user_role))
        return
    player = None if rest == "off" else read_persona(rest)
    tree.bot.player = player  # one visitor for every line of the chat
    if player:
        tree.bot.user_role = player.name
    print(_("[you play {name}: {description}]", name=player.name, description=player.description)
          if player else _("[persona off]"))
    save(None)


def _said(note, without: str) -> str:
    """The author's note as the loop shows it, or `without` when there is none."""
    return _("[author's note at depth {depth}: {text}]", depth=note.depth, text=note.text) if note else without


def _note(tree: ChatTree, rest: str, save, prefill) -> None:
    bot = tree.bot
    if not rest:
        print(_said(bot.note, _("[no author's note]")))
        return
    depth, _sep, text = rest.partition(" ")
    note = None if rest == "off" else (authors_note(text, depth) if depth.isdigit() and text else authors_note(rest))
    for line in (tree.conversation, *tree.conversation.others):
        line.note = note
    print(_said(note, _("[author's note off]")))
    save(None)


def _help(tree: ChatTree, rest: str, save, prefill) -> None:
    print(_(HELP))


def prefill_next_input(text: str) -> None:
    """Offer `text` as the next line typed (readline, where the terminal has it), else leave it printed."""
    if not sys.stdin.isatty():
        return
    try:
        import readline
    except ImportError:
        return

    def once() -> None:
        readline.insert_text(text)
        readline.set_startup_hook(None)
    readline.set_startup_hook(once)
