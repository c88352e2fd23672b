"""Indexing of RAG documents: chunk → embed passages (batched) → vectors → SQLite, with a journal.

Write order, so that a failure at any step loses nothing: embed (no lock, no write), journal the
document (``pending``), upsert the new version's passages next to the old ones, then replace the
document's rows in one SQLite transaction, then delete the old version's passages. Chunk ids hash
the chunk's text (:func:`rag.pipeline.chunk_id`), so the two versions' passages coexist. A vector
or SQLite failure before the swap deletes only what was added: a re-added document keeps its
earlier version, searchable as before; a new one leaves nothing behind. A process killed anywhere
in between is reconciled when the data directory is next opened (:func:`recover`): the rows are
the truth, passages they do not have are dropped, missing ones embedded.

What a passage is, and how its work is bounded, is in :mod:`rag.passages`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from hello_memory.errors import ConversionError, InvalidInputError, StoreError
from hello_memory.language.text import detect_language, lexical_tokens
from hello_memory.stores.vectors.base import Filter, VectorPoint
from rag import server_index
from rag.models import DocumentInfo, IngestReport
from rag.passages import (
    MAX_PASSAGES,
    PASSAGE_TOKENS,
    ChunkRef,
    Passage,
    embed_text,
    of_chunks,
    passage_id,
    passages,
)

if TYPE_CHECKING:
    from rag.chunking import Chunk
    from rag.pipeline import RAGPipeline

__all__ = [
    "MAX_PASSAGES", "PASSAGE_TOKENS", "delete", "dense_search", "embed_text", "fill_dense", "ingest",
    "passage_id", "passages", "recover",
]
logger = logging.getLogger(__name__)
PROGRESS_MIN_CHUNKS = 64
PASSAGE_POOL = 4  # passages fetched per wanted chunk in a dense search
LANGUAGE_SAMPLE = 4096  # characters of a chunk that decide its language (5 s for a 2 MB line in full)
LEGACY_COLLECTION = "rag_chunks"  # one vector per chunk (before passages); migrated on open
Progress = Callable[[int, int], object]
"""Called with (passages embedded, passages in all) after every embedding batch."""


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


def _embed(p: RAGPipeline, texts: list[str], progress: Progress | None = None) -> np.ndarray:
    size = p.settings.embed_batch_size
    parts = []
    bar = None
    if len(texts) >= PROGRESS_MIN_CHUNKS:
        from tqdm import tqdm

        bar = tqdm(total=len(texts), desc="embedding passages", unit="passage", leave=False)
    try:
        for start in range(0, len(texts), size):
            parts.append(p.embedder.embed(texts[start : start + size], kind="passage"))
            if bar is not None:
                bar.update(len(parts[-1]))
            if progress is not None:
                progress(min(start + size, len(texts)), len(texts))
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
    progress: Progress | None = None,
) -> IngestReport:
    """Index one document's Markdown under ``document_id``, replacing an earlier version.

    Raises:
        StoreError: a store failed; an earlier version of the document is then kept as it was.
    """
    from rag.pipeline import COLLECTION, chunk_id

    chunks = _chunks(p, markdown, chunk_tokens, overlap_tokens)
    if not chunks:
        raise ConversionError(source_path or document_id, "no text to index after conversion")
    ns = p.namespace
    refs = [
        ChunkRef(chunk_id(ns, document_id, c.index, content=f"{c.heading_path}\x1f{c.text}"), c.text,
                 c.start, c.end, c.heading_path, detect_language(c.text[:LANGUAGE_SAMPLE]))
        for c in chunks
    ]
    parts = of_chunks(ns, document_id, refs)
    vectors = _embed(p, [x.text for x in parts], progress)
    info = DocumentInfo(
        document_id=document_id, source_path=source_path, title=title, format=fmt, chunks=len(chunks),
        tokens=sum(c.tokens for c in chunks), added_at=datetime.now(timezone.utc),
    )
    pairs = list(zip(chunks, refs, strict=True))
    if p.bundle.server:
        with p.bundle.lock:
            replaced = server_index.write(p, info, metadata, pairs, vectors)
    else:
        p.bundle.vectors.ensure_collection(COLLECTION, p.embedder.dimension, embedder=p.embedder.name)
        with p.bundle.lock:
            replaced = _replace(p, document_id, info, metadata, pairs, parts, vectors)
    return IngestReport(document_id=document_id, source_path=source_path, chunks=len(chunks),
                        tokens=info.tokens, format=fmt, replaced=replaced)


def _replace(
    p: RAGPipeline, document_id: str, info: DocumentInfo, metadata: dict[str, Any],
    chunks: Sequence[tuple[Chunk, ChunkRef]], parts: Sequence[Passage], vectors: np.ndarray,
) -> bool:
    """Write the new version beside the old one, swap the rows, drop the old passages (see module)."""
    from rag.pipeline import COLLECTION

    store, ns, vs = p.sqlite_store, p.namespace, p.bundle.vectors
    replaced = store.has_document(ns, document_id)
    before = set(vs.ids(COLLECTION, _of_document(ns, document_id)))
    added = [x.id for x in parts if x.id not in before]
    with store.transaction() as conn:
        store.set_pending(conn, ns, document_id, "index")
    try:
        _write_vectors(p, ns, document_id, parts, vectors)
        with store.transaction() as conn:
            store.delete_document_rows(conn, ns, document_id)
            store.insert_document(conn, info, ns, metadata)
            for c, ref in chunks:
                row = (ref.chunk_id, ns, document_id, c.index, c.text, c.start, c.end, c.heading_path,
                       ref.language, c.tokens)
                store.insert_chunk(conn, row, lexical_tokens(embed_text(c.heading_path, c.text)))
    except Exception as e:
        _settle(p, document_id, added)
        kept = "its earlier version is kept" if replaced else "nothing of it was kept"
        raise StoreError(f"indexing {document_id!r} failed; {kept}: {e}") from e
    _settle(p, document_id, sorted(before - {x.id for x in parts}))
    return replaced


def _settle(p: RAGPipeline, document_id: str, extra: Sequence[str]) -> None:
    """Delete passages the rows do not have and clear the journal; else leave it to :func:`recover`."""
    from rag.pipeline import COLLECTION

    try:
        if extra:
            p.bundle.vectors.delete(COLLECTION, list(extra))
        p.sqlite_store.clear_pending(p.namespace, document_id)
    except Exception:  # the rows are consistent; the journal finishes the cleanup on the next open
        logger.warning("could not remove %d stale passage(s) of document %s now; they are removed when "
                       "the data directory is next opened", len(extra), document_id, exc_info=True)


def _of_document(namespace: str, document_id: str) -> Filter:
    return Filter(equals={"namespace": namespace, "document_id": document_id})


def _write_vectors(
    p: RAGPipeline, namespace: str, document_id: str, parts: Sequence[Passage], vectors: np.ndarray
) -> None:
    """Upsert a document's passage vectors (beside any earlier version's)."""
    from rag.pipeline import COLLECTION

    points = [VectorPoint(id=x.id, vector=vectors[i], payload=x.payload) for i, x in enumerate(parts)]
    for start in range(0, len(points), 256):
        p.bundle.vectors.upsert(COLLECTION, points[start : start + 256])


def delete(p: RAGPipeline, document_id: str) -> int:
    """Remove a document from the vector index and SQLite (journalled)."""
    from rag.pipeline import COLLECTION

    if p.bundle.server:
        return server_index.delete(p, document_id)

    store, ns = p.sqlite_store, p.namespace
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


def dense_search(p: RAGPipeline, qvec: np.ndarray, limit: int) -> dict[str, float]:
    """Chunk id → its best passage's cosine, for about ``limit`` chunks of the namespace."""
    from rag.pipeline import COLLECTION

    if p.bundle.server:
        return server_index.dense_search(p, qvec, limit)

    if COLLECTION not in p.bundle.vectors.collections():
        return {}
    where = Filter(equals={"namespace": p.namespace})
    return _best_by_chunk(p.bundle.vectors.search(COLLECTION, qvec, limit=limit * PASSAGE_POOL, where=where))


def fill_dense(p: RAGPipeline, qvec: np.ndarray, dense: dict[str, float], lexical: dict[str, float]) -> None:
    """Exact best-passage cosine for chunks found only lexically."""
    from rag.pipeline import COLLECTION

    if p.bundle.server:
        server_index.fill_dense(p, qvec, dense, lexical)
        return

    missing = [c for c in lexical if c not in dense]
    if missing and COLLECTION in p.bundle.vectors.collections():
        where = Filter(equals={"namespace": p.namespace, "chunk_id": missing})
        # every passage of the missing chunks: none has more than MAX_PASSAGES
        hits = p.bundle.vectors.search(COLLECTION, qvec, limit=len(missing) * MAX_PASSAGES, where=where)
        dense.update(_best_by_chunk(hits))


def _best_by_chunk(hits: Sequence[Any]) -> dict[str, float]:
    best: dict[str, float] = {}
    for h in hits:
        chunk = h.payload.get("chunk_id")
        if isinstance(chunk, str) and h.score > best.get(chunk, -2.0):
            best[chunk] = h.score
    return best


def recover(p: RAGPipeline) -> None:
    """Finish or undo document writes a killed process left in the journal (runs on open)."""
    from rag.pipeline import COLLECTION

    if p.bundle.server:
        server_index.recover(p)
        return

    store = p.sqlite_store
    for ns, document_id, op in store.pending():
        logger.warning("recovering interrupted %s of document %s in namespace %s", op, document_id, ns)
        if op == "index" and store.has_document(ns, document_id):
            # The rows are the truth (the old version, or the new one once swapped): never drop them.
            _reconcile(p, ns, document_id)
            store.clear_pending(ns, document_id)
            continue
        if COLLECTION in p.bundle.vectors.collections():
            p.bundle.vectors.delete_where(COLLECTION, _of_document(ns, document_id))
        with store.transaction() as conn:
            store.delete_document_rows(conn, ns, document_id)
            conn.execute("DELETE FROM pending WHERE namespace=? AND document_id=?", (ns, document_id))
    _migrate_legacy(p)


def _migrate_legacy(p: RAGPipeline) -> None:
    """Re-embed documents indexed one vector per chunk (before passages), then drop that collection.

    Idempotent: killed midway, the legacy collection is still there and the next open starts over.
    """
    vs = p.bundle.vectors
    if LEGACY_COLLECTION not in vs.collections():
        return
    with p.bundle.lock:  # pipelines of one process share the stores: one of them upgrades
        if LEGACY_COLLECTION not in vs.collections():
            return
        docs = p.sqlite_store.query("SELECT namespace, document_id FROM documents ORDER BY namespace, document_id")
        logger.warning("re-embedding %d document(s) as passages (one-time upgrade of the RAG index)", len(docs))
        for ns, document_id in docs:
            _reconcile(p, ns, document_id)
        vs.drop_collection(LEGACY_COLLECTION)


def _reconcile(p: RAGPipeline, namespace: str, document_id: str) -> None:
    """Make a document's passages those of its committed rows: drop the others, embed missing ones."""
    from rag.pipeline import COLLECTION

    vs = p.bundle.vectors
    rows = p.sqlite_store.chunks(namespace, document_id=document_id).values()
    parts = of_chunks(namespace, document_id, [ChunkRef(r[0], r[4], r[5], r[6], r[7], r[8]) for r in rows])
    vs.ensure_collection(COLLECTION, p.embedder.dimension, embedder=p.embedder.name)
    present = set(vs.ids(COLLECTION, _of_document(namespace, document_id)))
    stale = present - {x.id for x in parts}
    if stale:
        vs.delete(COLLECTION, sorted(stale))
    missing = [x for x in parts if x.id not in present]
    if missing:
        _write_vectors(p, namespace, document_id, missing, _embed(p, [x.text for x in missing]))
