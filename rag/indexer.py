"""Indexing of RAG documents: chunk → embed passages (batched, no lock held) → one chunk-store write.

The write itself is the chunk store's unit (:meth:`~hello_memory.stores.chunks.base.ChunkStore.put_document`):
a failure keeps the earlier version of the document, a killed process is reconciled when the
stores are next opened (:func:`recover`), in both modes. Ids are idempotent per (namespace,
document, chunk): re-adding the same document gives the same ids, and a changed chunk a new one,
so a new version's passages can be written beside the old version's before the swap.

What a passage is, and how its work is bounded, is in :mod:`rag.passages`.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hello_memory.errors import ConversionError, InvalidInputError
from hello_memory.language.text import detect_language
from hello_memory.settings import Settings
from hello_memory.stores.chunks.base import ChunkRecord, DocumentRecord
from rag.core import RAGCore
from rag.models import IngestReport
from rag.passages import Progress, chunk_passages, embed_text

if TYPE_CHECKING:
    from rag.chunking import Chunk

__all__ = ["Progress", "chunk_id", "delete", "ingest", "path_document_id", "recover", "text_document_id"]
LANGUAGE_SAMPLE = 4096  # characters of a chunk that decide its language (5 s for a 2 MB line in full)
_ID_NAMESPACE = uuid.UUID("6f9c1d1e-8d0b-4f3c-9a57-5b1f0c2d9e11")


def chunk_id(namespace: str, document_id: str, index: int, *, content: str = "") -> str:
    """Idempotent chunk id per (namespace, document, chunk index, chunk content).

    Indexing passes the chunk's heading path and text as ``content``: re-adding the same document
    gives the same ids, and a changed chunk a new id, so a new version's passages can be written
    beside the old version's before the rows are swapped.
    """
    key = f"{namespace}\x1f{document_id}\x1f{index}"
    if content:
        key += "\x1f" + hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    return str(uuid.uuid5(_ID_NAMESPACE, key))


def text_path(path: str | Path) -> str:
    """A path as storable text: undecodable file-name bytes become U+FFFD (never lone surrogates)."""
    return os.fsencode(path).decode("utf-8", "replace")


def path_document_id(source: str) -> str:
    """The default id of a document added from the file at ``source``."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"path:{source}"))


def text_document_id(text: str) -> str:
    """The default id of a document added as ``text``."""
    return str(uuid.uuid5(_ID_NAMESPACE, hashlib.sha256(text.encode()).hexdigest()))


def _chunks(
    settings: Settings, markdown: str, chunk_tokens: int | None, overlap_tokens: int | None
) -> list[Chunk]:
    from rag.chunking import chunk_markdown

    ct = settings.chunk_tokens if chunk_tokens is None else chunk_tokens
    ot = settings.overlap_tokens if overlap_tokens is None else overlap_tokens
    for name, v in (("chunk_tokens", ct), ("overlap_tokens", ot)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidInputError(f"{name} must be an integer", field=name)
    return chunk_markdown(markdown, chunk_tokens=ct, overlap_tokens=ot)


def _records(
    core: RAGCore, document_id: str, chunks: list[Chunk], progress: Progress | None
) -> list[ChunkRecord]:
    """The chunk records of a document, their passages embedded."""
    ns = core.namespace
    texts = [chunk_passages(c.heading_path, c.text) for c in chunks]
    vectors = core.passages.embed([t for per_chunk in texts for t in per_chunk], progress)
    records, start = [], 0
    for c, per_chunk in zip(chunks, texts, strict=True):
        cid = chunk_id(ns, document_id, c.index, content=f"{c.heading_path}\x1f{c.text}")
        language = detect_language(c.text[:LANGUAGE_SAMPLE])
        records.append(
            ChunkRecord(
                *(cid, ns, document_id, c.index, c.text, c.start, c.end, c.heading_path, language, c.tokens),
                lexical=embed_text(c.heading_path, c.text),
                passages=vectors[start : start + len(per_chunk)],
            )
        )
        start += len(per_chunk)
    return records


def ingest(
    core: RAGCore,
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
    chunks = _chunks(core.settings, markdown, chunk_tokens, overlap_tokens)
    if not chunks:
        raise ConversionError(source_path or document_id, "no text to index after conversion")
    records = _records(core, document_id, chunks, progress)
    tokens = sum(c.tokens for c in chunks)
    added = datetime.now(timezone.utc)
    doc = DocumentRecord(
        core.namespace, document_id, source_path, title, fmt, len(chunks), tokens, added, metadata
    )
    with core.lock:
        replaced = core.store.has_document(core.namespace, document_id)
        core.store.put_document(doc, records)
    return IngestReport(
        document_id=document_id,
        source_path=source_path,
        chunks=len(chunks),
        tokens=tokens,
        format=fmt,
        replaced=replaced,
    )


def delete(core: RAGCore, document_id: str) -> int:
    """Remove a document's chunks and passages everywhere (journalled); returns the chunks deleted."""
    with core.lock:
        return core.store.remove_document(core.namespace, document_id)


def recover(core: RAGCore) -> int:
    """Finish or undo document writes a killed process left (runs when a pipeline opens)."""
    with core.lock:  # pipelines of one process share the stores: one of them recovers
        return core.store.recover()
