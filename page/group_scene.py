"""The group-scene tab (Group · 群戏): 2 to 6 characters and the visitor; the work is in chatharuhi_core.scene
and chatharuhi_core.web.scene.

The visitor's group scene is a SceneState in gr.State. The engine comes from the chat tab's settings panel,
sent with each event like the chat's own.
"""

from __future__ import annotations

import copy

import gradio as gr

from chatharuhi_core.chat.voice import speak
from chatharuhi_core.config import Settings
from chatharuhi_core.errors import ChatHaruhiError
from chatharuhi_core.i18n import N_, _, both_spans, in_both, ngettext
from chatharuhi_core.roles.sources import load_role, open_role
from chatharuhi_core.scene.cast import DEFAULT_TALKATIVENESS, MAX_MEMBERS, SceneState
from chatharuhi_core.scene.order import ORDERS
from chatharuhi_core.web.common import WARNING_MARK, EnginePanel, export_dir
from chatharuhi_core.web.landing import scene_landed
from chatharuhi_core.web.picker import picker_choices, picker_entries
from chatharuhi_core.web.scene import (
    PLACEHOLDER,
    SceneEvent,
    alternatives_label,
    edit_line,
    export_scene,
    feedback_values,
    flip_line,
    import_scene,
    line_at,
    present_html,
    rate_line,
    scene_messages,
    scenes_markdown,
    set_cast,
    stream_scene,
    target_choices,
    writes_new_line,
)
from chatharuhi_core.web.signin import language_warnings
from chatharuhi_core.web.visit_state import Stream

from .door import Later, quick_step
from .language import L, warn
from .settings_panel import choice
from .visit import clicked, conversation_buttons, scene_name

SLOTS = MAX_MEMBERS
BUSY = N_("⏳ The scene goes on…")
ENGINE_NOTE = N_("The engine is the one chosen in **Chat › Settings**.")
SPEAK_NOW = N_("Speak now:")


def _state(state: SceneState | None) -> SceneState:
    return state if state is not None else SceneState()


def _slots(state: SceneState) -> list:
    """Per present member: the talkativeness slider, the mute box and the speak-now button."""
    present = [m for m in state.members if m.present]
    sliders, mutes, buttons = [], [], []
    for k in range(SLOTS):
        if k < len(present):
            m = present[k]
            sliders.append(gr.Slider(value=m.talkativeness, label=_("{name} · talkativeness", name=m.name), visible=True))
            mutes.append(gr.Checkbox(value=m.muted, label=_("Mute {name}", name=m.name), visible=True))
            buttons.append(gr.Button(value=f"▶ {m.name}", visible=True))
        else:
            sliders.append(gr.Slider(visible=False))
            mutes.append(gr.Checkbox(visible=False))
            buttons.append(gr.Button(visible=False))
    return [*sliders, *mutes, *buttons]


def _targets(state: SceneState, current: str | None = "") -> gr.Dropdown:
    """The "to" picker: everyone, or one present character; a character who left is no longer offered."""
    choices = target_choices(state)
    value = current if current in {v for _, v in choices} else ""
    return gr.Dropdown(choices=choices, value=value)


def _view(state: SceneState, note: str = "", to: str | None = ""):
    """The whole scene view: state, cast line, chat, slots, the user's name, status, the "to" picker."""
    return (state, present_html(state), gr.Chatbot(value=scene_messages(state), feedback_value=feedback_values(state)),
            *_slots(state), state.user_role, state.order, state.allow_self, note, _targets(state, to))


def whisper_hint(to: str | None, state: SceneState | None):
    """The box says who will hear the next line."""
    name = next((m.name for m in _state(state).members if m.role_id == to), None)
    return gr.Textbox(placeholder=_("Whisper to {name}: only they hear it…", name=name) if name
                      else _("Say something to everyone…"))


def set_talk(k: int):
    def handler(value: float, state: SceneState | None):
        state = _state(state).copy()
        present = [m for m in state.members if m.present]
        if k < len(present):
            present[k].talkativeness = max(0.0, min(1.0, float(value)))
        return state
    return handler


def set_mute(k: int):
    def handler(value: bool, state: SceneState | None):
        state = _state(state).copy()
        present = [m for m in state.members if m.present]
        if k < len(present):
            present[k].set_muted(bool(value), len(state.lines))
        # the chat shows the mute as a quiet line at once
        return state, present_html(state), gr.Chatbot(value=scene_messages(state), feedback_value=feedback_values(state))
    return handler


def set_options(user_role: str, order: str, allow_self: bool, state: SceneState | None):
    state = _state(state).copy()
    state.user_role = (user_role or "").strip() or state.user_role
    state.order = order if order in ORDERS else state.order
    state.allow_self = bool(allow_self)
    return state


def show_state(state: SceneState | None):
    """After Stop: the scene as it is (with what the visitor changed while it ran: a mute, a thumb), and the chat
    as it holds it (a line cut off by Stop was never added)."""
    state = _state(state)
    return state, gr.Chatbot(value=scene_messages(state), feedback_value=feedback_values(state)), _("Stopped.")


def _count(state: SceneState | None, selected):
    return alternatives_label(state, selected)


def clear_scene(state: SceneState | None):
    """The same cast, present from a fresh start; the transcript is gone (a run still going stops drawing)."""
    state = _state(state)
    fresh = SceneState([m for m in state.copy().members if m.present], [], state.user_role, state.order,
                       state.allow_self)
    for m in fresh.members:
        m.spans = [[0, None]]
    return _view(fresh, "")


def refresh_export(state: SceneState | None):
    if state is None or not state.lines:
        return gr.DownloadButton(value=None, interactive=False)
    return gr.DownloadButton(value=str(export_scene(state, export_dir())), interactive=True)


def import_file(path: str | None, state: SceneState | None):
    if not path:
        return (*(gr.skip(),) * (7 + 3 * SLOTS), "", gr.skip())
    try:
        new = import_scene(path)
    except ChatHaruhiError as exc:
        warn(str(exc))
        return (*(gr.skip(),) * (7 + 3 * SLOTS), WARNING_MARK + str(exc), gr.skip())
    n = len(new.lines)
    view = _view(new, "✓ " + ngettext("Imported a scene of {n} line.", "Imported a scene of {n} lines.", n))
    cast = gr.Dropdown(value=[m.role_id for m in new.members if m.present])
    return (cast, *view)


def cast_choices(added: list[str] | None, chosen: list[str] | None):
    """Every character the visitor may cast: bundled, their own, and the Hub's."""
    return gr.Dropdown(choices=picker_choices(picker_entries(added)), value=chosen or [])


def _play(state: SceneState | None, play: dict, signed_in: gr.OAuthToken | None) -> tuple[SceneState, EnginePanel]:
    """The one place a scene event's inputs are read: the scene's options and the engine choice, from what
    `GroupSceneTab.play()` named (the visitor's name, the order and whether a character may answer itself, then
    the settings panel's fields)."""
    panel = dict(play)
    options = (panel.pop("user_role", ""), panel.pop("order", "natural"), panel.pop("allow_self", False))
    return set_options(*options, state), choice(panel, signed_in)



class Landing:
    """A run's lines landing on the visit's scene: after each line (`between`, handed the run's own scene) the new
    line goes on the scene as it is now, and the run goes on from that (a member muted meanwhile is not picked)."""

    def __init__(self, hold: Stream, state: SceneState) -> None:
        self.hold, self.base = hold, state.copy()

    def land(self, run: SceneState, last: bool = False) -> SceneState | None:
        """The run's lines on the scene as it is now (None: the run may land no more); `last` lets go of its hold
        in the same step."""
        now = self.hold.land("scene", lambda now: scene_landed(now or self.base, self.base, run), last)
        if now is not None:
            self.base = run.copy()
        return now

    def between(self, run: SceneState) -> None:
        now = self.land(run)
        if now is not None:  # the run goes on from the scene as it is
            members = {m.role_id: m for m in now.members}
            for m in run.members:
                if m.role_id in members:
                    was = members[m.role_id]
                    m.talkativeness, m.muted, m.mutes = was.talkativeness, was.muted, list(was.mutes)
            run.lines[:] = [copy.copy(ln) for ln in now.lines]
            self.base = run.copy()


class GroupSceneTab:
    """The tab's components, as attributes; `render` inside `with gr.Tab(...)`, `wire` once the page is built.
    The cast picker's full list is filled when the tab is opened (`cast_choices`); the visitor's name field is
    kept in step with the chat's (chat_tab). `settings`: the app's one Settings, which its events use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def render(self) -> GroupSceneTab:
        self.state = gr.State(None)
        self.handled = gr.State(None)
        with gr.Row(elem_id="scene-row"):
            self._side()
            self._main()
        return self

    def _side(self) -> None:
        entries = picker_entries()
        with gr.Column(scale=1, min_width=300, elem_id="scene-side"):
            # the bundled characters at first; the whole list (yours, the Hub's) when the tab is opened,
            # which keeps 150 labels out of the page's first paint. Any id is taken (the API, an import)
            # and checked when the cast changes.
            self.cast = gr.Dropdown(picker_choices([e for e in entries if not e.online]), multiselect=True,
                                    max_choices=SLOTS, value=[], label=L("Characters in the group scene (2 to 6)"),
                                    filterable=True, allow_custom_value=True, elem_id="scene-cast")
            self.present = gr.HTML(in_both(lambda: present_html(SceneState())), elem_id="scene-present")
            self.user_role = gr.Textbox(label=L("Your name in the story"), value="You",
                                        elem_id="scene-user")
            self.order = gr.Dropdown([(L(o.label), o.name) for o in ORDERS.values()], value="natural",
                                     label=L("Who speaks next"), elem_id="scene-order")
            self.allow_self = gr.Checkbox(label=L("A character may answer its own line"), elem_id="scene-allow-self")
            with gr.Accordion(L("Talkativeness and mute"), open=False, elem_id="scene-talk"):
                self.sliders, self.mutes = [], []
                for k in range(SLOTS):
                    self.sliders.append(gr.Slider(0, 1, value=DEFAULT_TALKATIVENESS, step=0.1, visible=False,
                                                  elem_id=f"scene-talk-{k}"))
                    self.mutes.append(gr.Checkbox(visible=False, elem_id=f"scene-mute-{k}"))
            gr.Markdown(both_spans(ENGINE_NOTE),
                        elem_classes=["reply-stats"])

    def _main(self) -> None:
        with gr.Column(scale=2, elem_id="scene-main"):
            self.chat = gr.Chatbot(label=L("Group scene"), show_label=False, elem_id="scene-chat", height=520,
                                   editable="all", feedback_options=("Like", "Dislike"), buttons=["copy"],
                                   placeholder=both_spans(PLACEHOLDER),
                                   group_consecutive_messages=False)
            self.status = gr.Markdown(elem_id="scene-status", elem_classes=["reply-stats"])
            with gr.Row(elem_id="scene-swipes", equal_height=True):  # the selected line's alternatives
                self.prev = gr.Button("◀", size="sm", min_width=40, elem_id="scene-swipe-prev", scale=0)
                self.count = gr.Markdown(alternatives_label(None), elem_id="scene-swipe-count", min_height=0)
                self.next = gr.Button("▶", size="sm", min_width=40, elem_id="scene-swipe-next", scale=0)
            self.selected = gr.State(None)  # the line the visitor clicked: the arrows act on it
            self.language_note = gr.Markdown(visible=False, elem_id="scene-language-note")
            with gr.Row(elem_id="scene-message-row"):
                # a whisper: the line goes to one character alone (the box says so); a column of its own keeps
                # it out of the text box's form, so a phone can put it beside Send under the box
                with gr.Column(scale=3, min_width=180, elem_id="scene-to-col"):
                    self.to = gr.Dropdown([(L("Everyone"), "")], value="", label=L("To"),
                                          elem_id="scene-to", interactive=True)
                self.text = gr.Textbox(label=L("Message"), show_label=False, placeholder=L("Say something to everyone…"),
                                       scale=6, elem_id="scene-message", max_lines=6)
                self.send_btn = gr.Button(L("Send"), variant="primary", scale=1, elem_id="scene-send")
            with gr.Row(elem_id="scene-next"):
                gr.Markdown(both_spans(SPEAK_NOW), elem_classes=["reply-stats"])
                self.buttons = [gr.Button(visible=False, size="sm", elem_id=f"scene-speak-{k}") for k in range(SLOTS)]
            with gr.Row(equal_height=True):
                self.turns = gr.Number(3, minimum=1, maximum=20, precision=0, label=L("Lines"), elem_id="scene-turns",
                                       scale=1, min_width=80)
                self.talk_btn = gr.Button(L("Let them talk"), elem_id="scene-talk-btn", scale=2)
                self.stop_btn = gr.Button(L("■ Stop"), variant="stop", elem_id="scene-stop", scale=1)
            self._files_and_voice()

    def _files_and_voice(self) -> None:
        self.regen_btn, self.clear_btn, self.export_btn, self.import_btn = conversation_buttons(
            ("scene-regenerate", "scene-clear", "scene-export", "scene-import"))
        self.speak_on = gr.Checkbox(label=L("Speak lines, each in its own voice"), elem_id="scene-speak")
        # hidden until it has a line to play: Gradio's empty player is a div with a prohibited aria-label
        self.voice = gr.Audio(label=L("Voice"), type="filepath", autoplay=True, interactive=False, visible=False,
                              elem_id="scene-voice", buttons=["download"],
                              waveform_options=gr.WaveformOptions(show_recording_waveform=False))
        self.voice_note = gr.Markdown(elem_id="scene-voice-note")
        with gr.Accordion(L("Classic scenes retrieved for each line"), open=False,
                          elem_id="scene-scenes-panel"):
            self.scenes = gr.Markdown(in_both(lambda: scenes_markdown(SceneState(), 0)), elem_id="scene-scenes")

    def view(self) -> list:
        return [self.state, self.present, self.chat, *self.sliders, *self.mutes, *self.buttons, self.user_role,
                self.order, self.allow_self, self.status, self.to]

    def play(self, panel) -> dict:
        """What a line or a turn reads besides the state, by name (Gradio's inputs_kwargs), in the order the page's
        API takes it: the scene's options, then the settings panel's fields (`_play` reads them)."""
        return {"user_role": self.user_role, "order": self.order, "allow_self": self.allow_self, **panel.fields()}

    def wire(self, page) -> None:
        door = self.door = page.visit.door
        door.track("scene", self.state)
        panel = page.chat.panel
        view = self.view()
        where = [panel.engine, panel.model, panel.base_url]  # the cast, or the engine chosen in Chat
        for changed in panel.changes(self.state):
            changed(self.scene_language, [self.state, *where], self.language_note, api_name=False,
                    show_progress="hidden")
        self.to.change(whisper_hint, [self.to, self.state], self.text, api_name=False)
        for k in range(SLOTS):
            door.on(self.sliders[k].input, set_talk(k), [self.sliders[k], self.state], self.state, api_name=False)
            door.on(self.mutes[k].input, set_mute(k), [self.mutes[k], self.state], [self.state, self.present, self.chat],
                    api_name=False)
        runs = self._wire_runs(self.play(panel))
        stops = {"cancels": runs, "stops": "scene"}
        door.on(self.cast.change, self.change_cast, [self.cast, self.state, self.user_role, self.to], view,
                api_name="scene_cast", slow=True, **stops)
        door.on(self.clear_btn.click, clear_scene, self.state, view, api_name="scene_clear", **stops)
        door.on(self.chat.clear, clear_scene, self.state, view, api_name=False, **stops)
        door.on(self.chat.like, self.rate, self.state, [self.state, self.status], api_name=False)
        door.on(self.chat.edit, self.edit, self.state, [self.state, self.chat, self.status], api_name=False)
        self.chat.select(self.speak_clicked, self.state, [self.voice, self.voice_note], api_name=False)
        self.chat.select(clicked, None, self.selected, api_name=False, show_progress="hidden")
        gr.on([self.state.change, self.selected.change], _count, [self.state, self.selected], self.count,
              api_name=False, show_progress="hidden")
        door.on(self.prev.click, self._flip(-1), [self.state, self.selected], [self.state, self.chat, self.status],
                api_name=False, show_progress="hidden")  # ▶ is a run of its own (_wire_runs)
        self.state.change(refresh_export, self.state, self.export_btn, api_name=False)
        door.on(self.import_btn.upload, import_file, [self.import_btn, self.state], [self.cast, *view],
                api_name="scene_import", **stops)
        page.visit.added.change(cast_choices, [page.visit.added, self.cast], self.cast, api_name=False)
        page.scene_tab.select(cast_choices, [page.visit.added, self.cast], self.cast, api_name=False,
                              show_progress="hidden")

    def _wire_runs(self, play: dict) -> list:
        """A line, a forced speaker, a run of lines, a regenerate; Stop (`play`: what each reads by name). Returns
        the runs, for a clear or an import to cancel."""
        out = [self.chat, self.text, self.state, self.status]
        after = (self.after_scene, [self.state, self.speak_on, self.handled],
                 [self.scenes, self.voice, self.voice_note, self.handled])
        line, door = [self.state, self.text, self.to], self.door
        # a run takes over from the one before (cancelled below), its own kind too: Gradio's default for a click
        # ("once") dropped a second Send made while the first still ran, and the first's end then emptied the box
        run = {"stream": "scene", "inputs_kwargs": play, "trigger_mode": "multiple"}
        events = [
            door.on(self.text.submit, self.send_line, line, out, api_name="scene_send", **run),
            door.on(self.send_btn.click, self.send_line, line, out, api_name=False, **run),
            door.on(self.talk_btn.click, self.let_them_talk, [self.state, self.turns], out, api_name="scene_talk",
                    **run),
            door.on(self.regen_btn.click, self.regenerate_line, self.state, out, api_name="scene_regenerate", **run),
            door.on(self.next.click, self.next_text, [self.state, self.selected], out, api_name=False, **run),
        ]
        events += [door.on(b.click, self.speak_now(k), self.state, out, api_name="scene_speak" if k == 0 else False,
                           **run) for k, b in enumerate(self.buttons)]
        for ev in events:
            ev.then(*after, api_name=False)
        # a new line, a forced speaker or another run cuts in: whatever is still running stops first
        # (its whole lines are kept in the state; a half line is dropped)
        triggers = [self.text.submit, self.send_btn.click, self.talk_btn.click, self.regen_btn.click, self.next.click,
                    *(b.click for b in self.buttons)]
        for trigger, own in zip(triggers, events):
            trigger(None, None, None, cancels=[e for e in events if e is not own], queue=False, api_name=False)
        # Stop: cancel first, then redraw from the state, so a frame still in flight cannot leave a half line
        stopped = self.stop_btn.click(None, None, None, cancels=events, queue=False, api_name=False)
        door.on(stopped.then, show_state, self.state, [self.state, self.chat, self.status], api_name="scene_stop",
                stops="scene").then(*after, api_name=False)
        return events

    def change_cast(self, refs: list[str] | None, state: SceneState | None, user_role: str, to: str | None = "",
                    progress=gr.Progress()):
        """The cast list changed: new characters join now (a Hub one may download), removed ones leave (a run
        still going stops: it would write the old cast back). The cast is set on the scene as it is once every
        character is open (Later: the visitor may have muted one meanwhile)."""
        settings = self.settings
        ids = []
        try:
            for ref in refs or []:
                ids.append(open_role(ref, settings, lambda d, t: progress((d, t), desc=_("Embedding scenes"),
                                                                       unit=_("scenes"))).id)
        except ChatHaruhiError as exc:
            warn(str(exc))
            return _view(_state(state), WARNING_MARK + str(exc), to)

        def step(now: SceneState | None):
            try:
                new = set_cast(_state(now), ids, settings)
            except ChatHaruhiError as exc:
                warn(str(exc))
                return _view(_state(now), WARNING_MARK + str(exc), to)
            # the visitor is who they say they are (the chat's name field and this tab's), never a character's
            # usual partner: Holmes must not call a visitor "Watson" because he was cast first
            new.user_role = scene_name(user_role)
            return _view(new, "", to)
        return Later(step)

    def _run(self, hold: Stream, state: SceneState, engine: EnginePanel, event: SceneEvent):
        """Stream a group-scene event: chat every frame; state, box and status when they change. Each line lands
        on the scene as it is, and the run goes on from there (the visitor's mutes and thumbs meanwhile: `landing`);
        a clear or an import stops its frames."""
        state = _state(state)
        landing = Landing(hold, state)
        first, spoke = True, -1
        for up in stream_scene(state, engine, self.settings, event, landing.between):
            if up.done or first or up.spoke != spoke:  # a frame that draws the scene: its lines land first
                if landing.land(up.state, last=up.done) is None:
                    return
            elif not hold.open():
                return
            if up.error:
                warn(up.error)
            # a sent line leaves the box as the run starts; refused before it was said (no cast, empty, too long),
            # it stays. Later frames leave the box alone: the visitor may be typing the next line in it
            sent = event.text
            if sent is None or not first:
                box = gr.skip()
            else:
                refused = up.error is not None and up.state is state
                box = sent if refused else ""
            new_state = up.state if (up.spoke != spoke or up.done or first) else gr.skip()
            spoke = up.spoke
            if up.done:
                status = up.status
            else:
                status = (up.status or _(BUSY)) if (up.status or first) else gr.skip()
            first = False
            yield up.messages, box, new_state, status

    def send_line(self, hold: Stream, signed_in: gr.OAuthToken | None, state, text, to, **play):
        """The visitor's line to everyone, or whispered `to` one character (a role id; "" for everyone)."""
        state, engine = _play(state, play, signed_in)
        yield from self._run(hold, state, engine, SceneEvent(text=text or "", to=to or None))

    def speak_now(self, k: int):
        def handler(hold: Stream, signed_in: gr.OAuthToken | None, state, **play):
            state, engine = _play(state, play, signed_in)
            present = [m for m in state.members if m.present]
            if k >= len(present):
                yield gr.skip(), gr.skip(), gr.skip(), gr.skip()
                return
            yield from self._run(hold, state, engine, SceneEvent(who=present[k].role_id))
        return handler

    def let_them_talk(self, hold: Stream, signed_in: gr.OAuthToken | None, state, turns, **play):
        state, engine = _play(state, play, signed_in)
        yield from self._run(hold, state, engine, SceneEvent(turns=max(1, min(20, int(turns or 3)))))

    def regenerate_line(self, hold: Stream, signed_in: gr.OAuthToken | None, state, **play):
        state, engine = _play(state, play, signed_in)
        yield from self._run(hold, state, engine, SceneEvent(regenerate=True))

    def scene_language(self, state: SceneState | None, engine: str, model: str | None, base_url: str | None,
                       profile: gr.OAuthProfile | None = None):
        """Before the first line: a warning when the chosen model cannot speak a cast member's language."""
        panel = EnginePanel(engine or "script", model or "", base_url or "")
        roles = []
        for member in (m for m in (state.members if state is not None else []) if m.present):
            try:
                roles.append(load_role(member.role_id))
            except ChatHaruhiError:  # a character that could not be opened: the cast says so
                continue
        found = language_warnings(panel, roles, self.settings, profile)
        if not found:
            return gr.Markdown(value="", visible=False)
        others = [w.role.name for w in found[1:]]
        also = " " + _("The same goes for {names}.", names=_(", ").join(others)) if others else ""
        return gr.Markdown(value=WARNING_MARK + found[0].text + also, visible=True)

    def after_scene(self, state: SceneState | None, speak_on: bool, handled: str | None):
        """Once an event is done: the scenes each new line drew on and, if asked, the last line's voice."""
        state = _state(state)
        chars = [ln for ln in state.lines if ln.by_character]
        if not chars:
            return scenes_markdown(state, 0), gr.skip(), gr.skip(), handled
        last = chars[-1]
        key = f"{last.id}:{last.text}"
        if key == handled:
            return gr.skip(), gr.skip(), gr.skip(), handled
        since = 0
        for ln in reversed(state.lines):
            if not ln.by_character:
                break
            since += 1
        count = max(1, min(since, 6))
        audio, note = self._voice(last.role_id, last.text) if speak_on else (gr.skip(), gr.skip())
        return scenes_markdown(state, count), audio, note, key

    def _voice(self, role_id: str, text: str):
        from chatharuhi_core.roles.sources import load_role

        speech = speak(load_role(role_id), text, self.settings)
        return (gr.Audio(value=str(speech.path), visible=True) if speech.path else gr.skip()), speech.notice

    def speak_clicked(self, state: SceneState | None, evt: gr.SelectData):
        """A click on a character's line reads it aloud in that character's voice."""
        state = _state(state)
        k = line_at(state, evt.index)
        if k is None:
            return gr.skip(), gr.skip()
        ln = state.lines[k]
        return self._voice(ln.role_id, ln.text)

    def rate(self, state: SceneState | None, evt: gr.LikeData):
        return rate_line(_state(state), evt.index, evt.liked, self.settings)

    def _flip(self, step: int):
        """◀ or ▶: the selected character line (the last by default) shows its previous or next text, kept."""
        def run(state: SceneState | None, selected):
            state, note = flip_line(_state(state), selected, step, self.settings)
            return state, gr.Chatbot(value=scene_messages(state), feedback_value=feedback_values(state)), note
        return run

    def next_text(self, hold: Stream, signed_in: gr.OAuthToken | None, state, selected, **play):
        """▶: the selected line's next text; past the latest line's last one, a new one written as Regenerate does."""
        if writes_new_line(_state(state), selected, 1):
            yield from self.regenerate_line(hold, signed_in, state, **play)
            return
        hold.end()  # a flip is a quick step
        state, chat, note = quick_step(hold.visit, "scene", lambda now: self._flip(1)(now, selected))
        yield chat, gr.skip(), state, note

    def edit(self, state: SceneState | None, evt: gr.EditData):
        state, note = edit_line(_state(state), evt.index, evt.value, self.settings)
        return state, gr.Chatbot(value=scene_messages(state), feedback_value=feedback_values(state)), note
