"""RAG in server mode: documents and chunks in Qdrant (:class:`~hello_memory.stores.chunks.qdrant.QdrantChunkStore`).

Each chunk is one point holding its fields, its passages' vectors (one multivector compared with
``MAX_SIM``: the best passage's cosine, as in embedded mode) and its sparse lexical vector, so a
document write is the chunk store's generation write — readers see the old version or the new
one, never a chunk of a failed write — and nothing is kept in a data directory.
:func:`rag.indexer.ingest` and its siblings dispatch here when the pipeline's bundle is in server
mode; :class:`ServerChunks` gives :class:`~rag.pipeline.RAGPipeline` the reads it makes of
``rag.db`` in embedded mode.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hello_memory.errors import StoreError
from hello_memory.stores.chunks.base import ChunkRecord, DocumentRecord
from hello_memory.stores.records.base import PendingOp
from rag.models import DocumentInfo
from rag.passages import ChunkRef, embed_text, of_chunks

if TYPE_CHECKING:
    from hello_memory.stores.chunks.qdrant import QdrantChunkStore
    from rag.chunking import Chunk
    from rag.pipeline import RAGPipeline

logger = logging.getLogger(__name__)


class ServerChunks:
    """The pipeline's reads of its chunk store, on Qdrant (the shapes of :class:`rag.store.SQLiteChunkStore`)."""

    def __init__(self, store: QdrantChunkStore) -> None:
        self.store = store

    def documents(self, namespace: str) -> list[DocumentInfo]:
        """The namespace's documents, oldest first."""
        return [
            DocumentInfo(
                document_id=d.document_id,
                source_path=d.source_path,
                title=d.title,
                format=d.format,
                chunks=d.chunks,
                tokens=d.tokens,
                added_at=d.added_at,
            )
            for d in self.store.list_documents(namespace)
        ]

    def has_document(self, namespace: str, document_id: str) -> bool:
        """True if the namespace holds the document."""
        return self.store.has_document(namespace, document_id)

    def chunks(
        self, namespace: str, ids: Sequence[str] | None = None, *, document_id: str | None = None
    ) -> dict[str, tuple[Any, ...]]:
        """Chunk rows by id, in ``rag.store.CHUNK_COLUMNS`` order."""
        found = self.store.get_chunks(namespace, ids, document_id=document_id)
        return {
            cid: (
                c.chunk_id,
                c.namespace,
                c.document_id,
                c.index,
                c.text,
                c.start,
                c.end,
                c.heading_path,
                c.language,
                c.tokens,
            )
            for cid, c in found.items()
        }

    def lexical_search(self, namespace: str, tokens: Sequence[str], limit: int) -> dict[str, float]:
        """BM25-style scores (sparse vectors, server IDF)."""
        return self.store.lexical_search(namespace, tokens, limit)

    def scrub(self) -> None:
        """No-op: a server manages its own storage."""

    def close(self) -> None:
        """Close the chunk store."""
        self.store.close()


def _store(p: RAGPipeline) -> QdrantChunkStore:
    chunks = p.store
    assert isinstance(chunks, ServerChunks)
    return chunks.store


def write(
    p: RAGPipeline,
    info: DocumentInfo,
    metadata: dict[str, Any],
    chunks: Sequence[tuple[Chunk, ChunkRef]],
    vectors: np.ndarray,
) -> bool:
    """Store (or replace) one document with its passages' vectors; returns whether it replaced one."""
    store, ns = _store(p), p.namespace
    parts = of_chunks(ns, info.document_id, [ref for _, ref in chunks])
    by_chunk: dict[str, list[np.ndarray]] = {}
    for i, part in enumerate(parts):
        by_chunk.setdefault(part.payload["chunk_id"], []).append(vectors[i])
    record = DocumentRecord(
        ns,
        info.document_id,
        info.source_path,
        info.title,
        info.format,
        info.chunks,
        info.tokens,
        info.added_at,
        metadata,
    )
    rows = [
        ChunkRecord(
            ref.chunk_id,
            ns,
            info.document_id,
            c.index,
            c.text,
            c.start,
            c.end,
            c.heading_path,
            ref.language,
            c.tokens,
            lexical=embed_text(c.heading_path, c.text),
            passages=np.vstack(by_chunk[ref.chunk_id]).astype(np.float32),
        )
        for c, ref in chunks
    ]
    replaced = store.has_document(ns, info.document_id)
    try:
        store.put_document(record, rows)
    except StoreError as e:
        kept = "its earlier version is kept" if replaced else "nothing of it was kept"
        raise StoreError(f"indexing {info.document_id!r} failed; {kept}: {e}") from e
    try:
        store.settle(ns, info.document_id)
    except StoreError as e:  # the document is written; only the marker stays for recovery
        logger.warning("could not clear the marker of document %s: %s", info.document_id, e)
    return replaced


def delete(p: RAGPipeline, document_id: str) -> int:
    """Remove a document and its chunks (marker first; a crash midway is finished by :func:`recover`)."""
    return _store(p).remove_document(p.namespace, document_id)


def dense_search(p: RAGPipeline, qvec: np.ndarray, limit: int) -> dict[str, float]:
    """Chunk id -> its best passage's cosine, for about ``limit`` chunks of the namespace."""
    return _store(p).dense_search(p.namespace, qvec, limit)


def fill_dense(p: RAGPipeline, qvec: np.ndarray, dense: dict[str, float], lexical: dict[str, float]) -> None:
    """Exact best-passage cosine for chunks found only lexically."""
    missing = [c for c in lexical if c not in dense]
    if missing:
        dense.update(_store(p).dense_scores(p.namespace, qvec, missing))


def recover(p: RAGPipeline) -> None:
    """Finish or undo document writes and deletions a crashed worker left (any worker's)."""
    store = _store(p)
    for pending in store.unsettled():
        logger.warning(
            "recovering interrupted %s of document %s in namespace %s",
            pending.op.value,
            pending.document_id,
            pending.namespace,
        )
        if pending.op == PendingOp.UNINDEX:
            store.remove_document(pending.namespace, pending.document_id)
            continue
        store.repair(pending.namespace, pending.document_id)
        store.settle(pending.namespace, pending.document_id)
