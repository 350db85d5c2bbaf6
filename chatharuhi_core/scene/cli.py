"""`chat --role A --role B [--role C] [--order …] [TEXT]`: a scene on the command line.

Each line prints as `Name:「…」`. Without TEXT it is a loop in which the visitor's lines are
answered by the order's pick, and slash commands steer the scene.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..chat.engines import EngineChoice
from ..chat.engines.local.model import local_offer
from ..chat.languages import warn_language
from ..config import Settings
from ..errors import ChatHaruhiError
from ..i18n import N_, _
from ..roles.sources import load_role
from .scene import Scene, SceneSetup

HELP = N_("""/who            who is here, muted or not, and how talkative
/next NAME      make NAME speak now (even when muted)
/whisper NAME TEXT
                say TEXT to NAME alone: only NAME hears it, answers it and remembers it
/talk [N]       let the characters carry on for N lines (default 3); Ctrl-C stops
/mute NAME      NAME no longer volunteers      /unmute NAME
/join ROLE      a character joins (sees only what is said from now on)
/leave NAME     a character leaves
/quit           leave (Ctrl-D too)""")


def _speak(scene: Scene, who=None) -> bool:
    """Stream one character's line; False when nobody was free to speak."""
    member = scene.member(who) if isinstance(who, str) else who or scene.pick_next()
    if member is None:
        return False
    who = _("(privately) {name}", name=member.name) if scene.answers_privately(member) else member.name
    print(f"{who}:「", end="", flush=True)
    try:
        for delta in scene.stream_turn(member):
            print(delta, end="", flush=True)
    finally:
        print("」", flush=True)
    return True


def _who(scene: Scene) -> str:
    rows = []
    for m in scene.members:
        state = (_("here") if m.present else _("left")) + (_(", muted") if m.muted else "")
        rows.append("  " + _("{name} ({id}): {state}, talkativeness {talk}", name=m.name, id=m.role_id, state=state,
                             talk=format(m.talkativeness, ".1f")))
    return "\n".join(rows)


def split_whisper(scene: Scene, rest: str) -> tuple[str, str]:
    """`NAME TEXT` -> (member id, text); the longest leading words that name a member (names have spaces)."""
    words = rest.split()
    for n in range(len(words), 0, -1):
        try:
            return scene.member(" ".join(words[:n])).role_id, " ".join(words[n:])
        except ChatHaruhiError:
            continue
    return scene.member(words[0] if words else "").role_id, ""  # raises: the sentence naming who is here


def _said(scene: Scene, text: str, to: str | None = None) -> None:
    """The visitor's line (whispered `to` one member), the notes on who will not answer, and the answers."""
    scene.say(text, to)
    for note in scene.unheard(text, to):
        print(_("({note})", note=note))
    picked = scene.responders()
    if not picked and scene.state.order == "manual":
        print(_("(manual order: nobody answers until you name someone: /next NAME)"))
    for member in picked:
        _speak(scene, member)


def _save(scene: Scene, path: Path | None) -> None:
    if path is not None:
        from ..jsonl import replace_text

        replace_text(path, scene.dump())


def run_scene(args: argparse.Namespace, engine: EngineChoice, settings: Settings) -> int:
    """`chat` with several --role: a group scene, answered by `engine` (the command's choice)."""
    path = Path(args.session) if args.session else None
    if path is not None and path.exists():
        scene = Scene.load(path.read_bytes(), engine, settings=settings, setup=SceneSetup(seed=args.seed))
        if args.order:
            scene.state.order = args.order
    else:
        roles = [load_role(r) for r in args.role]
        user = args.user_role or roles[0].visitor_name
        setup = SceneSetup(order=args.order or "natural", allow_self=args.allow_self, seed=args.seed)
        scene = Scene(roles, engine, user_role=user, settings=settings, setup=setup)
    scene.check_cast()
    for member in scene.present:
        role = scene.bot(member).role
        offer = local_offer(scene.engine, role)
        warn_language(scene.engine, role, offer.name if offer else "")
    loading = scene.bot(scene.present[0]).loading_message()
    if loading:
        print(loading, file=sys.stderr, flush=True)
        scene.bot(scene.present[0]).load()
    if args.text:
        _said(scene, " ".join(args.text), scene.member(args.to).role_id if args.to else None)
        _save(scene, path)
        return 0
    names = ", ".join(m.name for m in scene.present)
    if scene.lines:
        print(_("(going on from {count} saved lines in {path})", count=len(scene.lines), path=path))
        for ln in scene.lines[-4:]:
            print(f"{ln.speaker}:「{ln.text}」")
    print(_("In this scene: {names}. You are {user}. /help for the commands, Ctrl-D to leave.", names=names,
            user=scene.user_role))
    while True:
        try:
            text = input(f"{scene.user_role}> ").strip()
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        if not text:
            continue
        try:
            if text.startswith("/"):
                if _command(scene, text) is False:
                    return 0
            else:
                _said(scene, text)
            _save(scene, path)
        except ChatHaruhiError as exc:
            print(_("[{why}]", why=exc))


def _command(scene: Scene, text: str) -> bool | None:
    word, _sep, rest = text.partition(" ")
    rest = rest.strip()
    if word in ("/quit", "/exit"):
        return False
    if word == "/who":
        print(_who(scene))
    elif word == "/next" and rest:
        _speak(scene, rest)
    elif word == "/whisper" and rest:
        to, said = split_whisper(scene, rest)
        if not said:
            print(_("(whisper what? /whisper NAME TEXT)"))
        else:
            _said(scene, said, to)
    elif word == "/talk":
        turns = int(rest) if rest.isdigit() else 3
        try:
            for _unused in range(turns):
                if not _speak(scene):
                    print(_("(the scene has come to a close)"))
                    break
        except KeyboardInterrupt:
            print(_("(stopped)"))
    elif word == "/mute" and rest:
        print(_("({name} is muted: speaks only when you use /next)", name=scene.mute(rest).name))
    elif word == "/unmute" and rest:
        print(_("({name} may speak again)", name=scene.mute(rest, False).name))
    elif word == "/join" and rest:
        print(_("({name} joins the scene)", name=scene.add(rest).name))
    elif word == "/leave" and rest:
        print(_("({name} leaves the scene)", name=scene.leave(rest).name))
    else:
        print(_(HELP))
    return None
