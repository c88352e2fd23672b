"""The expressions :mod:`hello_memory.language.timeref` recognises: patterns and their resolvers.

Each rule names the words a text needs before its expression runs (checked with ``in``: the regular
expressions are the costly part of a memory's scan), its pattern, and a resolver that turns a match
and the moment the text was said into ``(start, end, slack)``, or ``None`` when it names no time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import NamedTuple

DAY = timedelta(days=1)
WEEK = timedelta(days=7)
MONTH = timedelta(days=30.44)
YEAR = timedelta(days=365.25)

# Core half-width and slack of "N <unit> ago", by unit.
_AGO = {
    "day": (0.5 * DAY, DAY),
    "week": (2 * DAY, 4 * DAY),
    "month": (7 * DAY, 14 * DAY),
    "year": (60 * DAY, 120 * DAY),
}
_UNIT_LENGTH = {"day": DAY, "week": WEEK, "month": MONTH, "year": YEAR}

_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a couple": 2,
    "couple of": 2, "a few": 3, "few": 3, "several": 4,
}  # fmt: skip
_VAGUE = {"a couple of", "a couple", "couple of", "a few", "few", "several"}
_EN_UNITS = {"day": "day", "week": "week", "month": "month", "year": "year"}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

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
_ZH_UNITS = {
    "天": "day",
    "日": "day",
    "周": "week",
    "星期": "week",
    "礼拜": "week",
    "月": "month",
    "年": "year",
}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}


def _midnight(t: datetime) -> datetime:
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


def _day(ref: datetime, days_back: int) -> tuple[datetime, datetime]:
    start = _midnight(ref) - days_back * DAY
    return start, start + DAY


def _month_start(t: datetime, back: int = 0) -> datetime:
    y, m = divmod(t.year * 12 + (t.month - 1) - back, 12)
    return _midnight(t).replace(year=y, month=m + 1, day=1)


def _period(ref: datetime, unit: str, back: int) -> tuple[datetime, datetime]:
    """The calendar ``unit`` ``back`` periods before the one holding ``ref`` (0: up to ``ref``)."""
    if unit == "week":
        monday = _midnight(ref) - ref.weekday() * DAY
        start = monday - back * WEEK
        end = start + WEEK
    elif unit == "month":
        start, end = _month_start(ref, back), _month_start(ref, back - 1)
    elif unit == "year":
        start = _midnight(ref).replace(year=ref.year - back, month=1, day=1)
        end = start.replace(year=start.year + 1)
    else:
        start, end = _day(ref, back)
    return start, (min(end, ref) if back == 0 else end)


_PERIOD_SLACK = {"day": DAY, "week": 2 * DAY, "month": 7 * DAY, "year": 30 * DAY}


def _ago(ref: datetime, n: float, unit: str, vague: bool) -> tuple[datetime, datetime, timedelta]:
    half, slack = _AGO[unit]
    if unit == "day" and n == int(n) and not vague:
        start, end = _day(ref, int(n))
        return start, end, slack
    center = ref - n * _UNIT_LENGTH[unit]
    if vague:
        half, slack = half + 0.5 * n * _UNIT_LENGTH[unit], 2 * slack
    return center - half, center + half, slack


def _trailing(ref: datetime, n: float, unit: str, vague: bool) -> tuple[datetime, datetime, timedelta]:
    length = n * _UNIT_LENGTH[unit]
    slack = length * (0.5 if vague else 0.25)
    return ref - length, ref, slack


def _last_weekday(ref: datetime, weekday: int) -> tuple[datetime, datetime]:
    back = (ref.weekday() - weekday) % 7 or 7
    return _day(ref, back)


def _last_weekend(ref: datetime) -> tuple[datetime, datetime]:
    back = (ref.weekday() - 5) % 7 or 7  # the last Saturday before today
    if ref.weekday() == 6:  # on a Sunday, "last weekend" is the previous one
        back = 8
    start = _midnight(ref) - back * DAY
    return start, start + 2 * DAY


def _ahead(ref: datetime, n: float, unit: str, vague: bool) -> tuple[datetime, datetime, timedelta]:
    """``n`` units after ``ref`` ("in two weeks", "三天后"): the mirror of :func:`_ago`."""
    half, slack = _AGO[unit]
    if unit == "day" and n == int(n) and not vague:
        start, end = _day(ref, -int(n))
        return start, end, slack
    center = ref + n * _UNIT_LENGTH[unit]
    if vague:
        half, slack = half + 0.5 * n * _UNIT_LENGTH[unit], 2 * slack
    return center - half, center + half, slack


def _next_weekday(ref: datetime, weekday: int) -> tuple[datetime, datetime]:
    """The first ``weekday`` after today ("next Tuesday" said on a Sunday is in two days)."""
    return _day(ref, -((weekday - ref.weekday()) % 7 or 7))


def _coming_weekend(ref: datetime, skip_current: bool) -> tuple[datetime, datetime]:
    """The Saturday and Sunday ahead; on a weekend day, the current one unless ``skip_current``."""
    wd = ref.weekday()
    if wd >= 5:
        start = _midnight(ref) - (wd - 5) * DAY + (WEEK if skip_current else timedelta(0))
    else:
        start = _midnight(ref) + (5 - wd) * DAY
    return start, start + 2 * DAY


# A sentence that says what will happen: a month or day without a year is then the next one, not
# the last ("I'm going to Paris in June", said in March, is about this June, not last year's).
_FUTURE_CUE = re.compile(
    r"\b(?:will|shall|going\s+to|gonna|plan|plans|planning|intend|intends|upcoming|coming\s+up|scheduled"
    r"|looking\s+forward|can't\s+wait|about\s+to|hope\s+to|next)\b|\w'll\b"
    r"|打算|准备|计划|将要|将会|就要|快要|即将|要去|会去|想去",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?。！？;；\n]")


def says_future(m: re.Match[str]) -> bool:
    """Whether the sentence around the match speaks of the future (:data:`_FUTURE_CUE`).

    Example:
        >>> says_future(re.search("June", "We went to Rome. I will visit Paris in June."))
        True
        >>> says_future(re.search("June", "I will call you. We visited Paris in June."))
        False
    """
    return _in_sentence(_FUTURE_CUE, m)


def _in_sentence(cue: re.Pattern[str], m: re.Match[str]) -> bool:
    """Whether ``cue`` occurs in the sentence that holds the match."""
    text = m.string
    starts = [e.end() for e in _SENTENCE_END.finditer(text, 0, m.start())]
    end = _SENTENCE_END.search(text, m.end())
    return cue.search(text, starts[-1] if starts else 0, end.start() if end else len(text)) is not None


def _zh_number(text: str) -> float | None:
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


_EN_NUM = r"\d{1,3}|a couple of|a couple|couple of|a few|few|several|an|a|" + "|".join(
    k for k in _EN_NUMBERS if " " not in k and len(k) > 2
)
_EN_UNIT = r"(?P<unit>day|week|month|year)s?"
_EN_PREP = r"\b(?:in|over|during|within|for)?\s*"
_NOT_UNTIL = r"(?<!before )(?<!until )(?<!till )(?<!up to )"  # "before today" names no day
_ZH_NUM = r"(?P<num>\d{1,3}|[零一二两三四五六七八九十]{1,3}|半|几)"
_ZH_UNIT = r"(?:个)?(?P<unit>天|日|周|星期|礼拜|月|年)"

Resolver = Callable[[re.Match[str], datetime], "tuple[datetime, datetime, timedelta] | None"]


def _en_ago(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta] | None:
    word = m.group("num").lower()
    n = float(word) if word.isdigit() else float(_EN_NUMBERS[word])
    return _ago(ref, n, _EN_UNITS[m.group("unit").lower()], word in _VAGUE) if n > 0 else None


def _en_trailing(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta] | None:
    word = (m.group("num") or "one").lower()
    n = float(word) if word.isdigit() else float(_EN_NUMBERS[word])
    return _trailing(ref, n, _EN_UNITS[m.group("unit").lower()], word in _VAGUE) if n > 0 else None


def _en_period(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta]:
    unit = m.group("unit").lower()
    start, end = _period(ref, unit, 1 if m.group("which").lower() == "last" else 0)
    return start, end, _PERIOD_SLACK[unit]


def _en_weekday(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta]:
    return (*_last_weekday(ref, _WEEKDAYS.index(m.group("day").lower())), DAY)


def _fixed_day(back: int) -> Resolver:
    return lambda m, ref: (*_day(ref, back), (0.5 if back == 0 else 1) * DAY)


def _weekend(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta]:
    return (*_last_weekend(ref), DAY)


def _zh_ago(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta] | None:
    n = _zh_number(m.group("num"))
    if not n:
        return None
    return _ago(ref, n, _ZH_UNITS[m.group("unit")], m.group("num") == "几")


def _zh_trailing(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta] | None:
    n = _zh_number(m.group("num"))
    if not n:
        return None
    return _trailing(ref, n, _ZH_UNITS[m.group("unit")], m.group("num") == "几")


def _zh_period(unit: str, back: int) -> Resolver:
    def resolve(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta]:
        start, end = _period(ref, unit, back)
        return start, end, _PERIOD_SLACK[unit]

    return resolve


def _zh_weekday(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta]:
    monday = _midnight(ref) - (ref.weekday() + 7) * DAY  # Monday of last week
    start = monday + _ZH_WEEKDAYS[m.group("day")] * DAY
    return start, start + DAY, DAY


def _en_ahead(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta] | None:
    word = m.group("num").lower()
    n = float(word) if word.isdigit() else float(_EN_NUMBERS[word])
    return _ahead(ref, n, _EN_UNITS[m.group("unit").lower()], word in _VAGUE) if n > 0 else None


def _zh_ahead(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta] | None:
    n = _zh_number(m.group("num"))
    return _ahead(ref, n, _ZH_UNITS[m.group("unit")], m.group("num") == "几") if n else None


def _en_next_weekday(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta]:
    return (*_next_weekday(ref, _WEEKDAYS.index(m.group("day").lower())), DAY)


def _zh_next_weekday(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta]:
    monday = _midnight(ref) + (7 - ref.weekday()) * DAY  # Monday of next week
    start = monday + _ZH_WEEKDAYS[m.group("day")] * DAY
    return start, start + DAY, DAY


def _next_period(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta]:
    unit = m.group("unit").lower()
    start, end = _period(ref, unit, -1)
    return start, end, _PERIOD_SLACK[unit]


def _weekend_ahead(skip_current: bool) -> Resolver:
    return lambda m, ref: (*_coming_weekend(ref, skip_current), DAY)


_PAST_CUE = re.compile(r"\b(?:did|was|were|went|had|got|spent)\b|了", re.IGNORECASE)


def _this_weekend(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta]:
    """The current or coming weekend; on a weekday, in a sentence about the past ("what did I do this
    weekend?" on a Monday), the one just gone."""
    if ref.weekday() < 5 and not says_future(m) and _in_sentence(_PAST_CUE, m):
        return (*_last_weekend(ref), DAY)
    return (*_coming_weekend(ref, False), DAY)


def _zh_next_weekend(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta]:
    start = _midnight(ref) + (12 - ref.weekday()) * DAY  # Saturday of next week
    return start, start + 2 * DAY, DAY


# Most specific first: a later pattern never claims characters an earlier one matched.
_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        ("january jan", "february feb", "march mar", "april apr", "may", "june jun", "july jul",
         "august aug", "september sep sept", "october oct", "november nov", "december dec")
    )
    for name in names.split()
}  # fmt: skip
# "may" is a verb too: only the capitalised name counts, and only next to a day or a year.
_MONTH_NAMES = "|".join(sorted((n for n in _MONTHS if n != "may"), key=len, reverse=True))
_MONTH = rf"(?P<month>(?:{_MONTH_NAMES})\.?|(?-i:May))"
_NOT_AFTER_ZH = r"(?<![0-9零一二两三四五六七八九十个上本这每])(?<!\d年)"
_IN = r"\b(?:in|during|throughout)\s+"
_DAY_NUM = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_ZH_MONTH = r"(?P<month>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_ZH_DAY = r"(?P<day>[12]\d|3[01]|0?[1-9]|[二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"


def _calendar_day(year: int, month: int, day: int, ref: datetime) -> datetime | None:
    try:
        return ref.replace(year=year, month=month, day=day, hour=0, minute=0, second=0, microsecond=0)
    except ValueError:  # the 30th of February
        return None


def _date(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta] | None:
    """A calendar day; without a year, its latest occurrence up to ``ref`` — or, in a sentence
    about the future (:func:`says_future`), its next occurrence from today on."""
    month, day = _month_number(m.group("month")), _day_number(m.group("day"))
    if month is None or day is None:
        return None
    year = m.group("year")
    start = _calendar_day(int(year) if year else ref.year, month, day, ref)
    if start is not None and not year:
        if says_future(m):
            if start < _midnight(ref):
                start = _calendar_day(ref.year + 1, month, day, ref)
        elif start > ref:
            start = _calendar_day(ref.year - 1, month, day, ref)
    return None if start is None else (start, start + DAY, DAY)


def _month(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta] | None:
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
    start = _month_start(ref.replace(year=year, month=month, day=1))
    return start, _month_start(start, -1), _PERIOD_SLACK["month"]


def _year(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, timedelta]:
    start = _midnight(ref).replace(year=int(m.group("year")), month=1, day=1)
    return start, start.replace(year=start.year + 1), _PERIOD_SLACK["year"]


def _month_number(text: str) -> int | None:
    text = text.lower().rstrip(".")
    if text in _MONTHS:
        return _MONTHS[text]
    n = _zh_number(text)
    return int(n) if n is not None and n == int(n) and 1 <= n <= 12 else None


def _day_number(text: str) -> int | None:
    n = _zh_number(text.lstrip("0") or "0")
    return int(n) if n is not None and n == int(n) and 1 <= n <= 31 else None


class Rule(NamedTuple):
    """A pattern, the words one of which a text must contain for it to match, and its resolver."""

    needs: tuple[str, ...]
    pattern: re.Pattern[str]
    resolve: Resolver
    trailing: bool = False
    ahead: bool = False  # can name a time after the text was said (future phrases, dates without a year)


def _rule(needs: str, pattern: str, resolve: Resolver, *, trailing: bool = False, ahead: bool = False) -> Rule:
    return Rule(tuple(needs.split("|")), re.compile(pattern, re.IGNORECASE), resolve, trailing, ahead)


# Most specific first: a later rule never claims characters an earlier one matched. The words
# are checked with ``in`` first: the regular expressions are the costly part of a memory's scan.
RULES: tuple[Rule, ...] = (
    _rule("past|last", rf"{_EN_PREP}the\s+(?:past|last)\s+(?:(?P<num>{_EN_NUM})\s+)?{_EN_UNIT}\b", _en_trailing,
          trailing=True),
    _rule("past|last", rf"\b(?:past|last)\s+(?P<num>{_EN_NUM})\s+{_EN_UNIT}\b", _en_trailing, trailing=True),
    _rule("ago|back|earlier", rf"\b(?P<num>{_EN_NUM})\s+{_EN_UNIT}\s+(?:ago|back|earlier)\b", _en_ago),
    _rule("now", rf"\b(?P<num>{_EN_NUM})\s+{_EN_UNIT}\s+from\s+now\b", _en_ahead, ahead=True),
    _rule("in", rf"\bin\s+(?P<num>{_EN_NUM})\s+{_EN_UNIT}\b(?!\s+(?:ago|back|earlier))", _en_ahead, ahead=True),
    _rule("tomorrow", r"\bthe\s+day\s+after\s+tomorrow\b", _fixed_day(-2), ahead=True),
    _rule("tomorrow", r"\btomorrow\b", _fixed_day(-1), ahead=True),
    _rule("weekend", r"\bnext\s+weekend\b", _weekend_ahead(True), ahead=True),
    _rule("weekend", r"\bthis\s+coming\s+weekend\b", _weekend_ahead(False), ahead=True),
    _rule("weekend", r"\bthis\s+weekend\b", _this_weekend, ahead=True),
    _rule("day", rf"\b(?:next|this\s+coming)\s+(?P<day>{'|'.join(_WEEKDAYS)})\b", _en_next_weekday, ahead=True),
    _rule("next", r"\bnext\s+(?P<unit>week|month|year)\b", _next_period, ahead=True),
    _rule("yesterday", r"\bthe\s+day\s+before\s+yesterday\b", _fixed_day(2)),
    _rule("yesterday|night", r"\b(?:yesterday|last\s+night)\b", _fixed_day(1)),
    _rule("today|morning|afternoon", rf"\b{_NOT_UNTIL}(?:today|this\s+(?:morning|afternoon))\b", _fixed_day(0)),
    _rule("weekend", r"\b(?:last|this\s+past)\s+weekend\b", _weekend),
    _rule("day", rf"\b(?:last|this\s+past)\s+(?P<day>{'|'.join(_WEEKDAYS)})\b", _en_weekday),
    _rule("week|month|year", r"\b(?P<which>last|this)\s+(?P<unit>week|month|year)\b", _en_period),
    _rule("1|2|3|4|5|6|7|8|9|0", rf"\b{_MONTH}\s+{_DAY_NUM}(?:,?\s+{_YEAR})?\b", _date, ahead=True),
    _rule("1|2|3|4|5|6|7|8|9|0", rf"\b{_DAY_NUM}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", _date, ahead=True),
    _rule("-", r"\b(?P<year>(?:19|20)\d\d)-(?P<month>1[0-2]|0?[1-9])-(?P<day>[0-3]?\d)\b", _date),
    _rule("19|20", rf"\b{_MONTH},?\s+{_YEAR}\b", _month),
    _rule("in|during|throughout", rf"{_IN}(?:(?:early|late|mid)[\s-]+)?{_MONTH}(?!\s*\d)", _month, ahead=True),
    _rule("19|20", rf"{_IN}{_YEAR}\b(?![-/])", _year),
    _rule("月", rf"(?:{_YEAR}年)?{_ZH_MONTH}月{_ZH_DAY}[日号]", _date, ahead=True),
    _rule("月", rf"(?:{_YEAR}年){_ZH_MONTH}月(?!{_ZH_DAY}[日号])", _month),
    # A bare month: not "三个月", "上月", "每月", "三月前" (three months ago), "2023年5月" (above).
    _rule("月", rf"{_NOT_AFTER_ZH}{_ZH_MONTH}月(?!份?{_ZH_DAY}[日号]|[前内])", _month, ahead=True),
    _rule("年", rf"{_YEAR}年(?!{_ZH_MONTH}月|\d)", _year),
    _rule("最近|过去|近", rf"(?:最近|过去|近)(?:的)?{_ZH_NUM}{_ZH_UNIT}", _zh_trailing, trailing=True),
    _rule("最近几天", r"最近几天", lambda m, ref: _trailing(ref, 3, "day", True), trailing=True),
    _rule("前", rf"{_ZH_NUM}{_ZH_UNIT}(?:前|之前|以前)", _zh_ago),
    _rule("后", rf"{_ZH_NUM}{_ZH_UNIT}(?:后|之后|以后)", _zh_ahead, ahead=True),
    _rule("后天", r"大后天", _fixed_day(-3), ahead=True),
    _rule("后天", r"(?<!先天)后天", _fixed_day(-2), ahead=True),
    _rule("明", r"明天|明日|明早|明晚", _fixed_day(-1), ahead=True),
    _rule("下", r"下(?:个)?(?:周|星期|礼拜)末", _zh_next_weekend, ahead=True),
    _rule("下", r"下(?:个)?(?:周|星期|礼拜)(?P<day>[一二三四五六日天])", _zh_next_weekday, ahead=True),
    _rule("下", r"下(?:个)?(?P<unit>周|星期|礼拜)", lambda m, ref: (*_period(ref, "week", -1), _PERIOD_SLACK["week"]),
          ahead=True),
    _rule("下", r"下(?:个)?月", lambda m, ref: (*_period(ref, "month", -1), _PERIOD_SLACK["month"]), ahead=True),
    _rule("明年", r"明年", lambda m, ref: (*_period(ref, "year", -1), _PERIOD_SLACK["year"]), ahead=True),
    _rule("本|这", r"(?:本|这)(?:个)?(?:周|星期|礼拜)末", _this_weekend, ahead=True),
    _rule("前天", r"前天", _fixed_day(2)),
    _rule("昨", r"昨天|昨日|昨晚", _fixed_day(1)),
    _rule("今", r"(?<!截至)(?<!截止)(?<!直到)(?:今天|今日|今早)(?!之前|以前|为止)", _fixed_day(0)),
    _rule("上", r"上(?:个)?(?:周|星期|礼拜)末", _weekend),
    _rule("上", r"上(?:个)?(?:周|星期|礼拜)(?P<day>[一二三四五六日天])", _zh_weekday),
    _rule("上", r"上(?:个)?(?:周|星期|礼拜)", _zh_period("week", 1)),
    _rule("上", r"上(?:个)?月", _zh_period("month", 1)),
    _rule("去年", r"去年", _zh_period("year", 1)),
    _rule("本|这", r"(?:本|这)(?:个)?(?:周|星期|礼拜)", _zh_period("week", 0)),
    _rule("本|这", r"(?:本|这个)月", _zh_period("month", 0)),
    _rule("今年", r"今年", _zh_period("year", 0)),
)  # fmt: skip
