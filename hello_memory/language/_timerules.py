"""The expressions :mod:`hello_memory.language.timeref` recognises: patterns and their resolvers.

Each rule names the words a text needs before its expression runs (checked with ``in``: the regular
expressions are the costly part of a memory's scan), its pattern, and a resolver that turns a match
and the moment the text was said into ``(start, end, slack)``, or ``None`` when it names no time.

The rules live by language (:mod:`._timerules_en`, :mod:`._timerules_zh`) over the calendar
arithmetic they share (:mod:`._timecalendar`, :mod:`._timedates`).
"""

from __future__ import annotations

from hello_memory.language._timecalendar import Rule
from hello_memory.language._timerules_en import RULES as EN_RULES
from hello_memory.language._timerules_zh import RULES as ZH_RULES

__all__ = ["RULES", "Rule"]

# Most specific first, within each language: a later rule never claims characters an earlier one
# matched.
RULES: tuple[Rule, ...] = EN_RULES + ZH_RULES
