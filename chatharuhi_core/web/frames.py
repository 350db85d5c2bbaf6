"""A card's display-only HTML, shown as its authors meant it and kept away from the page.

SillyTavern cards often draw a status panel with a display-only regex script whose replacement is a fenced
```` ```html ```` block (a whole page of HTML, CSS and JavaScript); SillyTavern renders such a block as a frame. Here
the block leaves the message: its HTML is kept as a file beside the card's saved package, and the message holds a
`<div class="card-frame">` naming it. The page's script (card_frame_head) draws each as an iframe sandboxed without the
page's origin, whose content policy blocks every network request, sized to its content; the block's own scripts run
only when the visitor who sees it has allowed them for that card, in their browser (off by default), so a card one
visitor adds never runs script in another's page. The prompt never holds the block (display scripts are the page's
alone, so the library, the command line and the engines never see it).
"""

from __future__ import annotations

import hashlib
import html
import re

from ..i18n import N_
from ..roles.card_extras import scripted
from ..roles.regex_scripts import DISPLAY
from ..roles.role import Role
from .common import file_url

FENCE = re.compile(r"```html[^\S\n]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)
SCRIPTED = re.compile(r"<script\b|\son[a-z]+\s*=|javascript:", re.IGNORECASE)
FRAMES = "frames"  # inside the card's saved package (roles/<id>/frames/<hash>.html), a path the page may send


def on_page(role: Role, text: str, placement: int, depth: int | None, user_role: str) -> str:
    """`text` as the page shows it: through the card's display-only scripts, each ```html block a frame."""
    return framed(role, scripted(role, text, DISPLAY, placement, depth, user_role))


def framed(role: Role, text: str) -> str:
    """Each ```html block of `text` as a frame's placeholder; the text itself when it has none, or when the card
    has no saved package to keep the block beside (the block then stays as code, never as live HTML)."""
    if "```" not in text or role.root is None:
        return text
    return FENCE.sub(lambda m: _tag(role, m.group(1)), text)


def _tag(role: Role, block: str) -> str:
    """The block kept as a file (named by its content: the same block is written once) and the tag naming it."""
    folder = role.root / FRAMES
    name = hashlib.sha256(block.encode("utf-8")).hexdigest()[:24] + ".html"
    path = folder / name
    if not path.is_file():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(block, encoding="utf-8")
        except OSError:  # a read-only cache: the block stays as code
            return "```html\n" + block + "```"
    scripted_too = " card-frame-scripts" if SCRIPTED.search(block) else ""
    # the chat's sanitizer keeps a class, a title and a link's address, not data- attributes: what the page's script
    # needs rides on those (the link also leads a reader of the API's text to the panel)
    return (f'\n\n<div class="card-frame{scripted_too}" title="{html.escape(role.id, quote=True)}">'
            f'<a href="{file_url(path)}">⧉</a></div>\n\n')


# what the bar over a frame with scripts says, in both languages (the page's lang picks; card_frame_head)
SCRIPTS_OFF = N_("This panel has scripts of its own; they are off.")
RUN_THEM = N_("Run them for this card")
SCRIPTS_ON = N_("This card's scripts run in its panel, in this browser only.")
TURN_OFF = N_("Turn them off")
PANEL = N_("The card's panel")

# The page's side (launch's `head`): each card-frame placeholder drawn as a sandboxed iframe (scripts, never the
# page's origin, forms, pop-ups or navigation), its document given a content policy that allows no request at all
# and, unless the visitor allowed this card's scripts in this browser (localStorage), no script but the page's own
# sizer (by nonce).
# The frame tells its height to the page, which takes it only from that frame's own window.
_CARD_FRAME_JS = """
(() => {
  const say = @SAY@;
  const words = (key) => say[(document.documentElement.lang || 'en').startsWith('zh') ? 'zh' : 'en'][key];
  const allowed = (card) => localStorage.getItem('chatharuhi-card-scripts:' + card) === 'on';
  let next = 0;
  const sizer = (id) => "(() => { const tell = () => parent.postMessage({cardFrame: '" + id + "', height: "
    + "Math.ceil(document.documentElement.scrollHeight)}, '*'); addEventListener('load', tell); "
    + "new ResizeObserver(tell).observe(document.documentElement); tell(); })();";
  const page = (body, id, run) => {
    const nonce = crypto.getRandomValues(new Uint32Array(4)).join('');
    const scripts = run ? "'unsafe-inline'" : "'nonce-" + nonce + "'";
    const policy = "default-src 'none'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:; "
      + "media-src data: blob:; form-action 'none'; script-src " + scripts;
    return '<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="'
      + policy + '"><script nonce="' + nonce + '">' + sizer(id) + '</scr' + 'ipt></head><body>' + body
      + '</body></html>';
  };
  addEventListener('message', (e) => {
    const id = e.data && e.data.cardFrame;
    if (typeof id !== 'string') return;
    const frame = document.querySelector('iframe[data-frame-id="' + id + '"]');
    if (frame && e.source === frame.contentWindow) {
      frame.style.height = Math.min(Math.max(Number(e.data.height) || 0, 24), 4000) + 'px';
    }
  });
  // a message's <div class="card-frame">, drawn when it comes into the page (the chat redraws its messages)
  const card_of = (box) => box.dataset.card || box.getAttribute('title') || '';
  const has_scripts = (box) => box.classList.contains('card-frame-scripts');
  const draw = (box, body) => {
    const card = card_of(box), run = has_scripts(box) && allowed(card);
    const id = 'f' + (next++);
    box.replaceChildren();
    box.removeAttribute('title');  // the role id is the page's to read, not a tooltip
    box.dataset.card = card;
    if (has_scripts(box)) {
      const bar = document.createElement('div');
      bar.className = 'card-frame-bar';
      const note = document.createElement('span');
      note.textContent = words(run ? 'on' : 'off') + ' ';
      const toggle = document.createElement('button');
      toggle.type = 'button';
      toggle.textContent = words(run ? 'stop' : 'run');
      toggle.addEventListener('click', () => {
        localStorage.setItem('chatharuhi-card-scripts:' + card, run ? 'off' : 'on');
        document.querySelectorAll('div.card-frame').forEach((b) => {
          if (b.dataset.card === card && b.cardBody != null) draw(b, b.cardBody);
        });
      });
      bar.append(note, toggle);
      box.append(bar);
    }
    const frame = document.createElement('iframe');
    frame.setAttribute('sandbox', 'allow-scripts');
    frame.setAttribute('referrerpolicy', 'no-referrer');
    frame.setAttribute('title', words('panel'));
    frame.dataset.frameId = id;
    frame.style.cssText = 'width: 100%; height: 120px; border: 0; display: block;';
    frame.srcdoc = page(body, id, run);
    box.cardBody = body;
    box.append(frame);
  };
  const look = () => document.querySelectorAll('div.card-frame:not([data-drawn])').forEach(async (box) => {
    box.dataset.drawn = '1';
    const src = box.querySelector('a')?.getAttribute('href');
    if (!src || !src.startsWith('/gradio_api/file=')) return;
    try { draw(box, await (await fetch(src)).text()); } catch (e) { console.warn(e); }
  });
  new MutationObserver(look).observe(document.documentElement, {childList: true, subtree: true});
  look();
})();
"""


def card_frame_head() -> str:
    """The page's <head> addition that draws the card-frame placeholders (launch's `head`), its words in both
    languages."""
    import json

    from ..i18n import in_language

    keys = {"off": SCRIPTS_OFF, "run": RUN_THEM, "on": SCRIPTS_ON, "stop": TURN_OFF, "panel": PANEL}
    say = {lang: {k: in_language(lang, v) for k, v in keys.items()} for lang in ("en", "zh")}
    return "<script>" + _CARD_FRAME_JS.replace("@SAY@", json.dumps(say, ensure_ascii=False)) + "</script>"
