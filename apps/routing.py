"""Question routing: documents answer facts, memory answers "what did I do".

A question about the learner's own past ("我之前学过什么", "what did I learn before", "回顾我的笔记")
goes to memory search; every other question goes to the documents. The rules are deliberately
narrow: a question that merely mentions "recall" (as in "what is recall@10?") stays with RAG.

Example:
    >>> route_question("我之前学过什么？"), route_question("What is HyDE?")
    ('memory', 'rag')
"""

from __future__ import annotations

import re

from apps.models import Route

# An explicit prefix always wins, so a learner can force the memory route.
_FORCE = re.compile(r"^\s*(/recall|/memory|回顾[:：]|recall:)", re.IGNORECASE)

_ZH = [
    # 之前/以前/上次 … 学/问/看 — a time reference to the learner's past followed by a learning verb.
    re.compile(r"(我|咱们?).{0,4}(之前|以前|上次|刚才|曾经|此前|过去|今天|昨天).{0,8}(学|问|读|看|记|加载|上传|了解)"),
    # 学过什么 / 问过哪些 — the experiential 过 followed by a question word.
    re.compile(r"(学|问|读|看|记|加载|上传)过(了)?(什么|哪些|啥|几)"),
    re.compile(r"我的(学习)?(笔记|记录|历史|进度|足迹)"),
    re.compile(r"回顾(一下)?(我|学习|之前)"),
]
_EN = [
    # "what did I learn", "what have I studied", "which documents did I load"
    re.compile(r"\b(what|which)\b.{0,30}\b(did|have|had) i\b.{0,12}\b(learn|stud|ask|read|load|note|cover)"),
    re.compile(r"\b(remind me|my notes|my (learning )?(history|progress))\b"),
    re.compile(r"\b(learn(ed|t)?|studied|asked|read|covered) (before|earlier|previously|so far|last time)\b"),
]


def route_question(question: str) -> Route:
    """``"memory"`` for a question about the learner's own past, else ``"rag"``."""
    text = question.strip()
    if _FORCE.match(text):
        return "memory"
    lowered = text.lower()
    if any(p.search(text) for p in _ZH) or any(p.search(lowered) for p in _EN):
        return "memory"
    return "rag"


def strip_force_prefix(question: str) -> str:
    """The question without an explicit ``/recall`` (or ``回顾：``) prefix; unchanged otherwise."""
    m = _FORCE.match(question)
    rest = question[m.end():].strip() if m else question.strip()
    return rest or question.strip()
