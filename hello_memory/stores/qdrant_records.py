"""Record store on Qdrant (server mode): each memory is one point holding its record and its vectors.

Nothing is local: any number of workers pointed at one Qdrant share one memory. One point per
memory (layout: :mod:`hello_memory.stores.qdrant_record_codec`) carries the full record, its dense
vector, a sparse lexical vector (:mod:`hello_memory.stores.sparse`), its facts, its pending marker
and its newest history entries, so **one upsert is the atomic write** — no journal for the memory's
own vectors. History is copied to ``<prefix>_record_history`` (payload-only points) right after.

Consistency (:mod:`hello_memory.stores.records` has the contract):

- Writes use ``wait=True``: applied (in the server's WAL) when they return, visible to every
  worker at once. A batch is applied memory by memory, in order.
- Inserts use ``update_mode=insert_only``, updates ``update_filter: version == expected`` with
  ``ordering=strong``; each write reads its point back and looks for its ``write_id`` among the
  point's ``recent_writes`` to learn whether it landed (a newer write may already have replaced
  it) or lost a race (then :class:`~hello_memory.errors.WriteConflictError`, or the duplicate
  policy's no-op for an identical insert). Retrying an insert after a timeout is therefore safe;
  retrying an update conflicts (its version is gone) and the caller re-reads.
- History entries travel in the record's ``outbox`` and are copied to the history collection
  after the write (idempotent ids); a reader merges both, so an entry is visible exactly when its
  change is. A later write carries unflushed entries over, so none is lost to a crash.
- Neighbours' lexical context (the session window) is derived data, refreshed right after the
  write; for that moment, or after a crash in between, a neighbour's context may lag
  (:meth:`QdrantRecordStore.rebuild_lexical` rebuilds it).

Example:
    >>> from hello_memory.models import MemoryItem
    >>> from hello_memory.stores.records import RecordWrite
    >>> store = QdrantRecordStore(":memory:")
    >>> item = MemoryItem(user_id="alice", memory_type="semantic", content="Alice likes green tea")
    >>> store.apply([RecordWrite(item)])[0].version
    1
    >>> list(store.lexical_search("alice", ["tea"], types=None, limit=3)) == [item.id]
    True
    >>> store.close()
"""

from __future__ import annotations

import itertools
import logging
import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.errors import (
    DimensionMismatchError,
    EmbedderMismatchError,
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from hello_memory.models import HistoryEntry, MemoryItem, MemoryType
from hello_memory.stores import qdrant_record_codec as codec
from hello_memory.stores.qdrant_common import QdrantConnection, models
from hello_memory.stores.qdrant_record_lexical import SessionContext
from hello_memory.stores.records import (
    Pending,
    PendingOp,
    RecordOrder,
    RecordQuery,
    RecordStats,
    RecordWrite,
    StoredRecord,
)
from hello_memory.stores.sparse import LexicalEncoder, index_terms
from hello_memory.stores.sqlite import ScoreRow
from hello_memory.stores.sqlite_records import check_writes, same_memory, stale, taken
from hello_memory.stores.vectors import existing_id_candidates, unit_vector
from hello_memory.text import lexical_tokens

logger = logging.getLogger(__name__)

RECORDS, HISTORY = "records", "record_history"
DENSE, LEXICAL = "dense", "lexical"
SCHEMA = 1
_ORDER_KEYS = {
    RecordOrder.NEWEST: lambda it: (-it.created_at.timestamp(), it.id),
    RecordOrder.OLDEST: lambda it: (it.created_at.timestamp(), it.id),
    RecordOrder.IMPORTANT: lambda it: (-it.importance, -it.created_at.timestamp(), it.id),
}


class QdrantRecordStore:
    """A :class:`~hello_memory.stores.records.RecordStore` on Qdrant (``qdrant-client``).

    Args:
        location / url / path / client: where Qdrant is (exactly one; see
            :class:`~hello_memory.stores.qdrant_common.QdrantConnection`). Local mode (``":memory:"``,
            ``path=``) locks a path to one client.
        api_key, timeout, retries, prefix: as for :class:`~hello_memory.stores.qdrant.QdrantVectorStore`.
        embedder, dimension: the dense vectors' embedder name and size (both or neither); recorded
            with the collection, and a store with others is refused.
        context_window: session neighbours in a memory's lexical document (``Settings.lexical_context_window``);
            the collection keeps the window it was created with.
        lexical: BM25 parameters for a new collection (an existing one keeps its own).
    """

    def __init__(
        self,
        location: str | None = None,
        *,
        url: str | None = None,
        path: str | None = None,
        api_key: str | None = None,
        timeout: float = 30,
        client: Any = None,
        prefix: str = "hm",
        retries: int = 3,
        embedder: str | None = None,
        dimension: int | None = None,
        context_window: int = 0,
        lexical: LexicalEncoder | None = None,
    ) -> None:
        if (embedder is None) != (dimension is None):
            raise InvalidInputError("give both embedder and dimension, or neither", field="embedder")
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
        ):
            raise InvalidInputError("dimension must be a positive int", field="dimension")
        if (
            isinstance(context_window, bool)
            or not isinstance(context_window, int)
            or not 0 <= context_window <= 10
        ):
            raise InvalidInputError("context_window must be an integer in [0, 10]", field="context_window")
        self._conn = QdrantConnection(
            location,
            url=url,
            path=path,
            api_key=api_key,
            timeout=timeout,
            client=client,
            prefix=prefix,
            retries=retries,
        )
        self._embedder, self._dimension = embedder, dimension
        self._wanted = {"window": context_window, "lexical": (lexical or LexicalEncoder()).to_json()}
        self._encoder = LexicalEncoder()
        self._context = SessionContext(self._conn, RECORDS, LEXICAL, 0)
        self._ready = False

    @property
    def backend(self) -> str:
        """``"qdrant"``."""
        return "qdrant"

    @property
    def keeps_vectors(self) -> bool:
        """True: the dense vector is part of the memory's point."""
        return True

    def __enter__(self) -> QdrantRecordStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes -------------------------------------------------------------------------------
    def apply(self, writes: Sequence[RecordWrite]) -> list[StoredRecord]:
        """Apply the writes memory by memory, in order (see the module docstring)."""
        check_writes(writes)
        self._ensure()
        vectors = [self._check_vector(w) for w in writes]
        plan = self._context.plan([w.item for w in writes])
        out: list[StoredRecord] = []
        try:
            for w, vector in zip(writes, vectors, strict=True):
                out.append(self._apply_one(w, plan.documents[w.item.id], plan.seqs[w.item.id], vector))
        finally:
            self._context.refresh(plan, self._encoder)
        return out

    def mark(self, user_id: str, ids: Sequence[str], op: PendingOp) -> None:
        """Set the pending marker of the user's memories ``ids``."""
        self._set_where(user_id, ids, {"pending": PendingOp(op).value, "pending_ts": time.time()})

    def settle(self, user_id: str, ids: Sequence[str]) -> None:
        """Clear the pending markers of the user's memories ``ids``."""
        self._set_where(user_id, ids, {"pending": None, "pending_ts": None})

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        """Hard-delete the user's memories: history first, then the point (which holds the marker)."""
        self._ensure()
        owned = {
            p.id: p
            for p in self._points(
                user_id, ids, ["user_id", *codec.TURN_FIELDS, "session_id", "memory_type", "deleted_ts"]
            )
        }
        if not owned:
            return 0
        plan = self._context.plan_removal(list(owned.values()))
        m = models()
        history = m.Filter(must=[codec.match("memory_id", list(owned)), codec.match("user_id", user_id)])
        self._conn.call(
            "delete history",
            "delete",
            self._conn.full(HISTORY),
            points_selector=m.FilterSelector(filter=history),
            wait=True,
        )
        self._conn.call(
            "delete",
            "delete",
            self._conn.full(RECORDS),
            points_selector=m.PointIdsList(points=list(owned)),
            wait=True,
        )
        self._context.refresh(plan, self._encoder)
        return len(owned)

    def record_access(self, user_id: str, ids: Sequence[str], at: datetime) -> None:
        """Count one access of each of the user's memories (best effort: last writer wins)."""
        points = self._points(user_id, ids, ["user_id", "access_count"])
        if not points:
            return
        m, stamp = models(), codec.ts(at)
        ops = [
            m.SetPayloadOperation(
                set_payload=m.SetPayload(
                    payload={
                        "access_count": int(p.payload.get("access_count") or 0) + 1,
                        "last_accessed_ts": stamp,
                    },
                    filter=m.Filter(must=[codec.has_ids([str(p.id)]), codec.match("user_id", user_id)]),
                )
            )
            for p in points
        ]
        self._conn.call("record accesses", "batch_update_points", self._conn.full(RECORDS), ops, wait=True)

    # -- reads --------------------------------------------------------------------------------
    def read(
        self, user_id: str, ids: Sequence[str], *, include_deleted: bool = False
    ) -> dict[str, StoredRecord]:
        """The user's memories among ``ids`` with their versions."""
        out: dict[str, StoredRecord] = {}
        for p in self._points(user_id, ids, codec.RECORD_FIELDS):
            if include_deleted or p.payload.get("deleted_ts") is None:
                out[str(p.id)] = StoredRecord(codec.item_of(p.payload), int(p.payload["version"]))
        return out

    def scan(self, user_id: str, query: RecordQuery) -> list[MemoryItem]:
        """The user's memories matching ``query``, in its order."""
        self._ensure()
        qfilter = codec.scope_filter(
            user_id,
            types=None if query.types is None else [MemoryType(t).value for t in query.types] or ["-"],
            deleted=query.deleted,
            session_id=query.session_id,
            time_range=query.time_range,
        )
        fields = ["record", "access_count", "last_accessed_ts"]
        items = [
            codec.item_of(p.payload) for p in self._conn.scroll_all(RECORDS, qfilter, with_payload=fields)
        ]
        items.sort(key=_ORDER_KEYS[RecordOrder(query.order)])
        return items if query.limit is None else items[: max(0, int(query.limit))]

    def ids(self, user_id: str) -> list[str]:
        """Every memory id of the user, live and soft-deleted."""
        self._ensure()
        qfilter = codec.scope_filter(user_id, deleted=None)
        return [str(p.id) for p in self._conn.scroll_all(RECORDS, qfilter, with_payload=False)]

    def score_rows(self, ids: Sequence[str], user_id: str) -> dict[str, ScoreRow]:
        """What the tier formulas need, for the user's live memories among ``ids``."""
        fields = ["user_id", "deleted_ts", "memory_type", "importance", "created_ts", "session_id"]
        fields += ["valid_to_ts", "modality", "entity_ids", "participants"]
        out: dict[str, ScoreRow] = {}
        for p in self._points(user_id, ids, fields):
            pl = p.payload
            if pl.get("deleted_ts") is None:
                out[str(p.id)] = ScoreRow(
                    str(p.id),
                    MemoryType(pl["memory_type"]),
                    float(pl["importance"]),
                    float(pl["created_ts"]),
                    pl.get("session_id"),
                    pl.get("valid_to_ts"),
                    pl.get("modality"),
                    tuple(pl.get("entity_ids") or ()),
                    tuple(pl.get("participants") or ()),
                )
        return out

    def contents(self, ids: Sequence[str], user_id: str) -> dict[str, str]:
        """The text of the user's live memories among ``ids``."""
        points = self._points(user_id, ids, ["user_id", "deleted_ts", "record"])
        return {
            str(p.id): p.payload["record"]["content"] for p in points if p.payload.get("deleted_ts") is None
        }

    def previous_in_session(self, ids: Sequence[str], user_id: str) -> dict[str, str]:
        """For each live episodic memory among ``ids``, the turn before it in its session."""
        points = self._points(user_id, ids, ["user_id", "deleted_ts", "memory_type", "session_id"])
        sessions = {
            p.payload["session_id"]
            for p in points
            if p.payload.get("deleted_ts") is None
            and p.payload.get("session_id") is not None
            and p.payload["memory_type"] == MemoryType.EPISODIC.value
        }
        wanted, out = {str(p.id) for p in points}, {}
        for session in sessions:
            turns = self._context.turns(user_id, session)
            for before, turn in itertools.pairwise(turns):
                if turn.id in wanted:
                    out[turn.id] = before.id
        return out

    def lexical_search(
        self,
        user_id: str,
        tokens: Sequence[str],
        *,
        types: Sequence[str] | None,
        limit: int,
        session_id: str | None = None,
        time_range: tuple[float | None, float | None] | None = None,
    ) -> dict[str, float]:
        """BM25-style scores (sparse vectors, server IDF) of the user's live memories."""
        terms = index_terms(tokens)
        if not terms or int(limit) <= 0:
            return {}
        self._ensure()
        indices, values = self._encoder.query(terms)
        qfilter = codec.scope_filter(user_id, types=types, session_id=session_id, time_range=time_range)
        response = self._conn.call(
            "search",
            "query_points",
            self._conn.full(RECORDS),
            query=models().SparseVector(indices=indices, values=values),
            using=LEXICAL,
            query_filter=qfilter,
            limit=int(limit),
            with_payload=False,
        )
        return {str(p.id): float(p.score) for p in response.points if p.score > 0}

    def history(self, memory_id: str, user_id: str) -> list[HistoryEntry]:
        """Every recorded change of one of the user's memories, in the order applied."""
        points = self._points(user_id, [memory_id], ["user_id", "history_count", "outbox"])
        if not points:
            return []
        record = points[0].payload
        qfilter = models().Filter(must=[codec.match("memory_id", memory_id), codec.match("user_id", user_id)])
        entries = {
            int(p.payload["seq"]): p.payload["entry"]
            for p in self._conn.scroll_all(HISTORY, qfilter, with_payload=True)
            if int(p.payload["seq"]) < int(record.get("history_count") or 0)
        }
        entries.update((int(e["seq"]), e["entry"]) for e in record.get("outbox") or ())
        return [HistoryEntry.model_validate(entries[s]) for s in sorted(entries)]

    def conflicting_facts(self, user_id: str, subject_id: str, relation: str, object_id: str) -> list[str]:
        """Ids of the user's current memories asserting (subject, relation, another object)."""
        self._ensure()
        key = codec.fact_strings([codec.Fact(subject_id, relation, object_id)])[1][0]
        qfilter = codec.scope_filter(
            user_id, extra=[codec.match("fact_keys", key), codec.empty("valid_to_ts")]
        )
        out = []
        for p in self._conn.scroll_all(RECORDS, qfilter, with_payload=["facts"]):
            facts = codec.facts_of(p.payload)
            if any(
                (f.subject_id, f.relation) == (subject_id, relation) and f.object_id != object_id
                for f in facts
            ):
                out.append(str(p.id))
        return sorted(out)

    def stats(self, user_id: str) -> RecordStats:
        """Counts per tier (live, soft-deleted) and mean importance of the live memories."""
        self._ensure()
        qfilter = codec.scope_filter(user_id, deleted=None)
        live: dict[str, int] = {}
        deleted: dict[str, int] = {}
        total = 0.0
        for p in self._conn.scroll_all(
            RECORDS, qfilter, with_payload=["memory_type", "deleted_ts", "importance"]
        ):
            tier = p.payload["memory_type"]
            if p.payload.get("deleted_ts") is None:
                live[tier] = live.get(tier, 0) + 1
                total += float(p.payload["importance"])
            else:
                deleted[tier] = deleted.get(tier, 0) + 1
        return RecordStats(live, deleted, total / sum(live.values()) if live else 0.0)

    def unsettled(self) -> list[Pending]:
        """Pending work of every user."""
        self._ensure()
        qfilter = models().Filter(must_not=[codec.empty("pending")])
        points = self._conn.scroll_all(RECORDS, qfilter, with_payload=["user_id", "pending"])
        return [Pending(str(p.id), p.payload["user_id"], PendingOp(p.payload["pending"])) for p in points]

    # -- dense vectors (kept with the record; outside the RecordStore protocol) ----------------
    def dense_search(
        self,
        user_id: str,
        vector: npt.ArrayLike,
        *,
        limit: int,
        types: Sequence[str] | None = None,
        session_id: str | None = None,
        time_range: tuple[float | None, float | None] | None = None,
    ) -> dict[str, float]:
        """Cosine similarity of the user's live memories nearest to ``vector``."""
        self._ensure()
        if self._dimension is None:
            raise InvalidInputError("this record store has no dense vectors (no embedder configured)")
        query = unit_vector(RECORDS, vector, self._dimension)
        if int(limit) <= 0:
            return {}
        qfilter = codec.scope_filter(user_id, types=types, session_id=session_id, time_range=time_range)
        response = self._conn.call(
            "search",
            "query_points",
            self._conn.full(RECORDS),
            query=query.tolist(),
            using=DENSE,
            query_filter=qfilter,
            limit=int(limit),
            with_payload=False,
        )
        return {str(p.id): float(p.score) for p in response.points}

    def dense_vectors(self, user_id: str, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The stored (unit) dense vectors of the user's live memories among ``ids``."""
        points = self._points(user_id, ids, ["user_id", "deleted_ts"], vectors=[DENSE])
        out = {}
        for p in points:
            vec = (p.vector or {}).get(DENSE) if isinstance(p.vector, dict) else None
            if vec is not None and p.payload.get("deleted_ts") is None:
                out[str(p.id)] = np.asarray(vec, dtype=np.float32)
        return out

    # -- deletion and lifecycle ----------------------------------------------------------------
    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete every record and history entry of the user; returns the counts."""
        self._ensure()
        m = models()
        qfilter = m.Filter(must=[codec.match("user_id", user_id)])
        counts = {}
        for name, key in (
            (HISTORY, "history"),
            (RECORDS, "records"),
        ):  # the records last: they hold the markers
            counts[key] = self._conn.count(name, qfilter)
            if counts[key]:
                selector = m.FilterSelector(filter=qfilter)
                self._conn.call(
                    "forget a user", "delete", self._conn.full(name), points_selector=selector, wait=True
                )
        return counts

    def residue(self, user_id: str) -> dict[str, int]:
        """Points left for the user in each collection (0 everywhere after :meth:`forget_user`)."""
        self._ensure()
        qfilter = models().Filter(must=[codec.match("user_id", user_id)])
        return {"records": self._conn.count(RECORDS, qfilter), "history": self._conn.count(HISTORY, qfilter)}

    def rebuild_lexical(self, user_id: str | None = None) -> int:
        """Re-encode the lexical vectors of every live memory (of one user); returns how many."""
        self._ensure()
        return self._context.rebuild(self._encoder, user_id)

    def scrub(self, *, vacuum: bool = False) -> None:
        """No-op: a server manages its own storage (deleted points are gone from every read)."""

    def close(self) -> None:
        """Close the client if this store built it; idempotent."""
        self._conn.close()

    # -- internals ------------------------------------------------------------------------------
    def _ensure(self) -> None:
        if self._ready:
            return
        m = models()
        vectors = (
            {}
            if self._dimension is None
            else {DENSE: m.VectorParams(size=self._dimension, distance=m.Distance.COSINE)}
        )
        meta = {
            "kind": "records",
            "schema": SCHEMA,
            "embedder": self._embedder,
            "dimension": self._dimension,
            **self._wanted,
        }
        stored = self._conn.ensure_collection(
            RECORDS,
            meta,
            self._check_meta,
            vectors_config=vectors,
            sparse_vectors_config={LEXICAL: m.SparseVectorParams(modifier=m.Modifier.IDF)},
        )
        self._conn.ensure_collection(
            HISTORY, {"kind": "record_history", "schema": SCHEMA}, _kind("record_history"), vectors_config={}
        )
        self._encoder = LexicalEncoder.from_json(stored["lexical"])
        if stored["window"] != self._wanted["window"]:
            logger.warning(
                "%s keeps lexical context window %s (not %s)",
                self._conn.full(RECORDS),
                stored["window"],
                self._wanted["window"],
            )
        self._context = SessionContext(self._conn, RECORDS, LEXICAL, int(stored["window"]))
        self._conn.ensure_indexes(
            RECORDS, keywords=codec.KEYWORD_KEYS, floats=codec.FLOAT_KEYS, tenant="user_id"
        )
        self._conn.ensure_indexes(HISTORY, keywords=("user_id", "memory_id"), tenant="user_id")
        self._ready = True

    def _check_meta(self, stored: dict[str, Any]) -> None:
        _kind("records")(stored)
        name = self._conn.full(RECORDS)
        if self._dimension is None:
            return
        if stored.get("dimension") is None:
            raise EmbedderMismatchError(name, "(no dense vectors)", str(self._embedder))
        if stored["dimension"] != self._dimension:
            raise DimensionMismatchError(
                name, int(stored["dimension"]), self._dimension, embedder=self._embedder
            )
        if stored.get("embedder") != self._embedder:
            raise EmbedderMismatchError(name, str(stored.get("embedder")), str(self._embedder))

    def _check_vector(self, w: RecordWrite) -> list[float] | None:
        if w.vector is None:
            return None
        if self._dimension is None:
            raise InvalidInputError(
                "this record store keeps no dense vectors (no embedder configured)", field="vector"
            )
        return unit_vector(RECORDS, w.vector, self._dimension).tolist()

    def _points(self, user_id: str, ids: Sequence[str], fields: list[str], vectors: Any = False) -> list[Any]:
        """The user's points among ``ids`` (other users' are dropped)."""
        candidates = existing_id_candidates(ids)
        if not candidates:
            return []
        self._ensure()
        fields = fields if "user_id" in fields else [*fields, "user_id"]
        records = self._conn.call(
            "retrieve",
            "retrieve",
            self._conn.full(RECORDS),
            candidates,
            with_payload=fields,
            with_vectors=vectors,
        )
        return [r for r in records if (r.payload or {}).get("user_id") == user_id]

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

    def _set_where(self, user_id: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        candidates = existing_id_candidates(ids)
        if not candidates:
            return
        self._ensure()
        qfilter = models().Filter(must=[codec.has_ids(candidates), codec.match("user_id", user_id)])
        self._conn.call(
            "set a marker", "set_payload", self._conn.full(RECORDS), payload, points=qfilter, wait=True
        )

    def _apply_one(
        self, w: RecordWrite, terms: list[str], seq: int, vector: list[float] | None
    ) -> StoredRecord:
        item = w.item
        keep_dense = w.expected_version is not None and vector is None and item.deleted_at is None
        existing = self._point(item.id, dense=keep_dense and self._dimension is not None)
        if w.expected_version is None:
            if existing is not None:
                return self._repeat(existing, item)
            book = _book(1, seq, w, None, item)
            return self._write(item, book, terms, vector, insert=True, expected=None)
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
        return self._write(item, book, terms, vector, insert=False, expected=stored_version)

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
        terms: list[str],
        vector: list[float] | None,
        *,
        insert: bool,
        expected: int | None,
    ) -> StoredRecord:
        m = models()
        own = index_terms(lexical_tokens(item.content))
        vectors: dict[str, Any] = {}
        if item.deleted_at is None:
            indices, values = self._encoder.document(terms)
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
        landed = self._point(item.id)
        if landed is None:
            raise StoreError(f"memory {item.id!r} was deleted while it was written; write it again")
        if book.write_id not in (landed.payload.get("recent_writes") or ()):
            if insert:
                return self._repeat(landed, item)
            raise stale(item.id, int(expected or 0), int(landed.payload["version"]))
        self._flush(landed)
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
    pending, pending_ts = prior.get("pending"), prior.get("pending_ts")
    if w.pending is not None:
        pending, pending_ts = w.pending.value, time.time()
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
    )


def _kind(kind: str) -> Any:
    def check(stored: dict[str, Any]) -> None:
        if stored.get("kind") != kind or int(stored.get("schema", 0)) > SCHEMA:
            raise StoreError(
                f"collection holds {stored.get('kind')!r} schema {stored.get('schema')}, not {kind!r} schema {SCHEMA}"
            )

    return check
