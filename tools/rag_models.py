"""Arguments and result payloads of :class:`tools.rag_tool.RAGTool`'s actions.

Chunk sizes are in tokens (CJK-aware count); ``chunk_size``/``chunk_overlap`` are the seed's
names and ``chunk_tokens``/``overlap_tokens`` (the pipeline's) are accepted as aliases. Payloads
render through :mod:`hello_memory.render`: passages, paths, headings, titles, ids, the namespace,
the question and an LLM's answer are JSON-quoted.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import AliasChoices, Field

from hello_memory.render import Rendered, fmt, join, quote
from rag.models import Answer, DocumentInfo, IngestReport, RAGStats, SearchResult
from tools.base import Payload, found
from tools.schema import MAX_SEARCH_LIMIT, ActionArgs

MAX_ASK_LIMIT = 20
MAX_LISTED = 50
_CHUNK = AliasChoices("chunk_size", "chunk_tokens")
_OVERLAP = AliasChoices("chunk_overlap", "overlap_tokens")


class _IndexArgs(ActionArgs):
    """What ``add_text`` and ``add_document`` share: the id, the chunking and the metadata."""

    document_id: str | None = Field(None, min_length=1, max_length=256, description=(
        "Id to file it under (default: derived from the path or the text); the same id replaces the old "
        "version."))
    chunk_size: int | None = Field(None, ge=16, le=8000, validation_alias=_CHUNK,
                                   description="Tokens per chunk.")
    chunk_overlap: int | None = Field(None, ge=0, le=4000, validation_alias=_OVERLAP,
                                      description="Tokens shared by neighbouring chunks.")
    metadata: dict[str, Any] | None = Field(None, description="Key-value data kept with the document.")


class AddTextArgs(_IndexArgs):
    """Arguments of ``add_text``."""

    text: str = Field(min_length=1, max_length=2_000_000,
                      description="Markdown or plain text to index.")
    source: str | None = Field(None, max_length=1000,
                               description="Where the text came from (shown in citations).")


class AddDocumentArgs(_IndexArgs):
    """Arguments of ``add_document``."""

    file_path: str = Field(min_length=1, max_length=4096, description=(
        "File to index (pdf, docx, pptx, xlsx, html, csv, json, xml, txt, md, code)."))


class _ExpansionArgs(ActionArgs):
    """Query expansion switches of ``search`` and ``ask``."""

    enable_mqe: bool = Field(False, description="Also search with LLM paraphrases of the query (better "
                                                "recall, slower).")
    enable_hyde: bool = Field(False, description="Also search with a hypothetical answer passage (helps "
                                                 "question/statement mismatch).")


class RagSearchArgs(_ExpansionArgs):
    """Arguments of ``search``."""

    query: str = Field(min_length=1, max_length=2000, description="What to look for.")
    limit: int = Field(5, ge=1, le=MAX_SEARCH_LIMIT, description="Maximum number of passages.")
    min_score: float | None = Field(None, ge=0.0, le=2.0, description="Drop passages scoring below this.")


class AskArgs(_ExpansionArgs):
    """Arguments of ``ask``."""

    question: str = Field(min_length=1, max_length=2000,
                          description="The question to answer from the documents.")
    limit: int = Field(5, ge=1, le=MAX_ASK_LIMIT, description="Passages to base the answer on.")
    enable_advanced_search: bool = Field(False, description="Shorthand for enable_mqe and enable_hyde.")


class DeleteDocumentArgs(ActionArgs):
    """Arguments of ``delete_document``."""

    document_id: str = Field(min_length=1, max_length=256, description="Id from list_documents or add_*.")


# -- payloads ---------------------------------------------------------------------------------------
def where(source: str | None, heading_path: str) -> Rendered:
    """Where a passage comes from, quoted: file paths and headings are document text too."""
    return quote(" > ".join(p for p in (source or "(text)", heading_path) if p), 300)


def notes(items: list[str]) -> Rendered:
    """``\\nNotes: "…"; "…"`` (notes can echo a backend's or an LLM's words), or nothing."""
    return fmt("\nNotes: {notes}", notes=join((quote(n) for n in items), "; ")) if items else Rendered("")


class Ingested(Payload):
    """Result of ``add_text`` / ``add_document``."""

    namespace: str
    report: IngestReport

    def render(self) -> Rendered:
        r = self.report
        again = Rendered("; replaced the earlier version" if r.replaced else "")
        return fmt("Indexed document {r.document_id} ({source:.300}, {r.format}) into knowledge base {namespace}: "
                   "{r.chunks:chunk/chunks}, {r.tokens} tokens{again}.", r=r, source=r.source_path or "text",
                   namespace=self.namespace, again=again)


class Passages(Payload):
    """Result of ``search``: passages best first."""

    result: SearchResult

    def render(self) -> Rendered:
        res = self.result
        lines = (fmt("[{n}] score {h.score:.3f} {where} (document {h.document_id}, chunk {h.chunk_id})\n"
                     "    {h.text:.600}", n=n, h=h, where=where(h.source_path, h.heading_path))
                 for n, h in enumerate(res.hits, 1))
        head = found(len(res.hits), "passage", "passages", res.query)
        return fmt("{lines}{notes}", lines=join([head, *lines]), notes=notes(res.notes))


class Answered(Payload):
    """Result of ``ask``: the answer (quoted: it is made of document text) and its numbered sources."""

    answer: Answer

    def render(self) -> Rendered:
        a = self.answer
        if not a.grounded:
            return fmt("The knowledge base holds nothing relevant to this question.{notes}", notes=notes(a.notes))
        sources = (fmt("[{c.n}] {where} (score {c.score:.3f}, document {c.document_id})", c=c,
                       where=where(c.source_path, c.heading_path)) for c in a.citations)
        body = join([_answer(a), Rendered(""), Rendered("Sources:"), *sources])
        return fmt("{body}{notes}", body=body, notes=notes(a.notes))


def _answer(a: Answer) -> Rendered:
    """An LLM's answer quoted whole; an extractive one as its quoted sentences with their ``[n]``."""
    if a.mode == "llm":
        return fmt("Answer: {answer}", answer=a.answer)
    if not a.extracts:
        return Rendered("Extractive answer (no LLM): no sentence of the sources answers it directly.")
    return join([Rendered("Extractive answer (no LLM): the source sentences that answer it, quoted:"),
                 *(fmt("{e.text} [{e.n}]", e=e) for e in a.extracts)])


class RagStatsResult(Payload):
    """Result of ``stats``."""

    template: ClassVar[str] = ("Knowledge base {stats.namespace}: {stats.documents:document/documents}, "
                               "{stats.chunks} chunks, {stats.tokens} tokens; embedder {stats.embedder}; "
                               "vectors {stats.vector_backend}.")
    stats: RAGStats


class DocumentList(Payload):
    """Result of ``list_documents``."""

    namespace: str
    documents: list[DocumentInfo]

    def render(self) -> Rendered:
        if not self.documents:
            return fmt("Knowledge base {namespace} is empty.", namespace=self.namespace)
        lines = [fmt("{n:document/documents} in {namespace}:", n=len(self.documents), namespace=self.namespace)]
        lines += [fmt("- {d.document_id}: {title:.120} ({d.format}, {d.chunks} chunks, added {d.added_at})", d=d,
                      title=d.title or d.source_path or "(untitled)") for d in self.documents[:MAX_LISTED]]
        if len(self.documents) > MAX_LISTED:
            lines.append(fmt("... and {n} more", n=len(self.documents) - MAX_LISTED))
        return join(lines)


class DocumentDeleted(Payload):
    """Result of ``delete_document``."""

    template: ClassVar[str] = "Deleted document {document_id} ({chunks:chunk/chunks})."
    document_id: str
    chunks: int


class KnowledgeCleared(Payload):
    """Result of ``clear``."""

    template: ClassVar[str] = "Cleared knowledge base {namespace} ({chunks:chunk/chunks} deleted)."
    namespace: str
    chunks: int
