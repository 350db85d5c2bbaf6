"""When things were said: the time each exchange carries, and the days a message asks about.

An exchange made on the page carries the page's clock; one imported with its session's date carries that
(`at`, ISO 8601: "2023-05-04" or "2023-05-04T13:56:00+00:00"). A message that names a day ("on 4 May",
"May 4th", "5月4日", "yesterday", "前天") is matched against those days, so memory can find what was said then,
and the prompt says when each recalled exchange was said, so "when did…" can be answered.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

MONTHS = {name: n for n, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec")), 1) for name in names}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(\d{4}))?"
_EN_MONTH_DAY = re.compile(rf"\b({_MONTH})\.?\s+(?:the\s+)?{_DAY}\b{_YEAR}", re.I)
_EN_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?({_MONTH})\b\.?{_YEAR}", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_ZH_NUM = "〇零一二两三四五六七八九十"
_ZH = re.compile(rf"(?:(\d{{4}})年)?([\d{_ZH_NUM}]{{1,3}})月([\d{_ZH_NUM}]{{1,3}})[日号號]")
_RELATIVE = [(re.compile(r"\bthe day before yesterday\b", re.I), 2), (re.compile(r"\byesterday\b", re.I), 1),
             (re.compile(r"\btoday\b|\bthis morning\b|\btonight\b", re.I), 0),
             (re.compile("大前天"), 3), (re.compile("(?<!大)前天"), 2), (re.compile("昨天|昨日|昨晚"), 1),
             (re.compile("今天|今日|今晚"), 0)]
_AGO = re.compile(r"\b(\d+|two|three|four|five|six)\s+days\s+ago\b", re.I)
_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}

Day = tuple[int | None, int, int]  # (year or None when the message did not say, month, day)


def now_iso() -> str:
    """The page's clock for a new exchange, to the second, in UTC."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def day_of(at: str) -> date | None:
    """The day an exchange's `at` names, or None when it has none or it is not ISO 8601."""
    try:
        return date.fromisoformat((at or "")[:10])
    except ValueError:
        return None


def shown(at: str) -> str:
    """How the prompt and the panel write when something was said: "2023-05-04", or "2023-05-04 13:56"."""
    day = day_of(at)
    if day is None:
        return ""
    clock = at[11:16] if len(at) >= 16 and at[10] in "T " else ""
    return f"{day.isoformat()} {clock}".strip() if clock and clock != "00:00" else day.isoformat()


_CLOCK = re.compile(r"\b(\d{1,2})[:.](\d{2})\s*([ap])\.?m\.?\b|\b(\d{1,2}):(\d{2})\b", re.I)


def as_iso(text: str) -> str | None:
    """A time as a chat file may give it, in ISO 8601: ISO already ("2023-05-08", "2023-05-08T13:56:00"), or
    a day written out with its year and maybe a clock ("1:56 pm on 8 May, 2023", "May 8, 2023", "2023年5月8日
    13:56"), as long conversations published elsewhere date their sessions. None when it names no whole day."""
    text = (text or "").strip()
    if day_of(text) is not None and (len(text) == 10 or _iso_clock(text)):
        return text
    days = [d for d in days_mentioned(text) if d[0] is not None]
    if len(days) != 1:
        return None
    year, month, day = days[0]
    clock = ""
    rest = _ISO.sub(" ", text)
    if m := _CLOCK.search(rest):
        if m[3]:
            hour = int(m[1]) % 12 + (12 if m[3].lower() == "p" else 0)
            clock = f"T{hour:02d}:{int(m[2]):02d}:00"
        elif int(m[4]) < 24:
            clock = f"T{int(m[4]):02d}:{int(m[5]):02d}:00"
    return f"{year:04d}-{month:02d}-{day:02d}{clock}"


def _iso_clock(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
        return True
    except ValueError:
        return False


def _zh_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    digits = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (digits.get(tens, 1) if tens else 1) * 10 + (digits.get(ones, 0) if ones else 0)
    return digits.get(text) if len(text) == 1 else None


def _valid(year: int | None, month: int | None, day: int | None) -> Day | None:
    if not month or not day or not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    return (year, month, day)


def days_mentioned(text: str, today: date | None = None) -> set[Day]:
    """The days a message names: absolute ("4 May", "May 4th, 2023", "2023-05-04", "5月4号") and, when
    `today` is known, relative ("yesterday", "3 days ago", "前天")."""
    found: set[Day | None] = set()
    for m in _ISO.finditer(text):
        found.add(_valid(int(m[1]), int(m[2]), int(m[3])))
    for m in _EN_MONTH_DAY.finditer(text):
        found.add(_valid(int(m[3]) if m[3] else None, MONTHS[m[1].lower()], int(m[2])))
    for m in _EN_DAY_MONTH.finditer(text):
        found.add(_valid(int(m[3]) if m[3] else None, MONTHS[m[2].lower()], int(m[1])))
    for m in _ZH.finditer(text):
        found.add(_valid(int(m[1]) if m[1] else None, _zh_number(m[2]), _zh_number(m[3])))
    if today is not None:
        back = [n for pattern, n in _RELATIVE if pattern.search(text)]
        back += [int(m[1]) if m[1].isdigit() else _WORDS[m[1].lower()] for m in _AGO.finditer(text)]
        for n in back:
            d = today - timedelta(days=n)
            found.add((d.year, d.month, d.day))
    found.discard(None)
    return found  # type: ignore[return-value]


def on_day(day: date | None, days: set[Day]) -> bool:
    """Whether `day` is one of `days` (a day named without its year matches that day of any year)."""
    return day is not None and any(m == day.month and d == day.day and y in (None, day.year) for y, m, d in days)
