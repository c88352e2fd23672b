"""Record store on Qdrant (server mode): each memory is one point holding its record and its vectors.

Nothing is local: any number of workers pointed at one Qdrant share one memory. One point per
memory (layout: :mod:`hello_memory.stores.records.qdrant_codec`) carries the full record, its dense
vector, a sparse lexical vector (:mod:`hello_memory.stores.sparse`), its facts, its pending marker
and its newest history entries, so **one upsert is the atomic write** — no journal for the memory's
own vectors. History is copied to ``<prefix>_record_history`` (payload-only points) right after.

Consistency (:mod:`hello_memory.stores.records.base` has the contract):

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
    >>> from hello_memory.stores.records.base import RecordWrite
    >>> store = QdrantRecordStore(":memory:")
    >>> item = MemoryItem(user_id="alice", memory_type="semantic", content="Alice likes green tea")
    >>> store.apply([RecordWrite(item)])[0].version
    1
    >>> list(store.lexical_search("alice", ["tea"], types=None, limit=3)) == [item.id]
    True
    >>> store.close()
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn

from hello_memory.errors import HelloMemoryError, InvalidInputError, StoreError
from hello_memory.stores.qdrant_connection import QdrantConnection, check_dense, kind_check, models
from hello_memory.stores.records import qdrant_codec as codec
from hello_memory.stores.records.base import (
    FollowUp,
    FollowUpFailed,
    RecordWrite,
    Stored,
    StoredRecord,
)
from hello_memory.stores.records.checks import check_writes
from hello_memory.stores.records.qdrant_ledger import QdrantTurnLedger
from hello_memory.stores.records.qdrant_lexical import SessionContext
from hello_memory.stores.records.qdrant_markers import RecordMarkers
from hello_memory.stores.records.qdrant_reads import DENSE, HISTORY, LEXICAL, RECORDS
from hello_memory.stores.sparse import LexicalEncoder
from hello_memory.stores.vectors.rules import unit_vector

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from hello_memory.stores.qdrant_connection import QdrantOptions

logger = logging.getLogger(__name__)

SCHEMA = 1


class QdrantRecordStore(QdrantTurnLedger, RecordMarkers):
    """A :class:`~hello_memory.stores.records.base.RecordStore` on Qdrant (``qdrant-client``).

    Args:
        location, **connection: where Qdrant is (``location``, ``url``, ``path`` or ``client``: exactly
            one) and how to talk to it (``api_key``, ``timeout``, ``retries``, ``prefix``); see
            :class:`~hello_memory.stores.qdrant_connection.QdrantConnection`. Local mode (``":memory:"``,
            ``path=``) locks a path to one client.
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
        embedder: str | None = None,
        dimension: int | None = None,
        context_window: int = 0,
        lexical: LexicalEncoder | None = None,
        **connection: Unpack[QdrantOptions],
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
        self._conn = QdrantConnection(location, **connection)
        self._embedder, self._dimension = embedder, dimension
        lexical = lexical or LexicalEncoder.for_window(context_window)
        self._wanted = {"window": context_window, "lexical": lexical.to_json()}
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

    def client(self) -> Any:
        """The ``qdrant-client`` client (built on first use): pass it to the graph and vector stores
        of the same deployment so that they share one connection (and, in local mode, one engine)."""
        return self._conn.client()

    def use_embedder(self, embedder: str, dimension: int) -> None:
        """Name the dense vectors' embedder now (before the first call), if the constructor did not.

        Raises:
            EmbedderMismatchError / DimensionMismatchError: the store already names another one.
        """
        if self._dimension is None and not self._ready:
            if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
                raise InvalidInputError("dimension must be a positive int", field="dimension")
            self._embedder, self._dimension = embedder, dimension
            return
        check_dense(self._conn.full(RECORDS), {"embedder": self._embedder, "dimension": self._dimension},
                    embedder, dimension)

    def __enter__(self) -> QdrantRecordStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes -------------------------------------------------------------------------------
    def apply(self, writes: Sequence[RecordWrite]) -> list[StoredRecord]:
        """Apply the writes memory by memory, in order (see the module docstring)."""
        return self._apply(writes, [])

    def _apply(self, writes: Sequence[RecordWrite], landed: list[str]) -> list[StoredRecord]:
        check_writes(writes)
        self._ensure()
        vectors = [self._check_vector(w) for w in writes]
        plan = self._context.plan([w.item for w in writes])
        out: list[StoredRecord] = []
        try:
            for w, vector in zip(writes, vectors, strict=True):
                out.append(self._apply_one(w, plan.documents[w.item.id], plan.seqs[w.item.id], vector, landed))
        finally:
            self._context.refresh(plan, self._encoder)
        return out

    def write(self, writes: Sequence[RecordWrite], then: FollowUp | None = None, *, hold: bool = True) -> Stored:
        """The write unit (see :meth:`~hello_memory.stores.records.base.RecordStore.write`).

        Each point is committed when it is written, with its marker, so ``hold`` holds nothing: a
        failure of ``then`` leaves the records and their markers for recovery (``rolled_back`` is
        False). A batch that fails midway is taken back: the inserts it stored are deleted again.
        """
        landed: list[str] = []
        try:
            stored = self._apply(writes, landed)
        except (HelloMemoryError, OSError) as e:
            self._take_back(writes, landed, e)
        if then is not None:
            try:
                then(stored)
            except Exception as e:
                raise FollowUpFailed(e, rolled_back=False, stored=stored) from e
        return stored

    def _take_back(self, writes: Sequence[RecordWrite], landed: list[str], error: Exception) -> NoReturn:
        """A batch failed midway: delete the inserts it stored, so the batch is all or nothing."""
        users = {w.item.id: w.item.user_id for w in writes}
        try:
            for mid in landed:
                self.delete(users[mid], [mid])
        except (StoreError, OSError) as undo_error:
            raise StoreError(
                f"a write failed midway ({error}), and what it stored could not be taken back ({undo_error}): "
                "retry with the same memory_id values (stored ones are returned, not stored twice)"
            ) from error
        if isinstance(error, HelloMemoryError) and type(error) is not StoreError:
            raise error  # a typed failure (an id conflict, disk full on the server) keeps its type
        raise StoreError(f"the write failed, nothing was stored: {error}") from error

    def delete(self, user_id: str, ids: Sequence[str], *, keep_pending: bool = False) -> int:
        """Hard-delete the user's memories: history first, then the point (which holds the marker).

        ``keep_pending`` cannot be honoured: the marker lives in the point and goes with it (a
        graph left behind is repaired by ``hello-memory reindex --graph``, which unlinks memories
        without a record).
        """
        self._ensure()
        owned = {
            str(p.id): p
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

    # -- deletion and lifecycle ----------------------------------------------------------------
    def forget_user(self, user_id: str, *, keep_pending: bool = False) -> dict[str, int]:
        """Delete every record and history entry of the user; returns the counts (``keep_pending``: see
        :meth:`delete`)."""
        self._ensure()
        m = models()
        qfilter = m.Filter(must=[codec.match("user_id", user_id)])
        counts = {}
        for name, key in (
            (HISTORY, "history"),
            (RECORDS, "memories"),
        ):  # the records last: they hold the markers
            counts[key] = self._conn.count(name, qfilter)
            if counts[key]:
                selector = m.FilterSelector(filter=qfilter)
                self._conn.call(
                    "forget a user", "delete", self._conn.full(name), points_selector=selector, wait=True
                )
        counts["tombstones"] = self.forget_tombstones(user_id)
        return counts

    def residue(self, user_id: str) -> dict[str, int]:
        """Points left for the user in each collection (0 everywhere after :meth:`forget_user`)."""
        self._ensure()
        qfilter = models().Filter(must=[codec.match("user_id", user_id)])
        return {
            "records": self._conn.count(RECORDS, qfilter),
            "history": self._conn.count(HISTORY, qfilter),
            "tombstones": self.count_tombstones(user_id),
        }

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
            HISTORY,
            {"kind": "record_history", "schema": SCHEMA},
            kind_check("record_history", SCHEMA),
            vectors_config={},
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
            RECORDS, keywords=codec.KEYWORD_KEYS, floats=codec.FLOAT_KEYS, texts=("lex",), tenant="user_id"
        )
        self._conn.ensure_indexes(HISTORY, keywords=("user_id", "memory_id"), tenant="user_id")
        self._ready = True

    def _check_meta(self, stored: dict[str, Any]) -> None:
        kind_check("records", SCHEMA)(stored)
        check_dense(self._conn.full(RECORDS), stored, self._embedder, self._dimension)

    def _check_vector(self, w: RecordWrite) -> list[float] | None:
        if w.vector is None:
            return None
        if self._dimension is None:
            raise InvalidInputError(
                "this record store keeps no dense vectors (no embedder configured)", field="vector"
            )
        return unit_vector(RECORDS, w.vector, self._dimension).tolist()
