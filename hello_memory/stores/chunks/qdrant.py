"""Chunk store on Qdrant (server mode): each chunk one point with its passages and a lexical vector.

Collections ``<prefix>_chunk_records`` (a point per chunk: the chunk's fields as payload, its
passages as one multivector ``passages`` compared with ``MAX_SIM`` — with a single query vector
that is the best passage's cosine, exactly the embedded pipeline's chunk score — and a sparse
``lexical`` vector, :mod:`hello_memory.stores.sparse`) and ``<prefix>_chunk_documents``
(payload-only, a point per document).

A document is written in generations, so a reader never sees a chunk of a failed write:

1. the document point gets a marker (``next_generation``, the new record, the chunk count);
2. the new generation's chunk points are written hidden (``live = false``; point id
   ``uuid5(chunk_id/generation)``);
3. they are made live, the older generations deleted, and the document point rewritten (``ready``).

Between 3's first two operations a reader may see both versions' chunks. A crash leaves the
marker: :meth:`QdrantChunkStore.unsettled` reports it and :meth:`QdrantChunkStore.recover` (through
:meth:`QdrantChunkStore.repair`) finishes the write when all its chunks landed, or removes them
(the old version stays) when not. A write that raises has been undone the same way.

Example:
    >>> import uuid
    >>> from datetime import datetime, timezone
    >>> from hello_memory.stores.chunks.base import ChunkRecord, DocumentRecord
    >>> store = QdrantChunkStore(":memory:")
    >>> doc = DocumentRecord("docs", "guide", None, "Guide", "md", 1, 5, datetime.now(timezone.utc))
    >>> chunk = ChunkRecord(str(uuid.uuid4()), "docs", "guide", 0, "Install with pip.", 0, 17, "Guide", "en", 5,
    ...                     lexical="Guide Install with pip.")
    >>> store.put_document(doc, [chunk])
    >>> list(store.lexical_search("docs", ["instal"], limit=3)) == [chunk.chunk_id]
    True
    >>> store.close()
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy.typing as npt

from hello_memory.errors import InvalidInputError, StoreError
from hello_memory.stores.chunks.base import (
    ChunkRecord,
    DocumentRecord,
    PendingDocument,
    log_recovery,
    write_failed,
)
from hello_memory.stores.chunks.qdrant_codec import (
    CHUNK_FIELDS,
    CHUNKS,
    DOCUMENTS,
    LEXICAL,
    PASSAGES,
    chunk_points,
    doc_filter,
    document_of,
    document_point_id,
    live,
    pending_of,
    record_of,
    unsettled_filter,
)
from hello_memory.stores.qdrant_connection import QdrantConnection, check_dense, kind_check, models
from hello_memory.stores.records import qdrant_codec as codec
from hello_memory.stores.records.base import PendingOp
from hello_memory.stores.sparse import LexicalEncoder, index_terms
from hello_memory.stores.vectors.rules import unit_vector

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from hello_memory.stores.qdrant_connection import QdrantOptions

logger = logging.getLogger(__name__)
SCHEMA = 1
# Lexical terms of a RAG chunk (default chunk_tokens 400): not measured; BM25's usual long-text value.
CHUNK_AVG_LEN = 256.0
_BATCH = 64


class QdrantChunkStore:
    """A :class:`~hello_memory.stores.chunks.base.ChunkStore` on Qdrant.

    Arguments as for :class:`~hello_memory.stores.records.qdrant.QdrantRecordStore`; ``embedder`` and
    ``dimension`` describe the passage vectors (both or neither).
    """

    def __init__(
        self,
        location: str | None = None,
        *,
        embedder: str | None = None,
        dimension: int | None = None,
        lexical: LexicalEncoder | None = None,
        **connection: Unpack[QdrantOptions],
    ) -> None:
        if (embedder is None) != (dimension is None):
            raise InvalidInputError("give both embedder and dimension, or neither", field="embedder")
        self._conn = QdrantConnection(location, **connection)
        self._embedder, self._dimension = embedder, dimension
        self._encoder = lexical or LexicalEncoder(avg_len=CHUNK_AVG_LEN)
        self._ready = False

    @property
    def backend(self) -> str:
        """``"qdrant"``."""
        return "qdrant"

    def __enter__(self) -> QdrantChunkStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes -------------------------------------------------------------------------------
    def put_document(self, document: DocumentRecord, chunks: Sequence[ChunkRecord]) -> None:
        """Store or replace a document in a new generation, then settle it (see the module docstring)."""
        generation = str(uuid.uuid4())
        # validates everything before any write
        points = chunk_points(document, chunks, generation, self._encoder, self._dimension)
        ns, doc_id = document.namespace, document.document_id
        payload = self._doc_payload(ns, doc_id)
        replaced = payload is not None and payload.get("state") == "ready"
        marker: dict[str, Any] = {"pending": PendingOp.INDEX.value, "next_generation": generation}
        marker |= {"next_record": record_of(document), "next_chunks": len(chunks)}
        try:
            if payload is None:
                new = {"state": "writing", "generation": None, "record": record_of(document)}
                self._upsert_doc(ns, doc_id, new | marker)
            else:
                self._set_doc(ns, doc_id, marker)
            for start in range(0, len(points), _BATCH):
                batch = points[start : start + _BATCH]
                self._conn.call("write chunks", "upsert", self._conn.full(CHUNKS), points=batch, wait=True)
            self._commit(ns, doc_id, generation, record_of(document))
        except StoreError as e:
            raise write_failed(doc_id, replaced, e) from e
        try:
            self.settle(ns, doc_id)
        except StoreError as e:  # the document is written; only the marker stays for recovery
            logger.warning("could not clear the marker of document %s: %s", doc_id, e)

    def remove_document(self, namespace: str, document_id: str) -> int:
        """Delete a document and its chunks (marker first: a crash midway is found and finished)."""
        self._ensure()
        where = doc_filter(namespace, document_id)
        n = self._conn.count(CHUNKS, live(where))
        if self._doc_payload(namespace, document_id) is not None:
            self._set_doc(namespace, document_id, {"pending": PendingOp.UNINDEX.value})
        self._delete_chunks(where)
        self._delete_doc(namespace, document_id)
        return n

    def settle(self, namespace: str, document_id: str) -> None:
        """Clear a document's pending marker (an unfinished generation stays for :meth:`repair`)."""
        if self._doc_payload(namespace, document_id) is not None:
            self._set_doc(namespace, document_id, {"pending": None})

    def repair(self, namespace: str, document_id: str) -> str:
        """Finish or undo a write a crash interrupted; returns ``"finished"``, ``"undone"`` or ``"none"``."""
        payload = self._doc_payload(namespace, document_id)
        if payload is None or not payload.get("next_generation"):
            return "none"
        generation = payload["next_generation"]
        mine = doc_filter(namespace, document_id, [codec.match("generation", generation)])
        if self._conn.count(CHUNKS, mine) == int(payload.get("next_chunks") or -1):
            self._commit(namespace, document_id, generation, payload["next_record"])
            return "finished"
        self._delete_chunks(mine)
        if payload.get("state") != "ready":
            self._delete_doc(namespace, document_id)
        else:
            self._set_doc(
                namespace, document_id, {"next_generation": None, "next_record": None, "next_chunks": None}
            )
        return "undone"

    def recover(self) -> int:
        """Finish or undo document writes and deletions a crashed worker left (any worker's)."""
        pending = self.unsettled()
        for p in pending:
            log_recovery(p)
            if p.op == PendingOp.UNINDEX:
                self.remove_document(p.namespace, p.document_id)
            else:
                self.repair(p.namespace, p.document_id)
                self.settle(p.namespace, p.document_id)
        return len(pending)

    # -- reads --------------------------------------------------------------------------------
    def list_documents(self, namespace: str) -> list[DocumentRecord]:
        """The namespace's documents, oldest first."""
        self._ensure()
        where = models().Filter(must=[codec.match("namespace", namespace), codec.match("state", "ready")])
        docs = [
            document_of(p.payload["record"])
            for p in self._conn.scroll_all(DOCUMENTS, where, with_payload=["record"])
        ]
        return sorted(docs, key=lambda d: (d.added_at, d.document_id))

    def has_document(self, namespace: str, document_id: str) -> bool:
        """True if the namespace holds the document (a finished write)."""
        payload = self._doc_payload(namespace, document_id)
        return payload is not None and payload.get("state") == "ready"

    def get_chunks(
        self, namespace: str, ids: Sequence[str] | None = None, *, document_id: str | None = None
    ) -> dict[str, ChunkRecord]:
        """Live chunks by id (or of one document / the namespace), in document and index order."""
        if ids is not None and not ids:
            return {}
        self._ensure()
        extra = [] if ids is None else [codec.match("chunk_id", list(dict.fromkeys(ids)))]
        if document_id is not None:
            extra.append(codec.match("document_id", document_id))
        where = live(models().Filter(must=[codec.match("namespace", namespace), *extra]))
        found = [p.payload for p in self._conn.scroll_all(CHUNKS, where, with_payload=list(CHUNK_FIELDS))]
        found.sort(key=lambda c: (c["document_id"], c["index"]))
        return {c["chunk_id"]: ChunkRecord(**{k: c[k] for k in CHUNK_FIELDS}) for c in found}

    def lexical_search(self, namespace: str, tokens: Sequence[str], limit: int) -> dict[str, float]:
        """BM25-style scores (sparse vectors, server IDF) of the namespace's live chunks."""
        terms = index_terms(tokens)
        if not terms or int(limit) <= 0:
            return {}
        self._ensure()
        indices, values = self._encoder.query(terms)
        query = models().SparseVector(indices=indices, values=values)
        return self._query(namespace, query, LEXICAL, limit)

    def dense_search(self, namespace: str, vector: npt.ArrayLike, limit: int) -> dict[str, float]:
        """Chunk id -> its best passage's cosine, for the ``limit`` chunks nearest to ``vector``."""
        self._ensure()
        if self._dimension is None:
            raise InvalidInputError("this chunk store has no passage vectors (no embedder configured)")
        query = unit_vector(CHUNKS, vector, self._dimension)
        return self._query(namespace, [query.tolist()], PASSAGES, limit) if int(limit) > 0 else {}

    def dense_scores(self, namespace: str, vector: npt.ArrayLike, ids: Sequence[str]) -> dict[str, float]:
        """Chunk id -> its best passage's cosine with ``vector``, for the live chunks among ``ids``."""
        self._ensure()
        if self._dimension is None or not ids:
            return {}
        query = unit_vector(CHUNKS, vector, self._dimension)
        wanted = [codec.match("chunk_id", list(dict.fromkeys(ids)))]
        return self._query(namespace, [query.tolist()], PASSAGES, len(set(ids)), wanted)

    def unsettled(self) -> list[PendingDocument]:
        """Documents with pending work or an unfinished generation, of every namespace."""
        self._ensure()
        points = self._conn.scroll_all(
            DOCUMENTS, unsettled_filter(), with_payload=["namespace", "document_id", "pending"]
        )
        return [pending_of(p.payload) for p in points]

    def residue(self, namespace: str, document_id: str | None = None) -> dict[str, int]:
        """Points left for a namespace (or one document)."""
        self._ensure()
        where = doc_filter(namespace, document_id)
        return {"documents": self._conn.count(DOCUMENTS, where), "chunks": self._conn.count(CHUNKS, where)}

    def scrub(self) -> None:
        """No-op: a server manages its own storage."""

    def close(self) -> None:
        """Close the client if this store built it; idempotent."""
        self._conn.close()

    # -- internals ------------------------------------------------------------------------------
    def _ensure(self) -> None:
        if self._ready:
            return
        m = models()
        vectors = {}
        if self._dimension is not None:
            multi = m.MultiVectorConfig(comparator=m.MultiVectorComparator.MAX_SIM)
            vectors[PASSAGES] = m.VectorParams(
                size=self._dimension, distance=m.Distance.COSINE, multivector_config=multi
            )
        meta = {"kind": "chunks", "schema": SCHEMA, "embedder": self._embedder, "dimension": self._dimension}
        meta["lexical"] = self._encoder.to_json()
        stored = self._conn.ensure_collection(
            CHUNKS,
            meta,
            self._check_meta,
            vectors_config=vectors,
            sparse_vectors_config={LEXICAL: m.SparseVectorParams(modifier=m.Modifier.IDF)},
        )
        self._encoder = LexicalEncoder.from_json(stored["lexical"])
        self._conn.ensure_collection(
            DOCUMENTS,
            {"kind": "chunk_documents", "schema": SCHEMA},
            kind_check("chunk_documents", SCHEMA),
            vectors_config={},
        )
        self._conn.ensure_indexes(
            CHUNKS, keywords=("namespace", "document_id", "chunk_id", "generation"), tenant="namespace"
        )
        self._conn.ensure_indexes(
            DOCUMENTS, keywords=("namespace", "document_id", "state", "pending"), tenant="namespace"
        )
        self._ready = True

    def _check_meta(self, stored: dict[str, Any]) -> None:
        kind_check("chunks", SCHEMA)(stored)
        check_dense(self._conn.full(CHUNKS), stored, self._embedder, self._dimension)

    def _commit(self, namespace: str, document_id: str, generation: str, record: dict[str, Any]) -> None:
        full = self._conn.full(CHUNKS)
        mine = doc_filter(namespace, document_id, [codec.match("generation", generation)])
        self._conn.call("publish chunks", "set_payload", full, {"live": True}, points=mine, wait=True)
        older = doc_filter(namespace, document_id)
        older.must_not = [codec.match("generation", generation)]
        self._delete_chunks(older, "delete old chunks")
        payload = self._doc_payload(namespace, document_id) or {}
        done = {
            "state": "ready",
            "generation": generation,
            "record": record,
            "pending": payload.get("pending"),
        }
        self._upsert_doc(
            namespace, document_id, done | {"next_generation": None, "next_record": None, "next_chunks": None}
        )

    def _delete_chunks(self, where: Any, action: str = "delete chunks") -> None:
        selector = models().FilterSelector(filter=where)
        self._conn.call(action, "delete", self._conn.full(CHUNKS), points_selector=selector, wait=True)

    def _delete_doc(self, namespace: str, document_id: str) -> None:
        selector = models().PointIdsList(points=[document_point_id(namespace, document_id)])
        self._conn.call(
            "delete a document", "delete", self._conn.full(DOCUMENTS), points_selector=selector, wait=True
        )

    def _query(
        self, namespace: str, query: Any, using: str, limit: int, extra: Sequence[Any] = ()
    ) -> dict[str, float]:
        where = live(models().Filter(must=[codec.match("namespace", namespace), *extra]))
        response = self._conn.call(
            "search",
            "query_points",
            self._conn.full(CHUNKS),
            query=query,
            using=using,
            query_filter=where,
            limit=int(limit),
            with_payload=["chunk_id"],
        )
        return {
            p.payload["chunk_id"]: float(p.score) for p in response.points if p.score > 0 or using != LEXICAL
        }

    def _doc_payload(self, namespace: str, document_id: str) -> dict[str, Any] | None:
        self._ensure()
        found = self._conn.call(
            "retrieve",
            "retrieve",
            self._conn.full(DOCUMENTS),
            [document_point_id(namespace, document_id)],
            with_payload=True,
        )
        return dict(found[0].payload) if found else None

    def _upsert_doc(self, namespace: str, document_id: str, payload: dict[str, Any]) -> None:
        point = models().PointStruct(
            id=document_point_id(namespace, document_id),
            vector={},
            payload={"namespace": namespace, "document_id": document_id, **payload},
        )
        self._conn.call("write a document", "upsert", self._conn.full(DOCUMENTS), points=[point], wait=True)

    def _set_doc(self, namespace: str, document_id: str, payload: dict[str, Any]) -> None:
        self._conn.call(
            "mark a document",
            "set_payload",
            self._conn.full(DOCUMENTS),
            payload,
            points=[document_point_id(namespace, document_id)],
            wait=True,
        )
