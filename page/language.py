"""The page in the visitor's language: labels are translated in the browser (Gradio's I18n, from the same catalogue
as everything else), sentences an event writes are translated on the server for the visitor of that event, and a
switch in the header remembers a choice per browser (a cookie, which every event of that browser carries)."""

from __future__ import annotations

import html
from http.cookies import CookieError, SimpleCookie

import gradio as gr

from chatharuhi_core import i18n

COOKIE = "chatharuhi-lang"
# the catalogue's Chinese serves both Chinese locales the browser may report (Gradio picks by navigator.language)
BROWSER_LOCALES = {"zh": ("zh-CN", "zh-TW")}


# the page's labels as it was built (a count or a name filled in): their English → their Chinese, all the browser
# needs of the catalogue (the page's config carries it to every visitor). The app's page, built once per process;
# never anything of a visitor.
_LABELS: dict[str, str] = {}


def L(message: str, /, **values: object):  # noqa: N802 (a marker, like gettext's _)
    """A static label, placeholder or choice: its English is the key, the browser shows its language's text.
    With `values`, the filled English is the key and its filled Chinese is added for the browser."""
    if values:
        key = i18n.in_language("en", message, **values)
        _LABELS[key] = i18n.in_language("zh", message, **values)
        return gr.I18n()(key)
    _LABELS[message] = i18n.in_language("zh", message)
    return gr.I18n()(message)


# Gradio 6.31's status line tells screen readers an event is done with this key, which none of its own languages
# defines: the reader said "common.complete"
GRADIO_DONE = "common.complete"


def page_i18n() -> gr.I18n:
    """The page's labels for the browser: Chinese under both Chinese locales; English is the key itself."""
    zh = {key: text for key, text in _LABELS.items() if text != key} | {GRADIO_DONE: "完成"}
    return gr.I18n(en={GRADIO_DONE: "Complete"}, **{locale: zh for locale in BROWSER_LOCALES["zh"]})


def language_of(request: gr.Request | None) -> str | None:
    """The language this request's browser chose with the switch, else the first of its Accept-Language."""
    if request is None:
        return None
    headers = getattr(request, "headers", None) or {}
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get("cookie", "") or "")
    except CookieError:
        pass
    chosen = cookie.get(COOKIE)
    if chosen is not None and i18n.normalize(chosen.value):
        return i18n.normalize(chosen.value)
    return i18n.from_accept_language(headers.get("accept-language"))


def visitor_language() -> str | None:
    """The language of the visitor whose event runs now (Gradio keeps the event's request in a context variable)."""
    from gradio.context import LocalContext

    return language_of(LocalContext.request.get(None))


# On load: apply the remembered choice (Gradio follows navigator.language) and give the page its lang, which
# style.css reads to show one language of the static texts and screen readers read to pick a voice.
LANGUAGE_JS = """
async () => {
  const cookie = document.cookie.split('; ').find((c) => c.startsWith('@COOKIE@='));
  const chosen = cookie ? cookie.split('=')[1] : '';
  const browser = (navigator.languages && navigator.languages[0]) || navigator.language || 'en';
  const zh = chosen ? chosen === 'zh' : browser.toLowerCase().startsWith('zh');
  document.documentElement.lang = zh ? 'zh-CN' : 'en';
  document.querySelectorAll('#language-switch button').forEach((b) => {
    b.setAttribute('aria-pressed', String((b.dataset.lang === 'zh') === zh));
  });
  if (chosen && zh !== browser.toLowerCase().startsWith('zh')) {
    // Gradio's own translations module, as loaded by the page: the same module instance holds the locale
    const url = performance.getEntriesByType('resource').map((e) => e.name)
      .find((n) => /\\/assets\\/core-[\\w-]+\\.js$/.test(n));
    if (url) { try { (await import(url)).changeLocale(zh ? 'zh-CN' : 'en'); } catch (e) { console.warn(e); } }
    // Gradio 6.31 relabels only the open tab: the others kept the old language until opened
    await new Promise((done) => setTimeout(done, 0));
    const tabs = @TABS@;
    document.querySelectorAll('[role=tab]').forEach((t) => {
      const text = t.textContent.trim();
      const want = zh ? tabs[text] : Object.keys(tabs).find((en) => tabs[en] === text);
      if (want && want !== text && t.children.length === 0) t.textContent = want;
    });
  }
}
"""

TAB_LABELS = ("Chat", "Group", "Add a character")  # the page's tabs (app.py), relabelled by language_js


def language_js() -> str:
    """The page's start script (LANGUAGE_JS), with the tabs' labels in both languages filled in."""
    import json

    tabs = {label: i18n.in_language("zh", label) for label in TAB_LABELS}
    return LANGUAGE_JS.replace("@COOKIE@", COOKIE).replace("@TABS@", json.dumps(tabs, ensure_ascii=False))

# the switch (the body Gradio runs with `element` when the HTML loads): remember the choice for a year in this
# browser, then reload (what the page shows survives a reload)
SWITCH_JS = """
element.querySelectorAll('button[data-lang]').forEach((b) => b.addEventListener('click', () => {
  document.cookie = '@COOKIE@=' + b.dataset.lang + '; path=/; max-age=31536000; SameSite=Lax';
  location.reload();
}));
""".replace("@COOKIE@", COOKIE)


def switch_html() -> str:
    """English | 中文, each in its own language (a visitor who cannot read the page can still find theirs)."""
    buttons = [f'<button type="button" data-lang="{code}" lang="{code}" aria-pressed="false">{html.escape(name)}'
               f"</button>" for code, name in (("en", "English"), ("zh", "中文"))]
    return '<nav aria-label="Language · 语言">' + "".join(buttons) + "</nav>"


def language_switch() -> gr.HTML:
    """The switch, in the page's header."""
    return gr.HTML(switch_html(), js_on_load=SWITCH_JS, elem_id="language-switch", min_height=0)


def speak_the_visitors_language() -> None:
    """From now on, a message translated during an event is in that event's visitor's language."""
    i18n.follow(visitor_language)


def warn(message: str) -> None:
    """A warning toast whose title is in the visitor's language too (Gradio's own says "Warning")."""
    gr.Warning(message, title=i18n._("Warning"))
