"""Pure rendering for the UI: chat messages with expandable sources, tables, stats cards (no Gradio).

Everything that comes from a document, a memory or the learner is HTML-escaped before it is
placed in markup, so a document cannot inject script or layout into the page.
"""

from __future__ import annotations

import html
from pathlib import Path

from apps.models import AskReply, DocumentRow, LoadReport, NoteRecord, SessionStats
from apps.reporting import duration, tier_label, when
from hello_memory import ConsolidateReport, ForgetReport, MemoryItem, ScoredMemory
from rag import Citation

# Notes the core writes in English, shown bilingually.
_NOTES = {
    "no LLM configured: extractive answer": "未配置 LLM：抽取式回答 / No LLM configured: extractive answer",
}
DOC_HEADERS = ["文件 / File", "标题 / Title", "格式 / Format", "分块 / Chunks", "加入时间 / Added"]
MEMORY_HEADERS = ["ID", "类型 / Type", "重要性 / Importance", "分数 / Score", "时间 / Created", "内容 / Content"]
NOTE_HEADERS = ["时间 / Created", "笔记 / Note", "ID"]


def esc(text: str) -> str:
    """HTML-escape ``text``."""
    return html.escape(text, quote=True)


def citation_html(c: Citation) -> str:
    """One source as a collapsed ``<details>``: file, heading path, score, then the passage."""
    name = Path(c.source_path).name if c.source_path else c.document_id
    heading = f" › {esc(c.heading_path)}" if c.heading_path else ""
    body = esc(c.text.strip()).replace("\n", "<br>")
    return (f'<details class="hm-cite"><summary>[{c.n}] {esc(name)}{heading} · '
            f"score {c.score:.3f}</summary><div class=\"hm-cite-text\">{body}</div></details>")


def reply_markdown(reply: AskReply) -> str:
    """The assistant's chat message: the answer, its sources or memories, and any notes."""
    route = "来自文档 / From documents" if reply.route == "rag" else "来自记忆 / From memory"
    mode = {"llm": "LLM", "extractive": "抽取式 / extractive", "memory": "记忆检索 / memory search"}[reply.mode]
    parts = [_answer_markdown(reply), "", f"<sub>{route} · {mode}"
             + (" · MQE + HyDE" if reply.advanced else "") + "</sub>"]
    if reply.citations:
        parts += ["", "**来源 / Sources**", "", "\n".join(citation_html(c) for c in reply.citations)]
    notes = [_NOTES.get(n, n) for n in reply.notes]
    if notes:
        parts += ["", "\n".join(f"<sub>※ {esc(n)}</sub><br>" for n in notes)]
    return "\n".join(parts)


def _answer_markdown(reply: AskReply) -> str:
    """The answer for people: an extractive one shows its sentences as written, not JSON-quoted."""
    if not reply.extracts:
        return esc(reply.answer).replace("\n", "  \n")
    label = reply.answer.split("\n", 1)[0]
    lines = [esc(label)] + [f"{esc(e.text)} [{e.n}]" for e in reply.extracts]
    return "  \n".join(line.replace("\n", "  \n") for line in lines)


def error_markdown(message: str) -> str:
    """An error line for the chat."""
    return f"⚠ **错误 / Error:** {esc(message)}"


def load_markdown(report: LoadReport) -> str:
    """What an upload did, file by file."""
    again = " （已替换旧版本 / replaced）"
    lines = [f"已加载 / Loaded: {esc(d.file_name)} — {d.chunks} 个分块 / chunks" + (again if d.replaced else "")
             for d in report.loaded]
    lines += [f"失败 / Failed: {esc(f.file_name)} — {esc(f.error)}" for f in report.failed]
    return "  \n".join(lines) or "没有文件 / No files"


def document_rows(docs: list[DocumentRow]) -> list[list[object]]:
    """Rows of the documents table."""
    return [[d.file_name, d.title or "", d.format, d.chunks, when(d.added_at)] for d in docs]


def document_choices(docs: list[DocumentRow]) -> list[tuple[str, str]]:
    """(label, document id) pairs for the delete dropdown."""
    return [(f"{d.file_name} ({d.chunks} chunks)", d.document_id) for d in docs]


def memory_rows(items: list[MemoryItem] | list[ScoredMemory]) -> list[list[object]]:
    """Rows of the memory table (score empty when browsing)."""
    rows: list[list[object]] = []
    for x in items:
        item, score = (x.item, f"{x.score:.3f}") if isinstance(x, ScoredMemory) else (x, "")
        rows.append([item.id, tier_label(item.memory_type.value), round(item.importance, 2), score,
                     when(item.created_at), item.content])
    return rows


def note_rows(notes: list[NoteRecord]) -> list[list[object]]:
    """Rows of the notes table."""
    return [[when(n.created_at), n.content, n.memory_id] for n in notes]


def forget_markdown(report: ForgetReport) -> str:
    """The forget report."""
    head = f"遗忘 / Forget `{report.strategy}`: {report.count} 条 / forgotten"
    return "  \n".join([head] + [f"- {tier_label(f.memory_type.value)} — {esc(f.content[:80])} ({esc(f.reason)})"
                                 for f in report.forgotten])


def consolidate_markdown(report: ConsolidateReport) -> str:
    """The consolidate report."""
    return (f"整合 / Consolidate {tier_label(report.from_type.value)} → {tier_label(report.to_type.value)} "
            f"(≥ {report.importance_threshold:.2f}): {report.count} 条源记忆 / source memories, "
            f"{len(report.promoted)} 条新记忆 / promoted, {len(report.merged)} 条合并 / merged")


def stats_html(st: SessionStats) -> str:
    """The Stats tab's cards; each value carries ``data-stat`` for tests."""
    cards = [
        ("duration", "会话时长 / Session time", duration(st.duration_seconds)),
        ("documents", "文档 / Documents", str(st.documents)),
        ("chunks", "分块 / Chunks", str(st.chunks)),
        ("questions", "提问 / Questions", str(st.questions)),
        ("notes", "笔记 / Notes", str(st.notes)),
        ("memories", "记忆总数 / Memories", str(st.memories_total)),
    ]
    cards += [(f"tier-{k}", tier_label(k), str(v)) for k, v in st.memories_by_type.items()]
    body = "".join(f'<div class="hm-card"><div class="hm-card-label">{esc(label)}</div>'
                   f'<div class="hm-card-value" data-stat="{key}">{esc(value)}</div></div>'
                   for key, label, value in cards)
    llm = esc(st.llm) if st.llm else "未配置（抽取式回答）/ not configured (extractive answers)"
    return (f'<div class="hm-cards">{body}</div><p class="hm-meta">用户 / User <b>{esc(st.user_id)}</b> · '
            f"会话 / Session {esc(st.session_id)} · LLM: {llm} · 嵌入 / Embedder: {esc(st.embedder)}</p>")
