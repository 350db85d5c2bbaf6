"""What the scene tab does for one visitor, as plain functions over a SceneState value.

The page (page/group_scene.py) keeps the SceneState in gr.State (one per browser session); every event builds a Scene
around a copy of it with the visitor's engine settings, so nothing per visitor lives in this
module and a failed or stopped turn leaves the visitor's state as it was.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..chat.chatbot import Reply, Streaming
from ..chat.lanes import ticket_for, waiting_line
from ..chat.swipes import Choices
from ..config import Settings
from ..errors import ChatHaruhiError, InputError
from ..i18n import N_, _
from ..roles.regex_scripts import AI_OUTPUT
from ..roles.sources import load_role
from ..scene.cast import MAX_MEMBERS, Member, SceneState, happenings
from ..scene.scene import Scene, SceneSetup
from .common import (
    PLACEHOLDER_IMAGE,
    WARNING_MARK,
    EnginePanel,
    Throttle,
    export_file,
    file_url,
    message_text,
    portrait_of,
    while_running,
)
from .feedback import message_index
from .frames import on_page
from .said import Answered, Said, edit_said, flip_said, rate_said

log = logging.getLogger(__name__)
HEADER_RE = re.compile(r'^\s*<span class="speaker[^"]*"[^>]*>.*?</span>\s*', re.S)
WHISPER_RE = re.compile(r'^\s*<span class="whisper"[^>]*>.*?</span>\s*', re.S)
PLACEHOLDER = N_("Pick two to six characters, then say something, or press **Let them talk**.")


def make_scene(state: SceneState, engine: EnginePanel, settings: Settings, seed: int | None = None) -> Scene:
    """A Scene for one event, around a copy of the visitor's state."""
    return Scene(engine=engine.choice(settings), settings=settings, setup=SceneSetup(seed=seed, state=state.copy()))


# ------------------------------------------------------------ how the scene looks


def speaker_header(role_id: str, name: str) -> str:
    """The portrait and name that open a character's bubble (the name is the text; the picture is decoration)."""
    image = _face(role_id)
    # the role id rides in a class: the chat's sanitizer keeps classes and drops data- attributes
    return (f'<span class="speaker role-{html.escape(role_id, quote=True)}"><img class="speaker-face" '
            f'src="{file_url(image)}" alt=""><b>{html.escape(name)}</b></span>\n\n')


def _face(role_id: str) -> str:
    """The role's portrait; the neutral placeholder when the role is gone from this server."""
    try:
        return portrait_of(load_role(role_id))
    except ChatHaruhiError:
        return str(PLACEHOLDER_IMAGE)


def strip_header(text: str) -> str:
    """A bubble's text without its portrait, name and whisper mark (what an edit hands back)."""
    return WHISPER_RE.sub("", HEADER_RE.sub("", text, count=1), count=1)


def whisper_mark(state: SceneState, to: str | None, by_character: bool) -> str:
    """The quiet mark on a private line: to whom the visitor whispered, or that only the visitor heard."""
    if to is None:
        return ""
    name = next((m.name for m in state.members if m.role_id == to), to)
    words = _("Only you heard this") if by_character else _("Whispered to {name}", name=name)
    return f'<span class="whisper">{html.escape(words)}</span>\n\n'


def target_choices(state: SceneState) -> list[tuple[str, str]]:
    """Who the visitor's next line goes to: everyone, or one present character in a whisper."""
    return [(_("Everyone"), ""), *((m.name, m.role_id) for m in state.members if m.present)]


def shown_items(state: SceneState) -> list[int | str]:
    """What the chat shows, in order: a line's index, or a quiet sentence (who joined, left, was muted)."""
    notes = happenings(state.members)
    out: list[int | str] = []
    at = 0
    for i in range(len(state.lines) + 1):
        while at < len(notes) and notes[at][0] <= i:
            out.append(notes[at][1])
            at += 1
        if i < len(state.lines):
            out.append(i)
    return out


def note_html(text: str) -> str:
    """A quiet line in the transcript; the page's css centres it and hides the buttons under it."""
    return f'<span class="scene-note">— {html.escape(text)} —</span>'


def scene_messages(state: SceneState) -> list[dict]:
    """The transcript as the page shows it: the visitor's lines on the right, each character's with its
    face, and quiet lines for joins, leaves and mutes."""
    out = []
    for item in shown_items(state):
        if isinstance(item, str):
            out.append({"role": "assistant", "content": note_html(item)})
            continue
        ln = state.lines[item]
        mark = whisper_mark(state, ln.to, ln.by_character)
        if ln.by_character:
            text = _shown_line(ln.role_id, ln.text, len(state.lines) - 1 - item, state.user_role)
            out.append({"role": "assistant", "content": speaker_header(ln.role_id, ln.speaker) + mark + text})
        else:
            out.append({"role": "user", "content": mark + ln.text})
    return out


def _shown_line(role_id: str, text: str, depth: int, user_role: str) -> str:
    """A character's line through its card's display-only regex scripts (the line itself without any)."""
    try:
        role = load_role(role_id)
    except ChatHaruhiError:
        return text
    return on_page(role, text, AI_OUTPUT, depth, user_role)


def feedback_values(state: SceneState) -> list[str | None]:
    """The thumbs to show, one per assistant message (a quiet line has none)."""
    return [None if isinstance(item, str) else {"like": "Like", "dislike": "Dislike"}.get(state.lines[item].rating or "")
            for item in shown_items(state) if isinstance(item, str) or state.lines[item].by_character]


def present_html(state: SceneState) -> str:
    """Who is here now (and who left), with faces: the page's cast line."""
    if not state.members:
        return "<p class='scene-cast-empty'>" + html.escape(_("Nobody is here yet.")) + "</p>"
    items = []
    for m in state.members:
        image = _face(m.role_id)
        marks = [] if m.present else [_("left")]
        if m.muted:
            marks.append(_("muted"))
        note = f" <small>({', '.join(marks)})</small>" if marks else ""
        cls = "scene-member" + ("" if m.present else " scene-member-left")
        items.append(f'<li class="{cls}" data-role="{html.escape(m.role_id, quote=True)}">'
                     f'<img src="{file_url(image)}" alt=""><span>{html.escape(m.name)}{note}</span></li>')
    label = html.escape(_("Who is here"), quote=True)
    return f"<ul class='scene-present' aria-label='{label}'>{''.join(items)}</ul>"


def scenes_markdown(state: SceneState, count: int) -> str:
    """The classic scenes retrieved for each of the last `count` character lines, and the earlier lines of
    this scene its memory brought back (only ever lines that character witnessed)."""
    lines = [ln for ln in state.lines if ln.by_character][-count:] if count else []
    if not lines:
        return "_" + _("Each character's reply draws on its own classic scenes; they are listed here after a reply.") + "_"
    parts = []
    for ln in lines:
        head = "#### " + _("{speaker} · answering “{cue}”", speaker=html.escape(ln.speaker),
                           cue=html.escape(ln.cue[:80]))
        hits = []
        for i, hit in enumerate(ln.scenes):
            used = _("in the prompt") if hit.get("used") else _("over the budget, left out")
            first = next((t for t in str(hit.get("text", "")).splitlines() if t.strip()), "")
            similar = _("similarity {value}", value=format(float(hit.get("similarity", 0)), ".2f"))
            hits.append(f"{i + 1}. **{html.escape(str(hit.get('id')))}** · {similar} · {used}  \n"
                        f"   > {html.escape(first[:160])}")
        recalled = [_("line {n}", n=int(r.get("line", 0))) + " · "
                    + _("similarity {value}", value=format(float(r.get("similarity", 0)), ".2f"))
                    + f"  \n  > {html.escape(str(r.get('text', ''))[:160])}" for r in ln.recalled]
        memory = ("\n\n_" + _("Recalled from earlier in the scene (lines it witnessed)") + "_\n\n"
                  + "\n".join("- " + r for r in recalled) if recalled else "")
        parts.append(head + "\n\n" + ("\n".join(hits) or "_" + _("no scenes retrieved") + "_") + memory)
    return "\n\n".join(parts)


# ------------------------------------------------------------ the cast


def set_cast(state: SceneState, role_ids: Sequence[str], settings: Settings) -> SceneState:
    """The visitor's cast list: new ids join now, missing ones leave; the transcript stays."""
    if len(role_ids) > MAX_MEMBERS:
        raise InputError(_("A scene holds at most {most} characters.", most=MAX_MEMBERS))
    state = state.copy()
    scene = Scene(engine="script", settings=settings, setup=SceneSetup(state=state))
    wanted = list(dict.fromkeys(role_ids))
    for m in scene.members:
        if m.present and m.role_id not in wanted:
            scene.leave(m.role_id)
    for rid in wanted:
        known = next((m for m in scene.members if m.role_id == rid), None)
        if known is None or not known.present:
            scene.add(rid)
    return scene.state


# ------------------------------------------------------------ turns


@dataclass
class SceneUpdate:
    """One frame of a streaming scene event for the page."""

    messages: list[dict]
    state: SceneState  # the lines that are complete; a partial line is only in `messages`
    error: str | None = None
    done: bool = False
    status: str = ""
    spoke: int = 0  # character lines completed in this event


def _sentence(exc: Exception) -> str:
    if isinstance(exc, ChatHaruhiError):
        return str(exc)
    log.exception("scene turn failed")
    return _("Something went wrong in the scene ({error}). Please try again.", error=type(exc).__name__)


def _failed(done: SceneState, exc: Exception, spoke: int) -> SceneUpdate:
    """The last frame of an event that failed: the whole lines so far, then the sentence."""
    sentence = _sentence(exc)
    msgs = scene_messages(done) + [{"role": "assistant", "content": WARNING_MARK + sentence}]
    return SceneUpdate(msgs, done, sentence, True, spoke=spoke)


@dataclass
class _Step:
    """One character line to stream: who speaks, their words as they come, and the transcript above them."""

    speaker: Member
    words: Iterator[str]  # returns the line's Reply when done
    before: SceneState


def _plan(scene: Scene, text: str | None, who: str | None, to: str | None = None) -> tuple[list[Member], list[str]]:
    """The visitor's line (whispered `to` one character, when given) joins the transcript; (who answers
    it, or `who` alone; the names it called that nobody will answer)."""
    if text is None:
        return ([scene.member(who)] if who else []), []
    scene.say(text, to)
    return ([scene.member(who)] if who else scene.responders()), scene.unheard(text, to)


def _steps(scene: Scene, plan: list[Member], turns: int, regenerate: bool) -> Iterator[_Step]:
    """The lines of one event, each decided when the one before it is complete."""
    if regenerate:
        if not scene.lines or not scene.lines[-1].by_character:
            raise InputError(_("The last line is not a character's; there is nothing to regenerate."))
        before = scene.state.copy()
        before.lines.pop()
        yield _Step(scene.member(scene.lines[-1].role_id), scene.regenerate(), before)
        return
    for member in plan:
        yield _Step(member, scene.stream_turn(member), scene.state.copy())
    for _unused in range(turns):
        member = scene.pick_next()
        if member is None:
            return
        yield _Step(member, scene.stream_turn(member), scene.state.copy())


@dataclass(frozen=True)
class SceneEvent:
    """What one event of the group-scene tab asks for, as one value.

    text: the visitor's line, answered by `who` or by the order's responders; `to`: whispered to that
    character alone, who answers it privately;
    who without text: that character speaks now (muted or not);
    turns: the characters carry on among themselves for that many lines;
    regenerate: the last character line again;
    seed: the director's draws, for a repeatable event (tests).
    """

    text: str | None = None
    who: str | None = None
    turns: int = 0
    regenerate: bool = False
    seed: int | None = None
    to: str | None = None


def _closing_status(event: SceneEvent, planned: bool, spoke: int, last: Reply | None, unheard: list[str],
                    manual: bool = True) -> str:
    """The line under the scene once an event is done: why it stopped, or who answered."""
    status = ""
    if event.text is not None and not planned and manual:
        status = _("Manual order: pick who answers with the ▶ buttons.")
    elif event.turns and spoke < event.turns and not event.regenerate:
        status = _("The scene has come to a close.")
    if last is not None and not status:
        model = f" · `{html.escape(last.stats.model)}`" if last.stats.model else ""
        status = _("Answered by **{engine}**", engine=html.escape(_(last.stats.engine))) + model
    if unheard:
        status = "  \n".join([*(html.escape(n) for n in unheard), status]).strip()
    return status


def stream_scene(state: SceneState, engine: EnginePanel, settings: Settings, event: SceneEvent = SceneEvent(),
                 between: Callable[[SceneState], None] | None = None) -> Iterator[SceneUpdate]:
    """One event of the group-scene tab (SceneEvent), streamed: planned, generated line by line, then presented.
    A failure stops the event with a sentence; the lines completed before it stay. `between` is handed the scene
    after each line, before the next speaker is picked: the page lands the line on the visit's scene there and
    sets the run's scene to it as it is now (page/group_scene.Landing)."""
    take = between or (lambda _state: None)
    try:
        scene = make_scene(state, engine, settings, event.seed)
        scene.check_cast()
        plan, unheard = ([], []) if event.regenerate else _plan(scene, event.text, event.who, event.to)
    except ChatHaruhiError as exc:
        yield SceneUpdate(scene_messages(state), state, str(exc), True)
        return
    done = scene.state.copy()
    yield SceneUpdate(scene_messages(done), done)
    bot = scene.bot(scene.present[0])
    loading = bot.loading_message()
    if loading:
        yield SceneUpdate(scene_messages(done), done, status=loading)
        try:
            for waited in while_running(bot.load):
                yield SceneUpdate(scene_messages(done), done, status=f"{loading} {waited} s")
        except Exception as exc:  # noqa: BLE001 - a model that cannot load is a sentence
            yield _failed(done, exc, 0)
            return
    spoke, last = 0, None
    ticket = ticket_for(scene.engine)  # the whole event in the engine's lane: its lines and the director's picks
    try:
        for look in ticket.waiting():
            yield SceneUpdate(scene_messages(done), done, status=waiting_line(look))
        for step in _steps(scene, plan, event.turns, event.regenerate):
            private = step.speaker.role_id if scene.answers_privately(step.speaker) else None
            head = speaker_header(step.speaker.role_id, step.speaker.name) + whisper_mark(scene.state, private, True)
            said, throttle = "", Throttle()
            streaming = Streaming(step.words)
            for delta in streaming:
                said += delta
                if throttle.due():
                    msgs = scene_messages(step.before) + [{"role": "assistant", "content": head + said}]
                    yield SceneUpdate(msgs, done)
            take(scene.state)
            done, spoke, last = scene.state.copy(), spoke + 1, streaming.reply
            yield SceneUpdate(scene_messages(done), done, spoke=spoke)
    except Exception as exc:  # noqa: BLE001 - every failure is a sentence, the completed lines stay
        ticket.release()
        done = done.copy()  # the one yielded is the page's now
        take(done)
        yield _failed(done, exc, spoke)
        return
    finally:
        ticket.release()
    done = done.copy()
    take(done)
    status = _closing_status(event, bool(plan), spoke, last, unheard, manual=scene.state.order == "manual")
    yield SceneUpdate(scene_messages(done), done, None, True, status, spoke)


# ------------------------------------------------------------ feedback, export


def shown_line(state: SceneState, index: object) -> int | None:
    """The transcript line shown at chat `index` (None for a quiet line or an index out of range)."""
    index = message_index(index)
    items = shown_items(state)
    if index is None or not 0 <= index < len(items):
        return None
    item = items[index]
    return item if isinstance(item, int) else None


def line_at(state: SceneState, index: object) -> int | None:
    """The transcript line shown at chat `index`, when it is a character's."""
    k = shown_line(state, index)
    return k if k is not None and state.lines[k].by_character else None


def line_said(state: SceneState, k: int) -> Said:
    """Character line `k` as the arrows, thumb and pencil see it (web/said.py): it answered the line it cued."""
    ln = state.lines[k]
    cue_speaker = next((p.speaker for p in reversed(state.lines[:k]) if p.text == ln.cue), state.user_role)
    return Said(Choices.of(ln.text, ln.alternatives), ln, Answered(ln.role_id or "", ln.speaker, cue_speaker, ln.cue),
                ln.speaker)


def _keep(state: SceneState, k: int, kept: Choices | None) -> None:
    if kept is not None:
        state.lines[k].text, state.lines[k].alternatives = kept.kept, list(kept.stored)


def _picked(state: SceneState, index: object) -> int | None:
    """The character line the visitor clicked (chat `index`), else the last character line; None without any."""
    k = line_at(state, index) if index is not None else None
    if k is None:
        k = next((i for i in range(len(state.lines) - 1, -1, -1) if state.lines[i].by_character), None)
    return k


def writes_new_line(state: SceneState | None, index: object, step: int) -> bool:
    """▶ on the scene's latest line, at its last text (or with none other), writes a new one as Regenerate does;
    anywhere else it flips (as in the chat, web/controls.writes_new)."""
    if step <= 0 or state is None or (k := _picked(state, index)) is None or k != len(state.lines) - 1:
        return False
    texts = Choices.of(state.lines[k].text, state.lines[k].alternatives)
    return texts.position == len(texts.texts) - 1


def flip_line(state: SceneState, index: object, step: int, settings: Settings) -> tuple[SceneState, str]:
    """The next or previous text of the selected character line (the last one by default) kept; the choice goes
    to the feedback file as the kept text against the ones passed over (as in the chat, web/controls.py)."""
    state = state.copy()
    k = _picked(state, index)
    if k is None:
        return state, _("There is no character's line to flip through yet.")
    kept, said = flip_said(line_said(state, k), step, settings)
    _keep(state, k, kept)
    return state, said


def alternatives_label(state: SceneState | None, index: object = None) -> str:
    """"2 / 3" for the selected character line (the last one by default)."""
    k = _picked(state, index) if state is not None else None
    if k is None:
        return "**0 / 0**"
    texts = Choices.of(state.lines[k].text, state.lines[k].alternatives)
    return f"**{texts.position + 1} / {len(texts.texts)}**"


def rate_line(state: SceneState, index: object, liked: object, settings: Settings) -> tuple[SceneState, str]:
    state = state.copy()
    k = line_at(state, index)
    if k is None:
        return state, _("Only the characters' lines can be rated.")
    return state, rate_said(line_said(state, k), liked, settings)


def edit_line(state: SceneState, index: object, new_text: object, settings: Settings) -> tuple[SceneState, str]:
    """An edited character line is a correction, recorded for that character."""
    state = state.copy()
    k = shown_line(state, index)
    if k is None:
        return state, _("That line only says who joined, left or was muted; it cannot be edited.")
    text = strip_header(message_text(new_text)).strip()
    ln = state.lines[k]
    if ln.by_character:
        kept, said = edit_said(line_said(state, k), text, settings)
        _keep(state, k, kept)
        return state, said
    if not text:
        return state, _("A line cannot be empty; the edit was undone.")
    if text == ln.text:
        return state, ""
    ln.text = text  # the visitor rewrites their own words: the characters hear them from now on
    later = any(p.by_character for p in state.lines[k + 1:])
    return state, (_("Your line was changed; the lines after it stay as they were.") if later
                   else _("Your line was changed."))


def export_scene(state: SceneState, folder: Path | None = None) -> Path:
    from ..scene.saved import dump_scene

    ids = "-".join(m.role_id for m in state.members if m.present)[:60] or "scene"
    return export_file(dump_scene(state), f"scene-{ids}", folder)


def import_scene(path: str | Path) -> SceneState:
    """A scene file back as it was; InputError when a character in it is not available here."""
    from ..scene.saved import load_scene

    state = load_scene(Path(path).read_bytes())
    for m in state.members:
        try:
            load_role(m.role_id)
        except ChatHaruhiError:
            raise InputError(_("This scene has '{name}', who is not available here. Add the character in the "
                               "'Add a character' tab first, then import the scene again.", name=m.name)) from None
    return state
