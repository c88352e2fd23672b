"""Reads of the Qdrant record store: records, scans, lexical and dense search, history, counts.

A mixin of :class:`~hello_memory.stores.records.qdrant.QdrantRecordStore` (see there for the
layout and the consistency rules). Reads by id use ``retrieve`` and drop other users' points;
reads by condition scroll or query with the user's filter (:func:`~.qdrant_record_codec.scope_filter`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.errors import InvalidInputError
from hello_memory.models import HistoryEntry, MemoryItem, MemoryType
from hello_memory.stores.qdrant_connection import QdrantConnection, models
from hello_memory.stores.records import qdrant_codec as codec
from hello_memory.stores.records.base import (
    Pending,
    PendingOp,
    RecordOrder,
    RecordQuery,
    RecordStats,
    ScoreRow,
    StoredRecord,
)
from hello_memory.stores.records.qdrant_lexical import SessionContext
from hello_memory.stores.records.sqlite_lexical import evidence_weights
from hello_memory.stores.sparse import LexicalEncoder, index_terms, term_id
from hello_memory.stores.vectors.rules import existing_id_candidates, unit_vector

RECORDS, HISTORY = "records", "record_history"
DENSE, LEXICAL = "dense", "lexical"
_ORDER_KEYS = {
    RecordOrder.NEWEST: lambda it: (-it.created_at.timestamp(), it.id),
    RecordOrder.OLDEST: lambda it: (it.created_at.timestamp(), it.id),
    RecordOrder.IMPORTANT: lambda it: (-it.importance, -it.created_at.timestamp(), it.id),
}


class RecordReads:
    """The read side of the Qdrant record store."""

    _conn: QdrantConnection
    _encoder: LexicalEncoder
    _context: SessionContext
    _dimension: int | None

    def _ensure(self) -> None:
        """Open (create or check) the collections; provided by the store."""
        raise NotImplementedError

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

    def lexical_evidence(self, user_id: str, tokens: Sequence[str], ids: Sequence[str]) -> dict[str, float]:
        """How much of the query each of the user's live memories among ``ids`` matches, in [0, 1].

        The formula of ``SQLiteRecordStore.lexical_evidence`` (:func:`~.sqlite_lexical.evidence_weights`):
        a term is held when the memory's sparse lexical vector (its document, context included) has the
        term's id; ``n`` counts the live memories whose own terms (payload ``lex``) hold it, over every
        user as FTS5's statistics do; FTS5 counts documents with their context, so ``n`` here is lower
        for terms of conversation turns (a little more weight for them).
        """
        terms = list(dict.fromkeys(index_terms(tokens)))
        if not terms or not ids:
            return {}
        points = self._points(user_id, ids, ["deleted_ts"], vectors=[LEXICAL])
        points = [p for p in points if p.payload.get("deleted_ts") is None]
        if not points:
            return {}
        m, live = models(), codec.empty("deleted_ts")
        df = {
            t: self._conn.count(RECORDS, m.Filter(must=[live, m.FieldCondition(key="lex", match=m.MatchText(text=t))]))
            for t in terms
        }
        weight = evidence_weights(df, terms, self._conn.count(RECORDS, m.Filter(must=[live])))
        total = sum(weight.values())
        ids_of = {t: term_id(t) for t in terms}
        out: dict[str, float] = {}
        for p in points:
            vector = (p.vector or {}).get(LEXICAL)
            held = set(vector.indices) if vector is not None else set()
            out[str(p.id)] = sum(w for t, w in weight.items() if ids_of[t] in held) / total
        return out

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

    def users(self) -> list[str]:
        """Every user id with at least one memory (a maintenance call: it reads every point's user)."""
        self._ensure()
        points = self._conn.scroll_all(RECORDS, None, with_payload=["user_id"])
        return sorted({p.payload["user_id"] for p in points})

    def unsettled(self) -> list[Pending]:
        """Pending work of every user."""
        self._ensure()
        qfilter = models().Filter(must_not=[codec.empty("pending")])
        keys = ["user_id", "pending", "pending_batch", "pending_ts"]
        points = self._conn.scroll_all(RECORDS, qfilter, with_payload=keys)
        return [
            Pending(str(p.id), p.payload["user_id"], PendingOp(p.payload["pending"]), p.payload.get("pending_batch"),
                    float(p.payload.get("pending_ts") or 0.0))
            for p in points
        ]

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

    def dense_scores(self, user_id: str, vector: npt.ArrayLike, ids: Sequence[str]) -> dict[str, float]:
        """Cosine of ``vector`` with each of the user's live memories among ``ids``, scored by the
        server (a search restricted to those points) instead of sending their vectors back."""
        candidates = existing_id_candidates(ids)
        if not candidates:
            return {}
        self._ensure()
        if self._dimension is None:
            raise InvalidInputError("this record store has no dense vectors (no embedder configured)")
        query = unit_vector(RECORDS, vector, self._dimension).tolist()
        only = codec.scope_filter(user_id, extra=[models().HasIdCondition(has_id=candidates)])
        response = self._conn.call(
            "search", "query_points", self._conn.full(RECORDS),
            query=query, using=DENSE, query_filter=only, limit=len(candidates), with_payload=False,
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
