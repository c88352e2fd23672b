"""A time-phrase test set written for hello-memory, not taken from any benchmark (issue 20, item 2).

Each case: a sentence as a user or an agent would write it, when it is said, and the window it
must name (the core's first and last day, inclusive), or ``None`` when it names no time. The
reference moments are chosen so that the calendar matters: a Friday, a Sunday, the first of a
month, the last day of a year.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from hello_memory.language.timeref import memory_fit, time_windows

FRI = datetime(2025, 3, 14, 16, 30, tzinfo=timezone.utc)  # Friday 14 March 2025
SUN = datetime(2025, 3, 16, 9, 0, tzinfo=timezone.utc)  # Sunday 16 March 2025
FIRST = datetime(2025, 4, 1, 8, 0, tzinfo=timezone.utc)  # Tuesday 1 April 2025
NYE = datetime(2024, 12, 31, 22, 0, tzinfo=timezone.utc)  # Tuesday 31 December 2024

D = date

CASES: list[tuple[str, datetime, tuple[date, date] | None]] = [
    # the past, relative
    ("Remind me what the plumber said yesterday", FRI, (D(2025, 3, 13), D(2025, 3, 13))),
    ("the parcel came the day before yesterday", FRI, (D(2025, 3, 12), D(2025, 3, 12))),
    ("which wine did we open last night?", SUN, (D(2025, 3, 15), D(2025, 3, 15))),
    ("what did my sister text me last Saturday", SUN, (D(2025, 3, 15), D(2025, 3, 15))),
    ("the meeting this past Monday ran long", FRI, (D(2025, 3, 10), D(2025, 3, 10))),
    ("Who did I have lunch with last weekend?", FRI, (D(2025, 3, 8), D(2025, 3, 9))),
    ("what did I read last month", FIRST, (D(2025, 3, 1), D(2025, 3, 31))),
    ("my goals from last year", NYE, (D(2023, 1, 1), D(2023, 12, 31))),
    ("上个星期五我在哪儿加班", FRI, (D(2025, 3, 7), D(2025, 3, 7))),
    ("前天晚上吃的火锅", SUN, (D(2025, 3, 14), D(2025, 3, 14))),
    ("去年冬天的滑雪课", NYE, (D(2023, 1, 1), D(2023, 12, 31))),
    # the past, calendar
    ("The conference on 3 February was useful", FRI, (D(2025, 2, 3), D(2025, 2, 3))),
    ("we met in November", FRI, (D(2024, 11, 1), D(2024, 11, 30))),  # the last November
    ("在八月搬的家", FRI, (D(2024, 8, 1), D(2024, 8, 31))),
    # the future, relative
    ("What do I need to bring tomorrow?", FRI, (D(2025, 3, 15), D(2025, 3, 15))),
    ("the day after tomorrow is the school play", NYE, (D(2025, 1, 2), D(2025, 1, 2))),
    ("What is planned for next Tuesday?", FRI, (D(2025, 3, 18), D(2025, 3, 18))),
    ("this coming Sunday we visit grandma", FRI, (D(2025, 3, 16), D(2025, 3, 16))),
    ("next Sunday is the marathon", SUN, (D(2025, 3, 23), D(2025, 3, 23))),  # not today
    ("we are going camping next weekend", SUN, (D(2025, 3, 22), D(2025, 3, 23))),
    ("any plans for this weekend?", FRI, (D(2025, 3, 15), D(2025, 3, 16))),
    ("What did I do this weekend?", datetime(2025, 3, 17, 9, tzinfo=timezone.utc), (D(2025, 3, 15), D(2025, 3, 16))),
    ("the budget is due next month", NYE, (D(2025, 1, 1), D(2025, 1, 31))),
    ("Next week I start at the new office", FRI, (D(2025, 3, 17), D(2025, 3, 23))),
    ("I renew my passport next year", NYE, (D(2025, 1, 1), D(2025, 12, 31))),
    ("the results arrive in three days", FRI, (D(2025, 3, 17), D(2025, 3, 17))),
    ("two days from now I fly to Lisbon", FRI, (D(2025, 3, 16), D(2025, 3, 16))),
    ("明天要交房租", NYE, (D(2025, 1, 1), D(2025, 1, 1))),
    ("后天去医院复查", FRI, (D(2025, 3, 16), D(2025, 3, 16))),
    ("大后天是妈妈生日", FRI, (D(2025, 3, 17), D(2025, 3, 17))),
    ("下周三的面试准备好了吗", FRI, (D(2025, 3, 19), D(2025, 3, 19))),
    ("下个月去成都出差", NYE, (D(2025, 1, 1), D(2025, 1, 31))),
    ("明年打算学日语", FRI, (D(2026, 1, 1), D(2026, 12, 31))),
    ("三天后出发去西藏", FRI, (D(2025, 3, 17), D(2025, 3, 17))),
    ("下周末一起爬山吧", FRI, (D(2025, 3, 22), D(2025, 3, 23))),
    # the future, calendar: a month or day without a year in a sentence about what will happen
    ("I'm going to Paris in June", FRI, (D(2025, 6, 1), D(2025, 6, 30))),
    ("We'll repaint the kitchen in February", FRI, (D(2026, 2, 1), D(2026, 2, 28))),
    ("my exam will be on May 20", FRI, (D(2025, 5, 20), D(2025, 5, 20))),
    ("planning a trip for the 2nd of January", NYE, (D(2025, 1, 2), D(2025, 1, 2))),
    ("我打算十月去日本", FRI, (D(2025, 10, 1), D(2025, 10, 31))),
    ("准备5月3号搬家", FRI, (D(2025, 5, 3), D(2025, 5, 3))),
    # no time at all
    ("How many weeks ago did I start running?", FRI, None),
    ("everything before today is archived", FRI, None),
    ("May I ask you something?", FRI, None),
    ("I'll think about it", FRI, None),
    ("这个问题以后再说", FRI, None),
]


@pytest.mark.parametrize(("text", "said", "expected"), CASES, ids=[c[0] for c in CASES])
def test_phrase(text: str, said: datetime, expected: tuple[date, date] | None) -> None:
    windows = time_windows(text, said)
    if expected is None:
        assert windows == []
        return
    assert len(windows) == 1, [w.phrase for w in windows]
    w = windows[0]
    assert (w.start.date(), (w.end - timedelta(microseconds=1)).date()) == expected
    assert w.future == (w.start > said)


def test_a_plan_fits_the_time_it_was_about_not_the_year_before() -> None:
    """ "in June" said about the future must not boost last June (issue 20)."""
    said = datetime(2025, 3, 2, 10, tzinfo=timezone.utc)
    plan = "I'm going to Paris in June"
    asked_later = datetime(2025, 8, 1, tzinfo=timezone.utc)
    assert memory_fit(time_windows("What did I do in June?", asked_later), said, plan) == 1.0
    last_june = time_windows("What did I do in June 2024?", asked_later)
    assert memory_fit(last_june, said, plan) == 0.0
    # the same month told of in the past, in March 2025, is last June
    assert memory_fit(last_june, said, "We went to Paris in June") == 1.0


def test_a_question_about_the_future_finds_what_was_said_about_it_earlier() -> None:
    asked = datetime(2025, 3, 14, 9, tzinfo=timezone.utc)  # Friday
    named = time_windows("What is planned for next Tuesday?", asked)
    said_wednesday = datetime(2025, 3, 12, 18, tzinfo=timezone.utc)
    assert memory_fit(named, said_wednesday, "The dentist is next Tuesday at 3") == 1.0
    assert memory_fit(named, said_wednesday, "The dentist was last Tuesday") == 0.0
    said_monday = datetime(2025, 3, 17, 8, tzinfo=timezone.utc)
    assert memory_fit(named, said_monday, "dentist tomorrow") == 1.0  # said after the question, still ahead
