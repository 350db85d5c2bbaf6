"""A SillyTavern card's regex scripts (`data.extensions.regex_scripts`), run the way SillyTavern runs them.

Card authors use them to keep machinery out of sight: a reply's `<UpdateVariable>` block is cut from the stored
message, a `<StatusPlaceHolderImpl/>` tag is drawn as a status bar only on screen, a note is added only to the
prompt. Each script is a JavaScript regex literal and a replacement; we read the literal into the `regex` module
(translating where JavaScript means something else) and build each replacement ourselves, so nothing from the card is
ever executed.

A card is uploaded by a visitor, so no script may hang or swamp the app: every match runs under a timeout, a text
longer than MAX_TEXT_CHARS is left alone, fixed repeats that would compile into a huge program are refused, and a
result may not grow past MAX_RESULT_CHARS. A script that breaks any of this is skipped and named in one sentence.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import regex

from ..i18n import _

logger = logging.getLogger(__name__)

# Where a text comes from (SillyTavern's regex_placement); 0 was its old "markdown" placement, 4 is unused.
LEGACY_MARKDOWN = 0
USER_INPUT = 1
AI_OUTPUT = 2
SLASH_COMMAND = 3
WORLD_INFO = 5
REASONING = 6

# What a text is being made for: shown on screen, put into the prompt, or kept as the message itself.
DISPLAY = "display"
PROMPT = "prompt"
STORED = "stored"
WHERES = (DISPLAY, PROMPT, STORED)

TIMEOUT_S = 0.25  # per script per text: a pattern that backtracks for ever is stopped here
MAX_TEXT_CHARS = 50_000  # a longer text is not given to the scripts at all
MAX_RESULT_CHARS = 200_000  # a script whose result would be longer is skipped (a replacement can multiply a text)
MAX_PATTERN_CHARS = 20_000
MAX_EXPANSION = 100_000  # the regex module spells out fixed repeats: (?:a{1000}){1000} is a million nodes

_FLAGS = "gimsuyd"  # JavaScript's flags that we honour (g i m s) or that change nothing here (u y d)
_LITERAL = regex.compile(r"/(.+)/([A-Za-z]*)", regex.DOTALL)  # greedy: the flags follow the last slash
_QUANTIFIER = regex.compile(r"\{(\d+)(?:,(\d*))?\}")  # JavaScript's {n}, {n,}, {n,m}; any other brace is literal
_BRACED_HEX = regex.compile(r"\{([0-9A-Fa-f]{1,6})\}")
_GROUP_NAME = regex.compile(r"<([^<>]+)>")
_NAMED_GROUP = regex.compile(r"\(\?<(?![=!])")
_JS_LETTER_ESCAPES = frozenset("bBdDwWsSnrtvfcxukpP")  # any other letter escaped is the letter itself
_WORD = "A-Za-z0-9_"  # JavaScript's \w: ASCII only, so Chinese is never a word character
_LINE_ENDS = r"\n\r\u2028\u2029"  # what ends a line for JavaScript's ., ^ and $
_TEMPLATE = regex.compile(r"\$\$|\$&|\$<([^>]*)>|\$(\d\d?)|\{\{(match|char|user)\}\}", regex.IGNORECASE)
_MACRO = regex.compile(r"\{\{(char|user)\}\}", regex.IGNORECASE)
_JS_SPECIAL = frozenset(".^$*+?{}[]\\/|()")


class _Skip(Exception):
    """A script cannot run; `why` is the end of the sentence that says so."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


@dataclass(frozen=True)
class RunContext:
    """What a text is being run for: `where` (DISPLAY, PROMPT or STORED), its `placement` (USER_INPUT...), how many
    messages from the end it is (`depth`, 0 = newest; None when it is not in a chat, e.g. a greeting), whether it
    is an edit, and the visitor's name for {{user}}."""

    where: str
    placement: int
    depth: int | None = None
    edit: bool = False
    user_role: str = "User"

    def __post_init__(self) -> None:
        if self.where not in WHERES:
            raise ValueError(f"where must be one of {WHERES}, not {self.where!r}")


@dataclass(frozen=True)
class RegexScript:
    """One script of a card, read and checked to compile. `find` keeps the card's findRegex as written: its
    {{user}} is only known at chat time, so the pattern is compiled (and cached) per visitor's name."""

    name: str
    find: str
    replace: str = ""
    trims: tuple[str, ...] = ()
    placements: frozenset[int] = frozenset()
    markdown_only: bool = False
    prompt_only: bool = False
    run_on_edit: bool = False
    disabled: bool = False
    substitute: int = 0  # 0 none, 1 {{char}}/{{user}} put into the pattern as they are, 2 regex-escaped
    min_depth: int | None = None
    max_depth: int | None = None
    char: str = ""

    def source(self, user_role: str) -> str:
        """findRegex with its macros filled as substituteRegex asks (before the literal is read, as SillyTavern)."""
        if self.substitute == 1:
            return _fill(self.find, self.char, user_role)
        if self.substitute == 2:
            return _fill(self.find, _js_escape(self.char), _js_escape(user_role))
        return self.find

    def applies(self, context: RunContext) -> bool:
        """Whether SillyTavern would run this script on a text in `context`."""
        if self.disabled or context.placement not in self.placements:
            return False
        if context.where == DISPLAY:
            wanted = self.markdown_only
        elif context.where == PROMPT:
            wanted = self.prompt_only
        else:
            wanted = not self.markdown_only and not self.prompt_only
        if not wanted or (context.edit and not self.run_on_edit):
            return False
        if context.depth is None:
            return True
        return ((self.min_depth is None or context.depth >= self.min_depth)
                and (self.max_depth is None or context.depth <= self.max_depth))


@dataclass(frozen=True)
class _Compiled:
    pattern: regex.Pattern
    every: bool  # the g flag


def read_scripts(raw: object, char: str, user_role: str = "{{user}}") -> tuple[list[RegexScript], list[str]]:
    """The scripts of a card's `extensions.regex_scripts` that can run, and one sentence per script that cannot.
    Anything may come from a card, so nothing here raises; no field at all (None) is simply no scripts."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [_("The card's regex scripts were not read: they are not a list.")]
    scripts: list[RegexScript] = []
    problems: list[str] = []
    for index, item in enumerate(raw, 1):
        name = _name(item, index)
        try:
            script = _parse(item, name, char)
            _compile(script.source(user_role))
        except _Skip as skip:
            problems.append(_sentence(name, skip.why))
            continue
        scripts.append(script)
    return scripts, problems


def run_scripts(scripts: Sequence[RegexScript], text: str, context: RunContext) -> str:
    """`text` after every script that applies in `context`, in the card's order. A script that fails at run time
    (too slow, a result too long, a pattern the visitor's name breaks) leaves the text as it was and is logged."""
    chosen = [script for script in scripts if script.applies(context)]
    if not chosen:
        return text
    if len(text) > MAX_TEXT_CHARS:
        logger.warning("%s", _("A text of {n} characters is longer than the card's regex scripts take ({limit}); "
                               "it was left as it is.", n=len(text), limit=MAX_TEXT_CHARS))
        return text
    for script in chosen:
        try:
            text = _run_one(script, text, context.user_role)
        except _Skip as skip:
            logger.warning("%s", _sentence(script.name, skip.why))
    return text


def _run_one(script: RegexScript, text: str, user_role: str) -> str:
    """One script over `text`, under the timeout and the size bound."""
    compiled = _compile(script.source(user_role))
    tokens = _template(script.replace, compiled.pattern.groups, script.char, user_role)
    trims = tuple(trim for trim in (_fill(t, script.char, user_role) for t in script.trims) if trim)
    replacer = _Replacer(tokens, trims, MAX_RESULT_CHARS - len(text))
    try:
        return compiled.pattern.sub(replacer, text, count=0 if compiled.every else 1, timeout=TIMEOUT_S)
    except TimeoutError:
        raise _Skip(_("it took too long on a message")) from None


class _Replacer:
    """The replacement of each match, built from the parsed replaceString (never Python's template syntax), with a
    budget on how much the text may grow."""

    def __init__(self, tokens: list[tuple[str, object]], trims: tuple[str, ...], budget: int):
        self.tokens, self.trims, self.budget = tokens, trims, budget

    def __call__(self, match: regex.Match) -> str:
        captures: dict[object, str] = {}  # each group once, however often the replacement names it
        parts = []
        for kind, value in self.tokens:
            if kind == "text":
                parts.append(value)
                continue
            if value not in captures:
                captures[value] = self._capture(match, value)
            parts.append(captures[value])
        size = sum(len(part) for part in parts)
        self.budget -= size - len(match[0])
        if self.budget < 0:
            raise _Skip(_("its result would be longer than {limit} characters", limit=MAX_RESULT_CHARS))
        return "".join(parts)

    def _capture(self, match: regex.Match, group: object) -> str:
        """A group's text with the trim strings taken out; a group that took no part (or is not there) is ''."""
        try:
            found = match.group(group) or ""
        except IndexError:
            return ""
        for trim in self.trims:
            found = found.replace(trim, "")
        return found


def _template(replace: str, groups: int, char: str, user_role: str) -> list[tuple[str, object]]:
    """replaceString as text and group references: $& and {{match}} (and $0) the whole match, $1..$99, $<name>, $$ a
    dollar; {{char}} and {{user}} are text, so a name holding '$1' stays as it is."""
    tokens: list[tuple[str, object]] = []
    last = 0
    for found in _TEMPLATE.finditer(replace):
        tokens.append(("text", replace[last:found.start()]))
        last = found.end()
        whole, name, digits, macro = found[0], found[1], found[2], found[3]
        if whole == "$$":
            tokens.append(("text", "$"))
        elif whole == "$&":
            tokens.append(("group", 0))
        elif name is not None:
            tokens.append(("group", name))
        elif digits is not None:
            if len(digits) == 2 and int(digits) <= groups:  # as JavaScript: $10 is group 10 only if there is one
                tokens.append(("group", int(digits)))
            else:
                tokens += [("group", int(digits[0])), ("text", digits[1:])]
        else:
            macro = macro.lower()
            tokens.append(("group", 0) if macro == "match" else ("text", char if macro == "char" else user_role))
    tokens.append(("text", replace[last:]))
    return [token for token in tokens if token != ("text", "")]


@lru_cache(maxsize=256)
def _compile(source: str) -> _Compiled:
    """A findRegex (macros filled) as a compiled pattern; raises _Skip saying why it cannot be one. Only successes
    are cached, so a sentence is always in the language of the visitor who gets it."""
    if len(source) > MAX_PATTERN_CHARS:
        raise _Skip(_("its pattern is longer than {limit} characters", limit=MAX_PATTERN_CHARS))
    literal = _LITERAL.fullmatch(source)
    pattern, flags = (literal[1], literal[2]) if literal else (source, "")
    if any(flag not in _FLAGS or flags.count(flag) > 1 for flag in flags):
        raise _Skip(_("its flags '{flags}' are not valid", flags=flags))
    translated = _Translator(pattern, multiline="m" in flags, dotall="s" in flags).run()
    options = regex.V0 | (regex.IGNORECASE if "i" in flags else 0) | (regex.DOTALL if "s" in flags else 0)
    try:
        compiled = regex.compile(translated, options)
    except regex.error as error:
        raise _Skip(_("its pattern does not compile ({error})", error=error.msg)) from None
    except (ValueError, OverflowError, RecursionError, MemoryError):
        raise _Skip(_("its pattern does not compile ({error})", error=_("too complex"))) from None
    return _Compiled(compiled, "g" in flags)


class _Translator:
    """Rewrites a JavaScript pattern into one the regex module reads the same way, and sizes its fixed repeats
    (each group's atoms, times the {n,m} that follows) so that a pattern that would compile huge is refused."""

    def __init__(self, pattern: str, multiline: bool, dotall: bool):
        self.src, self.multiline, self.dotall = pattern, multiline, dotall
        self.i = 0
        self.out: list[str] = []
        self.in_class = False
        self.frames: list[list[int]] = [[]]  # the sizes of the atoms of each open group
        self.named = _NAMED_GROUP.search(pattern) is not None  # without one, JavaScript reads \k as a plain k

    def run(self) -> str:
        while self.i < len(self.src):
            char = self.src[self.i]
            if char == "\\":
                self._escape()
            elif self.in_class:
                self.in_class = char != "]"
                self._emit("\\[" if char == "[" else char, atom=False)
            else:
                self._outside(char)
        while len(self.frames) > 1:
            self._close_frame()
        if sum(self.frames[0]) > MAX_EXPANSION:
            raise _Skip(_("its repeat counts are too large"))
        return "".join(self.out)

    def _emit(self, text: str, atom: bool = True, width: int = 1) -> None:
        self.out.append(text)
        self.i += width
        if atom:
            self.frames[-1].append(1)

    def _close_frame(self) -> None:
        size = min(sum(self.frames.pop()), MAX_EXPANSION + 1)
        self.frames[-1].append(size)

    def _outside(self, char: str) -> None:
        """One character outside a character class."""
        src, i = self.src, self.i
        if char == "[":
            if src.startswith("[^]", i):  # JavaScript: any character at all
                self._emit(r"[\s\S]", width=3)
            elif src.startswith("[]", i):  # JavaScript: matches nothing
                self._emit("(?!)", width=2)
            else:
                width = 2 if src.startswith("[^", i) else 1
                self._emit(src[i:i + width], width=width)
                self.in_class = True
        elif char == "(":
            self._emit("(", atom=False)
            self.frames.append([])
        elif char == ")":
            self._emit(")", atom=False)
            if len(self.frames) > 1:
                self._close_frame()
        elif char == "{":
            quantifier = _QUANTIFIER.match(src, i)
            if quantifier is None:  # a literal brace for JavaScript; the regex module could read it as fuzzy matching
                self._emit(r"\{")
                return
            self._emit(quantifier[0], atom=False, width=len(quantifier[0]))
            bound = int(quantifier[2] or quantifier[1])
            if self.frames[-1]:
                self.frames[-1][-1] = min(self.frames[-1][-1] * max(bound, 1), MAX_EXPANSION + 1)
        elif char == "." and not self.dotall:
            self._emit(f"[^{_LINE_ENDS}]")
        elif char == "$":
            self._emit(rf"(?=[{_LINE_ENDS}]|\Z)" if self.multiline else r"\Z")
        elif char == "^":
            self._emit(rf"(?:(?<=[{_LINE_ENDS}])|\A)" if self.multiline else r"\A")
        else:
            self._emit(char, atom=char not in "|*+?")

    def _escape(self) -> None:
        """A backslash and what follows it, in JavaScript's meaning."""
        src, i, in_class = self.src, self.i, self.in_class
        nxt = src[i + 1:i + 2]
        text, width = src[i:i + 2], 2
        if nxt in ("d", "w"):
            text = ("0-9" if nxt == "d" else _WORD) if in_class else ("[0-9]" if nxt == "d" else f"[{_WORD}]")
        elif nxt in ("D", "W") and not in_class:
            text = "[^0-9]" if nxt == "D" else f"[^{_WORD}]"
        elif nxt in ("b", "B") and not in_class:
            text = f"(?a:\\{nxt})"
        elif nxt == "c" and src[i + 2:i + 3].isascii() and src[i + 2:i + 3].isalpha():
            text, width = f"\\x{ord(src[i + 2]) % 32:02x}", 3
        elif nxt == "u" and (braced := _BRACED_HEX.match(src, i + 2)):
            text, width = f"\\U{int(braced[1], 16):08x}", 2 + len(braced[0])
        elif nxt == "k":
            name = _GROUP_NAME.match(src, i + 2) if self.named and not in_class else None
            text, width = (f"(?P={name[1]})", 2 + len(name[0])) if name else ("k", 2)
        elif nxt in ("p", "P") and src[i + 2:i + 3] != "{":
            text = nxt
        elif nxt.isascii() and nxt.isalpha() and nxt not in _JS_LETTER_ESCAPES:
            text = nxt
        elif nxt == "/":
            text = "/"
        self._emit(text, atom=not in_class, width=width)


def _parse(item: object, name: str, char: str) -> RegexScript:
    """One raw script as a RegexScript; raises _Skip for what cannot be one."""
    if not isinstance(item, dict):
        raise _Skip(_("it is not a script (an object with a pattern)"))
    find = item.get("findRegex")
    if not isinstance(find, str) or not find:
        raise _Skip(_("it has no pattern"))
    replace = item.get("replaceString")
    if not isinstance(replace, (str, type(None))):
        raise _Skip(_("its replacement is not text"))
    raw_places = item.get("placement")
    places = frozenset(p for p in raw_places if type(p) is int) if isinstance(raw_places, list) else frozenset()
    if not places:
        raise _Skip(_("it names no place to run (placement)"))
    markdown_only, prompt_only = _flag(item.get("markdownOnly")), _flag(item.get("promptOnly"))
    if LEGACY_MARKDOWN in places:  # SillyTavern's old display placement: the replies as shown
        places = (places - {LEGACY_MARKDOWN}) | {AI_OUTPUT}
        markdown_only, prompt_only = True, False
    trims = item.get("trimStrings")
    return RegexScript(
        name=name, find=find, replace=replace or "",
        trims=tuple(t for t in trims if isinstance(t, str) and t) if isinstance(trims, list) else (),
        placements=places, markdown_only=markdown_only, prompt_only=prompt_only,
        run_on_edit=_flag(item.get("runOnEdit")), disabled=_flag(item.get("disabled")),
        substitute=_substitute(item.get("substituteRegex")), min_depth=_bound(item.get("minDepth")),
        max_depth=_bound(item.get("maxDepth")), char=char)


def _name(item: object, index: int) -> str:
    """What a sentence calls a script: its scriptName, else its id, else its number in the list."""
    if isinstance(item, dict):
        for key in ("scriptName", "id"):
            value = item.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()[:80]
    return f"#{index}"


def _sentence(name: str, why: str) -> str:
    return _("The card's regex script '{name}' was skipped: {why}.", name=name, why=why)


def _flag(value: object) -> bool:
    return value in (True, "true")


def _substitute(value: object) -> int:
    """substituteRegex as 0, 1 or 2 (false/true are 0/1; anything else is 0)."""
    try:
        number = int(value) if isinstance(value, (bool, int, str)) else 0
    except ValueError:
        return 0
    return number if number in (1, 2) else 0


def _bound(value: object) -> int | None:
    """minDepth/maxDepth: a depth of 0 or more, or None for no bound (null, -1, anything not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = int(float(value))
    except (ValueError, OverflowError):
        return None
    return number if number >= 0 else None


def _fill(text: str, char: str, user_role: str) -> str:
    """{{char}} and {{user}} (any case, as SillyTavern) replaced by the names."""
    return _MACRO.sub(lambda found: char if found[1].lower() == "char" else user_role, text)


def _js_escape(name: str) -> str:
    """A name made literal inside a JavaScript pattern (what substituteRegex 2 asks)."""
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 32 else "\\" + c if c in _JS_SPECIAL else c for c in name)
