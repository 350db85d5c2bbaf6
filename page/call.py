"""The call: one button turns the chat into a spoken conversation (web/call.py holds its logic).

The browser's side (CALL_JS) keeps the microphone streaming while the call listens, pauses it when the visitor's
words are sent, plays the reply's sentences as they are voiced, and listens again when the last one has been
played. Stop, a switch of character or the page's end ends the call; so does its button.
"""

from __future__ import annotations

import json

import gradio as gr

from chatharuhi_core.i18n import N_, _, in_language
from chatharuhi_core.roles.sources import load_role
from chatharuhi_core.web.call import Call, hear_turn, taken, voice_turn

from .language import L
from .visit import current

TICK_S = 0.3  # how often the reply is looked at for finished sentences
CHUNK_S = 0.4  # how much microphone each chunk carries
STILL_S = 8.0  # a reply whose exchange never lands (the engine failed) counts as ended once the chat is this still

CALL_JS = r"""
  if (window.chCall) return;
  const q = (sel) => document.querySelector(sel);
  const call = window.chCall = {on: false, listening: false, turn: 0, played: new Set(), queue: [],
                                audio: new Audio(), playing: false, timings: []};
  call.listen = () => {
    if (!call.on || call.listening) return;
    const button = q('#call-mic .record-button');
    if (button) { button.click(); call.listening = true; }
  };
  call.mute = () => {
    const button = q('#call-mic .stop-button');
    if (call.listening && button) button.click();
    call.listening = false;
  };
  call.begin = () => {
    call.on = true; call.turn = 0; call.queue = []; document.body.classList.add('in-call'); call.listen();
  };
  call.end = () => {
    call.mute(); call.on = false; call.queue = []; call.audio.pause(); call.playing = false;
    document.body.classList.remove('in-call');
  };
  call.audio.addEventListener('ended', () => { call.playing = false; });
  call.audio.addEventListener('error', () => { call.playing = false; });
  call.audio.addEventListener('playing', () => {
    const t = call.timings[call.timings.length - 1];
    if (t && t.firstSound === undefined) t.firstSound = performance.now() - t.sent;
  });
  // a microphone the browser refuses (or cannot offer, on a page that is not https) is said under the box, in the
  // page's language; a call waiting on it ends
  const sayUnderBox = (sentences) => {
    const note = q('#speech-note');
    if (!note) return;
    const zh = (document.documentElement.lang || '').startsWith('zh');
    (note.querySelector('.prose') || note).textContent = zh ? sentences.zh : sentences.en;
  };
  const refused = {en: MIC_REFUSED_EN, zh: MIC_REFUSED_ZH};
  const insecure = {en: MIC_INSECURE_EN, zh: MIC_INSECURE_ZH};
  document.addEventListener('click', (e) => {
    if (!e.target.closest('#mic .record-button, #call')) return;
    setTimeout(async () => {
      let denied = !navigator.mediaDevices;
      if (!denied) {
        try { denied = (await navigator.permissions.query({name: 'microphone'})).state === 'denied'; } catch (err) {}
      }
      if (!denied) return;
      sayUnderBox(navigator.mediaDevices ? refused : insecure);
      if (call.on) q('#call')?.click();
    }, 1200);
  }, true);
  // Stop, another character or the search list end the call, as its own button does
  document.addEventListener('click', (e) => {
    if (call.on && e.target.closest('#stop, #picker .thumbnail-item, #role-choice, #clear')) q('#call')?.click();
  }, true);
  setInterval(() => {
    if (!call.on) return;
    const said = Number(q('#call-said textarea')?.value || 0);
    if (said > call.turn) {  // the visitor's turn has ended: their words are in the box
      call.turn = said;
      call.mute();
      call.timings.push({turn: said, sent: performance.now()});
      setTimeout(() => q('#send')?.click(), 50);
    }
    let voiced = {};
    try { voiced = JSON.parse(q('#call-voice textarea')?.value || '{}'); } catch (e) {}
    for (const [turn, url] of voiced.clips || []) {
      if (!call.played.has(url)) { call.played.add(url); if (turn === call.turn) call.queue.push(url); }
    }
    if (!call.playing && call.queue.length) {
      call.playing = true;
      call.audio.src = call.queue.shift();
      call.audio.play().catch(() => { call.playing = false; });
    }
    if (!call.playing && !call.queue.length && (voiced.done || 0) >= call.turn) call.listen();
  }, 150);
"""  # the body of js_on_load's function, run once when the page is drawn


MIC_REFUSED = N_("The browser refused the microphone: allow it for this site (the icon in the address bar), then "
                 "press the microphone again.")
MIC_INSECURE = N_("This page cannot use a microphone: browsers offer one only to https pages and to this computer's "
                  "own address.")


def call_js() -> str:
    """CALL_JS with its two sentences in both languages (the page's language picks one as they are shown)."""
    script = CALL_JS
    for name, message in (("MIC_REFUSED", MIC_REFUSED), ("MIC_INSECURE", MIC_INSECURE)):
        for lang in ("en", "zh"):
            script = script.replace(f"{name}_{lang.upper()}", json.dumps(in_language(lang, message)))
    return script


class CallControls:
    """The call's button, its streaming microphone and the two fields the browser's side reads."""

    def __init__(self, settings) -> None:
        self.settings = settings

    def render(self, hears: bool) -> CallControls:
        self.button = gr.Button(L("Start a call"), size="sm", elem_id="call", visible=hears, scale=1)
        return self

    def render_hidden(self) -> None:
        """The parts the visitor does not see: drawn (the browser's side clicks and reads them), styled away."""
        self.state = gr.State(Call())
        self.mic = gr.Audio(sources=["microphone"], streaming=True, type="filepath", elem_id="call-mic",
                            elem_classes=["call-hidden"], show_label=False)
        self.said = gr.Textbox("0", elem_id="call-said", elem_classes=["call-hidden"], show_label=False)
        self.voiced = gr.Textbox("{}", elem_id="call-voice", elem_classes=["call-hidden"], show_label=False)
        self.timer = gr.Timer(TICK_S, active=False)
        gr.HTML("", js_on_load=call_js(), elem_id="call-js", elem_classes=["call-hidden"])

    def wire(self, page, tab) -> None:
        v = page.visit
        js_toggle = "(call) => { const c = window.chCall; if (c) { c.on ? c.end() : c.begin(); } return call; }"
        self.button.click(self.toggle, self.state, [self.button, self.timer, tab.speech_note, self.voiced,
                                                    self.said], js=js_toggle, api_name=False,
                          show_progress="hidden")
        self.mic.stream(self.heard, [self.mic, self.state, tab.panel.speech_language, tab.chat, v.conv],
                        [tab.text, self.said, tab.speech_note], stream_every=CHUNK_S, time_limit=None,
                        concurrency_limit=None, api_name=False, show_progress="hidden")
        self.timer.tick(self.tick, [self.state, tab.chat, v.conv], self.voiced, api_name=False,
                        show_progress="hidden")

    def toggle(self, call: Call):
        """The call's button: on (listening at once) or off (the microphone paused, nothing more voiced)."""
        if call.on:
            call.end()
            return _("Start a call"), gr.Timer(active=False), "", "{}", "0"
        call.begin()
        return (_("End the call"), gr.Timer(active=True), _("In a call: speak, and pause when you are done."),
                "{}", "0")

    def heard(self, chunk, call: Call, speech: str | None, chat: list | None, conv):
        """A chunk of the call's microphone: when the visitor's turn has ended, their words in the box and the
        turn's number for the browser's side, which sends them."""
        if not chunk:
            return gr.skip(), gr.skip(), gr.skip()
        rate, data = taken(chunk)  # read, and the file Gradio wrote deleted
        words, said = hear_turn(call, rate, data, speech, self.settings, len(chat or []))
        if words is None:
            return gr.skip(), gr.skip(), (said or gr.skip())
        call.exchanges = len(current(conv).history)
        return words, str(call.turns), ""

    def tick(self, call: Call, chat: list | None, conv):
        """The reply as the page shows it: each sentence finished since the last look is voiced. The reply has
        ended once the chat holds its exchange (or, when none comes, an engine's failure said in the chat, once
        the page has been still for a while)."""
        if not call.on or call.listening or call.done >= call.turns:
            return gr.skip()
        chat = chat or []
        reply = _text(chat[-1].get("content")) if len(chat) >= call.messages + 2 \
            and chat[-1].get("role") == "assistant" else None
        call.still = call.still + 1 if reply == call.seen else 0
        call.seen = reply
        landed = len(current(conv).history) > call.exchanges
        ended = landed or call.still * TICK_S >= STILL_S
        if reply is None and not ended:
            return gr.skip()
        role = load_role(current(conv).role_id)
        voice_turn(call, reply or "", not ended, role, self.settings, _file_url)
        return json.dumps({"clips": call.clips[-20:], "done": call.done, "first_sound_s": call.first_sound_s})


def _text(content) -> str:
    """A chat message's text, whatever shape Gradio gives it in."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text(c) for c in content)
    if isinstance(content, dict):
        return str(content.get("text") or content.get("content") or "")
    return ""


def _file_url(path) -> str:
    """Where the browser fetches a spoken file (the audio folder is among the app's allowed paths)."""
    return f"/gradio_api/file={path}"
