"""RAGPipeline: convert → chunk → embed → index, hybrid search with MQE/HyDE, grounded answers.

Example:
    >>> from rag import RAGPipeline
    >>> rag = RAGPipeline(home="./hello_memory_data", namespace="docs")     # doctest: +SKIP
    >>> rag.add_document("guide.pdf")                                         # doctest: +SKIP
    >>> print(rag.ask("How do I reset my password?").answer)                 # doctest: +SKIP
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hello_memory.embedders.base import Embedder
from hello_memory.errors import InvalidInputError, NotFoundError, StoreError
from hello_memory.language.text import normalize_text
from hello_memory.llm.base import LLMClient
from hello_memory.settings import Settings
from hello_memory.stores.chunks.base import ChunkStore
from hello_memory.stores.chunks.sqlite import SQLiteChunkStore
from hello_memory.stores.open import StoreBundle, acquire, check_components, release, resolve_home
from hello_memory.stores.vectors.base import VectorStore
from hello_memory.validation import (
    check_budget,
    check_id,
    check_limit,
    check_metadata,
    check_progress,
    check_score,
    check_text,
)
from rag import answer as answering
from rag import indexer, retrieval
from rag.core import RAGCore, open_core
from rag.models import Answer, DocumentInfo, IngestReport, RAGStats, SearchResult
from rag.passages import Progress

logger = logging.getLogger(__name__)

MAX_TEXT_CHARS = 60_000_000


class RAGPipeline:
    """A knowledge base of one namespace over the shared embedded (or server) stores.

    Args:
        settings: configuration (``Settings()`` from the environment when omitted).
        namespace: knowledge-base namespace; search, stats, delete and clear touch only it.
        home: data directory overriding ``settings.home``.
        embedder / vector_store / llm: injected components (built from settings when omitted;
            no LLM configured means extractive answers and offline expansion).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        namespace: str = "default",
        home: str | Path | None = None,
        embedder: Embedder | None = None,
        vector_store: VectorStore | None = None,
        llm: LLMClient | None = None,
    ) -> None:
        if settings is not None and not isinstance(settings, Settings):
            raise InvalidInputError(
                f"settings must be a Settings, got {type(settings).__name__}", field="settings"
            )
        settings = settings or Settings()
        if home is not None:  # the same typed errors for a hostile home as MemoryManager's
            settings = settings.model_copy(update={"home": resolve_home(home)})
        self.settings = settings
        self.namespace = check_id(namespace, "namespace")
        check_components(embedder=embedder, vector_store=vector_store, llm=llm)
        if embedder is None:
            from hello_memory.embedders.factory import make_embedder

            embedder = make_embedder(settings)  # nothing loads before the first embed
        if llm is None:
            from hello_memory.llm.factory import make_llm

            llm = make_llm(settings)
        self.llm = llm
        self._bundle: StoreBundle | None = acquire(settings, vectors=vector_store)
        try:
            self._core = open_core(self._bundle, settings, self.namespace, embedder, llm)
            indexer.recover(self._core)
        except BaseException:
            self.close()
            raise

    @property
    def bundle(self) -> StoreBundle:
        """The open stores; raises once closed."""
        if self._bundle is None:
            raise InvalidInputError("this RAGPipeline is closed")
        self._bundle.check_process()
        return self._bundle

    @property
    def core(self) -> RAGCore:
        """The core the RAG functions work with (chunk store, embedder, settings, namespace, lock, LLM)."""
        self.bundle  # noqa: B018 - raises once closed
        return self._core

    @property
    def store(self) -> ChunkStore:
        """The chunk store: ``rag.db`` of the data directory, or Qdrant in server mode (shared in-process)."""
        return self.core.store

    @property
    def sqlite_store(self) -> SQLiteChunkStore:
        """The embedded chunk store (``rag.db``); raises in server mode."""
        store = self.store
        if not isinstance(store, SQLiteChunkStore):
            raise StoreError("this operation needs the embedded chunk store, and these stores are servers")
        return store

    @property
    def embedder(self) -> Embedder:
        """The text embedder."""
        return self._core.embedder

    def close(self) -> None:
        """Release the stores; idempotent."""
        if self._bundle is not None:
            bundle, self._bundle = self._bundle, None
            release(bundle)

    def __enter__(self) -> RAGPipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ingest -----------------------------------------------------------------------------
    def add_document(
        self,
        path: str | Path,
        *,
        document_id: str | None = None,
        chunk_tokens: int | None = None,
        overlap_tokens: int | None = None,
        metadata: dict[str, Any] | None = None,
        progress: Progress | None = None,
        source_path: str | None = None,
    ) -> IngestReport:
        """Convert a file with MarkItDown and index it; re-adding replaces the old chunks.

        ``source_path`` is the path recorded (and the default id derived from) instead of the
        file's own, e.g. the client's path of a file uploaded to the memory service.
        ``progress(done, total)`` is called after every embedding batch (passages embedded so far).
        A failed re-add keeps the earlier version as it was (``StoreError``).
        """
        from rag.convert import convert

        if source_path is not None:
            source_path = check_text(source_path, "source_path", max_chars=4096)
        check_progress(progress)
        doc = convert(path)
        resolved = indexer.text_path(Path(path).resolve()) if source_path is None else source_path
        doc_id = indexer.path_document_id(resolved) if document_id is None else document_id
        return indexer.ingest(
            self.core,
            doc.markdown,
            document_id=check_id(doc_id, "document_id"),
            source_path=resolved,
            title=doc.title or indexer.text_path(Path(path).name),
            fmt=doc.format,
            chunk_tokens=chunk_tokens,
            overlap_tokens=overlap_tokens,
            metadata=check_metadata(metadata),
            progress=progress,
        )

    def add_text(
        self,
        text: str,
        *,
        document_id: str | None = None,
        source: str | None = None,
        chunk_tokens: int | None = None,
        overlap_tokens: int | None = None,
        metadata: dict[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Index Markdown/plain text; without ``document_id`` the id is derived from the text.

        ``progress`` and failures as in :meth:`add_document`.
        """
        text = check_text(text, "text", max_chars=MAX_TEXT_CHARS)
        check_progress(progress)
        if source is not None:
            source = check_text(source, "source", max_chars=4096)
        doc_id = indexer.text_document_id(text) if document_id is None else document_id
        return indexer.ingest(
            self.core,
            text,
            document_id=check_id(doc_id, "document_id"),
            source_path=source,
            title=source,
            fmt="text",
            chunk_tokens=chunk_tokens,
            overlap_tokens=overlap_tokens,
            metadata=check_metadata(metadata),
            progress=progress,
        )

    # -- manage -----------------------------------------------------------------------------
    def list_documents(self) -> list[DocumentInfo]:
        """Documents of this namespace."""
        return self.core.documents()

    def delete_document(self, document_id: str) -> int:
        """Delete a document's chunks everywhere; returns how many chunks were deleted."""
        check_id(document_id, "document_id")
        core = self.core
        if not core.store.has_document(self.namespace, document_id):
            raise NotFoundError(
                f"no document {document_id!r} in namespace {self.namespace!r}", object_id=document_id
            )
        with core.lock:
            n = indexer.delete(core, document_id)
            core.store.scrub()  # no deleted text left in rag.db's FTS segments or WAL
            return n

    def clear(self) -> int:
        """Delete every document of this namespace (never another namespace's); returns chunks deleted."""
        core = self.core
        with core.lock:
            n = sum(indexer.delete(core, d.document_id) for d in core.documents())
            core.store.scrub()
            return n

    def stats(self) -> RAGStats:
        """Counts of this namespace."""
        docs = self.list_documents()
        return RAGStats(
            namespace=self.namespace,
            documents=len(docs),
            chunks=sum(d.chunks for d in docs),
            tokens=sum(d.tokens for d in docs),
            embedder=self.embedder.name,
            vector_backend=self.bundle.vectors.backend,
            llm=self.llm.name if self.llm is not None else None,
        )

    # -- retrieve ---------------------------------------------------------------------------
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
        return retrieval.search(
            self.core,
            check_text(query, "query", max_chars=20_000),
            limit=check_limit(limit, maximum=200),
            min_score=check_score(min_score),
            enable_mqe=enable_mqe,
            enable_hyde=enable_hyde,
        )

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
        """Retrieve, fit whole chunks into ``budget_tokens``, answer with citations ``[n]``."""
        check_budget(budget_tokens)
        result = self.search(
            question, limit=limit, min_score=min_score, enable_mqe=enable_mqe, enable_hyde=enable_hyde
        )
        citations = answering.fit_budget(result.hits, budget_tokens)
        text, mode, notes, extracts = answering.answer(self.llm, normalize_text(result.query), citations)
        cited = answering.cited(citations, text, extracts, mode)
        return Answer(
            question=result.query,
            answer=text,
            citations=cited,
            mode=mode,  # type: ignore[arg-type]
            grounded=bool(cited),
            expansions=result.expansions,
            notes=result.notes + notes,
            extracts=extracts,
        )
