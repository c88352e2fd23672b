"""The English time expressions: "three weeks ago", "last Tuesday", "in the past month", "October 13, 2023"."""

from __future__ import annotations

import re
from datetime import datetime

from hello_memory.language import _timecalendar as cal
from hello_memory.language._timecalendar import Rule, rule
from hello_memory.language._timedates import MONTHS, YEAR_PATTERN, date_window, month_window, year_window

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a couple": 2,
    "couple of": 2, "a few": 3, "few": 3, "several": 4,
}  # fmt: skip
_VAGUE = {"a couple of", "a couple", "couple of", "a few", "few", "several"}
_UNITS = {"day": "day", "week": "week", "month": "month", "year": "year"}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

_NUM = r"\d{1,3}|a couple of|a couple|couple of|a few|few|several|an|a|" + "|".join(
    k for k in _NUMBERS if " " not in k and len(k) > 2
)
_UNIT = r"(?P<unit>day|week|month|year)s?"
_PREP = r"\b(?:in|over|during|within|for)?\s*"
_NOT_UNTIL = r"(?<!before )(?<!until )(?<!till )(?<!up to )"  # "before today" names no day
# "may" is a verb too: only the capitalised name counts, and only next to a day or a year.
_MONTH_NAMES = "|".join(sorted((n for n in MONTHS if n != "may"), key=len, reverse=True))
_MONTH = rf"(?P<month>(?:{_MONTH_NAMES})\.?|(?-i:May))"
_IN = r"\b(?:in|during|throughout)\s+"
_DAY_NUM = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = YEAR_PATTERN


def _counted(span: cal.Span) -> cal.Resolver:
    """A resolver placing "<num> <unit>" with ``span`` (``cal.ago``, ``cal.ahead`` or ``cal.trailing``)."""

    def resolve(m: re.Match[str], ref: datetime) -> cal.Window | None:
        word = (m.group("num") or "one").lower()  # "the past month": one
        n = float(word) if word.isdigit() else float(_NUMBERS[word])
        return span(ref, n, _UNITS[m.group("unit").lower()], word in _VAGUE) if n > 0 else None

    return resolve


def _this_or_last_period(m: re.Match[str], ref: datetime) -> cal.Window:
    unit = m.group("unit").lower()
    start, end = cal.period(ref, unit, 1 if m.group("which").lower() == "last" else 0)
    return start, end, cal.PERIOD_SLACK[unit]


def _next_period(m: re.Match[str], ref: datetime) -> cal.Window:
    unit = m.group("unit").lower()
    start, end = cal.period(ref, unit, -1)
    return start, end, cal.PERIOD_SLACK[unit]


def _last_weekday(m: re.Match[str], ref: datetime) -> cal.Window:
    return (*cal.last_weekday(ref, _WEEKDAYS.index(m.group("day").lower())), cal.DAY)


def _next_weekday(m: re.Match[str], ref: datetime) -> cal.Window:
    return (*cal.next_weekday(ref, _WEEKDAYS.index(m.group("day").lower())), cal.DAY)


# Most specific first: a later rule never claims characters an earlier one matched.
RULES: tuple[Rule, ...] = (
    rule("past|last", rf"{_PREP}the\s+(?:past|last)\s+(?:(?P<num>{_NUM})\s+)?{_UNIT}\b", _counted(cal.trailing),
         trailing=True),
    rule("past|last", rf"\b(?:past|last)\s+(?P<num>{_NUM})\s+{_UNIT}\b", _counted(cal.trailing), trailing=True),
    rule("ago|back|earlier", rf"\b(?P<num>{_NUM})\s+{_UNIT}\s+(?:ago|back|earlier)\b", _counted(cal.ago)),
    rule("now", rf"\b(?P<num>{_NUM})\s+{_UNIT}\s+from\s+now\b", _counted(cal.ahead), ahead=True),
    rule("in", rf"\bin\s+(?P<num>{_NUM})\s+{_UNIT}\b(?!\s+(?:ago|back|earlier))", _counted(cal.ahead), ahead=True),
    rule("tomorrow", r"\bthe\s+day\s+after\s+tomorrow\b", cal.fixed_day(-2), ahead=True),
    rule("tomorrow", r"\btomorrow\b", cal.fixed_day(-1), ahead=True),
    rule("weekend", r"\bnext\s+weekend\b", cal.weekend_ahead(True), ahead=True),
    rule("weekend", r"\bthis\s+coming\s+weekend\b", cal.weekend_ahead(False), ahead=True),
    rule("weekend", r"\bthis\s+weekend\b", cal.this_weekend, ahead=True),
    rule("day", rf"\b(?:next|this\s+coming)\s+(?P<day>{'|'.join(_WEEKDAYS)})\b", _next_weekday, ahead=True),
    rule("next", r"\bnext\s+(?P<unit>week|month|year)\b", _next_period, ahead=True),
    rule("yesterday", r"\bthe\s+day\s+before\s+yesterday\b", cal.fixed_day(2)),
    rule("yesterday|night", r"\b(?:yesterday|last\s+night)\b", cal.fixed_day(1)),
    rule("today|morning|afternoon", rf"\b{_NOT_UNTIL}(?:today|this\s+(?:morning|afternoon))\b", cal.fixed_day(0)),
    rule("weekend", r"\b(?:last|this\s+past)\s+weekend\b", cal.weekend),
    rule("day", rf"\b(?:last|this\s+past)\s+(?P<day>{'|'.join(_WEEKDAYS)})\b", _last_weekday),
    rule("week|month|year", r"\b(?P<which>last|this)\s+(?P<unit>week|month|year)\b", _this_or_last_period),
    rule("1|2|3|4|5|6|7|8|9|0", rf"\b{_MONTH}\s+{_DAY_NUM}(?:,?\s+{_YEAR})?\b", date_window, ahead=True),
    rule("1|2|3|4|5|6|7|8|9|0", rf"\b{_DAY_NUM}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", date_window, ahead=True),
    rule("-", r"\b(?P<year>(?:19|20)\d\d)-(?P<month>1[0-2]|0?[1-9])-(?P<day>[0-3]?\d)\b", date_window),
    rule("19|20", rf"\b{_MONTH},?\s+{_YEAR}\b", month_window),
    rule("in|during|throughout", rf"{_IN}(?:(?:early|late|mid)[\s-]+)?{_MONTH}(?!\s*\d)", month_window, ahead=True),
    rule("19|20", rf"{_IN}{_YEAR}\b(?![-/])", year_window),
)  # fmt: skip
