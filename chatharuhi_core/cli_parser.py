"""argparse speaking the reader's language: its own words (usage, section titles, -h, its error sentences) from
our catalogue for the command line's parser alone (the stdlib is not patched), and Chinese help wrapped by its
width on screen. In English, exactly argparse's output."""

from __future__ import annotations

import argparse
import re
import string
import sys
import unicodedata
from functools import cache

from . import i18n
from .i18n import N_, _

# argparse's own sentences that a user of this command meets, in argparse's English with {names} for its %s (the
# stdlib's "argparse" gettext domain has no Chinese): an error is matched against them and said from our catalogue
ARGPARSE_SENTENCES = (
    N_("argument {argument}: {message}"),
    N_("the following arguments are required: {arguments}"),
    N_("unrecognized arguments: {arguments}"),
    N_("invalid choice: {value} (choose from {choices})"),
    N_("invalid {type} value: {value}"),
    N_("expected one argument"),
    N_("expected at least one argument"),
    N_("ambiguous option: {option} could match {matches}"),
    N_("ignored explicit argument {value}"),
)
CLOSING_MARKS = "，。、：；？！）」』》”’,.:;?!)"  # never the first thing on a wrapped line
OPENING_MARKS = "（「『《“‘("  # never the last


@cache
def _pattern(english: str) -> re.Pattern:
    """A regular expression matching argparse's sentence `english` (its {names} as groups)."""
    return re.compile("".join(re.escape(text) + (f"(?P<{name}>.+?)" if name else "")
                              for text, name, _spec, _conv in string.Formatter().parse(english)), re.S)


def argparse_sentence(message: str) -> str:
    """An error sentence of argparse's in the current language (English: as argparse says it)."""
    if i18n.language() == i18n.DEFAULT:
        return message
    for english in ARGPARSE_SENTENCES:
        found = _pattern(english).fullmatch(message)
        if found:
            values = found.groupdict()
            if "message" in values:
                values["message"] = argparse_sentence(values["message"])
            return _(english, **values)
    return message


def _columns(text: str) -> int:
    """How many columns `text` takes on a terminal (a Chinese character or full-width mark takes two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap_wide(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` columns on screen, broken between words or between two Chinese
    characters, never before a closing mark nor after an opening one (argparse counts characters, not columns)."""
    tokens, word = [], ""
    for ch in text:
        if ch == " " or _columns(ch) == 2:
            tokens += [word, ch] if word else [ch]
            word = ""
        else:
            word += ch
    tokens += [word] if word else []
    lines, line = [], []
    for token in tokens:
        if token == " " and not line:
            continue
        if line and token != " " and _columns("".join(line) + token) > width:
            moved = [token]
            while len(line) > 1 and moved[0][0] in CLOSING_MARKS:  # the word before a closing mark goes down too
                moved.insert(0, line.pop())
            while len(line) > 1 and line[-1] in OPENING_MARKS:
                moved.insert(0, line.pop())
            lines.append("".join(line).rstrip())
            line = moved if moved[0] != " " else moved[1:]
        else:
            line.append(token)
    return [*lines, "".join(line).rstrip()] if line else lines


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help with "usage: " from our catalogue and, in Chinese, lines wrapped by their width on screen;
    in English exactly argparse's own."""

    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, _("usage: ") if prefix is None else prefix)

    def _format_usage(self, usage, actions, groups, prefix):
        text = super()._format_usage(usage, actions, groups, prefix)
        wider = _columns(prefix or "") - len(prefix or "")  # "用法：" takes 6 columns, not 3: indent the rest so
        return text.replace("\n ", "\n" + " " * (wider + 1)) if wider > 0 else text

    def format_help(self):
        text = super().format_help()
        if i18n.language() == i18n.DEFAULT:
            return text
        for title in (_("positional arguments"), _("options")):  # argparse ends a section's title with ":"
            text = text.replace(f"\n{title}:\n", f"\n{title}：\n")
        return text

    def _split_lines(self, text, width):
        if i18n.language() == i18n.DEFAULT:
            return super()._split_lines(text, width)
        return wrap_wide(self._whitespace_matcher.sub(" ", text).strip(), width)

    def _fill_text(self, text, width, indent):
        if i18n.language() == i18n.DEFAULT:
            return super()._fill_text(text, width, indent)
        lines = wrap_wide(self._whitespace_matcher.sub(" ", text).strip(), width - len(indent))
        return "\n".join(indent + line for line in lines)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser saying its own words (the section titles, -h's help, "usage: ", its error sentences) from
    our catalogue, for this parser only; a command's parser is of this class too (add_subparsers makes its kind)."""

    def __init__(self, *args, add_help: bool = True, formatter_class=HelpFormatter, **kwargs):
        super().__init__(*args, add_help=False, formatter_class=formatter_class, **kwargs)
        self._positionals.title = _("positional arguments")
        self._optionals.title = _("options")
        self.add_help = add_help
        if add_help:  # as argparse adds it, first among the options
            self.add_argument("-h", "--help", action="help", default=argparse.SUPPRESS,
                              help=_("show this help message and exit"))

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(2, _("{prog}: error: {message}", prog=self.prog, message=argparse_sentence(message)) + "\n")
