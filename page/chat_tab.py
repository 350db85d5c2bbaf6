"""The chat tab: who to talk to (the picker), as whom, with which engine; the chat and the message box; voice,
thumbs, the export, and the visitor's name in the story."""

from __future__ import annotations

import gradio as gr

from chatharuhi_core.chat.engines.local.packaged import DEFAULT
from chatharuhi_core.chat.speech import NOT_INSTALLED
from chatharuhi_core.chat.speech import installed as speech_installed
from chatharuhi_core.config import Settings
from chatharuhi_core.i18n import DEFAULT as DEFAULT_LANGUAGE
from chatharuhi_core.i18n import N_, _, both_spans, in_both
from chatharuhi_core.roles.hub import hub_roles
from chatharuhi_core.roles.placeholders import has_placeholder
from chatharuhi_core.roles.sources import bundled_ids, load_role
from chatharuhi_core.web.chat import Conversation
from chatharuhi_core.web.chat_files import export_chat
from chatharuhi_core.web.common import WARNING_MARK, EnginePanel, export_dir, message_text, portrait_of
from chatharuhi_core.web.drawing import chat_messages, describe_role, feedback_values, greeting_messages
from chatharuhi_core.web.feedback import RATE_WHEN_COMPLETE, rate_reply
from chatharuhi_core.web.hearing import hear
from chatharuhi_core.web.picker import PICKER_JS, hub_label, picker_choices, picker_entries
from chatharuhi_core.web.signin import language_warnings, local_choice

from .call import CallControls
from .controls_panel import PlayerControls
from .language import L, warn
from .memory_panel import MemoryPanel
from .settings_panel import SettingsPanel
from .turns import scene_picture, spoken
from .visit import current, scene_name, tiles

FEEDBACK_HINT = N_("Rate a reply with the thumbs, or correct it with the pencil: your feedback is saved on this "
                   "server to improve the character.")


# the Hub list's source column: the data set's own name (the picker's group labels carry English counts)
SOURCE_NAMES = {"community": "ChatHaruhi"}


class ChatTab:
    """The chat tab's components, as attributes; `render` inside the tab, `wire` once the page is built.
    `settings`: the app's one Settings, which its events use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def render(self, first, first_view) -> ChatTab:
        with gr.Row(elem_id="chat-row"):
            self._side(first, first_view)
            self._main(first, first_view)
        return self

    def _side(self, first, first_view) -> None:
        """The left column: who to talk to, as whom, with which engine."""
        entries = picker_entries()
        with gr.Column(scale=1, min_width=300, elem_id="chat-side"):
            self.picker = gr.HTML(tiles(entries), js_on_load=PICKER_JS, elem_id="picker")
            self.chooser = gr.Dropdown(picker_choices(entries), label=L("Search by name or work"),
                                       filterable=True, elem_id="role-choice")
            self.role_status = gr.Markdown(elem_id="role-status")
            self.user_role = gr.Textbox(first.visitor_name, label=L("Your name in the story"),
                                        elem_id="user-role")
            self.panel = SettingsPanel(self.settings).render()
            self.hub_list = _hub_list()
            self.portrait = gr.HTML(first_view[1], elem_id="portrait")

    def _main(self, first, first_view) -> None:
        """The main column: the chat, the message box, and what goes with a reply."""
        with gr.Column(scale=2, elem_id="chat-main"):
            with gr.Row(elem_id="about-row", equal_height=False):
                # who you are talking to, above the chat: built in both languages (the start puts in the visitor's)
                self.about = gr.Markdown(in_both(lambda: describe_role(first, first.visitor_name)), elem_id="about")
                # the scene the last reply drew on, beside the name: in sight without scrolling
                self.scene_picture = gr.HTML(visible=False, elem_id="scene-image", min_height=0)
            self.chat = gr.Chatbot(first_view[3], label=L("Chat"), show_label=False, elem_id="chat", height=520,
                                   buttons=["copy"],
                                   editable="all", avatar_images=(None, portrait_of(first)),
                                   feedback_options=("Like", "Dislike"))
            self.reply_stats = gr.Markdown(elem_id="reply-stats", elem_classes=["reply-stats"])
            self.language_note = gr.Markdown(visible=False, elem_id="language-note")
            with gr.Row(elem_id="language-offers"):
                self.use_local = gr.Button(L("Use the local model that speaks it"), size="sm", visible=False,
                                           elem_id="use-local-model")
                self.use_offline = gr.Button(L("Use the offline engine"), size="sm", visible=False,
                                             elem_id="use-offline")
            # what to ask, right above the box (a click fills it)
            self.examples = gr.Dataset(components=["textbox"], headers=[""], samples=[[q] for q in first.examples],
                                       label=L("Try asking"), visible=bool(first.examples), elem_id="examples")
            with gr.Row(elem_id="message-row"):
                self.text = gr.Textbox("", label=L("Message"), show_label=False, placeholder=L("Say something…"), scale=6,
                                       elem_id="message", max_lines=6)
                self._mic()
                self.send_btn = gr.Button(L("Send"), variant="primary", scale=1, elem_id="send")
                # offered while a reply streams (reply_buttons.busy): the reply ends with what it has written
                self.stop_btn = gr.Button(L("■ Stop"), variant="stop", scale=1, elem_id="stop", visible=False)
            # what the microphone heard, or why it could not (or why there is none on this server)
            self.speech_note = gr.Markdown(both_spans(NOT_INSTALLED) if not self.hears else "", elem_id="speech-note",
                                           elem_classes=["reply-stats"])
            # the player's controls, under the box (above it they pushed the box off a laptop's first screen)
            self.controls = PlayerControls(self.settings).render_row(more=self._reply_actions)
            self._buttons()
            self.note = self.panel.note = gr.Markdown(elem_id="engine-note")
            self.sign_in = gr.Markdown(elem_id="sign-in-note")
            self.feedback_note = gr.Markdown(both_spans(FEEDBACK_HINT) if self.settings.feedback_path else "",
                                             elem_id="feedback-note", elem_classes=["reply-stats"])
            self._voice()
            with gr.Accordion(L("Classic scenes retrieved for the last reply"), open=False,
                              elem_id="scenes-panel"):
                self.scenes = gr.Markdown(elem_id="scenes")
            self.memory = MemoryPanel().render()
            self.controls.render_panel()
            self.call.render_hidden()

    def _mic(self) -> None:
        """Speak instead of typing: a recording (or an uploaded one) is heard into the box. Offered only where the
        speech model is installed (the note under the box says why not)."""
        self.hears = speech_installed()
        self.mic = gr.Audio(sources=["microphone"], type="filepath", label=L("Speak your message"),
                            show_label=False, elem_id="mic", visible=self.hears, scale=2, min_width=120,
                            editable=False, buttons=[], recording=False,
                            waveform_options=gr.WaveformOptions(show_recording_waveform=False,
                                                                sample_rate=16000))

    def _reply_actions(self) -> None:
        """In the row under the box, beside the alternatives: a new reply, the last one read aloud, the chat saved."""
        self.regen_btn = gr.Button(L("↻ Regenerate"), size="sm", elem_id="regenerate", scale=1)
        self.speak_btn = gr.Button(L("Speak"), size="sm", elem_id="speak-last", scale=1)
        self.export_btn = gr.DownloadButton(L("⤓ Export chat"), size="sm", elem_id="export-chat",
                                            interactive=False, scale=1)

    def _buttons(self) -> None:
        with gr.Row(equal_height=True, elem_id="chat-files"):
            self.speak_on = gr.Checkbox(label=L("Speak replies"), value=False, elem_id="speak", scale=1)
            self.clear_btn = gr.Button(L("Clear"), size="sm", elem_id="clear", scale=1)
            self.import_btn = gr.UploadButton(L("Import chat"), size="sm", elem_id="import-chat",
                                              file_types=[".jsonl"], type="filepath", scale=1)
            # a recording made elsewhere, heard into the box like the microphone's
            self.audio_file = gr.UploadButton(L("Send a recording"), size="sm", elem_id="audio-file",
                                              file_types=["audio"], type="filepath", scale=1, visible=self.hears)
            self.call = CallControls(self.settings).render(self.hears)

    def _voice(self) -> None:
        self.voice_audio = gr.Audio(visible=False, label=L("Voice"), type="filepath", autoplay=True,
                                    interactive=False, elem_id="voice-audio", buttons=["download"],
                                    waveform_options=gr.WaveformOptions(show_recording_waveform=False))
        self.voice_note = gr.Markdown(elem_id="voice-note")

    def view(self, visit) -> list:
        """The outputs of visit.role_view, in its order."""
        return [visit.conv, self.portrait, self.about, self.chat, self.examples, self.user_role, self.scenes,
                self.reply_stats, visit.chats]

    def wire(self, page) -> None:
        """The engine's guard and read-ahead, the voice, the thumbs, the export, and the name in the story."""
        v, s = page.visit, self.panel
        s.wire()
        # the language guard follows the character and the engine's model (a switch, a new engine, a typed model)
        guard = (self.language_view, [v.conv, s.engine, s.model, s.base_url],
                 [self.language_note, self.use_offline, self.use_local])
        for changed in s.changes(v.conv):
            changed(*guard, api_name=False, show_progress="hidden")
        # the local model reads the next prompt's start while the visitor types the message (chat/ahead.py)
        gr.on([v.conv.change, s.engine.change, s.model_set.change], page.turns.read_ahead_for,
              [v.conv, self.user_role], None, api_name=False, show_progress="hidden",
              inputs_kwargs=s.fields(key=False))
        self.use_local.click(self.local_model, [v.conv, s.engine, s.model, s.base_url], [s.model, s.model_set],
                             api_name=False)
        self.use_offline.click(lambda: "script", None, s.engine, api_name=False).then(
            s.change_engine, s.engine, s.view(), api_name=False)
        self.examples.click(lambda sample: sample[0], self.examples, self.text)
        # one transcription at a time in the whole app: Gradio's queue shows each visitor's place on the box
        heard = dict(api_name=False, concurrency_limit=1, concurrency_id="speech", show_progress="minimal")
        self.mic.stop_recording(self.heard, [self.mic, self.text, s.speech_language],
                                [self.text, self.mic, self.speech_note], **heard)
        self.audio_file.upload(self.heard, [self.audio_file, self.text, s.speech_language],
                               [self.text, self.audio_file, self.speech_note], **heard)
        self._wire_voice_feedback(page)
        self.call.wire(page, self)
        self._wire_names(page)
        self.memory.wire(page)

    def _wire_voice_feedback(self, page) -> None:
        v = page.visit
        self.speak_btn.click(self.speak_last, [v.conv, self.user_role], [self.voice_audio, self.voice_note],
                             api_name="speak_last").then(*page.reveal, api_name=False, show_progress="hidden")
        self.chat.select(self.speak_clicked, v.conv, [self.voice_audio, self.voice_note], api_name=False).then(
            *page.reveal, api_name=False, show_progress="hidden")
        v.conv.change(refresh_export, [v.conv, self.user_role], self.export_btn, api_name=False)
        v.door.on(self.chat.like, self.rate, v.conv, [v.conv, self.feedback_note, self.chat], api_name=False)

    def _wire_names(self, page) -> None:
        """The name in the story: typed, pasted or filled in by the browser, it is the visitor's from then on
        (`change`, not `input`: Gradio sends no input event for a paste or the browser's autofill). The group
        scene's field follows it; that field gives its name back only when the visitor leaves it or presses
        Enter: had it answered each change, an older name it was handed would come back while the visitor typed
        on, taking letters back (a typed 'Samantha' ended as 'Saman')."""
        v, scene_user = page.visit, page.group.user_role
        named = (rename_visitor, [v.conv, self.user_role], [self.about, self.chat])  # the greeting says it again
        # one at a time, in the order typed: run side by side, each key's event could end after the next one's, and
        # the heading was left at the name less its last letter ("owes Sa a favour" for Sam, 1 try in 4). It is a
        # few milliseconds of work, so one line for every visitor costs nothing
        self.user_role.change(*named, api_name=False, show_progress="hidden", concurrency_limit=1,
                              concurrency_id="rename")
        keep = (lambda name: name, v.visitor, page.session.saved_name)
        self.user_role.change(remember_name, [self.user_role, scene_user, v.conv], [v.visitor, scene_user],
                              api_name=False, show_progress="hidden").then(*keep, api_name=False,
                                                                           show_progress="hidden")
        gr.on([scene_user.blur, scene_user.submit], name_from_scene, [scene_user, self.user_role],
              [v.visitor, self.user_role], api_name=False, show_progress="hidden").then(*keep, api_name=False,
                                                                                       show_progress="hidden")

    def language_view(self, conv: Conversation | None, engine: str, model: str | None, base_url: str | None,
                      profile: gr.OAuthProfile | None = None):
        """Before the first message: a warning when the chosen model cannot speak the character's language (the
        bundled SmolLM2 and 孙悟空), with the offline engine and, where one is installed, the local model that
        speaks it offered in one click each."""
        panel = EnginePanel(engine or "script", model or "", base_url or "")
        role = load_role(current(conv).role_id)
        found = language_warnings(panel, [role], self.settings, profile)
        if not found:
            return gr.Markdown(value="", visible=False), gr.Button(visible=False), gr.Button(visible=False)
        return (gr.Markdown(value=WARNING_MARK + found[0].text, visible=True), gr.Button(visible=True),
                gr.Button(visible=found[0].local is not None))

    def local_model(self, conv: Conversation | None, engine: str, model: str | None, base_url: str | None):
        """The one-click offer: the local model field set to the installed model that speaks the character's
        language (the guard then hides the warning)."""
        local = local_choice(EnginePanel(engine or "script", model or "", base_url or ""),
                             load_role(current(conv).role_id), self.settings)
        if local is None:
            return gr.skip(), gr.skip()
        value = "" if local is DEFAULT else local.name  # a blank field is the default model, as its hint says
        return value, value

    def set_avatar(self, conv: Conversation | None):
        """The portrait as the avatar of the chat bubbles, the thumbs of rated replies (an imported chat)
        and the role's first scene picture: a follow-up, so the API outputs stay plain."""
        if conv is None:
            return gr.skip(), gr.skip()
        role = load_role(conv.role_id)
        reply = conv.history[-1].reply if conv.history else ""
        chat = gr.Chatbot(avatar_images=(conv.face or None, portrait_of(role)), feedback_value=feedback_values(conv, role))
        return chat, scene_picture(role, reply, self.settings)

    def rate(self, conv: Conversation | None, evt: gr.LikeData):
        """A thumb on a reply, kept even while another reply streams (page/door.py); the chat's thumbs are drawn
        from the conversation (a reply streaming redraws them from it on every frame). A thumb past the chat's
        exchanges is on the reply still streaming (not yet one the conversation holds)."""
        if conv is None:
            return gr.skip(), gr.skip(), gr.skip()
        rated, said = rate_reply(conv, evt.index, evt.liked, self.settings, streaming=True)
        if said == _(RATE_WHEN_COMPLETE):  # in sight, not only under the chat
            warn(said)
        return rated, said, gr.Chatbot(feedback_value=feedback_values(rated, load_role(rated.role_id)))

    def heard(self, audio: str | None, box: str, speech: str | None):
        """A recording stopped or a file uploaded: its words after the box's text, the player emptied for the next
        one; a sentence under the box when no words came of it (the box is left as it was)."""
        text, said = hear(audio, box or "", speech, self.settings)
        return (gr.skip() if text is None else text), None, said

    def speak_last(self, conv: Conversation | None, user_role: str = ""):
        """The speak button: read the newest reply (or the greeting) aloud."""
        conv = current(conv)
        role = load_role(conv.role_id)
        greeting = greeting_messages(role, user_role)
        text = conv.history[-1].reply if conv.history else (greeting[0]["content"] if greeting else "")
        return spoken(conv, text, self.settings) if text else (gr.skip(), _("Nothing to read aloud yet."))

    def speak_clicked(self, conv: Conversation | None, evt: gr.SelectData):
        """A click on any message of the character reads that one aloud (the page's first character
        before the session has loaded: its greeting is drawn into the page)."""
        if not isinstance(evt.value, (str, dict, list)):
            return gr.skip(), gr.skip()
        return spoken(current(conv), message_text(evt.value), self.settings)


def _hub_list() -> gr.Dataset:
    """ChatHaruhi's own roles on the Hub, folded: fetched on first pick."""
    listed = hub_roles()
    with gr.Accordion(L("☁ ChatHaruhi on the Hub · {n} characters", n=len(listed)), open=False, elem_id="hub-panel"):
        return gr.Dataset(
            components=[gr.Textbox(visible=False), gr.Textbox(visible=False), gr.Textbox(visible=False)],
            type="index", samples=hub_samples(DEFAULT_LANGUAGE), samples_per_page=12,
            elem_id="hub-list", label=L("Fetched from the Hugging Face Hub on first use"))


def hub_samples(lang: str) -> list[list[str]]:
    """The Hub list's rows in one language, as the search list names them (web/picker.hub_label): each name as its
    scenes have it and in `lang`, and the work in `lang`."""
    return [[*hub_label(r, lang), SOURCE_NAMES.get(r.source, r.source)] for r in hub_roles()]


def hub_list_in(lang: str):
    """The Hub list for a visit's start: drawn in the default language (English) with the page, so redrawn only
    for another."""
    return gr.skip() if lang == DEFAULT_LANGUAGE else gr.Dataset(samples=hub_samples(lang))


def remember_name(user_role: str, in_scene: str, conv: Conversation | None):
    """The name in the story changed (typed, pasted, filled in by the browser, or set by a switch): unless it
    is just the character's usual partner, it is the visitor's own and stays theirs when they switch
    character, in the group-scene tab, and after a reload (this browser's local storage)."""
    name = (user_role or "").strip()
    mine = "" if name in usual_partners(conv) else name
    scene = scene_name(mine)
    return mine, (scene if scene != (in_scene or "").strip() else gr.skip())


def usual_partners(conv: Conversation | None) -> set[str]:
    """The names a switch puts in the field, which are never the visitor's own: the character's usual partner, and
    every bundled character's. A change runs with the conversation as it is when it runs, so after quick switches
    it may hold another character than the one whose partner filled the field (唐僧 was kept as an English page's
    group-scene name so)."""
    return {load_role(rid).visitor_name for rid in {current(conv).role_id, *bundled_ids()}}


def name_from_scene(in_scene: str, in_chat: str):
    """The name typed in the group-scene tab is the visitor's name in the chat too (once they leave the field)."""
    name = (in_scene or "").strip()
    mine = "" if name == scene_name("") else name
    return mine, (mine if mine and mine != (in_chat or "").strip() else gr.skip())


def rename_visitor(conv: Conversation | None, user_role: str):
    """The visitor typed a name in the story: the greeting and description say it (a card's {{user}})."""
    if conv is None:
        return gr.skip(), gr.skip()
    role = load_role(conv.role_id)
    if not any(has_placeholder(t) for t in (role.greeting, role.description)):
        return gr.skip(), gr.skip()
    chat = gr.Chatbot(value=chat_messages(conv, role, user_role), feedback_value=feedback_values(conv, role))
    return describe_role(role, user_role), chat


def refresh_export(conv: Conversation | None, user_role: str):
    """Keep the export button's file in step with the conversation, so one click downloads it."""
    if conv is None or not conv.history:
        return gr.DownloadButton(value=None, interactive=False)
    return gr.DownloadButton(value=str(export_chat(conv, user_role, export_dir())), interactive=True)
