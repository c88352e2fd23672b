"""Off-topic questions: asked of every corpus, answered by nothing in it (``--off-topic``).

The benchmarks' own unanswerable questions (LoCoMo adversarial, LongMemEval abstention) are written
to look answerable: they name the people and things of the conversation. What the relevance floor is
for is the other kind — a question about something the memory never touched. These were written for
hello-memory (general knowledge and technical questions, English and Chinese), not taken from any
benchmark; a personal memory holds no answer to them.
"""

from __future__ import annotations

import dataclasses

from benchmarks.datasets.base import Query, RetrievalTask

CATEGORY = "off-topic"
QUESTIONS = (
    "What is the boiling point of tungsten?",
    "Explain quantum chromodynamics on a lattice.",
    "How do I compile a Linux kernel module?",
    "What does the Black-Scholes formula compute?",
    "Which enzyme unwinds DNA during replication?",
    "How many moons does Neptune have?",
    "What is the capital of Kazakhstan?",
    "How is a Rust lifetime annotation written?",
    "What causes the Coriolis effect?",
    "Who proved Fermat's Last Theorem?",
    "钨的沸点是多少？",
    "如何编译Linux内核模块？",
    "海王星有几颗卫星？",
    "哈萨克斯坦的首都是哪里？",
    "什么是量子色动力学？",
    "DNA复制时哪种酶解开双链？",
    "布莱克-斯科尔斯公式计算什么？",
    "科里奥利效应是怎么产生的？",
    "谁证明了费马大定理？",
    "Rust的生命周期标注怎么写？",
)


def with_off_topic(task: RetrievalTask) -> RetrievalTask:
    """``task`` plus every off-topic question asked of each corpus that has queries (unanswerable).

    Example:
        >>> t = RetrievalTask("t", {"c": []}, [Query("q", "x", "c", frozenset({"d"}))])
        >>> [q.category for q in with_off_topic(t).queries][1:3]
        ['off-topic', 'off-topic']
    """
    corpora = sorted({q.corpus_id for q in task.queries})
    extra = [
        Query(f"{cid}/off-{i}", text, cid, frozenset(), CATEGORY, answerable=False)
        for cid in corpora
        for i, text in enumerate(QUESTIONS)
    ]
    notes = (*task.notes, f"{len(extra)} off-topic questions added (benchmarks.datasets.offtopic)")
    return dataclasses.replace(task, queries=[*task.queries, *extra], notes=notes)
