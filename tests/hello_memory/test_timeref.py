"""Relative time expressions in queries (``hello_memory.language.timeref``), English and Chinese."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from hello_memory.language.timeref import memory_fit, time_windows

ASKED = datetime(2023, 3, 28, 10, 0, tzinfo=timezone.utc)  # a Tuesday


PHRASES = [
    ("What did I buy 10 days ago?", "10 days ago", "2023-03-18", "2023-03-19"),
    ("the book I finished a week ago", "a week ago", "2023-03-19", "2023-03-23"),
    ("What did I mention four weeks ago?", "four weeks ago", "2023-02-26", "2023-03-02"),
    ("a museum two months ago", "two months ago", "2023-01-19", "2023-02-02"),
    ("cooked for a friend a couple of days ago", "a couple of days ago", "2023-03-24", "2023-03-27"),
    ("what did I say yesterday", "yesterday", "2023-03-27", "2023-03-28"),
    ("what did I eat last night", "last night", "2023-03-27", "2023-03-28"),
    ("the day before yesterday", "the day before yesterday", "2023-03-26", "2023-03-27"),
    ("what did I say this morning", "this morning", "2023-03-28", "2023-03-29"),
    ("lunch last Tuesday", "last Tuesday", "2023-03-21", "2023-03-22"),
    ("the artist I heard this past Friday", "this past Friday", "2023-03-24", "2023-03-25"),
    ("the game I beat last weekend", "last weekend", "2023-03-25", "2023-03-27"),
    ("where did I go last week", "last week", "2023-03-20", "2023-03-27"),
    ("bills from last month", "last month", "2023-02-01", "2023-03-01"),
    ("what I did last year", "last year", "2022-01-01", "2023-01-01"),
    ("eggs sold this month", "this month", "2023-03-01", "2023-03-28"),
    ("parties in the past month", "in the past month", "2023-02-25", "2023-03-28"),
    (
        "How often did I bake over the last two weeks?",
        "over the last two weeks",
        "2023-03-14",
        "2023-03-28",
    ),
    ("videos I watched in the past few weeks", "in the past few weeks", "2023-03-07", "2023-03-28"),
    ("我三天前买了什么？", "三天前", "2023-03-25", "2023-03-26"),
    ("两周前我做了什么菜", "两周前", "2023-03-12", "2023-03-16"),
    ("我三个月前去了哪里", "三个月前", "2022-12-20", "2023-01-03"),
    ("十二天前的会议", "十二天前", "2023-03-16", "2023-03-17"),
    ("我昨天说了什么", "昨天", "2023-03-27", "2023-03-28"),
    ("前天的晚饭", "前天", "2023-03-26", "2023-03-27"),
    ("上周二和谁吃的午饭", "上周二", "2023-03-21", "2023-03-22"),
    ("上星期日去了哪里", "上星期日", "2023-03-26", "2023-03-27"),
    ("上周末玩了什么游戏", "上周末", "2023-03-25", "2023-03-27"),
    ("上个星期去了哪里", "上个星期", "2023-03-20", "2023-03-27"),
    ("上个月的账单", "上个月", "2023-02-01", "2023-03-01"),
    ("去年的旅行", "去年", "2022-01-01", "2023-01-01"),
    ("这个月卖了多少鸡蛋", "这个月", "2023-03-01", "2023-03-28"),
    ("最近两周跑了几次步", "最近两周", "2023-03-14", "2023-03-28"),
    ("过去两个月去了几次健身房", "过去两个月", "2023-01-26", "2023-03-28"),
    ("近一年的开销", "近一年", "2022-03-28", "2023-03-28"),
    ("几天前那家餐厅", "几天前", "2023-03-23", "2023-03-27"),
    ("半个月前的那次旅行", "半个月前", "2023-03-06", "2023-03-20"),
    ("上星期五的会议", "上星期五", "2023-03-24", "2023-03-25"),
    # calendar dates; without a year, the latest occurrence up to the question
    ("What did Maria show on October 13, 2022?", "October 13, 2022", "2022-10-13", "2022-10-14"),
    ("the store on 1 February, 2023", "1 February, 2023", "2023-02-01", "2023-02-02"),
    ("dinner on the 3rd of Jan", "3rd of Jan", "2023-01-03", "2023-01-04"),
    ("What did I do on May 3?", "May 3", "2022-05-03", "2022-05-04"),
    ("notes from 2023-03-07", "2023-03-07", "2023-03-07", "2023-03-08"),
    ("a setback in October 2022", "October 2022", "2022-10-01", "2022-11-01"),
    ("camping in June", "in June", "2022-06-01", "2022-07-01"),
    ("runs I missed in March", "in March", "2023-03-01", "2023-04-01"),
    ("the beach in 2022", "in 2022", "2022-01-01", "2023-01-01"),
    ("我2022年10月13日做了什么", "2022年10月13日", "2022-10-13", "2022-10-14"),
    ("5月3号的晚饭", "5月3号", "2022-05-03", "2022-05-04"),
    ("2022年5月的旅行", "2022年5月", "2022-05-01", "2022-06-01"),
    ("我十二月去了哪里", "十二月", "2022-12-01", "2023-01-01"),
    ("2021年的照片", "2021年", "2021-01-01", "2022-01-01"),
]


@pytest.mark.parametrize(("query", "phrase", "start", "end"), PHRASES)
def test_phrases_resolve_to_windows(query, phrase, start, end):
    (w,) = time_windows(query, ASKED)
    assert w.phrase == phrase and query[w.span[0] : w.span[1]] == phrase
    assert (w.start.date().isoformat(), w.end.date().isoformat()) == (start, end)
    assert w.fit(w.start.timestamp()) == 1.0 and w.fit(w.bounds[1] + 1) == 0.0


@pytest.mark.parametrize(
    "query",
    [
        "How many days ago did I buy a smoker?",  # asks for a time, names none
        "How many weeks ago did I meet my aunt?",
        "Order the airlines I flew with before today",
        "Can you recommend a movie for tonight?",  # the future
        "When was the last time I went hiking?",
        "My weekly plan for the month",
        "截至今天我读了几本书？",
        "我有几天没跑步了？",
        "May I ask a question?",  # the verb, not the month
        "I may go in may",
        "Feb 30 2023",  # no such day
        "我每月的开销",
        "三个月的时间",
        "in 1000 years",
        "",
    ],
)
def test_questions_about_a_time_name_none(query):
    assert time_windows(query, ASKED) == []


def test_several_phrases_in_one_query():
    windows = time_windows("What did I do yesterday and three weeks ago?", ASKED)
    assert [w.phrase for w in windows] == ["yesterday", "three weeks ago"]
    assert [w.trailing for w in time_windows("in the past two weeks, 最近三天", ASKED)] == [True, True]


def test_calendar_days_are_those_of_the_timezone_the_question_is_asked_in():
    beijing = timezone(timedelta(hours=8))
    asked = datetime(2023, 3, 28, 1, 0, tzinfo=beijing)  # still the 27th in UTC
    (w,) = time_windows("我昨天说了什么", asked)
    assert w.start == datetime(2023, 3, 27, tzinfo=beijing) and w.end == datetime(2023, 3, 28, tzinfo=beijing)


def test_fit_falls_off_linearly_beyond_the_core():
    (w,) = time_windows("two weeks ago", ASKED)  # core 12..16 days back, slack 4 days
    assert w.fit((ASKED - timedelta(days=14)).timestamp()) == 1.0
    assert w.fit((w.start - timedelta(days=2)).timestamp()) == pytest.approx(0.5)
    assert w.fit((w.end + timedelta(days=5)).timestamp()) == 0.0


def test_a_memory_fits_by_when_it_was_said_or_by_the_time_it_names():
    asked = datetime(2023, 5, 26, 12, tzinfo=timezone.utc)  # Friday
    named = time_windows("What cocktail did I try last weekend?", asked)
    saturday, wednesday = (
        datetime(2023, 5, 20, 20, tzinfo=timezone.utc),
        datetime(2023, 5, 24, tzinfo=timezone.utc),
    )
    assert memory_fit(named, saturday, "Trying a mojito tonight") == 1.0
    assert memory_fit(named, wednesday, "I tried a mojito recipe last weekend") == 1.0
    assert memory_fit(named, wednesday, "I tried a mojito recipe yesterday") == 0.0
    assert memory_fit(named, wednesday, "我上周末试了一款莫吉托") == 1.0
    # A trailing period in the text is no point in time.
    assert memory_fit(named, wednesday, "I tried many cocktails in the past year") == 0.0

