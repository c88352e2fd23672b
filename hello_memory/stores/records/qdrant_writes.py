"""Writes of the Qdrant record store: one conditional upsert per memory, then its history.

A mixin of :class:`~hello_memory.stores.records.qdrant.QdrantRecordStore`; see there for the
consistency rules these implement (insert-only / version-filtered upserts, ``recent_writes``,
the history outbox).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from hello_memory.errors import InvalidInputError, NotFoundError, StoreError
from hello_memory.language.text import lexical_tokens
from hello_memory.models import MemoryItem
from hello_memory.stores.qdrant_connection import models
from hello_memory.stores.records import qdrant_codec as codec
from hello_memory.stores.records.base import RecordWrite, StoredRecord
from hello_memory.stores.records.checks import same_memory, stale, taken
from hello_memory.stores.records.qdrant_lexical import Document
from hello_memory.stores.records.qdrant_reads import DENSE, HISTORY, LEXICAL, RECORDS, RecordReads
from hello_memory.stores.sparse import index_terms


class RecordWrites(RecordReads):
    """The write side of the Qdrant record store."""

    def _point(self, memory_id: str, dense: bool = False) -> Any:
        records = self._conn.call(
            "retrieve",
            "retrieve",
            self._conn.full(RECORDS),
            [memory_id],
            with_payload=codec.RECORD_FIELDS,
            with_vectors=[DENSE] if dense else False,
        )
        return records[0] if records else None

    def _apply_one(
        self, w: RecordWrite, doc: Document, seq: int, vector: list[float] | None, landed: list[str]
    ) -> StoredRecord:
        """Apply one write; the id of an insert that this call stored is appended to ``landed``."""
        item = w.item
        keep_dense = w.expected_version is not None and vector is None and item.deleted_at is None
        existing = self._point(item.id, dense=keep_dense and self._dimension is not None)
        if w.expected_version is None:
            if existing is not None:
                return self._repeat(existing, item)
            book = _book(1, seq, w, None, item)
            return self._write(item, book, doc, vector, insert=True, expected=None, landed=landed)
        if existing is None or existing.payload.get("user_id") != item.user_id:
            raise NotFoundError(f"no memory {item.id!r} for user {item.user_id!r}", object_id=item.id)
        stored_version = int(existing.payload["version"])
        if stored_version != w.expected_version:
            raise stale(item.id, w.expected_version, stored_version)
        if existing.payload["memory_type"] != item.memory_type.value:
            raise InvalidInputError(
                "a memory's tier cannot change; store a new memory instead", field="memory_type"
            )
        if keep_dense and isinstance(existing.vector, dict) and existing.vector.get(DENSE) is not None:
            vector = list(existing.vector[DENSE])
        book = _book(stored_version + 1, int(existing.payload.get("seq") or seq), w, existing.payload, item)
        return self._write(item, book, doc, vector, insert=False, expected=stored_version)

    def _repeat(self, existing: Any, item: MemoryItem) -> StoredRecord:
        """An insert of a stored id: the duplicate policy (a retry is a no-op; anything else conflicts)."""
        stored = codec.item_of(existing.payload)
        if not same_memory(stored, item):
            raise taken(item.id)
        self._flush(existing)
        return StoredRecord(stored, int(existing.payload["version"]))

    def _write(
        self,
        item: MemoryItem,
        book: codec.Bookkeeping,
        doc: Document,
        vector: list[float] | None,
        *,
        insert: bool,
        expected: int | None,
        landed: list[str] | None = None,
    ) -> StoredRecord:
        m = models()
        own = index_terms(lexical_tokens(item.content))
        vectors: dict[str, Any] = {}
        if item.deleted_at is None:
            indices, values = self._encoder.document(doc[0], context=doc[1])
            if indices:
                vectors[LEXICAL] = m.SparseVector(indices=indices, values=values)
            if vector is not None:
                vectors[DENSE] = vector
        point = m.PointStruct(id=item.id, vector=vectors, payload=codec.record_payload(item, book, own))
        options: dict[str, Any] = (
            {"update_mode": m.UpdateMode.INSERT_ONLY}
            if insert
            else {
                "update_filter": m.Filter(must=[codec.match("version", expected)]),
                "ordering": m.WriteOrdering.STRONG,
            }
        )
        self._conn.call(
            "write a memory", "upsert", self._conn.full(RECORDS), points=[point], wait=True, **options
        )
        point = self._point(item.id)
        if point is None:
            raise StoreError(f"memory {item.id!r} was deleted while it was written; write it again")
        if book.write_id not in (point.payload.get("recent_writes") or ()):
            if insert:
                return self._repeat(point, item)
            raise stale(item.id, int(expected or 0), int(point.payload["version"]))
        if insert and landed is not None:
            landed.append(item.id)
        self._flush(point)
        return StoredRecord(item, book.version)

    def _flush(self, point: Any) -> None:
        """Copy a record's outbox to the history collection, then empty it (if no newer write came)."""
        outbox = point.payload.get("outbox") or []
        if not outbox:
            return
        m = models()
        mid, uid = str(point.id), point.payload["user_id"]
        history = [
            m.PointStruct(
                id=codec.history_id(mid, int(e["seq"])),
                vector={},
                payload={"user_id": uid, "memory_id": mid, "seq": int(e["seq"]), "entry": e["entry"]},
            )
            for e in outbox
        ]
        self._conn.call("write history", "upsert", self._conn.full(HISTORY), points=history, wait=True)
        mine = m.Filter(must=[codec.has_ids([mid]), codec.match("write_id", point.payload["write_id"])])
        self._conn.call(
            "clear the outbox",
            "set_payload",
            self._conn.full(RECORDS),
            {"outbox": []},
            points=mine,
            wait=True,
        )


def _book(
    version: int, seq: int, w: RecordWrite, existing: dict[str, Any] | None, item: MemoryItem
) -> codec.Bookkeeping:
    """The bookkeeping of a write: carried over from the stored point, plus this write's changes."""
    prior = existing or {}
    count = int(prior.get("history_count") or 0)
    pending, pending_ts, batch = prior.get("pending"), prior.get("pending_ts"), prior.get("pending_batch")
    if w.pending is not None:
        pending, pending_ts, batch = w.pending.value, time.time(), w.batch
    write_id = str(uuid.uuid4())
    return codec.Bookkeeping(
        version=version,
        write_id=write_id,
        seq=seq,
        history_count=count + len(w.history),
        outbox=list(prior.get("outbox") or []) + codec.outbox_entries(count, w.history),
        facts=w.facts if w.facts is not None else codec.facts_of(prior),
        pending=pending,
        pending_ts=pending_ts,
        access_count=int(prior.get("access_count") or item.access_count) if existing else item.access_count,
        last_accessed_ts=prior.get("last_accessed_ts") if existing else codec.ts(item.last_accessed_at),
        recent_writes=[*(prior.get("recent_writes") or []), write_id][-codec.RECENT_WRITES :],
        pending_batch=batch,
    )
