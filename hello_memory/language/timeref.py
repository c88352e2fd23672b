"""Relative time in queries and memories: "yesterday", "three weeks ago", "last Tuesday", "上周", "三天前".

"What did I mention two weeks ago?" says *when* a memory was made. Neither BM25 nor the embedder
can use that: the words match every memory that happens to say "weeks ago". :func:`time_windows`
finds such expressions (English and Chinese) and resolves them against the moment the query is
asked into :class:`TimeWindow` s. Retrieval then draws candidates from those windows and moves
memories made inside them towards ``sim`` 1 (``Settings.time_weight``; see
:mod:`hello_memory.core.retrieval`).

What is recognised:

- ``N days/weeks/months/years ago`` (digits, number words, "a", "a couple of", "a few", "several"),
  ``N天前``, ``两周前``, ``三个月前``, ``半年前``, ``几天前``;
- ``yesterday``, ``last night``, ``today``, ``this morning`` (not "tonight": in a request it is
  the future), ``the day before yesterday``,
  ``昨天``, ``昨晚``, ``前天``, ``今天``;
- calendar periods: ``last/this week|month|year``, ``last weekend``, ``上周``, ``上个月``,
  ``去年``, ``本周``, ``这个月``, ``今年``, ``上周末``;
- a weekday: ``last Tuesday``, ``this past Friday``, ``上周二``, ``上星期五``;
- trailing periods: ``in the past two weeks``, ``over the last month``, ``the past few months``,
  ``最近三天``, ``过去两个月``, ``近一年``.
- calendar dates: ``October 13, 2023``, ``1 February, 2023``, ``the 3rd of Jan``, ``2023-10-13``,
  ``October 2023``, ``in June``, ``in 2023``, ``2023年10月13日``, ``5月3号``, ``2023年5月``,
  ``十二月``, ``2022年``; without a year, the latest such day or month up to the reference time
  ("May" only capitalised and next to a day or year: it is a verb too) — unless the sentence
  speaks of the future ("will", "going to", "plan", "'ll", "打算", "准备"...): "I'm going to Paris
  in June", said in March, is about this June, not last year's;
- the future: ``tomorrow``, ``the day after tomorrow``, ``next Tuesday`` / ``this coming Friday``
  (the first one after today), ``next week|month|year``, ``next weekend``, ``this weekend`` (the
  current or coming one; on a weekday in a sentence about the past, the one just gone), ``in two
  weeks``, ``three days from now``, ``明天``, ``后天``, ``大后天``, ``下周``, ``下周二``, ``下周末``,
  ``下个月``, ``明年``, ``三天后``, ``两个月以后``. A query about the future ("what is planned for
  next Tuesday?") finds the memories that named that time when they were said.

A question *about* a time ("how many days ago did I ...?") names no time and yields nothing, and
neither do "before today" and "until today". People are loose with such phrases (a "two weeks ago"
event is often 10 or 18 days back), so a window has a core, where the fit is 1, and a ``slack`` that
grows with the unit, over which the fit falls linearly to 0.

The same patterns read memory texts ("I tried a mojito last weekend", said on a Wednesday, is
about that weekend; "the dentist is next Tuesday", said on a Friday, is about the Tuesday after:
:func:`memory_fit`).

Hand-written rather than a date-parsing library. ``dateparser.search_dates`` (measured here, 1.2)
resolves a phrase to one instant, not a window with a tolerance; it found no date in "我三天前买了
什么？" without being told the language; it read "May I ask..." as the 28th of May; and it took
10–50 ms per query once loaded, against a search budget of 20 ms at p95. The patterns here are a
closed list, each with a test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from hello_memory.language._timerules import RULES, Rule


def _rules_by_word(ahead_only: bool) -> dict[str, tuple[int, ...]]:
    """Each word a rule needs → the positions (in :data:`RULES`) of the rules that need it."""
    out: dict[str, list[int]] = {}
    for i, rule in enumerate(RULES):
        if rule.ahead or not ahead_only:
            for word in rule.needs:
                out.setdefault(word, []).append(i)
    return {word: tuple(ids) for word, ids in out.items()}


_BY_WORD = {ahead_only: _rules_by_word(ahead_only) for ahead_only in (False, True)}


def _rules_for(lowered: str, ahead_only: bool) -> list[Rule]:
    """The rules whose needed words ``lowered`` holds, in :data:`RULES` order (a text is scanned by
    each needed word once, not once per rule that needs it: memories are scanned per search)."""
    ids = {i for word, rules in _BY_WORD[ahead_only].items() if word in lowered for i in rules}
    return [RULES[i] for i in sorted(ids)]


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """When a query says something happened: ``[start, end)`` plus a tolerance.

    Attributes:
        start, end: the core of the window (timezone of the reference time).
        slack: beyond the core, the fit falls linearly from 1 to 0 over this much time.
        phrase: the words of the query that named it.
        span: ``(start, end)`` character offsets of ``phrase`` in the query.
        trailing: a period up to the reference time ("in the past month"), not a point in the past.
        future: the window starts after the reference time ("next Tuesday", "明天", "in two weeks").
    """

    start: datetime
    end: datetime
    slack: timedelta
    phrase: str
    span: tuple[int, int]
    trailing: bool = False
    future: bool = False

    def fit(self, ts: float) -> float:
        """1 inside the core, falling linearly to 0 at ``slack`` beyond it (``ts``: POSIX seconds).

        Example:
            >>> from datetime import timezone
            >>> w = time_windows("yesterday", datetime(2024, 5, 2, 12, tzinfo=timezone.utc))[0]
            >>> w.fit(datetime(2024, 5, 1, 9, tzinfo=timezone.utc).timestamp())
            1.0
            >>> w.fit(datetime(2024, 4, 30, 12, tzinfo=timezone.utc).timestamp())
            0.5
        """
        lo, hi = self.start.timestamp(), self.end.timestamp()
        if lo <= ts < hi:
            return 1.0
        gap = lo - ts if ts < lo else ts - hi
        slack = self.slack.total_seconds()
        return max(0.0, 1.0 - gap / slack) if slack > 0 else 0.0

    def overlap(self, other: TimeWindow) -> float:
        """1 when the two cores meet, falling linearly to 0 over the larger slack between them."""
        gap = max(self.start, other.start) - min(self.end, other.end)
        if gap <= timedelta(0):
            return 1.0
        slack = max(self.slack, other.slack)
        return max(0.0, 1.0 - gap / slack) if slack > timedelta(0) else 0.0

    @property
    def bounds(self) -> tuple[float, float]:
        """POSIX seconds outside which :meth:`fit` is 0."""
        slack = self.slack.total_seconds()
        return self.start.timestamp() - slack, self.end.timestamp() + slack




def time_windows(query: str, reference: datetime, *, ahead_only: bool = False) -> list[TimeWindow]:
    """The windows of time ``query`` names, resolved against ``reference`` (when it is asked).

    ``reference`` should be timezone-aware: calendar days and weeks are taken in its timezone.
    ``ahead_only`` keeps only the windows that start after ``reference`` ("next Tuesday", "in June"
    in a sentence about the future), and runs only the rules that can name one.

    Example:
        >>> from datetime import timezone
        >>> now = datetime(2023, 3, 28, 10, tzinfo=timezone.utc)  # a Tuesday
        >>> [(w.phrase, w.start.date().isoformat()) for w in time_windows("What did I buy last Friday?", now)]
        [('last Friday', '2023-03-24')]
        >>> [w.phrase for w in time_windows("我上周二见了谁？三天前呢？", now)]
        ['上周二', '三天前']
        >>> time_windows("How many days ago did I buy a smoker?", now)
        []
    """
    found: list[TimeWindow] = []
    taken: list[tuple[int, int]] = []
    lowered = query.lower()
    for rule in _rules_for(lowered, ahead_only):
        for m in rule.pattern.finditer(query):
            a, b = m.span()
            a += len(m.group()) - len(m.group().lstrip())
            if any(a < y and x < b for x, y in taken):
                continue
            window = rule.resolve(m, reference)
            if window is None or (ahead_only and window[0] <= reference):
                continue
            taken.append((a, b))
            found.append(TimeWindow(
                window[0], window[1], window[2], query[a:b], (a, b), rule.trailing, window[0] > reference
            ))  # fmt: skip
    return sorted(found, key=lambda w: w.span)


def memory_fit(named: Sequence[TimeWindow], created: datetime, content: str) -> float:
    """How well a memory fits the windows a query names, in [0, 1].

    Either its own time fits (it was said then), or a time its text names, resolved against its
    own time, does: "I tried a new cocktail last weekend", said on a Wednesday, is about that
    weekend. Trailing periods in the text ("in the past year") name no point and are ignored.

    Example:
        >>> from datetime import timezone
        >>> asked = datetime(2023, 5, 26, 12, tzinfo=timezone.utc)  # a Friday
        >>> said = datetime(2023, 5, 24, 18, tzinfo=timezone.utc)
        >>> named = time_windows("What cocktail did I try last weekend?", asked)
        >>> memory_fit(named, said, "Any tips? I tried a mojito recipe last weekend."), memory_fit(named, said, "Hi")
        (1.0, 0.0)
    """
    ts = created.timestamp()
    best = max(w.fit(ts) for w in named)
    if best < 1.0:
        # Said before every window, a text can only name one by looking ahead ("next Tuesday"):
        # only the rules that can are run (most memories are older than the time a query names).
        before = ts < min(w.bounds[0] for w in named)
        for said in time_windows(content, created, ahead_only=before):
            if not said.trailing:
                best = max(best, *(w.overlap(said) for w in named))
    return best
