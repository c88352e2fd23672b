"""RAGPipeline: convert → chunk → embed → index, hybrid search with MQE/HyDE, grounded answers.

Example:
    >>> from rag import RAGPipeline
    >>> rag = RAGPipeline(home="./hello_memory_data", namespace="docs")     # doctest: +SKIP
    >>> rag.add_document("guide.pdf")                                         # doctest: +SKIP
    >>> print(rag.ask("How do I reset my password?").answer)                 # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from pathlib import Path
from typing import Any

from hello_memory.core.relevance import dense_floor, fuse
from hello_memory.embedders.base import Embedder
from hello_memory.errors import InvalidInputError, NotFoundError, StoreError
from hello_memory.language.text import lexical_tokens, normalize_text
from hello_memory.llm.base import LLMClient
from hello_memory.settings import Settings
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
from rag import expansion, indexer
from rag.models import Answer, ChunkHit, DocumentInfo, Expansion, IngestReport, RAGStats, SearchResult
from rag.server_index import ServerChunks
from rag.store import SQLiteChunkStore

logger = logging.getLogger(__name__)

COLLECTION = "rag_passages"
_ID_NAMESPACE = uuid.UUID("6f9c1d1e-8d0b-4f3c-9a57-5b1f0c2d9e11")
MAX_TEXT_CHARS = 60_000_000


def _text_path(path: str | Path) -> str:
    """A path as storable text: undecodable file-name bytes become U+FFFD (never lone surrogates)."""
    return os.fsencode(path).decode("utf-8", "replace")


def chunk_id(namespace: str, document_id: str, index: int, *, content: str = "") -> str:
    """Idempotent chunk id per (namespace, document, chunk index, chunk content).

    Indexing passes the chunk's heading path and text as ``content``: re-adding the same document
    gives the same ids, and a changed chunk a new id, so a new version's passages can be written
    beside the old version's before the rows are swapped (see :mod:`rag.indexer`).
    """
    key = f"{namespace}\x1f{document_id}\x1f{index}"
    if content:
        key += "\x1f" + hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    return str(uuid.uuid5(_ID_NAMESPACE, key))


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
        self._embedder = embedder
        if llm is None:
            from hello_memory.llm.factory import make_llm

            llm = make_llm(settings)
        self.llm = llm
        self._bundle: StoreBundle | None = acquire(settings, vectors=vector_store)
        try:
            indexer.recover(self)
        except BaseException:
            self.close()
            raise

    @property
    def bundle(self) -> StoreBundle:
        """The open stores; raises once closed."""
        if self._bundle is None:
            raise InvalidInputError("this RAGPipeline is closed")
        return self._bundle

    @property
    def store(self) -> SQLiteChunkStore | ServerChunks:
        """The chunk store: ``rag.db`` of the data directory, or Qdrant in server mode (shared in-process)."""
        bundle = self.bundle
        if bundle.home is None:  # server mode: one chunk store per embedder (a mismatch is refused)
            key = f"rag:{self.embedder.name}:{self.embedder.dimension}"
            if key not in bundle.extras:
                from hello_memory.stores.chunks.qdrant import QdrantChunkStore

                client = getattr(bundle.records, "client", None)
                if client is None:
                    raise StoreError("server-mode RAG needs a Qdrant record store (QdrantRecordStore)")
                bundle.extras[key] = ServerChunks(
                    QdrantChunkStore(
                        client=client(),
                        prefix=self.settings.collection_prefix,
                        embedder=self.embedder.name,
                        dimension=self.embedder.dimension,
                    )
                )
            server: ServerChunks = bundle.extras[key]
            return server
        if "rag" not in bundle.extras:
            bundle.extras["rag"] = SQLiteChunkStore(bundle.home / "rag.db")
        store: SQLiteChunkStore = bundle.extras["rag"]
        return store

    @property
    def sqlite_store(self) -> SQLiteChunkStore:
        """The embedded chunk store (``rag.db``); the embedded indexing path writes through it."""
        store = self.store
        if not isinstance(store, SQLiteChunkStore):
            raise StoreError("this operation needs the embedded chunk store, and these stores are servers")
        return store

    @property
    def embedder(self) -> Embedder:
        """The text embedder (built from settings on first use)."""
        if self._embedder is None:
            from hello_memory.embedders.factory import make_embedder

            self._embedder = make_embedder(self.settings)
        return self._embedder

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
        progress: indexer.Progress | None = None,
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
        resolved = _text_path(Path(path).resolve()) if source_path is None else source_path
        doc_id = str(uuid.uuid5(_ID_NAMESPACE, f"path:{resolved}")) if document_id is None else document_id
        return indexer.ingest(
            self,
            doc.markdown,
            document_id=check_id(doc_id, "document_id"),
            source_path=resolved,
            title=doc.title or _text_path(Path(path).name),
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
        progress: indexer.Progress | None = None,
    ) -> IngestReport:
        """Index Markdown/plain text; without ``document_id`` the id is derived from the text.

        ``progress`` and failures as in :meth:`add_document`.
        """
        text = check_text(text, "text", max_chars=MAX_TEXT_CHARS)
        check_progress(progress)
        if source is not None:
            source = check_text(source, "source", max_chars=4096)
        doc_id = (
            str(uuid.uuid5(_ID_NAMESPACE, hashlib.sha256(text.encode()).hexdigest()))
            if document_id is None
            else document_id
        )
        return indexer.ingest(
            self,
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
        return self.store.documents(self.namespace)

    def delete_document(self, document_id: str) -> int:
        """Delete a document's chunks everywhere; returns how many chunks were deleted."""
        check_id(document_id, "document_id")
        if not self.store.has_document(self.namespace, document_id):
            raise NotFoundError(
                f"no document {document_id!r} in namespace {self.namespace!r}", object_id=document_id
            )
        with self.bundle.lock:
            n = indexer.delete(self, document_id)
            self.store.scrub()  # no deleted text left in rag.db's FTS segments or WAL
            return n

    def clear(self) -> int:
        """Delete every document of this namespace (never another namespace's); returns chunks deleted."""
        with self.bundle.lock:
            n = sum(indexer.delete(self, d.document_id) for d in self.list_documents())
            self.store.scrub()
            return n

    def stats(self) -> RAGStats:
        """Counts of this namespace."""
        docs = self.list_documents()
        return RAGStats(
            namespace=self.namespace,
            documents=len(docs),
            chunks=sum(d.chunks for d in docs),
            tokens=sum(d.tokens for d in docs),
            embedder=self._embedder.name if self._embedder else self.settings.resolved_embedder(),
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
        query = check_text(query, "query", max_chars=20_000)
        limit = check_limit(limit, maximum=200)
        min_score = check_score(min_score)
        extra, notes = expansion.llm_expansions(
            self.llm,
            query,
            enable_mqe=enable_mqe,
            n_mqe=self.settings.mqe_expansions,
            enable_hyde=enable_hyde,
        )
        queries = [Expansion(kind="original", text=query), *extra]
        offline = (enable_mqe or enable_hyde) and self.llm is None
        if offline:
            queries += self._prf(query, limit)
        hits = self._retrieve([q.text for q in queries], limit, min_score)
        return SearchResult(query=query, hits=hits, expansions=queries, notes=notes)

    def _prf(self, query: str, limit: int) -> list[Expansion]:
        """Offline expansion: the query plus frequent terms of its first top chunks."""
        first = self._scored([query], limit)
        top = self.store.chunks(self.namespace, sorted(first, key=lambda c: -first[c][1])[:3])
        prf = expansion.prf_query(query, [row[4] for row in top.values()])
        return [Expansion(kind="prf", text=prf)] if prf else []

    def _retrieve(self, texts: list[str], limit: int, min_score: float | None) -> list[ChunkHit]:
        scored = self._scored(texts, limit)
        floor = self.settings.min_score if min_score is None else min_score
        ranked = sorted((c for c in scored if scored[c][0] >= floor), key=lambda c: (-scored[c][1], c))[
            :limit
        ]
        rows = self.store.chunks(self.namespace, ranked)
        return [self._hit(rows[c], scored[c]) for c in ranked if c in rows]

    def _scored(self, texts: list[str], limit: int) -> dict[str, tuple[float, float, dict[str, float]]]:
        """chunk id → (best sim, merged score, breakdown) over the queries."""
        _, per = expansion.pool_sizes(limit, self.settings.candidate_pool_multiplier, len(texts))
        texts = [normalize_text(t) for t in texts]  # as converted documents are (Kangxi radicals, ...)
        vectors = self.embedder.embed(texts, kind="query")
        floor = dense_floor(self.embedder.name)
        per_query = []
        best: dict[str, tuple[float, dict[str, float]]] = {}
        for text, vec in zip(texts, vectors, strict=True):
            dense = indexer.dense_search(self, vec, per)
            lexical = self.store.lexical_search(self.namespace, lexical_tokens(text), per)
            indexer.fill_dense(self, vec, dense, lexical)
            rel = fuse(
                dense,
                lexical,
                method=self.settings.fusion,
                dense_weight=self.settings.dense_weight,
                floor=floor,
            )
            per_query.append({c: r.sim for c, r in rel.items()})
            for c, r in rel.items():
                if r.sim > best.get(c, (-1.0, {}))[0]:
                    best[c] = (r.sim, {"sim": r.sim, "dense": r.dense, "lexical": r.lexical})
        merged = expansion.merge(per_query, self.settings.expansion_merge)
        return {c: (best[c][0], merged[c], best[c][1]) for c in merged}

    def _hit(self, row: tuple[Any, ...], scored: tuple[float, float, dict[str, float]]) -> ChunkHit:
        source = self._sources().get(row[2])
        return ChunkHit(
            chunk_id=row[0],
            document_id=row[2],
            source_path=source,
            heading_path=row[7],
            start=row[5],
            end=row[6],
            text=row[4],
            score=scored[1],
            breakdown=scored[2],
        )

    def _sources(self) -> dict[str, str | None]:
        return {d.document_id: d.source_path for d in self.list_documents()}

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
        return Answer(
            question=result.query,
            answer=text,
            citations=citations,
            mode=mode,  # type: ignore[arg-type]
            grounded=bool(citations),
            expansions=result.expansions,
            notes=result.notes + notes,
            extracts=extracts,
        )

