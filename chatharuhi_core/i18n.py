"""The visitor's language. Every sentence the page, the library and the command line show is an English message
looked up in one catalogue (gettext .po files under chatharuhi_core/locale/, compiled by Babel on first use) and
shown in English or Chinese; a character's own words are never looked up.

Which language: the one a caller set (`speaking`, the command line from the locale), else the one a resolver finds
(the page registers one that reads the visitor's browser), else English. A message is marked where it is written:
`_("Could not read {file}.", file=name)` now; `N_("...")` for a constant translated where it is shown.
"""

from __future__ import annotations

import gettext
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from io import BytesIO
from pathlib import Path

LANGUAGES = ("en", "zh")  # English is the msgid itself: a missing translation shows the English sentence
DEFAULT = "en"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN_FILES = "LC_MESSAGES/*.po"  # one file per part of the code (page, web, library, cli), merged when loaded

_chosen: ContextVar[str | None] = ContextVar("chatharuhi_language", default=None)
_resolvers: list[Callable[[], str | None]] = []  # set once by the page: how to find the visitor of this event


def normalize(tag: str | None) -> str | None:
    """'zh-CN', 'zh_TW.UTF-8', 'zh' → 'zh'; 'en-GB', 'C.UTF-8' → 'en'; anything else (or nothing) → None."""
    if not tag:
        return None
    head = re.split(r"[-_.@]", tag.strip().lower(), maxsplit=1)[0]
    if head == "zh":
        return "zh"
    if head in ("en", "c", "posix"):
        return "en"
    return None


def from_accept_language(header: str | None) -> str | None:
    """The first language of a browser's Accept-Language header that the catalogue has, by its q weights."""
    ranked = []
    for i, part in enumerate((header or "").split(",")):
        tag, _sep, params = part.strip().partition(";")
        weight = 1.0
        match = re.search(r"q=([0-9.]+)", params)
        if match:
            try:
                weight = float(match.group(1))
            except ValueError:
                weight = 0.0
        ranked.append((-weight, i, tag))
    for _w, _i, tag in sorted(ranked):
        if found := normalize(tag):
            return found
    return None


def from_environment(environ: Mapping[str, str] | None = None) -> str:
    """The command line's language from the locale, in gettext's order (LANGUAGE, LC_ALL, LC_MESSAGES, LANG);
    English where none names a language the catalogue has."""
    env = os.environ if environ is None else environ
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        for tag in value.split(":"):  # LANGUAGE may list several
            if found := normalize(tag):
                return found
        if value:
            break  # the first one set decides, as in gettext
    return DEFAULT


def follow(resolver: Callable[[], str | None]) -> None:
    """Register how to find the language of whoever the current call serves (the page: the visitor's browser)."""
    if resolver not in _resolvers:
        _resolvers.append(resolver)


def language() -> str:
    """The language of the current call: chosen, else resolved, else English."""
    chosen = _chosen.get()
    if chosen:
        return chosen
    for resolver in _resolvers:
        found = resolver()
        if found:
            return found
    return DEFAULT


def choose(lang: str | None) -> None:
    """Set the language for the rest of this context (the command line, once, from the locale)."""
    _chosen.set(normalize(lang) or DEFAULT)


@contextmanager
def speaking(lang: str | None) -> Iterator[str]:
    """Run a block in `lang` (English when it names no language the catalogue has)."""
    token = _chosen.set(normalize(lang) or DEFAULT)
    try:
        yield _chosen.get() or DEFAULT
    finally:
        _chosen.reset(token)


@cache
def translations(lang: str) -> gettext.NullTranslations:
    """The catalogue for `lang`: every .po file of that language, merged and compiled in memory by Babel."""
    from babel.messages.catalog import Catalog
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    files = sorted((LOCALE_DIR / lang).glob(DOMAIN_FILES))
    if not files:
        return gettext.NullTranslations()
    merged = Catalog(locale=lang)
    for path in files:
        with path.open("rb") as fh:
            for message in read_po(fh, locale=lang):
                if message.id and message.string and not message.fuzzy:
                    merged[message.id] = message
    buffer = BytesIO()
    write_mo(buffer, merged)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


def _(message: str, /, **values: object) -> str:
    """`message` in the current language, its {placeholders} filled from `values`. An empty message stays empty
    (gettext would answer it with the catalogue's header)."""
    lang = language()
    text = translations(lang).gettext(message) if message and lang != DEFAULT else message
    return text.format(**values) if values else text


def ngettext(singular: str, plural: str, n: int, /, **values: object) -> str:
    """The form for `n` in the current language (Chinese has one form; English two); {n} is always available."""
    lang = language()
    if lang == DEFAULT:
        text = singular if n == 1 else plural
    else:
        text = translations(lang).ngettext(singular, plural, n)
    return text.format(n=n, **values)


def N_(message: str, /) -> str:
    """Mark a constant for the catalogue; it is translated where it is shown, with `_`."""
    return message


def in_language(lang: str, message: str, /, **values: object) -> str:
    """`message` in `lang`, whatever the current call's language (the page's two-language labels)."""
    with speaking(lang):
        return _(message, **values)


def both_spans(message: str, /, **values: object) -> str:
    """An inline HTML text in both languages, one shown by the page's lang (the page's style.css): for what is
    drawn before any visitor is known (the page as built), where the visitor's language cannot be asked."""
    en, zh = in_language("en", message, **values), in_language("zh", message, **values)
    if en == zh:
        return en
    return f'<span class="lang-en" lang="en">{en}</span><span class="lang-zh" lang="zh">{zh}</span>'


def in_both(render: Callable[[], str]) -> str:
    """A block (Markdown or HTML) drawn once per language, one shown by the page's lang (see both_spans)."""
    with speaking("en"):
        en = render()
    with speaking("zh"):
        zh = render()
    if en == zh:
        return en
    return (f'<div class="lang-en" lang="en">\n\n{en}\n\n</div>\n\n'
            f'<div class="lang-zh" lang="zh">\n\n{zh}\n\n</div>')
