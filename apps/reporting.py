"""Text the assistant writes: recall answers and the Markdown learning report (Chinese first)."""

from __future__ import annotations

from datetime import datetime

from apps.models import LearningReport
from hello_memory import ScoredMemory

TIER_LABELS = {
    "working": "工作记忆 / working",
    "episodic": "情景记忆 / episodic",
    "semantic": "语义记忆 / semantic",
    "perceptual": "感知记忆 / perceptual",
}
NO_RECORDS = ("还没有相关的学习记录。先加载文档、提问或写笔记吧。 / "
              "No learning records yet: load a document, ask or write a note first.")


def tier_label(memory_type: str) -> str:
    """The bilingual name of a memory tier."""
    return TIER_LABELS.get(memory_type, memory_type)


def when(at: datetime) -> str:
    """A compact local timestamp."""
    return at.astimezone().strftime("%Y-%m-%d %H:%M")


def duration(seconds: float) -> str:
    """``1 小时 2 分 3 秒 / 1h 2m 3s``."""
    s = int(seconds)
    h, m, sec = s // 3600, s % 3600 // 60, s % 60
    zh = (f"{h} 小时 " if h else "") + (f"{m} 分 " if h or m else "") + f"{sec} 秒"
    en = (f"{h}h " if h else "") + (f"{m}m " if h or m else "") + f"{sec}s"
    return f"{zh} / {en}"


def recall_answer(hits: list[ScoredMemory]) -> str:
    """The memory route's answer: the matching learning records as a Markdown list."""
    if not hits:
        return NO_RECORDS
    lines = ["根据你的学习记忆 / From your learning memory:", ""]
    for h in hits:
        it = h.item
        lines.append(f"- **{tier_label(it.memory_type.value)}** · {when(it.created_at)} · "
                     f"重要性 / importance {it.importance:.1f} — {it.content}")
    return "\n".join(lines)


def report_markdown(report: LearningReport) -> str:
    """The learning report as Markdown."""
    st = report.stats
    out = [
        f"# 学习报告 / Learning report — {st.user_id}", "",
        f"- 生成时间 / Generated: {when(report.generated_at)}",
        f"- 会话 / Session: `{st.session_id}`, 开始 / started {when(st.started_at)}, "
        f"时长 / duration {duration(st.duration_seconds)}",
        f"- 文档 / Documents: {st.documents}（本次加载 / loaded this session {st.documents_loaded}，"
        f"分块 / chunks {st.chunks}）",
        f"- 提问 / Questions: {st.questions}（其中记忆回顾 / of which recall {st.recall_questions}）",
        f"- 笔记 / Notes: {st.notes}",
        f"- 记忆 / Memories: {st.memories_total} — "
        + ", ".join(f"{tier_label(k)} {v}" for k, v in st.memories_by_type.items()),
        f"- 回答方式 / Answers: {'LLM ' + st.llm if st.llm else '抽取式（未配置 LLM）/ extractive (no LLM)'}",
        "", "## 文档 / Documents", "",
    ]
    out += [f"- {d.file_name} — {d.title or ''}（{d.format}, {d.chunks} chunks）" for d in report.documents] or ["- —"]
    out += ["", "## 问题 / Questions", ""]
    out += [f"- [{q.route}] {q.question}" + (f" — 来源 / sources: {', '.join(q.sources)}" if q.sources else "")
            for q in report.questions] or ["- —"]
    out += ["", "## 笔记 / Notes", ""]
    out += [f"- {n.content}" for n in report.notes] or ["- —"]
    out += ["", "## 记忆摘要 / Memory summary", "", "```text", report.memory_summary, "```", ""]
    return "\n".join(out)
