"""Command line: `python -m chatharuhi_core chat --role ID [--llm NAME] [TEXT]` and friends."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .backends import backend_info, backend_names
from .config import Settings
from .errors import ChatHaruhiError


def _add_engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--llm", default=None, choices=backend_names(),
                   help="reply engine (default: openai when OPENAI_API_KEY or OPENAI_BASE_URL is set, else script)")
    p.add_argument("--model", help="model name for the engine (e.g. gpt-4o-mini)")
    p.add_argument("--base-url", help="base URL of an OpenAI-compatible server (e.g. http://127.0.0.1:8080/v1)")
    p.add_argument("--api-key", help="API key (default: OPENAI_API_KEY)")


def cmd_chat(args: argparse.Namespace) -> int:
    from .chatbot import ChatHaruhi

    settings = Settings.from_env()
    bot = ChatHaruhi(role_name=args.role, llm=args.llm or settings.default_backend, user_role=args.user_role,
                     model=args.model, base_url=args.base_url, api_key=args.api_key, settings=settings)
    name = bot.role.name
    if args.text:
        for delta in bot.stream(" ".join(args.text)):
            print(delta, end="", flush=True)
        print()
        return 0
    print(f"{name}: {bot.role.greeting}" if bot.role.greeting else f"Talking to {name}.")
    print("(Ctrl-D or /quit to leave)")
    while True:
        try:
            text = input(f"{bot.user_role}> ")
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        if text.strip() in {"/quit", "/exit"}:
            return 0
        if not text.strip():
            continue
        try:
            print(f"{name}: ", end="", flush=True)
            for delta in bot.stream(text):
                print(delta, end="", flush=True)
            print()
        except ChatHaruhiError as exc:
            print(f"\n[{exc}]")


def cmd_roles(args: argparse.Namespace) -> int:
    from .sources import bundled_roles

    for role in bundled_roles():
        facts = f"{role.series}, {role.language}, {len(role.stories)} scenes"
        print(f"{role.id:12} {role.name} ({facts}): {role.description}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .role import load_role_package

    role = load_role_package(args.path)
    portrait = role.image_path.name if role.image_path else "none"
    print(f"OK: {role.id} ({role.name}), {len(role.stories)} scenes, portrait: {portrait}")
    return 0


def cmd_engines(args: argparse.Namespace) -> int:
    for name in backend_names():
        info = backend_info(name)
        print(f"{name:8} {info.label}: {info.description}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m chatharuhi_core",
                                     description="Role-play chat grounded in a character's classic scenes.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("chat", help="talk to a character: one message, or a loop without TEXT",
                       description="Answer one message (TEXT) in character, or open an interactive loop.")
    p.add_argument("--role", required=True, help="bundled role id or name (see `roles`), or a role package folder")
    p.add_argument("--user-role", help="who you are in the story (default: the role's usual partner, e.g. Watson)")
    _add_engine_args(p)
    p.add_argument("text", nargs="*", metavar="TEXT", help="the message; leave out for a conversation")
    p.set_defaults(func=cmd_chat)

    p = sub.add_parser("roles", help="list the bundled characters", description="List the bundled characters.")
    p.set_defaults(func=cmd_roles)

    p = sub.add_parser("engines", help="list the reply engines", description="List the reply engines.")
    p.set_defaults(func=cmd_engines)

    p = sub.add_parser("validate", help="check a role package folder",
                       description="Validate a role package folder (docs/role-format.md).")
    p.add_argument("path", help="the role package folder")
    p.set_defaults(func=cmd_validate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ChatHaruhiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
