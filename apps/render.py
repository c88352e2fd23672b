"""Pure rendering for the UI: chat messages with expandable sources, tables, stats cards (no Gradio).

Markup is made by the one renderer (:class:`hello_memory.render.Renderer`) with the HTML escape
rule: every string placed in a template — from a document, a memory or the learner — is
HTML-escaped, so a document cannot inject script or layout into the page, and no field can be
forgotten. The model-facing renderer quotes the same values as JSON instead; people see them as
written.
"""

from __future__ import annotations

import html
from pathlib import Path

from apps.models import AskReply, DocumentRow, LoadReport, NoteRecord, SessionStats
from apps.reporting import duration, tier_label, when
from hello_memory import ConsolidateReport, ForgetReport, MemoryItem, ScoredMemory
from hello_memory.render import Renderer, shorten
from rag import Citation

# Notes the core writes in English, shown bilingually.
_NOTES = {
    "no LLM configured: extractive answer": "未配置 LLM：抽取式回答 / No LLM configured: extractive answer",
}
DOC_HEADERS = ["文件 / File", "标题 / Title", "格式 / Format", "分块 / Chunks", "加入时间 / Added"]
MEMORY_HEADERS = ["ID", "类型 / Type", "重要性 / Importance", "分数 / Score", "时间 / Created", "内容 / Content"]
NOTE_HEADERS = ["时间 / Created", "笔记 / Note", "ID"]
_ROUTES = {"rag": "来自文档 / From documents", "memory": "来自记忆 / From memory"}
_MODES = {"llm": "LLM", "extractive": "抽取式 / extractive", "memory": "记忆检索 / memory search"}


class Html(str):
    """Markup made by this module: every string from a document, a memory or the learner is escaped."""

    __slots__ = ()


def _escape(text: str, limit: int | None) -> Html:
    return Html(html.escape(shorten(text, limit), quote=True))


HTML = Renderer(Html, _escape)
fmt, join = HTML.fmt, HTML.join


def esc(text: str) -> Html:
    """HTML-escape ``text``."""
    return _escape(text, None)


def _breaks(text: str, br: str) -> Html:
    """``text`` escaped, its newlines turned into ``br`` (``<br>`` or a Markdown hard break)."""
    return Html(esc(text).replace("\n", br))


def citation_html(c: Citation) -> Html:
    """One source as a collapsed ``<details>``: file, heading path, score, then the passage."""
    name = Path(c.source_path).name if c.source_path else c.document_id
    heading = fmt(" › {h}", h=c.heading_path) if c.heading_path else Html("")
    return fmt('<details class="hm-cite"><summary>[{c.n}] {name}{heading} · score {c.score:.3f}</summary>'
               '<div class="hm-cite-text">{body}</div></details>', c=c, name=name, heading=heading,
               body=_breaks(c.text.strip(), "<br>"))


def reply_markdown(reply: AskReply) -> Html:
    """The assistant's chat message: the answer, its sources or memories, and any notes."""
    advanced = Html(" · MQE + HyDE" if reply.advanced else "")
    parts = [_answer_markdown(reply), Html(""), fmt("<sub>{route} · {mode}{advanced}</sub>",
                                                     route=_ROUTES[reply.route], mode=_MODES[reply.mode],
                                                     advanced=advanced)]
    if reply.citations:
        parts += [Html(""), Html("**来源 / Sources**"), Html(""), join(citation_html(c) for c in reply.citations)]
    if reply.notes:
        notes = (fmt("<sub>※ {n}</sub><br>", n=_NOTES.get(n, n)) for n in reply.notes)
        parts += [Html(""), join(notes)]
    return join(parts)


def _answer_markdown(reply: AskReply) -> Html:
    """The answer for people: an extractive one shows its sentences as written, not JSON-quoted."""
    if not reply.extracts:
        return _breaks(reply.answer, "  \n")
    label = reply.answer.split("\n", 1)[0]
    lines = [esc(label)] + [fmt("{e.text} [{e.n}]", e=e) for e in reply.extracts]
    return join((Html(line.replace("\n", "  \n")) for line in lines), "  \n")


def error_markdown(message: str) -> Html:
    """An error line for the chat."""
    return fmt("⚠ **错误 / Error:** {message}", message=message)


def load_markdown(report: LoadReport) -> Html:
    """What an upload did, file by file."""
    again = Html(" （已替换旧版本 / replaced）")
    lines = [fmt("已加载 / Loaded: {d.file_name} — {d.chunks} 个分块 / chunks{again}", d=d,
                 again=again if d.replaced else Html("")) for d in report.loaded]
    lines += [fmt("失败 / Failed: {f.file_name} — {f.error}", f=f) for f in report.failed]
    return join(lines, "  \n") or Html("没有文件 / No files")


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


def forget_markdown(report: ForgetReport) -> Html:
    """The forget report."""
    head = fmt("遗忘 / Forget `{r.strategy}`: {count} 条 / forgotten", r=report, count=report.count)
    items = (fmt("- {tier} — {content} ({f.reason})", f=f, tier=tier_label(f.memory_type.value),
                 content=f.content[:80]) for f in report.forgotten)
    return join([head, *items], "  \n")


def consolidate_markdown(report: ConsolidateReport) -> Html:
    """The consolidate report."""
    return fmt("整合 / Consolidate {source} → {target} (≥ {r.importance_threshold:.2f}): {r.count} 条源记忆 / source "
               "memories, {promoted} 条新记忆 / promoted, {merged} 条合并 / merged", r=report,
               source=tier_label(report.from_type.value), target=tier_label(report.to_type.value),
               promoted=len(report.promoted), merged=len(report.merged))


def stats_html(st: SessionStats) -> Html:
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
    body = join((fmt('<div class="hm-card"><div class="hm-card-label">{label}</div>'
                     '<div class="hm-card-value" data-stat="{key}">{value}</div></div>', key=key, label=label,
                     value=value) for key, label, value in cards), "")
    llm = st.llm or "未配置（抽取式回答）/ not configured (extractive answers)"
    return fmt('<div class="hm-cards">{body}</div><p class="hm-meta">用户 / User <b>{st.user_id}</b> · '
               "会话 / Session {st.session_id} · LLM: {llm} · 嵌入 / Embedder: {st.embedder}</p>", body=body, st=st,
               llm=llm)
