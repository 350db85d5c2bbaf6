"""README.zh.md, the Chinese README, stays in step with README.md (issue 52, the visitor's language).

README.zh.md translates the sections of README.md named in `TRANSLATED` (the opening, the two commands, the
characters, the engines, running on a Space, Python and the command line, the words, the configuration) and
links to README.md for the rest. These checks keep the two together:

- every command block (```bash, ```python, ...) of a translated section is in README.zh.md word for word;
- every environment variable a translated section names is named in README.zh.md too;
- every figure README.zh.md gives (a number with a unit: s/秒, minutes/分钟, x/×/倍, %, MB, ...) is a figure
  README.md gives, so README.zh.md's figures stand on the committed outputs exactly as README.md's do
  (tests/unit/test_figures.py ties those to bench/RESULTS.md and docs/eval/);
- every link to a file of this repository in a translated section is in README.zh.md, and every such link of
  README.zh.md points to a file (and a heading, for an anchor) that exists;
- each README links the other, and README.md still opens with the Space's configuration.

When README.md changes in a translated section, change README.zh.md the same way: copy the command block, name
the variable, take README.md's new figure. A heading renamed in README.md goes into `TRANSLATED` here as well.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EN = ROOT / "README.md"
ZH = ROOT / "README.zh.md"

TRANSLATED = ("# ChatHaruhi", "## Two commands", "## Characters", "## Engines", "## Run on a Space",
              "## Python and the command line", "## Words", "## Languages", "## Configuration")
COMMAND_BLOCKS = {"bash", "sh", "shell", "console", "python", "pip"}

ENV_VAR = re.compile(r"\b(?:CHATHARUHI|OPENAI|HF|GRADIO|CHROMA|SPACES)_[A-Z0-9_]*[A-Z0-9]\b")

# A figure is a number (or a range of two) with a unit; a unit's Chinese and English spellings are one unit.
UNITS = {"tokens/s": "tokens/s", "毫秒": "ms", "ms": "ms", "minutes": "min", "minute": "min", "min": "min",
         "分钟": "min", "hours": "h", "hour": "h", "小时": "h", "times": "x", "倍": "x", "x": "x", "×": "x",
         "%": "%", "MB": "MB", "GB": "GB", "KB": "KB", "s": "s", "秒": "s"}
NUMBER = r"\d+(?:[.,]\d+)*"
UNIT = "|".join(re.escape(unit) for unit in UNITS)  # longest first where one starts another, as listed
A_FIGURE = re.compile(rf"(?<![0-9A-Za-z.,])({NUMBER}(?:\s?[-–]\s?{NUMBER})?)\s?({UNIT})(?![A-Za-z0-9])")

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _sections(text: str) -> dict[str, str]:
    """Each `# ` or `## ` heading line (outside code blocks) with its lines, up to the next such heading."""
    sections: dict[str, list[str]] = {}
    current, fenced = None, False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,2} ", line):
            current = line.strip()
            sections[current] = []
        if current is not None:
            sections[current].append(line)
    return {heading: "\n".join(lines) for heading, lines in sections.items()}


def _translated() -> dict[str, str]:
    sections = _sections(_text(EN))
    missing = [heading for heading in TRANSLATED if heading not in sections]
    assert not missing, (f"README.md has no heading {missing}: a translated section was renamed or removed; update "
                         "TRANSLATED in tests/unit/test_readme_zh.py and the matching part of README.zh.md")
    return {heading: sections[heading] for heading in TRANSLATED}


def _blocks(text: str) -> list[tuple[str, str]]:
    """Each fenced code block as (its language, the block with its fences)."""
    return [(info.strip(), block) for block, info in
            re.findall(r"^(```([^\n`]*)\n.*?^```)[ \t]*$", text, re.M | re.S)]


def _figures(text: str) -> dict[tuple[str, str], str]:
    """Each figure of `text` as (number, unit) in one spelling, with how the text writes it."""
    found = {}
    for hit in A_FIGURE.finditer(text):
        number = re.sub(r"\s?[-–]\s?", "-", hit.group(1)).replace(",", "")
        found[(number, UNITS[hit.group(2)])] = hit.group(0)
    return found


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", _text(path), flags=re.M | re.S)
    return {_slug(line) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def _local_links(text: str) -> list[str]:
    return [target for target in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", target)]


def test_the_two_newcomer_commands_are_in_readme_zh_word_for_word():
    blocks = [block for _, block in _blocks(_text(EN)) if "bash scripts/run.sh" in block]
    assert len(blocks) == 1 and "bash scripts/test.sh" in blocks[0], \
        "README.md no longer has one block with `bash scripts/run.sh` and `bash scripts/test.sh`: update this test"
    assert blocks[0] in _text(ZH), ("README.zh.md's 两条命令 differ from README.md's: copy README.md's block word "
                                    "for word into README.zh.md:\n" + blocks[0])


def test_every_command_block_of_a_translated_section_is_in_readme_zh():
    zh = _text(ZH)
    missing = [f"{heading}:\n{block}" for heading, text in _translated().items() for info, block in _blocks(text)
               if info.split(" ")[0] in COMMAND_BLOCKS and block not in zh]
    assert not missing, ("README.md's command blocks below are not in README.zh.md word for word: copy each into the "
                         "matching section of README.zh.md (a block changed in README.md changes there too):\n\n"
                         + "\n\n".join(missing))


def test_every_environment_variable_a_translated_section_names_is_in_readme_zh():
    zh = set(ENV_VAR.findall(_text(ZH)))
    missing = {name: heading for heading, text in _translated().items() for name in ENV_VAR.findall(text)
               if name not in zh}
    assert not missing, ("README.md names environment variables README.zh.md does not: say what each does in "
                         "README.zh.md (its name as it is), in the section named: "
                         + ", ".join(f"{name} ({heading})" for name, heading in sorted(missing.items())))


def test_every_figure_readme_zh_gives_is_one_readme_gives():
    english = _figures(_text(EN))
    drifted = [written for key, written in _figures(_text(ZH)).items() if key not in english]
    assert not drifted, ("README.zh.md gives figures README.md does not give: " + ", ".join(drifted) + ". A figure "
                         "changed in README.md (and its committed output, tests/unit/test_figures.py): write "
                         "README.md's figure in README.zh.md, never a figure of its own")


def test_the_figures_are_read_in_both_languages():
    assert set(_figures("约 7 分钟，1.31 秒，2.8 倍，1.8×，49.4%，30-45 分钟，720 MB，24-25 tokens/s")) == {
        ("7", "min"), ("1.31", "s"), ("2.8", "x"), ("1.8", "x"), ("49.4", "%"), ("30-45", "min"), ("720", "MB"),
        ("24-25", "tokens/s")}
    assert set(_figures("roughly 7 minutes, 1.31 s, 2.8 times, 49.4%, 30-45 minutes, 2,048 s")) == {
        ("7", "min"), ("1.31", "s"), ("2.8", "x"), ("49.4", "%"), ("30-45", "min"), ("2048", "s")}
    assert not _figures("Qwen2.5-7B-Instruct, SmolLM2-135M, 127.0.0.1:7860, x86-64, 8f4251a, 512×320")


def test_every_link_of_a_translated_section_is_in_readme_zh():
    zh = set(_local_links(_text(ZH))) | {ZH.name}  # README.zh.md need not link itself
    missing = {target: heading for heading, text in _translated().items() for target in _local_links(text)
               if target not in zh}
    assert not missing, ("README.md links files README.zh.md does not (the committed outputs a figure stands on, "
                         "pictures, docs): link each in the matching section of README.zh.md: "
                         + ", ".join(f"{target} ({heading})" for target, heading in sorted(missing.items())))


def test_every_link_of_readme_zh_points_to_what_exists():
    broken = []
    for target in _local_links(_text(ZH)):
        file, _hash, anchor = target.partition("#")
        path = ROOT / file if file else ZH
        if not path.exists():
            broken.append(f"{target} (no file {file})")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target} (no heading with the anchor #{anchor} in {path.name})")
    assert not broken, ("README.zh.md links to what is not there; point each at the file or heading as it is now "
                        "(a heading renamed in README.md changes its anchor): " + "; ".join(broken))


def test_each_readme_links_the_other():
    en, zh = _text(EN), _text(ZH)
    assert en.startswith("---\n"), "README.md must open with the Space's configuration (its front matter)"
    assert "[中文](README.zh.md)" in en.split("\n# ", 1)[0], \
        "README.md lost its line `English | [中文](README.zh.md)` above `# ChatHaruhi` (after the front matter)"
    assert zh.splitlines()[0] == "[English](README.md) | 中文", \
        "README.zh.md must open with the line `[English](README.md) | 中文`"
