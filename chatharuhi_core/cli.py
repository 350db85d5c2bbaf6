"""Command line: `python -m chatharuhi_core chat --role ID [--engine NAME] [TEXT]` and friends."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from . import i18n
from .chat.engines import EngineChoice, engine_info, engine_names
from .cli_parser import ArgumentParser
from .config import Settings
from .errors import ChatHaruhiError, InputError
from .i18n import N_, _
from .scene.order import order_names


class _OldFlag(argparse.Action):
    """A flag's old spelling (--llm, kept out of --help) still works for one release and says its new name."""

    def __call__(self, parser, namespace, values, option_string=None):
        new = "--" + self.dest.replace("_", "-")
        print(_("{old} is now {new}; the old name works until the next release.", old=option_string, new=new),
              file=sys.stderr)
        setattr(namespace, self.dest, values)


def _add_engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", default=None, choices=engine_names(),
                   help=_("reply engine (default: openai when OPENAI_API_KEY or OPENAI_BASE_URL is set, else script)"))
    p.add_argument("--llm", dest="engine", choices=engine_names(), action=_OldFlag, help=argparse.SUPPRESS)
    p.add_argument("--model", help=_("model for the engine: gpt-4o-mini (openai), a Hub id (hf), "
                                     "a folder, .gguf file or Hub id (local; blank = bundled SmolLM2)"))
    p.add_argument("--base-url", help=_("base URL of an OpenAI-compatible server (e.g. http://127.0.0.1:8080/v1), "
                                        "or of an Inference Endpoint or TGI server (hf)"))
    p.add_argument("--api-key", help=_("API key or HF token (default: OPENAI_API_KEY, or HF_TOKEN for hf)"))
    p.add_argument("--fold-prompt", action="store_true", default=None,
                   help=_("no system message and no two user messages in a row, for servers that reject them"))
    p.add_argument("--stats", action="store_true",
                   help=_("after each reply, print the engine, time to first token and speed to stderr"))


def _print_stats(reply, wanted: bool) -> None:
    stats = reply.stats if reply else None
    if wanted and stats:
        engine = f"{stats.engine} ({stats.model})" if stats.model else stats.engine
        print(_("[{engine}: first token {first:.2f} s, {speed:.1f} tokens/s, {tokens} tokens in {total:.1f} s]",
                engine=engine, first=stats.first_token_s, speed=stats.tokens_per_s,
                tokens=stats.tokens, total=stats.total_s), file=sys.stderr)


class _Session:
    """`chat --session FILE`: the chat file the page exports and imports, continued and saved here (with its
    other lines, alternatives, persona and author's note)."""

    def __init__(self, path: str | None):
        self.path = Path(path) if path else None

    def load(self, role_ref: str):
        """The chat saved in the file (a Transcript), or None; the role must be the same."""
        from .chat.transcript import load_chat
        from .roles.sources import load_role

        if self.path is None or not self.path.exists():
            return None
        t = load_chat(self.path.read_bytes())
        if t.role_id != load_role(role_ref).id:
            raise ChatHaruhiError(_("{file} is a chat with '{name}', not '{role}'. Use --role {id}, or another file.",
                                    file=self.path, name=t.role_name or t.role_id, role=role_ref, id=t.role_id))
        return t

    def save(self, tree, reply=None) -> None:
        """Write the chat's tree and memories; with `reply`, the exchange it completed is recorded first."""
        import uuid

        from .chat.transcript import ReplyMeta, dump_chat
        from .jsonl import replace_text

        if reply is not None:
            tree.meta.append(ReplyMeta(uuid.uuid4().hex, reply.messages, reply.stats.engine, reply.stats.model))
        if self.path is None:
            return
        replace_text(self.path, dump_chat(tree.transcript()))


def cmd_chat(args: argparse.Namespace) -> int:
    from .chat.chatbot import ChatHaruhi
    from .chat.conversation import from_transcript
    from .chat.engines.local.model import local_offer
    from .chat.languages import warn_language
    from .chat.persona import read_persona
    from .chat.tree import ChatTree

    settings = Settings.from_env()
    engine = engine_choice(args, settings)
    if args.audio:
        args.text = [*args.text, _heard(args.audio, args.speech_language, settings)]
    if len(args.role) > 1 or args.order or args.to:
        from .scene.cli import run_scene

        return run_scene(args, engine, settings)
    args.role = args.role[0]
    session = _Session(args.session)
    saved = session.load(args.role)
    player = read_persona(args.persona) if args.persona else (saved.persona if saved else None)
    user_role = args.user_role or (saved.user_role if saved else None) or (player.name if player else None)
    bot = ChatHaruhi(role_name=args.role, engine=engine, user_role=user_role, settings=settings, persona=player)
    if saved:  # the whole tree as the file holds it: the line in use, its records and memory, the other lines
        bot.conversation = from_transcript(saved)
    tree = ChatTree(bot)
    offer = local_offer(bot.engine, bot.role)
    warn_language(bot.engine, bot.role, offer.name if offer else "")  # before the first message
    loading = bot.loading_message()
    if loading:
        print(loading, file=sys.stderr, flush=True)
        bot.load()
    if args.text:
        _answer(tree, " ".join(args.text), args.stats, session)
        return 0
    return _chat_loop(tree, args.stats, session)


def _heard(audio: str, speech: str | None, settings: Settings) -> str:
    """The words of a recording (`chat --audio`), shown on stderr before the reply so a mishearing is plain."""
    from .chat.speech import transcribe

    heard = transcribe(audio, speech, settings=settings,
                       waiting=lambda place: print(_("(waiting to be heard: {n} ahead)", n=place), file=sys.stderr))
    print(_("(heard: {text})", text=heard.text), file=sys.stderr, flush=True)
    return heard.text


def cmd_transcribe(args: argparse.Namespace) -> int:
    """Print the words of a recording."""
    from .chat.speech import transcribe

    print(transcribe(args.audio, args.speech_language, settings=Settings.from_env()).text)
    return 0


def _answer(tree, text: str, stats: bool, session: _Session) -> None:
    """Stream one reply to stdout, then its stats (with --stats) and the session file."""
    streaming = tree.bot.stream(text)
    for delta in streaming:
        print(delta, end="", flush=True)
    print()
    _print_stats(streaming.reply, stats)
    session.save(tree, streaming.reply)


def _chat_loop(tree, stats: bool, session: _Session) -> int:
    """The interactive loop: a line, a reply, until Ctrl-D or /quit; a failed reply is a sentence in brackets."""
    from .chat.memory import in_background
    from .cli_story import prefill_next_input, story_command

    bot = tree.bot
    name = bot.role.name
    if bot.history:
        print(_("(going on from {n} saved exchanges in {file})", n=len(bot.history), file=session.path))
        last = bot.history[-1]
        print(f"{last.user_role}: {last.text}\n{name}: {last.reply}")
    else:
        print(f"{name}: {bot.fill(bot.role.fitting_greeting(bot.user_role) or bot.role.greeting)}"
              if bot.role.greeting else _("Talking to {name}.", name=name))
    print(_("(Ctrl-D or /quit to leave; /swipe, /continue, /myline, /branch, /persona, /note, /remember: "
            "/help lists them)"))
    # while the first message is typed: the local model reads the prompt's start, the scenes' store opens
    bot.read_ahead_now()
    in_background(bot.open_scenes, "opening the scenes")
    if len(bot.history) > 1:  # a long saved chat: its memory indexes while the first message is typed
        in_background(bot.index_ahead, "indexing the conversation")
    while True:
        try:
            text = input(f"{tree.bot.user_role}> ")
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        if text.strip() in {"/quit", "/exit"}:
            return 0
        if not text.strip():
            continue
        if text.strip().startswith("/") and (
                _memory_command(tree, text.strip(), session)
                or story_command(tree, text.strip(), lambda reply: session.save(tree, reply), prefill_next_input)):
            continue
        if re.fullmatch(r"/[a-z]+", text.strip().split(" ")[0]):
            print(_("[{command} is not a command here; /help lists them]", command=text.strip().split(" ")[0]))
            continue
        try:
            print(f"{tree.bot.role.name}: ", end="", flush=True)
            _answer(tree, text, stats, session)
        except ChatHaruhiError as exc:
            print(f"\n[{exc}]")


def _memory_command(tree, line: str, session: _Session) -> bool:
    """`/remember TEXT`, `/memories`, `/forget N`: True when `line` was one of them (handled here)."""
    bot = tree.bot
    command, _sep, rest = line.partition(" ")
    try:
        if command == "/remember":
            bot.remember(rest)
            print(_("[{name} will remember: {text}]", name=bot.role.name, text=bot.memory.pins[-1].text))
        elif command == "/forget":
            if not rest.strip().isdigit():
                raise InputError(_("Say which memory to forget by its number: /forget 2 (see /memories)."))
            print(_("[forgotten: {text}]", text=bot.forget(int(rest)).text))
        elif command == "/memories":
            kept = len(bot.pinned())
            if not bot.memory.pins:
                print(_("[no memories pinned yet: /remember TEXT]"))
            for n, pin in enumerate(bot.memory.pins, 1):
                where = _(" (from exchange {n})", n=pin.turn) if pin.turn else ""
                over = "" if n <= kept else _("  [over the memory budget: not in the prompt]")
                print(f"  {n}. {pin.text}{where}{over}")
            from .chat.notes import valid_notes

            for note in valid_notes(bot.memory.notes, bot.history):
                print(_("  {heading} {text} (written by {engine})", heading=note.heading(bot.history), text=note.text,
                        engine=note.engine or _("an engine")))
        else:
            return False
    except InputError as exc:
        print(f"[{exc}]")
        return True
    session.save(tree)
    return True


def cmd_roles(args: argparse.Namespace) -> int:
    from .roles.sources import bundled_roles

    for role in bundled_roles():
        told = role.described(i18n.language())  # the work and description in the reader's language, where written
        facts = _("{series}, {language}, {n} scenes", series=told.series, language=role.language, n=len(role.stories))
        print(_("{id:12} {name} ({facts}): {description}", id=role.id, name=role.name, facts=facts,
                description=told.description))
    if args.hub:
        from .roles.hub import hub_roles

        listed = hub_roles()
        print("\n" + _("On the Hugging Face Hub, fetched on first use ({n} roles):", n=len(listed)))
        group = None
        for hub_role in listed:
            if hub_role.group != group:
                group = hub_role.group
                print(f"\n  {group}")
            print(f"    {hub_role.ref:56} {hub_role.label} ({hub_role.series})")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Check any role source without keeping anything: imports go to a throw-away cache."""
    import tempfile

    from .roles.sources import ImportOptions, load_role

    with tempfile.TemporaryDirectory(prefix="chatharuhi-validate-") as tmp:
        settings = Settings.from_env().with_(cache_dir=Path(tmp))
        role = load_role(args.source, settings, ImportOptions(name=getattr(args, "name", None)))
        portrait = role.image_path.name if role.image_path else _("none")
        print(_("OK: {id} ({name}), {n} scenes, portrait: {portrait}", id=role.id, name=role.name,
                n=len(role.stories), portrait=portrait))
    return 0


def progress_bar(desc: str, unit: str = "scene"):
    """A (done, total) callback drawing a tqdm bar on stderr: `desc` in the language shown, `unit` tqdm's label of
    its rate (scene/s), as "it/s" is, left in English ("scene" is also a word for a group scene's file, 群戏)."""
    from tqdm import tqdm

    bar = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, initial=done, desc=desc, unit=unit, file=sys.stderr)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update


def _options(args: argparse.Namespace):
    from .roles.sources import ImportOptions

    return ImportOptions(name=args.name, aliases=tuple(args.alias or ()), series=args.series or "",
                         world_for=getattr(args, "link_to", None))


def cmd_role_import(args: argparse.Namespace) -> int:
    from .roles.card_extras import script_problems
    from .roles.export import export_role
    from .roles.sources import open_role
    from .roles.worlds import linked_world

    settings = Settings.from_env()
    role = open_role(args.source, settings, progress_bar(_("embedding scenes")), _options(args))
    print(_("Imported {name} as '{id}' ({n} scenes).", name=role.name, id=role.id, n=len(role.stories)))
    if linked_world(role):
        print(_("The world '{world}' is linked: its entries are in {name}'s lorebook.", world=linked_world(role),
                name=role.name))
    for problem in script_problems(role):
        print(problem, file=sys.stderr)
    if args.out:
        print(_("Wrote {path}", path=export_role(role, args.out, settings, progress=progress_bar(_("building store")))))
    print(_("Talk to it: python -m chatharuhi_core chat --role {id}", id=role.id))
    return 0


def cmd_role_build(args: argparse.Namespace) -> int:
    from .roles.export import export_role
    from .roles.safety import read_text
    from .roles.script_scenes import ScriptOptions, role_from_script

    settings = Settings.from_env()
    script = Path(args.script)
    options = ScriptOptions(aliases=tuple(args.alias or ()), series=args.series or "",
                            personality=args.personality or "", role_id=args.id, max_tokens=args.max_tokens)
    role = role_from_script(read_text(script), args.name, source_name=script.name, options=options)
    out = Path(args.out or role.id)
    export_role(role, out, settings, "folder" if not out.suffix else None, progress=progress_bar(_("embedding scenes")))
    print(_("Built {name}: {n} scenes from {script} -> {out}", name=role.name, n=len(role.stories), script=script.name,
            out=out))
    return 0


def cmd_role_export(args: argparse.Namespace) -> int:
    from .roles.export import export_role
    from .roles.sources import load_role

    settings = Settings.from_env()
    role = load_role(args.role, settings)
    fmt = args.format or None
    path = export_role(role, args.to, settings, fmt, progress=progress_bar(_("building store")))
    print(_("Wrote {name} to {path}", name=role.name, path=path))
    return 0


def cmd_role_push(args: argparse.Namespace) -> int:
    import tempfile

    from .roles.export import export_role
    from .roles.hub import check_push, push, push_plan
    from .roles.sources import load_role

    settings = Settings.from_env()
    check_push(args.repo, settings, online=not args.dry_run)
    role = load_role(args.role, settings)
    with tempfile.TemporaryDirectory(prefix="chatharuhi-push-") as tmp:
        folder = export_role(role, Path(tmp) / role.id, settings, "folder" if args.store else "folder-no-store",
                             progress=progress_bar(_("building store")))
        plan = push_plan(folder)
        if args.dry_run:
            print(_("Would upload {n} files to the dataset {repo}:", n=len(plan), repo=args.repo))
        else:
            print(_("Uploading {n} files to the dataset {repo}:", n=len(plan), repo=args.repo))
        for path, size in plan:
            print(_("  {path}  ({size:,} bytes)", path=path, size=size))
        if args.dry_run:
            return 0
        url = push(folder, args.repo, settings, private=args.private)
        print(_("Done: {url}", url=url))
    return 0


def cmd_speak(args: argparse.Namespace) -> int:
    """Read a line aloud in a role's voice into a file (edge-tts, else espeak-ng)."""
    import shutil

    from .chat.voice import DEFAULT_ORDER, speak
    from .errors import ChatHaruhiError
    from .roles.sources import load_role

    settings = Settings.from_env()
    role = load_role(args.role, settings)
    engines = (args.engine,) if args.engine else DEFAULT_ORDER
    speech = speak(role, " ".join(args.text), settings, engines)
    if speech.path is None:
        raise ChatHaruhiError(speech.notice)
    out = Path(args.output)
    if out.suffix.lower() not in ("", speech.path.suffix):
        out = out.with_suffix(speech.path.suffix)
        print(_("note: {engine} writes {suffix} audio; saving as {name}", engine=speech.engine,
                suffix=speech.path.suffix, name=out.name), file=sys.stderr)
    elif not out.suffix:
        out = out.with_suffix(speech.path.suffix)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(speech.path), out)
    print(_("{notice} Wrote {path}", notice=speech.notice, path=out))
    return 0


def cmd_engines(args: argparse.Namespace) -> int:
    if args.gguf:  # the small packaged model's file (SmolLM2), e.g. for llama.cpp's server
        from .chat.engines.local.packaged import SMOLLM2, packaged_spec

        spec = packaged_spec(SMOLLM2)
        print(Path(spec.source) / spec.gguf_file)
        return 0
    for name in engine_names():
        info = engine_info(name)
        print(f"{name:8} {info.label}: {info.description}")
    return 0


def _engine(args: argparse.Namespace, settings: Settings) -> str:
    """--engine, else the deployment's default engine, checked before any work starts."""
    # CHATHARUHI_ENGINE may name an engine that does not exist: UnknownNameError says which exist
    return engine_info(args.engine or settings.default_engine).name


def engine_choice(args: argparse.Namespace, settings: Settings) -> EngineChoice:
    """The engine the flags choose (--engine, --model, --base-url, --api-key, --fold-prompt), built once per command."""
    return EngineChoice(_engine(args, settings), args.model, args.base_url, args.api_key,
                        fold_prompt=getattr(args, "fold_prompt", None))


def _roles(refs: Sequence[str] | None, settings: Settings):
    """The roles named (any source `role import` takes), or every bundled one."""
    from .roles.sources import bundled_roles, load_role

    return [load_role(r, settings) for r in refs] if refs else bundled_roles()


def cmd_eval(args: argparse.Namespace) -> int:
    from .data.evaluate import EvalOptions, SystemSpec, compare, parse_system

    settings = Settings.from_env()
    if args.rescore:
        return _rescore(args, settings)
    if args.compare:
        if args.engine or args.model:
            raise ChatHaruhiError(_("Give either --compare SYSTEM... or --engine/--model, not both."))
        systems = [parse_system(s) for s in args.compare]
    else:
        systems = [SystemSpec(_engine(args, settings), args.model or "")]
    roles = _roles(args.roles, settings)
    server = EngineChoice(base_url=args.base_url, api_key=args.api_key)  # every system's server and key, if given
    options = EvalOptions(conditions=args.conditions, per_role=args.cases, min_tokens=args.min_tokens,
                          seed=args.seed, deep=args.deep_cases, baselines=not args.no_baselines,
                          next_line=() if args.no_next_line else ("who", "next"), distractors=args.distractors,
                          allow_trained=args.allow_trained, samples=args.samples, greedy=args.greedy,
                          budgets=_eval_budgets(args), server=server)
    comparison = compare(roles, systems, options, settings=settings,
                         progress_for=lambda name: progress_bar(_("{system}: answering", system=name), "reply"))
    files = comparison.write(Path(args.out))
    print(comparison.markdown())
    _record_in_model_cards(comparison, Path(args.out))
    for kind, path in files.items():
        print(f"{kind:9} {path}")
    if "plot" not in files:
        print(_("(no plot: matplotlib is not installed; `bash scripts/setup.sh local` installs it)"), file=sys.stderr)
    return 0


def _eval_budgets(args: argparse.Namespace):
    """The budgets every compared system is packed with: given, or None for the smallest of the systems' own."""
    if args.story_tokens is None and args.history_tokens is None:
        return None
    from .config import Budgets

    base = Budgets()
    return Budgets(story_tokens=args.story_tokens if args.story_tokens is not None else base.story_tokens,
                   history_tokens=args.history_tokens if args.history_tokens is not None else base.history_tokens)


def _rescore(args: argparse.Namespace, settings: Settings) -> int:
    from .data.evaluate import EvalOptions, rescore

    labels = {}
    for given in args.label or []:
        system, sep, label = given.partition("=")
        if not sep or not system or not label:
            raise ChatHaruhiError(_("--label takes SYSTEM=LABEL (e.g. local:runs/all-lora=all-lora), not '{given}'.",
                                    given=given))
        labels[system] = label
    options = EvalOptions(per_role=args.cases, min_tokens=args.min_tokens, seed=args.seed, deep=args.deep_cases,
                          baselines=not args.no_baselines)
    comparison = rescore(Path(args.rescore), _roles(args.roles, settings), options, settings=settings,
                         labels=labels)
    files = comparison.write(Path(args.out))
    print(comparison.markdown())
    for kind, path in files.items():
        print(f"{kind:9} {path}")
    return 0


def _record_in_model_cards(comparison, out: Path) -> None:
    """Each fine-tuned model in the comparison gets the figures in its card (once measured, they belong there)."""
    from .chat.languages import base_language
    from .data.finetune import record_eval
    from .roles.sources import load_role

    for rep in comparison.reports:
        engine, _sep, model = rep.system.partition(":")
        if engine != "local" or not model:
            continue
        lines = [f"Measured by `python -m chatharuhi_core eval` ({len(rep.roles())} roles, results in `{out}`), "
                 "mean [95% interval] on eval's held-out scenes:", "",
                 "| system | prompt | cosine | ROUGE-L | out of character |", "|---|---|---:|---:|---:|"]
        for other in comparison.reports:
            for c in other.conditions[-1:] if other.is_baseline else other.conditions:
                prompt = "none" if other.is_baseline else c
                lines.append(f"| {other.label} | {prompt} | {other.interval('cosine', c).text()} | "
                             f"{other.interval('rouge_l', c).text()} | {other.interval('ooc', c).text('{:.0%}')} |")
        speaks = rep.language_shares(lambda role_id: base_language(load_role(role_id).language))
        if record_eval(Path(model), "\n".join(lines), speaks):
            print(_("(figures recorded in {path})", path=Path(model) / "README.md"))


def cmd_synthesize(args: argparse.Namespace) -> int:
    from .data.synthesize import SynthesisOptions, synthesize

    settings = Settings.from_env()
    engine = engine_choice(args, settings)
    roles = _roles(args.roles, settings)
    out = Path(args.out)
    from .data.holdout import HoldOut

    try:
        options = SynthesisOptions(scenes=args.scenes, questions=args.questions, seed=args.seed,
                                   holdout=HoldOut(args.holdout_cases, args.min_tokens, args.holdout_seed,
                                                   args.holdout_deep_cases))
        result = synthesize(roles, out, engine, options, settings=settings,
                            progress=progress_bar(_("answering"), "dialogue"))
    except KeyboardInterrupt:
        print("\n" + _("Stopped. What was answered is kept in {out}; run the same command again to go on.", out=out),
              file=sys.stderr)
        return 130
    for note in result.notes:
        print(_("note: {note}", note=note), file=sys.stderr)
    print(_("{answered} new dialogues ({before} from earlier runs, {failed} failed, {duplicates} duplicates dropped, "
            "{leaked} left out for copying a held-out line). {rows} rows in:", answered=result.answered,
            before=result.done_before, failed=result.failed, duplicates=result.duplicates, leaked=result.leaked,
            rows=result.rows))
    for kind, path in result.files.items():
        print(f"  {kind:9} {path}")
    if result.failed:
        print(_("Run the same command again to retry the failed ones."), file=sys.stderr)
    return 0


def cmd_finetune(args: argparse.Namespace) -> int:
    from .data.finetune import FinetuneOptions, Interrupted, TrainSettings, finetune, work_dir
    from .data.finetune_data import DatasetOptions
    from .data.holdout import HoldOut

    settings = Settings.from_env()
    roles = _roles(args.roles, settings)
    out = Path(args.out or f"runs/{'-'.join(r.id for r in roles) if len(roles) < 4 else 'all'}-lora")
    train = TrainSettings(epochs=args.epochs, learning_rate=args.lr, lora_r=args.lora_r,
                          lora_alpha=2 * args.lora_r, max_length=args.max_length, max_steps=args.max_steps,
                          save_steps=args.save_steps, seed=args.seed, batch_size=args.batch_size,
                          grad_accum=args.grad_accum, precision=args.precision)
    command = " ".join(["python -m chatharuhi_core", *(shlex.quote(a) for a in args.argv)])
    holdout = HoldOut(args.holdout_cases, args.min_tokens, args.holdout_seed, args.holdout_deep_cases)
    try:
        data = DatasetOptions(holdout=holdout, data_files=tuple(Path(p) for p in args.data or []),
                              dpo_file=Path(args.dpo) if args.dpo else None)
        options = FinetuneOptions(base=args.base or "", data=data, merge=args.merge, train=train, command=command)
        if args.rows_only:
            from .chat.engines.local.shipped import sha256_of
            from .data.finetune import training_rows

            rows = training_rows(roles, args.rows_only, options, settings=settings)
            print(_("{rows} training rows written to {file} (SHA-256 {sha256}); nothing was trained.",
                    rows=len(rows.rows), file=args.rows_only, sha256=sha256_of(Path(args.rows_only))))
            return 0
        result = finetune(roles, out, options, settings=settings, say=lambda s: print(s, file=sys.stderr, flush=True))
    except Interrupted as exc:
        print(f"\n{exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:  # a second Ctrl-C, or one before training started
        print("\n" + _("Stopped. Any checkpoint is kept in {folder}; run the same command again to go on.",
                       folder=work_dir(out)), file=sys.stderr)
        return 130
    m = result.manifest
    for note in result.notes:
        print(_("note: {note}", note=note), file=sys.stderr)
    t = m["training"]
    print(_("Trained {kind} on {base} ({device}): {rows} rows, {tokens:,} tokens, {steps} steps in {seconds:,.0f} s "
            "({speed} tokens/s), loss {first:.3f} -> {final:.3f}.", kind=m["kind"], base=m["base_label"],
            device=m["device"], rows=m["data"]["rows"], tokens=m["data"]["tokens"], steps=t["steps"],
            seconds=t["seconds"], speed=t["tokens_per_s"], first=t["first_loss"] or 0, final=t["final_loss"] or 0))
    held = sum(len(v) for v in m["hold_out"]["scenes"].values())
    print(_("Held out for eval: {n} scenes (never in a training row). Written to {out}", n=held, out=result.out))
    print(_("Chat with it:  python -m chatharuhi_core chat --engine local --model {out} --role {id}", out=result.out,
            id=roles[0].id))
    print(_("Score it:      python -m chatharuhi_core eval --compare local local:{out}", out=result.out)
          + (f" --roles {' '.join(r.id for r in roles)}" if args.roles else ""))
    return 0


def cmd_feedback_export(args: argparse.Namespace) -> int:
    from .data.feedback import export_training_data

    settings = Settings.from_env()
    src = Path(args.input) if args.input else settings.feedback_path
    if src is None or not src.is_file():
        raise ChatHaruhiError(_("No feedback file at {file}. Ratings and edits in the page are written there "
                                "(CHATHARUHI_FEEDBACK sets the path).", file=src))
    data, files = export_training_data(src, Path(args.out))
    print(_("{replies} rated, edited or swiped replies in {file}: {corrected} corrected, {liked} liked as they were, "
            "{disliked} disliked without a correction (left out), {passed} alternatives passed over for the reply kept.",
            replies=data.replies, file=src, corrected=data.corrected, liked=data.liked,
            disliked=data.disliked_uncorrected, passed=data.kept_over))
    if data.unusable or data.torn_lines:
        print(_("Left out {unusable} records without a usable prompt and {torn} torn lines.", unusable=data.unusable,
                torn=data.torn_lines))
    print(_("{sft} fine-tuning conversations and {pairs} preference pairs:", sft=len(data.sft),
            pairs=len(data.preference)))
    for kind, path in files.items():
        print(f"  {kind:10} {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser, its help in the current language (made when it runs, after main chose it)."""
    parser = ArgumentParser(prog="python -m chatharuhi_core",
                            description=_("Role-play chat grounded in a character's classic scenes."))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_chat_command, _add_lookup_commands, _add_eval_command, _add_synthesize_command,
                _add_finetune_command, _add_feedback_commands, _add_role_commands):
        add(sub)
    return parser


def _add_chat_command(sub) -> None:
    """`chat`: one message or a loop, with one character or a group scene."""
    from .chat.speech.transcription import LIMIT_S

    p = _command(sub, "chat", cmd_chat, help=_("talk to a character (or a group scene of several): one message, or a loop"),
                 description=_("Answer one message (TEXT) in character, or open an interactive loop. "
                               "Give --role two to six times for a group scene with several characters; in its "
                               "loop, /who, /mute NAME, /unmute NAME, /next NAME, /talk N, /join ROLE, "
                               "/leave NAME and /whisper NAME TEXT steer it."))
    p.add_argument("--role", required=True, action="append",
                   help=_("a bundled id or name (see `roles`), an imported id, or any source `role import` takes; "
                          "repeat it for a group scene"))
    p.add_argument("--user-role", help=_("who you are in the story (default: the role's usual partner, e.g. Watson)"))
    p.add_argument("--persona", metavar="FILE",
                   help=_("whom you play: a .json file {\"name\", \"description\"} or a .txt file (the name on the first "
                          "line, the description after it); its name is your name in the story unless --user-role"))
    p.add_argument("--order", choices=order_names(),
                   help=_("in a group scene, who speaks next: natural (named ones first, then the talkative; default), "
                          "list, pooled (everyone once before anyone twice), manual (you pick with /next), "
                          "director (the engine picks)"))
    p.add_argument("--allow-self", action="store_true", help=_("in a group scene, a character may answer its own line"))
    p.add_argument("--seed", type=int, help=_("in a group scene, seed the speaker choice (for repeatable runs)"))
    p.add_argument("--to", metavar="NAME", help=_("in a group scene, whisper TEXT to one character: only it hears, "
                                               "answers and remembers it (in the loop: /whisper NAME TEXT)"))
    _add_engine_args(p)
    p.add_argument("--session", metavar="FILE",
                   help=_("a chat or group-scene file (.jsonl, the page's export format): go on from it if it exists, "
                          "and save it after every reply"))
    _add_speech_args(p, _("send speech: a recording (WAV, MP3, OGG, WEBM, M4A; at most {limit} s) whose words "
                          "are the message, after any TEXT", limit=LIMIT_S))
    p.add_argument("text", nargs="*", metavar="TEXT", help=_("the message; leave out for a conversation"))


def _add_speech_args(p, audio_help: str) -> None:
    p.add_argument("--audio", metavar="FILE", help=audio_help)
    p.add_argument("--speech-language", choices=["zh", "en"],
                   help=_("the language spoken in the recording (default: the language of your locale)"))


def _add_lookup_commands(sub) -> None:
    """`roles`, `speak`, `transcribe`, `engines` and `validate`: what is here, and a quick check."""
    from .chat.speech.transcription import LIMIT_S

    p = _command(sub, "roles", cmd_roles, help=_("list the bundled characters"),
                 description=_("List the bundled characters."))
    p.add_argument("--hub", action="store_true", help=_("also list the ChatHaruhi roles offered from the Hub"))

    p = _command(sub, "speak", cmd_speak, help=_("read a line aloud in a character's voice"),
                 description=_("Speak TEXT in the role's voice: edge-tts when online, else espeak-ng."))
    p.add_argument("--role", required=True, help=_("a bundled or imported id, or any source `role import` takes"))
    p.add_argument("-o", "--output", required=True, help=_("audio file to write (.mp3 from edge-tts, .wav from espeak-ng)"))
    p.add_argument("--engine", choices=["edge-tts", "espeak-ng"], help=_("use only this voice engine"))
    p.add_argument("text", nargs="+", metavar="TEXT", help=_("what to say"))

    p = _command(sub, "transcribe", cmd_transcribe, help=_("print the words of a recording"),
                 description=_("Transcribe a recording of speech offline (Whisper base on the CPU) and print its words."))
    p.add_argument("audio", metavar="FILE", help=_("a recording: WAV, MP3, OGG, WEBM or M4A, at most {limit} s",
                                                   limit=LIMIT_S))
    p.add_argument("--speech-language", choices=["zh", "en"],
                   help=_("the language spoken in the recording (default: the language of your locale)"))

    p = _command(sub, "engines", cmd_engines, help=_("list the reply engines"), description=_("List the reply engines."))
    p.add_argument("--gguf", action="store_true", help=_("print the path of the bundled SmolLM2 GGUF file instead"))

    p = _command(sub, "validate", cmd_validate, help=_("check a role source (same as `role validate`)"),
                 description=_("Validate a role package folder, zip, card, jsonl, script or Hub id."))
    p.add_argument("source", help=_("what to check"))
    p.add_argument("--name", help=_("for a script: the character's name"))


def _command(sub, name: str, func, **texts) -> argparse.ArgumentParser:
    """A command's parser (`texts`: its help and description) that runs `func` with the parsed arguments."""
    p = sub.add_parser(name, **texts)
    p.set_defaults(func=func)
    return p


def _add_holdout_args(p: argparse.ArgumentParser) -> None:
    """The scenes eval holds out, which synthesize and finetune leave out of their rows (as eval's flags)."""
    p.add_argument("--holdout-cases", type=int, default=10, help=_("scenes per role held out for eval (as eval --cases)"))
    p.add_argument("--min-tokens", type=int, default=20, help=_("as eval --min-tokens"))
    p.add_argument("--holdout-seed", type=int, default=0, help=_("which scenes are held out for eval (as eval --seed)"))
    p.add_argument("--holdout-deep-cases", type=int, default=3, help=_("as eval --deep-cases"))


def _add_eval_command(sub) -> None:
    """`eval`: the paper's metric, systems compared on held-out cases."""
    p = _command(sub, "eval", cmd_eval, help=_("score role-play: engines and models, system prompt only vs full ChatHaruhi"),
                 description=_("The paper's automatic metric and its Figure 9 comparison. For each role, scenes "
                               "ending in a long line of the role are held out (and removed from retrieval); each "
                               "system answers what came before, and the reply is scored against the original "
                               "line: cosine similarity, ROUGE-L, out-of-character rate and distinct-2, with 95% "
                               "bootstrap intervals. Writes results.md, results.csv, cases.csv and results.png."))
    _add_engine_args(p)
    p.add_argument("--compare", nargs="+", metavar="SYSTEM",
                   help=_("several systems on the same cases, each as ENGINE or ENGINE:MODEL, e.g. "
                          "script local local:runs/all-lora openai:gpt-4o-mini (instead of --engine/--model); the "
                          "baselines greeting and random-line are added unless --no-baselines"))
    p.add_argument("--roles", nargs="+", metavar="ROLE", help=_("roles to test (default: every bundled role)"))
    p.add_argument("--cases", type=int, default=10,
                   help=_("held-out scenes per role (default 10; finetune holds out the same ones)"))
    p.add_argument("--deep-cases", type=int, default=3,
                   help=_("how many of them are scenes where the character has answered before, so the prompt carries "
                          "the scene's earlier turns as history (default 3, where a role has them; results are also "
                          "shown by depth)"))
    p.add_argument("--min-tokens", type=int, default=20, help=_("shortest original line to test, in tokens (default 20)"))
    p.add_argument("--conditions", nargs="+", default=["system", "full"], choices=["system", "full"],
                   help=_("prompts to compare (default: system full)"))
    p.add_argument("--seed", type=int, default=0, help=_("which scenes are sampled (default 0)"))
    p.add_argument("--no-baselines", action="store_true",
                   help=_("leave out the baselines that read nothing of the conversation (the role's greeting, a "
                          "random line of the character), scored beside every system by default"))
    p.add_argument("--distractors", type=int, default=4,
                   help=_("next-line choice: other lines the original is ranked among (default 4; chance 1/(K+1))"))
    p.add_argument("--samples", type=int, default=3,
                   help=_("replies per case from an engine that samples, each with its own recorded seed (default 3)"))
    p.add_argument("--greedy", action="store_true",
                   help=_("instead of --samples: one reply per case with the most likely tokens (temperature 0), the "
                          "same on every run"))
    p.add_argument("--story-tokens", type=int,
                   help=_("classic-scene budget for every system, in cl100k tokens (default: the "
                          "smallest of the compared systems' own)"))
    p.add_argument("--history-tokens", type=int, help=_("history budget for every system, likewise"))
    p.add_argument("--allow-trained", action="store_true",
                   help=_("score a fine-tuned model on cases whose scenes it trained on (refused otherwise), marked so"))
    p.add_argument("--no-next-line", action="store_true",
                   help=_("skip next-line choice (the original line ranked among other characters' lines, and among "
                          "the same character's lines from other scenes)"))
    p.add_argument("--rescore", metavar="CASES_CSV",
                   help=_("score a past run's replies (its cases.csv) again with today's metrics and baselines, "
                          "without running any model; give the run's --cases, --deep-cases, --min-tokens, --seed "
                          "and --roles"))
    p.add_argument("--label", nargs="+", metavar="SYSTEM=LABEL", help=_("with --rescore: names for the tables"))
    p.add_argument("--out", default="eval-results", help=_("output folder (default ./eval-results)"))


def _add_synthesize_command(sub) -> None:
    """`synthesize`: fine-tuning dialogues answered by the chatbot."""
    p = _command(sub, "synthesize", cmd_synthesize, help=_("make fine-tuning dialogues answered by the chatbot"),
                 description=_("Answer each scene's opening lines and new questions (written Alpaca-style by "
                               "the engine from the role's exchanges) with ChatHaruhi. Writes openai.jsonl and "
                               "sharegpt.jsonl (alternating turns, de-duplicated). Re-running skips what is done."))
    _add_engine_args(p)
    p.add_argument("--roles", nargs="+", metavar="ROLE", help=_("roles (default: every bundled role)"))
    p.add_argument("--scenes", type=int, default=None, help=_("scene openings per role (default: all)"))
    p.add_argument("--questions", type=int, default=10, help=_("new questions per role (default 10)"))
    p.add_argument("--seed", type=int, default=0, help=_("which examples are shown when asking (default 0)"))
    _add_holdout_args(p)
    p.add_argument("--out", default="synthesized", help=_("output folder (default ./synthesized)"))


def _add_finetune_command(sub) -> None:
    """`finetune`: a LoRA adapter for the local engine."""
    p = _command(sub, "finetune", cmd_finetune, help=_("train a LoRA adapter on the roles' lines for the local engine"),
                 description=_("Supervised fine-tuning (TRL SFTTrainer + peft LoRA) of a local model on every line "
                               "of the roles in the ChatHaruhi prompt format, with the scenes eval holds out left "
                               "out of every row. Optional extra rows (synthesize's openai.jsonl, feedback export's "
                               "sft-openai.jsonl) and a DPO pass on the visitors' corrections (preference.jsonl). "
                               "Ctrl-C keeps the last checkpoint; the same command goes on from it."))
    p.add_argument("--roles", nargs="+", metavar="ROLE", help=_("roles to train on (default: every bundled role)"))
    p.add_argument("--base", default="", help=_("base model: blank = the bundled SmolLM2-135M-Instruct; or a model "
                                               "folder, a .gguf file, or a Hub id read from the cache"))
    p.add_argument("--data", nargs="+", metavar="FILE", help=_("more rows: OpenAI chat JSONL (synthesize's openai.jsonl, "
                                                               "feedback export's sft-openai.jsonl)"))
    p.add_argument("--dpo", metavar="FILE", help=_("preference pairs for a DPO pass (feedback export's preference.jsonl)"))
    p.add_argument("--out", help=_("output folder (default runs/ROLE-lora, or runs/all-lora)"))
    p.add_argument("--merge", action="store_true", help=_("write a full model folder (the adapter merged into the base)"))
    p.add_argument("--epochs", type=float, default=1.0,
                   help=_("passes over the rows (default 1: about 35 minutes on 2 CPU cores for the eight bundled roles)"))
    p.add_argument("--lr", type=float, default=5e-4, help=_("learning rate (default 5e-4)"))
    p.add_argument("--lora-r", type=int, default=16, help=_("LoRA rank (default 16; alpha is twice it)"))
    p.add_argument("--max-length", type=int, default=1024, help=_("longest row in tokens; longer ones are left out"))
    p.add_argument("--max-steps", type=int, default=-1, help=_("stop after this many steps (default: the epochs decide)"))
    p.add_argument("--save-steps", type=int, default=10, help=_("checkpoint every N steps (default 10)"))
    _add_holdout_args(p)
    p.add_argument("--seed", type=int, default=0, help=_("the training's seed (row order, LoRA's first weights)"))
    p.add_argument("--batch-size", type=int, default=1, help=_("rows per step on the device (default 1: fastest on a CPU)"))
    p.add_argument("--grad-accum", type=int, default=8, help=_("steps whose gradients add up to one update (default 8)"))
    p.add_argument("--rows-only", metavar="FILE",
                   help=_("write the rows this command would train on to FILE (as the run's train.jsonl) and stop: "
                          "how a shipped adapter's recorded rows are checked"))
    p.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto",
                   help=_("weights and training in fp32 or bf16 (default auto: bf16 on a GPU, fp32 on a CPU)"))


def _add_feedback_commands(sub) -> None:
    """`feedback export`: the page's ratings and corrections as training data."""
    fb = sub.add_parser("feedback", help=_("turn the page's ratings and corrections into fine-tuning data"),
                        description=_("Work with the feedback file the page writes (likes, dislikes, edits)."))
    fsub = fb.add_subparsers(dest="feedback_command", required=True, metavar="ACTION")
    p = _command(fsub, "export", cmd_feedback_export, help=_("write SFT rows (OpenAI and ShareGPT) and preference pairs"),
                 description=_("Corrected replies, and liked ones as they were, become SFT conversations "
                               "(sft-openai.jsonl, sft-sharegpt.jsonl); each correction is also a preference "
                               "pair, chosen = the correction, rejected = the model's reply (preference.jsonl)."))
    p.add_argument("--in", dest="input", help=_("the feedback file (default: CHATHARUHI_FEEDBACK or the cache's)"))
    p.add_argument("--out", default="feedback-data", help=_("output folder (default ./feedback-data)"))


SOURCES_HELP = N_("a role package folder or .zip, a ChatHaruhi 1.0 character folder or .zip, a character card "
                  "(.png/.json), a SillyTavern world-info file (.json, linked to a character), a ChatHaruhi .jsonl, "
                  "a script (.txt), a Hub id (owner/name or owner/name/role), or a bundled id")


def _add_import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", help=_("for a script: the character's name (default: whoever speaks most)"))
    p.add_argument("--alias", action="append", help=_("another name the character speaks under (repeatable)"))
    p.add_argument("--series", help=_("the work the character comes from"))


def _add_role_commands(sub) -> None:
    role = sub.add_parser("role", help=_("build, import, export, push and validate characters"),
                          description=_("Build, import, export, push and validate characters."))
    rsub = role.add_subparsers(dest="role_command", required=True, metavar="ACTION")

    p = _command(rsub, "build", cmd_role_build, help=_("build a role package from a script"),
                 description=_("Cut a script (Name:「line」, NAME: line, or screenplay blocks) into scenes "
                               "and write a role package with a prebuilt store."))
    p.add_argument("script", help=_("the script, a UTF-8 .txt file"))
    p.add_argument("--id", help=_("the role id (default: derived from the name and the script)"))
    p.add_argument("--personality", help=_("a note on personality and verbal tics for the system prompt"))
    p.add_argument("--max-tokens", type=int, default=500, help=_("longest scene in cl100k tokens (default 500)"))
    p.add_argument("--out", help=_("output folder, or a .zip (default: ./ROLE_ID)"))
    _add_import_args(p)

    p = _command(rsub, "import", cmd_role_import, help=_("import a character from anywhere into the cache"),
                 description=_("Import {sources}; the scenes are embedded once and cached.", sources=_(SOURCES_HELP)))
    p.add_argument("source", help=_("what to import"))
    p.add_argument("--out", help=_("also write it as a package folder, .zip, card .png/.json or .jsonl"))
    p.add_argument("--link-to", metavar="CHARACTER",
                   help=_("for a SillyTavern world-info file: the character to link it to (default: the character "
                          "whose card names the world)"))
    _add_import_args(p)

    p = _command(rsub, "export", cmd_role_export, help=_("write a character as a card, package, zip or jsonl"),
                 description=_("Export a character. The format follows the suffix: .png (card V2+V3), "
                               ".json (card V3), .zip (package with store), .jsonl (ChatHaruhi 2.0), "
                               "anything else a package folder with a prebuilt store; --format chatharuhi-folder writes "
                               "a ChatHaruhi 1.0 character folder (system_prompt.txt, texts/, images/)."))
    p.add_argument("role", help=_("a bundled or imported id, or any source `import` takes"))
    p.add_argument("--to", required=True, help=_("where to write"))
    p.add_argument("--format", choices=["card-png", "card-json", "card-json-v2", "folder", "folder-no-store",
                                        "zip", "jsonl", "chatharuhi-folder"],
                   help=_("override the format the suffix implies"))

    p = _command(rsub, "push", cmd_role_push, help=_("upload a character to a Hugging Face dataset repo"),
                 description=_("Upload a character as a role package to a dataset repo (needs HF_TOKEN)."))
    p.add_argument("role", help=_("a bundled or imported id, or any source `import` takes"))
    p.add_argument("--repo", required=True, help=_("owner/name of the dataset repo (created if missing)"))
    p.add_argument("--dry-run", action="store_true", help=_("list what would be uploaded and stop"))
    p.add_argument("--private", action="store_true", help=_("create the repo as private"))
    p.add_argument("--no-store", dest="store", action="store_false", help=_("leave out the prebuilt store"))

    p = _command(rsub, "validate", cmd_validate, help=_("check any role source without keeping it"),
                 description=_("Check {sources}; nothing is kept.", sources=_(SOURCES_HELP)))
    p.add_argument("source", help=_("what to check"))
    p.add_argument("--name", help=_("for a script: the character's name"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line in the locale's language (LANG=zh_CN.UTF-8: Chinese; English otherwise), chosen here
    and not at import, before the parser and its help are made; for this call only."""
    with i18n.speaking(i18n.from_environment()):
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed, for what records its own making
    try:
        return args.func(args)
    except ChatHaruhiError as exc:
        print(_("error: {error}", error=exc), file=sys.stderr)
        return 1
    except OSError as exc:  # an output folder that cannot be made, a full disk: say where, not a traceback
        if exc.filename:
            print(_("error: could not read or write a file ({file}): {why}", file=exc.filename,
                    why=exc.strerror or exc), file=sys.stderr)
        else:
            print(_("error: could not read or write a file: {why}", why=exc.strerror or exc), file=sys.stderr)
        return 1
