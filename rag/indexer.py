"""Indexing of RAG documents: chunk → embed passages (batched) → SQLite + vectors, with a journal.

A failure at any step leaves nothing of the document behind: embedding happens before any write,
and a failed vector write deletes the rows it follows.

Chunks are what search returns and what an answer cites; passages are what is embedded. A chunk
over ``PASSAGE_TOKENS`` is cut into passages at its paragraph and sentence boundaries (the chunker
itself, with no overlap), each embedded under the chunk's heading path, and a chunk's dense score
is its best passage's cosine. One vector for a whole ~1,800-character chunk averages its topics
away: on docs_qa, passages raised the pipeline's hit@1 / hit@5 / hit@10 / MRR from 0.590 / 0.801 /
0.873 / 0.684 to 0.649 / 0.829 / 0.892 / 0.730 (64 and 96 tokens measured 0.837 and 0.829 hit@5, with
lower MRR), embedding about the same number of tokens (BENCHMARKS.md).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from hello_memory.errors import ConversionError, InvalidInputError, StoreError
from hello_memory.stores.base import Filter, VectorPoint
from hello_memory.text import detect_language, estimate_tokens, lexical_tokens
from rag.models import DocumentInfo, IngestReport

if TYPE_CHECKING:
    from rag.chunking import Chunk
    from rag.pipeline import RAGPipeline

logger = logging.getLogger(__name__)
PROGRESS_MIN_CHUNKS = 64
PASSAGE_TOKENS = 128  # estimated tokens (a CJK character or a word each) per embedded passage
MAX_PASSAGES = 16  # per chunk: a longer chunk gets longer passages
PASSAGE_POOL = 4  # passages fetched per wanted chunk in a dense search
LEGACY_COLLECTION = "rag_chunks"  # one vector per chunk (before passages); migrated on open
_PASSAGE_NAMESPACE = uuid.UUID("0b8f7d2e-3c41-4d6a-9e85-7a2c61f4b0d3")


@dataclass(frozen=True, slots=True)
class _ChunkRef:
    """What indexing needs of a chunk, from the chunker (ingest) or from SQLite (recovery)."""

    chunk_id: str
    text: str
    start: int
    end: int
    heading_path: str
    language: str


@dataclass(frozen=True, slots=True)
class _Passage:
    id: str
    text: str  # the embedded text: heading path + passage
    payload: dict[str, Any]


def passages(text: str) -> list[str]:
    """The parts of a chunk embedded separately: at most ``MAX_PASSAGES``, cut by the chunker.

    Example:
        >>> passages("short chunk")
        ['short chunk']
        >>> parts = passages("First sentence here. " * 100)
        >>> len(parts) > 1 and all(estimate_tokens(t) <= PASSAGE_TOKENS for t in parts)
        True
    """
    from rag.chunking import chunk_markdown

    tokens = estimate_tokens(text)
    if tokens <= PASSAGE_TOKENS:
        return [text]
    budget = max(PASSAGE_TOKENS, -(-tokens // MAX_PASSAGES))
    parts = [c.text for c in chunk_markdown(text, chunk_tokens=budget, overlap_tokens=0)]
    if len(parts) > MAX_PASSAGES:  # greedy packing can leave up to twice the ideal count
        step = -(-len(parts) // MAX_PASSAGES)
        parts = ["\n".join(parts[i : i + step]) for i in range(0, len(parts), step)]
    return parts or [text]


def passage_id(chunk_id: str, index: int) -> str:
    """Idempotent id of a chunk's ``index``-th passage in the vector index."""
    return str(uuid.uuid5(_PASSAGE_NAMESPACE, f"{chunk_id}\x1f{index}"))


def _passages(namespace: str, document_id: str, refs: Sequence[_ChunkRef]) -> list[_Passage]:
    out = []
    for ref in refs:
        payload = _payload(namespace, document_id, ref.chunk_id, ref.start, ref.end, ref.language)
        for i, part in enumerate(passages(ref.text)):
            out.append(_Passage(passage_id(ref.chunk_id, i), embed_text(ref.heading_path, part), payload))
    return out


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

        bar = tqdm(total=len(texts), desc="embedding passages", unit="passage", leave=False)
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
    ns, store = p.namespace, p.store
    refs = [
        _ChunkRef(
            chunk_id(ns, document_id, c.index),
            c.text,
            c.start,
            c.end,
            c.heading_path,
            detect_language(c.text),
        )
        for c in chunks
    ]
    parts = _passages(ns, document_id, refs)
    vectors = _embed(p, [x.text for x in parts])
    p.bundle.vectors.ensure_collection(COLLECTION, p.embedder.dimension, embedder=p.embedder.name)
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
            for c, ref in zip(chunks, refs, strict=True):
                row = (ref.chunk_id, ns, document_id, c.index, c.text, c.start, c.end, c.heading_path)
                row += (ref.language, c.tokens)
                store.insert_chunk(conn, row, lexical_tokens(embed_text(c.heading_path, c.text)))
            store.set_pending(conn, ns, document_id, "index")
        try:
            _write_vectors(p, ns, document_id, parts, vectors)
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


def _write_vectors(
    p: RAGPipeline, namespace: str, document_id: str, parts: Sequence[_Passage], vectors: np.ndarray
) -> None:
    """Replace the document's passage vectors."""
    from rag.pipeline import COLLECTION

    vs = p.bundle.vectors
    vs.delete_where(COLLECTION, Filter(equals={"namespace": namespace, "document_id": document_id}))
    points = [VectorPoint(id=x.id, vector=vectors[i], payload=x.payload) for i, x in enumerate(parts)]
    for start in range(0, len(points), 256):
        vs.upsert(COLLECTION, points[start : start + 256])


def _payload(
    namespace: str, document_id: str, chunk: str, start: int, end: int, language: str
) -> dict[str, Any]:
    """Vector payload of a passage: its chunk, filter keys and the chunk's offsets; never document
    text (headings, file paths).

    SQLite is the source of truth for the text; keeping it out of the vector index means a
    deleted document's words cannot linger in vector segments or their write-ahead log.
    """
    return {
        "namespace": namespace,
        "document_id": document_id,
        "chunk_id": chunk,
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


def dense_search(p: RAGPipeline, qvec: np.ndarray, limit: int) -> dict[str, float]:
    """Chunk id → its best passage's cosine, for about ``limit`` chunks of the namespace."""
    from rag.pipeline import COLLECTION

    if COLLECTION not in p.bundle.vectors.collections():
        return {}
    where = Filter(equals={"namespace": p.namespace})
    return _best_by_chunk(p.bundle.vectors.search(COLLECTION, qvec, limit=limit * PASSAGE_POOL, where=where))


def fill_dense(p: RAGPipeline, qvec: np.ndarray, dense: dict[str, float], lexical: dict[str, float]) -> None:
    """Exact best-passage cosine for chunks found only lexically."""
    from rag.pipeline import COLLECTION

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
        docs = p.store.query("SELECT namespace, document_id FROM documents ORDER BY namespace, document_id")
        logger.warning("re-embedding %d document(s) as passages (one-time upgrade of the RAG index)", len(docs))
        for ns, document_id in docs:
            _reindex(p, ns, document_id)
        vs.drop_collection(LEGACY_COLLECTION)


def _reindex(p: RAGPipeline, namespace: str, document_id: str) -> None:
    """Re-embed a document's committed chunks and replace its vectors (recovery of an ``index``)."""
    from rag.pipeline import COLLECTION

    rows = p.store.chunks(namespace, document_id=document_id).values()
    refs = [_ChunkRef(r[0], r[4], r[5], r[6], r[7], r[8]) for r in rows]
    parts = _passages(namespace, document_id, refs)
    vectors = _embed(p, [x.text for x in parts])
    p.bundle.vectors.ensure_collection(COLLECTION, p.embedder.dimension, embedder=p.embedder.name)
    _write_vectors(p, namespace, document_id, parts, vectors)
