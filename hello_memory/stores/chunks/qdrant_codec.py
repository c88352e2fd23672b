"""How RAG documents and chunks are laid out in Qdrant (see :mod:`hello_memory.stores.chunks.qdrant`).

A chunk point's id is ``uuid5(chunk_id/generation)``, so two generations of a document coexist
while one replaces the other; its payload is the chunk's fields plus ``generation`` and ``live``.
A document point's id is ``uuid5(namespace, document_id)``; its payload holds the document
record (``record``), ``state`` (``writing`` until the first write finished, then ``ready``), the
live ``generation``, the ``pending`` marker and, while a write is under way, ``next_generation``,
``next_record`` and ``next_chunks``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.errors import InvalidInputError
from hello_memory.language.text import lexical_tokens
from hello_memory.stores.chunks.base import ChunkRecord, DocumentRecord, PendingDocument, check_chunks
from hello_memory.stores.qdrant_connection import models
from hello_memory.stores.records import qdrant_codec as codec
from hello_memory.stores.records.base import PendingOp
from hello_memory.stores.sparse import LexicalEncoder, index_terms
from hello_memory.stores.vectors.rules import unit_vector

CHUNKS, DOCUMENTS = "chunk_records", "chunk_documents"
PASSAGES, LEXICAL = "passages", "lexical"
_NAMESPACE = uuid.UUID("9d3b6f1e-2c7a-4e58-b1d4-6a0e8c2f5b93")
CHUNK_FIELDS = (
    *("chunk_id", "namespace", "document_id", "index", "text"),
    *("start", "end", "heading_path", "language", "tokens"),
)


def document_point_id(namespace: str, document_id: str) -> str:
    """Point id of a document."""
    return str(uuid.uuid5(_NAMESPACE, f"{namespace}\x1f{document_id}"))


def record_of(doc: DocumentRecord) -> dict[str, Any]:
    """A document's payload record (checked to be storable JSON)."""
    return codec.clean(
        {
            "namespace": doc.namespace,
            "document_id": doc.document_id,
            "source_path": doc.source_path,
            "title": doc.title,
            "format": doc.format,
            "chunks": doc.chunks,
            "tokens": doc.tokens,
            "added_ts": codec.ts(doc.added_at),
            "metadata": doc.metadata,
        }
    )


def document_of(record: dict[str, Any]) -> DocumentRecord:
    """The document a payload record describes."""
    fields = {k: v for k, v in record.items() if k != "added_ts"}
    return DocumentRecord(**fields, added_at=datetime.fromtimestamp(record["added_ts"], tz=timezone.utc))


def chunk_points(
    document: DocumentRecord,
    chunks: Sequence[ChunkRecord],
    generation: str,
    encoder: LexicalEncoder,
    dimension: int | None,
) -> list[Any]:
    """The hidden (``live = false``) points of a document's new generation, all validated."""
    m = models()
    record_of(document)
    check_chunks(document, chunks)
    points = []
    for c in chunks:
        vectors: dict[str, Any] = {}
        indices, values = encoder.document(index_terms(lexical_tokens(c.lexical or c.text)))
        if indices:
            vectors[LEXICAL] = m.SparseVector(indices=indices, values=values)
        if c.passages is not None:
            vectors[PASSAGES] = passages(c.passages, dimension)
        payload = {k: getattr(c, k) for k in CHUNK_FIELDS} | {"live": False, "generation": generation}
        point_id = str(uuid.uuid5(_NAMESPACE, f"{c.chunk_id}/{generation}"))
        points.append(m.PointStruct(id=point_id, vector=vectors, payload=payload))
    return points


def passages(matrix: npt.NDArray[np.float32], dimension: int | None) -> list[list[float]]:
    """A chunk's passage vectors as a unit multivector."""
    if dimension is None:
        raise InvalidInputError(
            "this chunk store keeps no passage vectors (no embedder configured)", field="passages"
        )
    rows = np.asarray(matrix)
    if rows.ndim != 2 or not len(rows):
        raise InvalidInputError("passages must be a non-empty (n, dimension) array", field="passages")
    return [unit_vector(CHUNKS, row, dimension).tolist() for row in rows]


def unsettled_filter() -> Any:
    """Document points with pending work or an unfinished generation."""
    m = models()
    unfinished = [m.Filter(must_not=[codec.empty(key)]) for key in ("pending", "next_generation")]
    return m.Filter(should=unfinished)


def pending_of(payload: dict[str, Any]) -> PendingDocument:
    """The unfinished work a document point's payload describes (an unfinished generation: ``index``)."""
    return PendingDocument(
        payload["namespace"], payload["document_id"], PendingOp(payload.get("pending") or "index")
    )


def doc_filter(namespace: str, document_id: str | None, extra: Sequence[Any] = ()) -> Any:
    """Points of a namespace (or one of its documents), with ``extra`` conditions."""
    must = [codec.match("namespace", namespace), *extra]
    if document_id is not None:
        must.append(codec.match("document_id", document_id))
    return models().Filter(must=must)


def live(where: Any) -> Any:
    """``where``, restricted to live (published) chunk points."""
    where.must = [*(where.must or []), codec.match("live", True)]
    return where
