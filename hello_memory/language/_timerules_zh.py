"""The Chinese time expressions: "三天前", "上周二", "最近两个月", "下周末", "2023年10月13日"."""

from __future__ import annotations

import re
from datetime import datetime

from hello_memory.language import _timecalendar as cal
from hello_memory.language._timecalendar import Rule, rule
from hello_memory.language._timedates import YEAR_PATTERN, date_window, month_window, year_window, zh_number

_UNITS = {
    "天": "day",
    "日": "day",
    "周": "week",
    "星期": "week",
    "礼拜": "week",
    "月": "month",
    "年": "year",
}
_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

_NUM = r"(?P<num>\d{1,3}|[零一二两三四五六七八九十]{1,3}|半|几)"
_UNIT = r"(?:个)?(?P<unit>天|日|周|星期|礼拜|月|年)"
_NOT_AFTER_ZH = r"(?<![0-9零一二两三四五六七八九十个上本这每])(?<!\d年)"
_YEAR = YEAR_PATTERN
_MONTH = r"(?P<month>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_DAY = r"(?P<day>[12]\d|3[01]|0?[1-9]|[二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"


def _counted(span: cal.Span) -> cal.Resolver:
    """A resolver placing "<num><unit>" with ``span`` (``cal.ago``, ``cal.ahead`` or ``cal.trailing``)."""

    def resolve(m: re.Match[str], ref: datetime) -> cal.Window | None:
        n = zh_number(m.group("num"))
        return span(ref, n, _UNITS[m.group("unit")], m.group("num") == "几") if n else None

    return resolve


def _last_weeks_day(m: re.Match[str], ref: datetime) -> cal.Window:
    monday = cal.midnight(ref) - (ref.weekday() + 7) * cal.DAY  # Monday of last week
    start = monday + _WEEKDAYS[m.group("day")] * cal.DAY
    return start, start + cal.DAY, cal.DAY


def _next_weeks_day(m: re.Match[str], ref: datetime) -> cal.Window:
    monday = cal.midnight(ref) + (7 - ref.weekday()) * cal.DAY  # Monday of next week
    start = monday + _WEEKDAYS[m.group("day")] * cal.DAY
    return start, start + cal.DAY, cal.DAY


def _next_weekend(m: re.Match[str], ref: datetime) -> cal.Window:
    start = cal.midnight(ref) + (12 - ref.weekday()) * cal.DAY  # Saturday of next week
    return start, start + 2 * cal.DAY, cal.DAY


# Most specific first: a later rule never claims characters an earlier one matched.
RULES: tuple[Rule, ...] = (
    rule("月", rf"(?:{_YEAR}年)?{_MONTH}月{_DAY}[日号]", date_window, ahead=True),
    rule("月", rf"(?:{_YEAR}年){_MONTH}月(?!{_DAY}[日号])", month_window),
    # A bare month: not "三个月", "上月", "每月", "三月前" (three months ago), "2023年5月" (above).
    rule("月", rf"{_NOT_AFTER_ZH}{_MONTH}月(?!份?{_DAY}[日号]|[前内])", month_window, ahead=True),
    rule("年", rf"{_YEAR}年(?!{_MONTH}月|\d)", year_window),
    rule("最近|过去|近", rf"(?:最近|过去|近)(?:的)?{_NUM}{_UNIT}", _counted(cal.trailing), trailing=True),
    rule("最近几天", r"最近几天", lambda m, ref: cal.trailing(ref, 3, "day", True), trailing=True),
    rule("前", rf"{_NUM}{_UNIT}(?:前|之前|以前)", _counted(cal.ago)),
    rule("后", rf"{_NUM}{_UNIT}(?:后|之后|以后)", _counted(cal.ahead), ahead=True),
    rule("后天", r"大后天", cal.fixed_day(-3), ahead=True),
    rule("后天", r"(?<!先天)后天", cal.fixed_day(-2), ahead=True),
    rule("明", r"明天|明日|明早|明晚", cal.fixed_day(-1), ahead=True),
    rule("下", r"下(?:个)?(?:周|星期|礼拜)末", _next_weekend, ahead=True),
    rule("下", r"下(?:个)?(?:周|星期|礼拜)(?P<day>[一二三四五六日天])", _next_weeks_day, ahead=True),
    rule("下", r"下(?:个)?(?P<unit>周|星期|礼拜)", cal.calendar_period("week", -1), ahead=True),
    rule("下", r"下(?:个)?月", cal.calendar_period("month", -1), ahead=True),
    rule("明年", r"明年", cal.calendar_period("year", -1), ahead=True),
    rule("本|这", r"(?:本|这)(?:个)?(?:周|星期|礼拜)末", cal.this_weekend, ahead=True),
    rule("前天", r"前天", cal.fixed_day(2)),
    rule("昨", r"昨天|昨日|昨晚", cal.fixed_day(1)),
    rule("今", r"(?<!截至)(?<!截止)(?<!直到)(?:今天|今日|今早)(?!之前|以前|为止)", cal.fixed_day(0)),
    rule("上", r"上(?:个)?(?:周|星期|礼拜)末", cal.weekend),
    rule("上", r"上(?:个)?(?:周|星期|礼拜)(?P<day>[一二三四五六日天])", _last_weeks_day),
    rule("上", r"上(?:个)?(?:周|星期|礼拜)", cal.calendar_period("week", 1)),
    rule("上", r"上(?:个)?月", cal.calendar_period("month", 1)),
    rule("去年", r"去年", cal.calendar_period("year", 1)),
    rule("本|这", r"(?:本|这)(?:个)?(?:周|星期|礼拜)", cal.calendar_period("week", 0)),
    rule("本|这", r"(?:本|这个)月", cal.calendar_period("month", 0)),
    rule("今年", r"今年", cal.calendar_period("year", 0)),
)  # fmt: skip
