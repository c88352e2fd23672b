"""``RAGAPI``: the contract of :class:`rag.RAGPipeline` and of its remote client :class:`rag.remote.RemoteRAG`.

One knowledge base (a namespace): the same method names, arguments, return types (the models of
:mod:`rag.models`) and errors in process and through a memory service.

Example:
    >>> from rag.api import RAGAPI
    >>> def cite(kb: RAGAPI, question: str) -> list[str]:
    ...     return [c.heading_path for c in kb.ask(question).citations]
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from rag.models import Answer, DocumentInfo, IngestReport, RAGStats, SearchResult


@runtime_checkable
class RAGAPI(Protocol):
    """A knowledge base of one namespace (see :class:`rag.RAGPipeline` for the semantics)."""

    @property
    def namespace(self) -> str:
        """The knowledge base; every call touches only it."""
        ...

    def add_document(
        self,
        path: str | Path,
        *,
        document_id: str | None = None,
        chunk_tokens: int | None = None,
        overlap_tokens: int | None = None,
        metadata: dict[str, Any] | None = None,
        progress: Callable[[int, int], object] | None = None,
        source_path: str | None = None,
    ) -> IngestReport:
        """Convert a local file and index it; re-adding replaces the old chunks.

        ``progress(done, total)`` reports passages embedded so far (through a service: once, at the end).
        ``source_path`` is recorded (and cited) instead of the file's own path, e.g. an upload's name.
        """
        ...

    def add_text(
        self,
        text: str,
        *,
        document_id: str | None = None,
        source: str | None = None,
        chunk_tokens: int | None = None,
        overlap_tokens: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> IngestReport:
        """Index Markdown/plain text."""
        ...

    def list_documents(self) -> list[DocumentInfo]:
        """Documents of this namespace."""
        ...

    def delete_document(self, document_id: str) -> int:
        """Delete a document's chunks everywhere; returns how many."""
        ...

    def clear(self) -> int:
        """Delete every document of this namespace; returns chunks deleted."""
        ...

    def stats(self) -> RAGStats:
        """Counts of this namespace."""
        ...

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        min_score: float | None = None,
        enable_mqe: bool = False,
        enable_hyde: bool = False,
    ) -> SearchResult:
        """Hybrid (dense + BM25) search with optional MQE/HyDE expansion."""
        ...

    def ask(
        self,
        question: str,
        *,
        limit: int = 5,
        enable_mqe: bool = False,
        enable_hyde: bool = False,
        min_score: float | None = None,
        budget_tokens: int = 3000,
    ) -> Answer:
        """Retrieve and answer with numbered citations."""
        ...

    def close(self) -> None:
        """Release the stores or the connection; idempotent."""
        ...

    def __enter__(self) -> RAGAPI:
        """``with`` support: the knowledge base itself."""
        ...

    def __exit__(self, *exc: object) -> None:
        """``with`` support: :meth:`close`."""
        ...
