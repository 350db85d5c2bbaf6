"""The command line speaks the locale's language (issue 52): Chinese under LANG=zh_CN.UTF-8, English otherwise (and
by default): its help, argparse's own words (usage, section titles, -h, its errors) and its own messages."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from chatharuhi_core import i18n
from chatharuhi_core.cli import main
from chatharuhi_core.cli_parser import argparse_sentence, wrap_wide

ROOT = Path(__file__).resolve().parents[2]
CJK = re.compile(r"[\u4e00-\u9fff]")
ENGLISH_PROSE = re.compile(r"\b[A-Za-z]+(?: [a-z]+){3,}\b")  # four English words in a row: a sentence left untranslated
LOCALE_NAMES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def run_cli(*args: str, lang: str | None, tmp_path: Path) -> subprocess.CompletedProcess:
    """`python -m chatharuhi_core ARGS` with only `lang` saying the language (None: no locale at all)."""
    env = {k: v for k, v in os.environ.items() if k not in LOCALE_NAMES}
    env.update(CHATHARUHI_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE="1", COLUMNS="100")
    if lang:
        env["LANG"] = lang
    return subprocess.run([sys.executable, "-m", "chatharuhi_core", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("args", [["--help"], ["chat", "--help"], ["role", "export", "--help"]])
def test_help_is_chinese_under_a_chinese_locale(args, tmp_path):
    out = run_cli(*args, lang="zh_CN.UTF-8", tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith("用法：python -m chatharuhi_core")
    assert "\n选项：\n" in text and "显示此帮助信息并退出" in text
    assert not ENGLISH_PROSE.search(text), ENGLISH_PROSE.search(text)
    for english in ("usage:", "options:", "positional arguments", "show this help message"):
        assert english not in text


@pytest.mark.parametrize("lang", ["en_US.UTF-8", None])
@pytest.mark.parametrize("args", [["--help"], ["chat", "--help"]])
def test_help_is_english_otherwise(args, lang, tmp_path):
    out = run_cli(*args, lang=lang, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith("usage: python -m chatharuhi_core")
    assert "\noptions:\n" in text and re.search(r"\n  -h, --help +show this help message and exit\n", text)
    assert not CJK.search(text)
    if args == ["chat", "--help"]:
        assert "\npositional arguments:\n  TEXT                  the message; leave out for a conversation\n" in text


def test_the_commands_own_error_is_chinese_under_a_chinese_locale(tmp_path):
    missing = tmp_path / "none.jsonl"
    zh = run_cli("feedback", "export", "--in", str(missing), lang="zh_CN.UTF-8", tmp_path=tmp_path)
    assert zh.returncode == 1
    assert zh.stderr.startswith(f"错误：{missing} 处没有反馈文件。"), zh.stderr
    assert "（路径由 CHATHARUHI_FEEDBACK 设置）" in zh.stderr and "Traceback" not in zh.stderr
    en = run_cli("feedback", "export", "--in", str(missing), lang="en_US.UTF-8", tmp_path=tmp_path)
    assert en.returncode == 1
    assert en.stderr.startswith(f"error: No feedback file at {missing}. Ratings and edits"), en.stderr


def test_argparse_errors_are_chinese_under_a_chinese_locale(tmp_path):
    zh = run_cli("chat", "--engine", "nope", lang="zh_CN.UTF-8", tmp_path=tmp_path)
    assert zh.returncode == 2
    assert zh.stderr.startswith("用法：python -m chatharuhi_core chat [-h]")
    assert "python -m chatharuhi_core chat：错误：参数 --engine：无效的选择：'nope'（可选：'script'," in zh.stderr
    zh = run_cli("role", "export", "sherlock", lang="zh_CN.UTF-8", tmp_path=tmp_path)
    assert "错误：缺少以下必需的参数：--to" in zh.stderr
    en = run_cli("role", "export", "sherlock", lang=None, tmp_path=tmp_path)
    assert en.stderr.startswith("usage: python -m chatharuhi_core role export [-h]")
    assert "python -m chatharuhi_core role export: error: the following arguments are required: --to" in en.stderr


def test_argparse_sentences_are_translated_whole_and_left_alone_in_english():
    said = "argument --engine: invalid choice: 'x' (choose from 'script', 'local')"
    assert argparse_sentence(said) == said
    with i18n.speaking("zh"):
        assert argparse_sentence(said) == "参数 --engine：无效的选择：'x'（可选：'script', 'local'）"
        assert argparse_sentence("argument --cases: invalid int value: 'x'") == "参数 --cases：无效的 int 值：'x'"
        assert argparse_sentence("something argparse may say one day") == "something argparse may say one day"


def test_chinese_help_is_wrapped_by_its_width_on_screen():
    text = "以角色的身份回答一条消息（TEXT），或进入交互式对话。给出两到六次 --role 即是多个角色的群戏。"
    lines = wrap_wide(text, 30)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    assert all(sum(2 if CJK.match(ch) or ch in "（），。" else 1 for ch in line) <= 30 for line in lines), lines
    assert not any(line[0] in "，。）" for line in lines)


def test_main_speaks_the_locale_for_its_call_only(monkeypatch, capsys, tmp_path):
    for name in LOCALE_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert main(["feedback", "export", "--in", str(tmp_path / "none.jsonl")]) == 1
    assert capsys.readouterr().err.startswith("错误：")
    assert i18n.language() == "en"  # the rest of this process (the other tests) stays in English
