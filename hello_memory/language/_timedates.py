"""Calendar dates, months and years named in either language ("October 13, 2023", "2023年5月", "in June").

Without a year, a date or month is its latest occurrence up to the moment the text was said, or
its next one in a sentence about the future (:func:`says_future`). Month and day numbers may be
digits, English month names or Chinese numerals (:func:`zh_number`).
"""

from __future__ import annotations

import re
from datetime import datetime

from hello_memory.language._timecalendar import DAY, PERIOD_SLACK, Window, midnight, month_start, says_future

MONTHS = {
    name: i + 1
    for i, names in enumerate(
        ("january jan", "february feb", "march mar", "april apr", "may", "june jun", "july jul",
         "august aug", "september sep sept", "october oct", "november nov", "december dec")
    )
    for name in names.split()
}  # fmt: skip
YEAR_PATTERN = r"(?P<year>(?:19|20)\d\d)"

_ZH_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}


def zh_number(text: str) -> float | None:
    """``"3"``, ``"三"``, ``"十二"``, ``"两"``, ``"半"``, ``"几"`` → a number."""
    if text.isdigit():
        return float(text)
    if text == "半":
        return 0.5
    if text == "几":
        return 3.0
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (
            float(_ZH_DIGITS.get(tens, 1) * 10 + _ZH_DIGITS.get(ones, 0))
            if all(c in _ZH_DIGITS for c in tens + ones)
            else None
        )
    return float(_ZH_DIGITS[text]) if text in _ZH_DIGITS else None


def date_window(m: re.Match[str], ref: datetime) -> Window | None:
    """A calendar day; without a year, its latest occurrence up to ``ref`` — or, in a sentence
    about the future (:func:`says_future`), its next occurrence from today on."""
    month, day = _month_number(m.group("month")), _day_number(m.group("day"))
    if month is None or day is None:
        return None
    year = m.group("year")
    start = _calendar_day(int(year) if year else ref.year, month, day, ref)
    if start is not None and not year:
        if says_future(m):
            if start < midnight(ref):
                start = _calendar_day(ref.year + 1, month, day, ref)
        elif start > ref:
            start = _calendar_day(ref.year - 1, month, day, ref)
    return None if start is None else (start, start + DAY, DAY)


def month_window(m: re.Match[str], ref: datetime) -> Window | None:
    """A calendar month; without a year, its latest occurrence up to ``ref`` — or, in a sentence
    about the future, the next one (the current month included)."""
    month = _month_number(m.group("month"))
    if month is None:
        return None
    if m.groupdict().get("year"):
        year = int(m.group("year"))
    elif says_future(m):
        year = ref.year + (month < ref.month)
    else:
        year = ref.year - (month > ref.month)
    start = month_start(ref.replace(year=year, month=month, day=1))
    return start, month_start(start, -1), PERIOD_SLACK["month"]


def year_window(m: re.Match[str], ref: datetime) -> Window:
    """A calendar year."""
    start = midnight(ref).replace(year=int(m.group("year")), month=1, day=1)
    return start, start.replace(year=start.year + 1), PERIOD_SLACK["year"]


def _calendar_day(year: int, month: int, day: int, ref: datetime) -> datetime | None:
    try:
        return ref.replace(year=year, month=month, day=day, hour=0, minute=0, second=0, microsecond=0)
    except ValueError:  # the 30th of February
        return None


def _month_number(text: str) -> int | None:
    text = text.lower().rstrip(".")
    if text in MONTHS:
        return MONTHS[text]
    n = zh_number(text)
    return int(n) if n is not None and n == int(n) and 1 <= n <= 12 else None


def _day_number(text: str) -> int | None:
    n = zh_number(text.lstrip("0") or "0")
    return int(n) if n is not None and n == int(n) and 1 <= n <= 31 else None
