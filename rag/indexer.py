"""Indexing of RAG documents: chunk → embed (batched) → SQLite + vectors, with a recovery journal.

A failure at any step leaves nothing of the document behind: embedding happens before any write,
and a failed vector write deletes the rows it follows.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from hello_memory.errors import ConversionError, InvalidInputError, StoreError
from hello_memory.stores.base import Filter, VectorPoint
from hello_memory.text import detect_language, lexical_tokens
from rag.models import DocumentInfo, IngestReport

if TYPE_CHECKING:
    from rag.chunking import Chunk
    from rag.pipeline import RAGPipeline

logger = logging.getLogger(__name__)
PROGRESS_MIN_CHUNKS = 64


def _chunks(
    p: RAGPipeline, markdown: str, chunk_tokens: int | None, overlap_tokens: int | None
) -> list[Chunk]:
    from rag.chunking import chunk_markdown

    ct = p.settings.chunk_tokens if chunk_tokens is None else chunk_tokens
    ot = p.settings.overlap_tokens if overlap_tokens is None else overlap_tokens
    for name, v in (("chunk_tokens", ct), ("overlap_tokens", ot)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidInputError(f"{name} must be an integer", field=name)
    return chunk_markdown(markdown, chunk_tokens=ct, overlap_tokens=ot)


def embed_text(heading_path: str, text: str) -> str:
    """What is embedded for a chunk: its heading path gives the chunk its context."""
    return f"{heading_path}\n{text}" if heading_path else text


def _embed(p: RAGPipeline, texts: list[str]) -> np.ndarray:
    size = p.settings.embed_batch_size
    parts = []
    bar = None
    if len(texts) >= PROGRESS_MIN_CHUNKS:
        from tqdm import tqdm

        bar = tqdm(total=len(texts), desc="embedding chunks", unit="chunk", leave=False)
    try:
        for start in range(0, len(texts), size):
            parts.append(p.embedder.embed(texts[start : start + size], kind="passage"))
            if bar is not None:
                bar.update(len(parts[-1]))
    finally:
        if bar is not None:
            bar.close()
    return np.vstack(parts) if parts else np.zeros((0, p.embedder.dimension), dtype=np.float32)


def ingest(
    p: RAGPipeline,
    markdown: str,
    *,
    document_id: str,
    source_path: str | None,
    title: str | None,
    fmt: str,
    chunk_tokens: int | None,
    overlap_tokens: int | None,
    metadata: dict[str, Any],
) -> IngestReport:
    """Index one document's Markdown under ``document_id``, replacing an earlier version."""
    from rag.pipeline import COLLECTION, chunk_id

    chunks = _chunks(p, markdown, chunk_tokens, overlap_tokens)
    if not chunks:
        raise ConversionError(source_path or document_id, "no text to index after conversion")
    vectors = _embed(p, [embed_text(c.heading_path, c.text) for c in chunks])
    p.bundle.vectors.ensure_collection(COLLECTION, p.embedder.dimension, embedder=p.embedder.name)
    ns, store = p.namespace, p.store
    info = DocumentInfo(
        document_id=document_id,
        source_path=source_path,
        title=title,
        format=fmt,
        chunks=len(chunks),
        tokens=sum(c.tokens for c in chunks),
        added_at=datetime.now(timezone.utc),
    )
    with p.bundle.lock:
        replaced = store.has_document(ns, document_id)
        with store.transaction() as conn:
            store.delete_document_rows(conn, ns, document_id)
            store.insert_document(conn, info, ns, metadata)
            for c in chunks:
                row = (
                    chunk_id(ns, document_id, c.index),
                    ns,
                    document_id,
                    c.index,
                    c.text,
                    c.start,
                    c.end,
                    c.heading_path,
                    detect_language(c.text),
                    c.tokens,
                )
                store.insert_chunk(conn, row, lexical_tokens(embed_text(c.heading_path, c.text)))
            store.set_pending(conn, ns, document_id, "index")
        try:
            _write_vectors(p, document_id, chunks, vectors)
        except Exception as e:
            delete(p, document_id)
            raise StoreError(f"indexing {document_id!r} failed; nothing of it was kept: {e}") from e
        store.clear_pending(ns, document_id)
    return IngestReport(
        document_id=document_id,
        source_path=source_path,
        chunks=len(chunks),
        tokens=info.tokens,
        format=fmt,
        replaced=replaced,
    )


def _write_vectors(p: RAGPipeline, document_id: str, chunks: list[Chunk], vectors: np.ndarray) -> None:
    from rag.pipeline import COLLECTION, chunk_id

    vs = p.bundle.vectors
    vs.delete_where(COLLECTION, Filter(equals={"namespace": p.namespace, "document_id": document_id}))
    points = [
        VectorPoint(
            id=chunk_id(p.namespace, document_id, c.index),
            vector=vectors[i],
            payload=_payload(p.namespace, document_id, c.start, c.end, detect_language(c.text)),
        )
        for i, c in enumerate(chunks)
    ]
    for start in range(0, len(points), 256):
        vs.upsert(COLLECTION, points[start : start + 256])


def _payload(namespace: str, document_id: str, start: int, end: int, language: str) -> dict[str, Any]:
    """Vector payload: filter keys and offsets only, never document text (headings, file paths).

    SQLite is the source of truth for the text; keeping it out of the vector index means a
    deleted document's words cannot linger in vector segments or their write-ahead log.
    """
    return {
        "namespace": namespace,
        "document_id": document_id,
        "start": start,
        "end": end,
        "language": language,
    }


def delete(p: RAGPipeline, document_id: str) -> int:
    """Remove a document from the vector index and SQLite (journalled)."""
    from rag.pipeline import COLLECTION

    store, ns = p.store, p.namespace
    with store.transaction() as conn:
        store.set_pending(conn, ns, document_id, "unindex")
    if COLLECTION in p.bundle.vectors.collections():
        p.bundle.vectors.delete_where(
            COLLECTION, Filter(equals={"namespace": ns, "document_id": document_id})
        )
    with store.transaction() as conn:
        n = store.delete_document_rows(conn, ns, document_id)
        conn.execute("DELETE FROM pending WHERE namespace=? AND document_id=?", (ns, document_id))
    return n


def fill_dense(p: RAGPipeline, qvec: np.ndarray, dense: dict[str, float], lexical: dict[str, float]) -> None:
    """Exact cosine for chunks found only lexically."""
    from rag.pipeline import COLLECTION

    missing = [c for c in lexical if c not in dense]
    if missing and COLLECTION in p.bundle.vectors.collections():
        for point in p.bundle.vectors.get(COLLECTION, missing, with_vectors=True):
            dense[point.id] = float(np.dot(point.vector, qvec))


def recover(p: RAGPipeline) -> None:
    """Finish or undo document writes a killed process left in the journal (runs on open)."""
    from rag.pipeline import COLLECTION

    store = p.store
    for ns, document_id, op in store.pending():
        logger.warning("recovering interrupted %s of document %s in namespace %s", op, document_id, ns)
        if op == "index" and store.has_document(ns, document_id):
            # The rows committed (a re-add already replaced the old version): finish, never drop.
            _reindex(p, ns, document_id)
            store.clear_pending(ns, document_id)
            continue
        if COLLECTION in p.bundle.vectors.collections():
            p.bundle.vectors.delete_where(
                COLLECTION, Filter(equals={"namespace": ns, "document_id": document_id})
            )
        with store.transaction() as conn:
            store.delete_document_rows(conn, ns, document_id)
            conn.execute("DELETE FROM pending WHERE namespace=? AND document_id=?", (ns, document_id))


def _reindex(p: RAGPipeline, namespace: str, document_id: str) -> None:
    """Re-embed a document's committed chunks and replace its vectors (recovery of an ``index``)."""
    from rag.pipeline import COLLECTION

    rows = list(p.store.chunks(namespace, document_id=document_id).values())
    vectors = _embed(p, [embed_text(r[7], r[4]) for r in rows])
    vs = p.bundle.vectors
    vs.ensure_collection(COLLECTION, p.embedder.dimension, embedder=p.embedder.name)
    vs.delete_where(COLLECTION, Filter(equals={"namespace": namespace, "document_id": document_id}))
    points = [
        VectorPoint(id=r[0], vector=vectors[i], payload=_payload(namespace, document_id, r[5], r[6], r[8]))
        for i, r in enumerate(rows)
    ]
    for start in range(0, len(points), 256):
        vs.upsert(COLLECTION, points[start : start + 256])
