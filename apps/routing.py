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


# The words of a recall question that say "my past learning" rather than what about (longest first).
_FILLER_ZH = sorted(str.split("""我们 咱们 之前 以前 上次 刚才 曾经 此前 过去 今天 昨天 学过 学了 学习 了解
加载 上传 什么 哪些 内容 东西 一下 回顾 笔记 记录 历史 进度 足迹 文档 关于 有关 方面
我 咱 学 问 读 看 记 过 了 啥 几 的 吗 呢 都 些 有 是 和 与"""), key=len, reverse=True)
_FILLER_EN = frozenset(str.split("""what which did have had i me my learn learned learnt study studied ask asked read
load loaded note notes cover covered before earlier previously so far last time remind history progress
the a an about on of in so far up to until now documents document things"""))
_PUNCT = re.compile(r"[\s\W_]+")


def recall_topic(question: str) -> str:
    """What a recall question asks about, or ``""`` when it asks about the learning record in general.

    "我之前学过什么？" and "What did I learn before?" name no topic (they ask for the record itself);
    "/recall 向量库" and "我之前学过哪些关于 HyDE 的内容" name one.

    Example:
        >>> recall_topic("我之前学过什么？"), recall_topic("/recall 向量库")
        ('', '向量库')
    """
    rest = strip_force_prefix(question).lower()
    for word in _FILLER_ZH:
        rest = rest.replace(word, " ")
    words = [w for w in _PUNCT.split(rest) if w and w not in _FILLER_EN]
    return " ".join(words)
