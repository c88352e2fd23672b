"""``AsyncRAGPipeline``: :class:`rag.RAGPipeline` for asyncio, each call in a worker thread.

The same methods, arguments, results and errors as ``RAGPipeline`` (those of :class:`rag.api.RAGAPI`),
awaitable; built like :class:`~hello_memory.manager_async.AsyncMemoryManager` on
:class:`~hello_memory._aio.InThreads`: the stores open at ``await kb.open()``, ``async with`` or the
first call, in a worker thread, and every call runs in one, so converting a document, embedding it
or answering never blocks the event loop. ``progress`` callbacks of an ingestion are called in that
worker thread. ``namespace`` is a plain attribute.

Example:
    >>> import asyncio
    >>> from rag.pipeline_async import AsyncRAGPipeline
    >>> async def main() -> None:
    ...     async with AsyncRAGPipeline(home="/tmp/hm-async-doc", namespace="docs") as kb:
    ...         await kb.add_text("# Reset\\nOpen Settings and choose Reset password.", document_id="help")
    ...         print((await kb.ask("How do I reset my password?")).citations[0].document_id)
    >>> asyncio.run(main())                                                      # doctest: +SKIP
    help
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from hello_memory._aio import InThreads
from hello_memory.embedders.base import Embedder
from hello_memory.llm.base import LLMClient
from hello_memory.settings import Settings
from hello_memory.stores.vectors.base import VectorStore
from hello_memory.validation import check_id
from rag.models import Answer, DocumentInfo, IngestReport, RAGStats, SearchResult
from rag.passages import Progress
from rag.pipeline import RAGPipeline


class AsyncRAGPipeline(InThreads[RAGPipeline]):
    """A knowledge base (one namespace) whose every call is awaitable (see the module docstring).

    Args:
        settings, namespace, home, embedder, vector_store, llm: as :class:`rag.RAGPipeline`, which is
            opened with them (in a worker thread). To wrap a pipeline already open, use :meth:`wrap`.
    """

    def __init__(
        self, settings: Settings | None = None, *, namespace: str = "default", home: str | Path | None = None,
        embedder: Embedder | None = None, vector_store: VectorStore | None = None, llm: LLMClient | None = None,
    ) -> None:
        self.namespace = check_id(namespace, "namespace")
        super().__init__(partial(RAGPipeline, settings, namespace=namespace, home=home, embedder=embedder,
                                 vector_store=vector_store, llm=llm))

    @classmethod
    def wrap(cls, pipeline: RAGPipeline) -> AsyncRAGPipeline:
        """An async view of an open ``pipeline`` (closing the view closes it)."""
        view = cls(namespace=pipeline.namespace)
        view._facade = pipeline
        return view

    async def add_document(
        self, path: str | Path, *, document_id: str | None = None, chunk_tokens: int | None = None,
        overlap_tokens: int | None = None, metadata: dict[str, Any] | None = None, progress: Progress | None = None,
        source_path: str | None = None,
    ) -> IngestReport:
        """``RAGPipeline.add_document`` in a worker thread (conversion included)."""
        return await self._run(RAGPipeline.add_document, path, document_id=document_id, chunk_tokens=chunk_tokens,
                               overlap_tokens=overlap_tokens, metadata=metadata, progress=progress,
                               source_path=source_path)

    async def add_text(
        self, text: str, *, document_id: str | None = None, source: str | None = None,
        chunk_tokens: int | None = None, overlap_tokens: int | None = None, metadata: dict[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> IngestReport:
        """``RAGPipeline.add_text`` in a worker thread."""
        return await self._run(RAGPipeline.add_text, text, document_id=document_id, source=source,
                               chunk_tokens=chunk_tokens, overlap_tokens=overlap_tokens, metadata=metadata,
                               progress=progress)

    async def list_documents(self) -> list[DocumentInfo]:
        """``RAGPipeline.list_documents`` in a worker thread."""
        return await self._run(RAGPipeline.list_documents)

    async def delete_document(self, document_id: str) -> int:
        """``RAGPipeline.delete_document`` in a worker thread."""
        return await self._run(RAGPipeline.delete_document, document_id)

    async def clear(self) -> int:
        """``RAGPipeline.clear`` in a worker thread."""
        return await self._run(RAGPipeline.clear)

    async def stats(self) -> RAGStats:
        """``RAGPipeline.stats`` in a worker thread."""
        return await self._run(RAGPipeline.stats)

    async def search(self, query: str, *, limit: int = 5, min_score: float | None = None, enable_mqe: bool = False,
                     enable_hyde: bool = False) -> SearchResult:
        """``RAGPipeline.search`` in a worker thread."""
        return await self._run(RAGPipeline.search, query, limit=limit, min_score=min_score, enable_mqe=enable_mqe,
                               enable_hyde=enable_hyde)

    async def ask(self, question: str, *, limit: int = 5, enable_mqe: bool = False, enable_hyde: bool = False,
                  min_score: float | None = None, budget_tokens: int = 3000) -> Answer:
        """``RAGPipeline.ask`` in a worker thread."""
        return await self._run(RAGPipeline.ask, question, limit=limit, enable_mqe=enable_mqe, enable_hyde=enable_hyde,
                               min_score=min_score, budget_tokens=budget_tokens)
