"""Calendar arithmetic the time rules of both languages share, and the shape of a rule.

A resolver turns a match and the moment the text was said (``ref``) into a :data:`Window`,
``(start, end, slack)``, or ``None`` when the match names no time. The functions here compute
those windows ("three weeks before ``ref``", "the calendar month before ``ref``'s") and read the
sentence around a match (does it speak of the future? of the past?).
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
PERIOD_SLACK = {"day": DAY, "week": 2 * DAY, "month": 7 * DAY, "year": 30 * DAY}

Window = tuple[datetime, datetime, timedelta]
Resolver = Callable[[re.Match[str], datetime], "Window | None"]
# A count of units ("three weeks") placed against ``ref``: (ref, n, unit, vague) -> window.
Span = Callable[[datetime, float, str, bool], Window]


class Rule(NamedTuple):
    """A pattern, the words one of which a text must contain for it to match, and its resolver."""

    needs: tuple[str, ...]
    pattern: re.Pattern[str]
    resolve: Resolver
    trailing: bool = False
    ahead: bool = False  # can name a time after the text was said (future phrases, dates without a year)


def rule(needs: str, pattern: str, resolve: Resolver, *, trailing: bool = False, ahead: bool = False) -> Rule:
    """A :class:`Rule`; ``needs`` lists its words separated by ``|``, the pattern ignores case."""
    return Rule(tuple(needs.split("|")), re.compile(pattern, re.IGNORECASE), resolve, trailing, ahead)


def midnight(t: datetime) -> datetime:
    """The start of ``t``'s day."""
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


def day(ref: datetime, days_back: int) -> tuple[datetime, datetime]:
    """The calendar day ``days_back`` days before ``ref``'s (negative: after)."""
    start = midnight(ref) - days_back * DAY
    return start, start + DAY


def month_start(t: datetime, back: int = 0) -> datetime:
    """The first day of the month ``back`` months before ``t``'s (negative: after)."""
    y, m = divmod(t.year * 12 + (t.month - 1) - back, 12)
    return midnight(t).replace(year=y, month=m + 1, day=1)


def period(ref: datetime, unit: str, back: int) -> tuple[datetime, datetime]:
    """The calendar ``unit`` ``back`` periods before the one holding ``ref`` (0: up to ``ref``)."""
    if unit == "week":
        monday = midnight(ref) - ref.weekday() * DAY
        start = monday - back * WEEK
        end = start + WEEK
    elif unit == "month":
        start, end = month_start(ref, back), month_start(ref, back - 1)
    elif unit == "year":
        start = midnight(ref).replace(year=ref.year - back, month=1, day=1)
        end = start.replace(year=start.year + 1)
    else:
        start, end = day(ref, back)
    return start, (min(end, ref) if back == 0 else end)


def calendar_period(unit: str, back: int) -> Resolver:
    """A resolver for the calendar ``unit`` ``back`` periods before ``ref``'s ("last month": 1)."""
    return lambda m, ref: (*period(ref, unit, back), PERIOD_SLACK[unit])


def ago(ref: datetime, n: float, unit: str, vague: bool) -> Window:
    """``n`` units before ``ref`` ("three weeks ago"); ``vague`` ("a few") widens the window."""
    return _shifted(ref, n, unit, vague, later=False)


def ahead(ref: datetime, n: float, unit: str, vague: bool) -> Window:
    """``n`` units after ``ref`` ("in two weeks", "三天后"): the mirror of :func:`ago`."""
    return _shifted(ref, n, unit, vague, later=True)


def _shifted(ref: datetime, n: float, unit: str, vague: bool, *, later: bool) -> Window:
    half, slack = _AGO[unit]
    if unit == "day" and n == int(n) and not vague:
        start, end = day(ref, -int(n) if later else int(n))
        return start, end, slack
    center = ref + n * _UNIT_LENGTH[unit] if later else ref - n * _UNIT_LENGTH[unit]
    if vague:
        half, slack = half + 0.5 * n * _UNIT_LENGTH[unit], 2 * slack
    return center - half, center + half, slack


def trailing(ref: datetime, n: float, unit: str, vague: bool) -> Window:
    """The ``n`` units up to ``ref`` ("in the past two weeks")."""
    length = n * _UNIT_LENGTH[unit]
    slack = length * (0.5 if vague else 0.25)
    return ref - length, ref, slack


def last_weekday(ref: datetime, weekday: int) -> tuple[datetime, datetime]:
    """The last ``weekday`` (0 = Monday) before today."""
    back = (ref.weekday() - weekday) % 7 or 7
    return day(ref, back)


def next_weekday(ref: datetime, weekday: int) -> tuple[datetime, datetime]:
    """The first ``weekday`` after today ("next Tuesday" said on a Sunday is in two days)."""
    return day(ref, -((weekday - ref.weekday()) % 7 or 7))


def last_weekend(ref: datetime) -> tuple[datetime, datetime]:
    """The Saturday and Sunday before today."""
    back = (ref.weekday() - 5) % 7 or 7  # the last Saturday before today
    if ref.weekday() == 6:  # on a Sunday, "last weekend" is the previous one
        back = 8
    start = midnight(ref) - back * DAY
    return start, start + 2 * DAY


def coming_weekend(ref: datetime, skip_current: bool) -> tuple[datetime, datetime]:
    """The Saturday and Sunday ahead; on a weekend day, the current one unless ``skip_current``."""
    wd = ref.weekday()
    if wd >= 5:
        start = midnight(ref) - (wd - 5) * DAY + (WEEK if skip_current else timedelta(0))
    else:
        start = midnight(ref) + (5 - wd) * DAY
    return start, start + 2 * DAY


def fixed_day(back: int) -> Resolver:
    """A resolver for the day ``back`` days before ``ref``'s ("yesterday": 1, "tomorrow": -1)."""
    return lambda m, ref: (*day(ref, back), (0.5 if back == 0 else 1) * DAY)


def weekend(m: re.Match[str], ref: datetime) -> Window:
    """The last weekend ("last weekend", "上周末")."""
    return (*last_weekend(ref), DAY)


def weekend_ahead(skip_current: bool) -> Resolver:
    """A resolver for the coming weekend ("next weekend": ``skip_current``)."""
    return lambda m, ref: (*coming_weekend(ref, skip_current), DAY)


def this_weekend(m: re.Match[str], ref: datetime) -> Window:
    """The current or coming weekend; on a weekday, in a sentence about the past ("what did I do this
    weekend?" on a Monday), the one just gone."""
    if ref.weekday() < 5 and not says_future(m) and _in_sentence(_PAST_CUE, m):
        return (*last_weekend(ref), DAY)
    return (*coming_weekend(ref, False), DAY)


# A sentence that says what will happen: a month or day without a year is then the next one, not
# the last ("I'm going to Paris in June", said in March, is about this June, not last year's).
_FUTURE_CUE = re.compile(
    r"\b(?:will|shall|going\s+to|gonna|plan|plans|planning|intend|intends|upcoming|coming\s+up|scheduled"
    r"|looking\s+forward|can't\s+wait|about\s+to|hope\s+to|next)\b|\w'll\b"
    r"|打算|准备|计划|将要|将会|就要|快要|即将|要去|会去|想去",
    re.IGNORECASE,
)
_PAST_CUE = re.compile(r"\b(?:did|was|were|went|had|got|spent)\b|了", re.IGNORECASE)
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
