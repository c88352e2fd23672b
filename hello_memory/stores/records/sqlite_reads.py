"""Reads of the SQLite record store: the protocol's reads and the queries search makes."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from hello_memory.models import HistoryEntry, MemoryItem, MemoryType
from hello_memory.stores.records import sqlite_rows as layout
from hello_memory.stores.records.base import (
    Pending,
    PendingOp,
    RecordOrder,
    RecordQuery,
    RecordStats,
    ScoreRow,
    StoredRecord,
)
from hello_memory.stores.records.sqlite_lexical import ConversationLexicalIndex, fts_tokens, scope_token
from hello_memory.stores.sqlite_base import SQLiteDatabase
from hello_memory.validation import clamp_timestamp

_ORDER_SQL = {
    RecordOrder.NEWEST: "created_at DESC",
    RecordOrder.OLDEST: "created_at",
    RecordOrder.IMPORTANT: "importance DESC, created_at DESC",
}


def marks(ids: Sequence[str]) -> str:
    """``?,?,...`` for ``ids``."""
    return ",".join("?" * len(ids))


def batches(ids: Sequence[str], size: int = 500) -> Iterator[list[str]]:
    """The distinct ``ids`` in batches under SQLite's parameter limit."""
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), size):
        yield unique[start : start + size]


class SQLiteReads(ConversationLexicalIndex, SQLiteDatabase):
    """The read half of :class:`~hello_memory.stores.records.sqlite.SQLiteRecordStore`."""

    to_row = staticmethod(layout.to_row)
    from_row = staticmethod(layout.from_row)

    def conflicting_facts(self, user_id: str, subject_id: str, relation: str, object_id: str) -> list[str]:
        """Ids of current memories asserting (subject, relation, another object)."""
        rows = self.query(
            "SELECT DISTINCT f.memory_id FROM facts f JOIN memories m ON m.id=f.memory_id "
            "WHERE f.user_id=? AND f.subject_id=? AND f.relation=? AND f.object_id<>? "
            "AND m.deleted_at IS NULL AND json_extract(m.fields,'$.valid_to') IS NULL",
            (user_id, subject_id, relation, object_id),
        )
        return [r[0] for r in rows]

    def get_meta(self, key: str) -> str | None:
        """Read a key from the meta table."""
        rows = self.query("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else None

    def pending(self) -> list[tuple[str, str, str]]:
        """Unfinished vector operations as (memory_id, user_id, op)."""
        return [(r[0], r[1], r[2]) for r in self.query("SELECT memory_id,user_id,op FROM pending")]

    @property
    def exclusive(self) -> bool:
        """True: the data directory's file belongs to one process while it is open."""
        return True

    def fetch(
        self, ids: Sequence[str], user_id: str | None, *, include_deleted: bool = False
    ) -> dict[str, MemoryItem]:
        """Memories by id, restricted to ``user_id`` (``None`` = any user, internal use only)."""
        out: dict[str, MemoryItem] = {}
        for part, marks in layout.id_batches(ids):
            sql = f"SELECT {','.join(layout.COLUMNS)} FROM memories WHERE id IN ({marks})"
            params: list[Any] = list(part)
            if user_id is not None:  # "+": look rows up by id, not by scanning the user's index
                sql += " AND +user_id=?"
                params.append(user_id)
            if not include_deleted:
                sql += " AND deleted_at IS NULL"
            for row in self.query(sql, params):
                out[row[0]] = self.from_row(row)
        return out

    def previous_in_session(self, ids: Sequence[str], user_id: str) -> dict[str, str]:
        """For each of the user's live episodic memories among ``ids``, the turn before it in its
        session (by time, then insertion order: the order of the lexical conversation context).

        One index probe per memory (``ix_mem_user_session_created``), however long the session.
        """
        out: dict[str, str] = {}
        for part, marks in layout.id_batches(ids):
            rows = self.query(
                "SELECT m.id, (SELECT p.id FROM memories p INDEXED BY ix_mem_user_session_created "
                "WHERE p.user_id=m.user_id AND p.session_id=m.session_id AND p.created_at<=m.created_at "
                "AND (p.created_at<m.created_at OR p.rowid<m.rowid) AND p.memory_type='episodic' "
                "AND p.deleted_at IS NULL ORDER BY p.created_at DESC, p.rowid DESC LIMIT 1) "
                f"FROM memories m WHERE m.id IN ({marks}) AND +m.user_id=? "
                "AND m.session_id IS NOT NULL AND m.memory_type='episodic' AND m.deleted_at IS NULL",
                [*part, user_id],
            )
            out.update((r[0], r[1]) for r in rows if r[1] is not None)
        return out

    def contents(self, ids: Sequence[str], user_id: str) -> dict[str, str]:
        """The text of the user's live memories among ``ids``."""
        out: dict[str, str] = {}
        for part, marks in layout.id_batches(ids):
            rows = self.query(
                f"SELECT id, content FROM memories WHERE id IN ({marks}) "
                "AND +user_id=? AND deleted_at IS NULL",
                [*part, user_id],
            )
            out.update((r[0], r[1]) for r in rows)
        return out

    def score_rows(self, ids: Sequence[str], user_id: str) -> dict[str, ScoreRow]:
        """The columns search scores with, for the user's live memories among ``ids``."""
        out: dict[str, ScoreRow] = {}
        for part, marks in layout.id_batches(ids):
            rows = self.query(
                "SELECT id, memory_type, importance, created_at, session_id, valid_to, modality, entity_ids, "
                "json_extract(fields, '$.participants') "
                f"FROM memories WHERE id IN ({marks}) AND +user_id=? AND deleted_at IS NULL",
                [*part, user_id],
            )
            for r in rows:
                out[r[0]] = ScoreRow(
                    r[0],
                    MemoryType(r[1]),
                    r[2],
                    clamp_timestamp(r[3]),
                    r[4],
                    None if r[5] is None else clamp_timestamp(r[5]),
                    r[6],
                    tuple(r[7].split()) if r[7] else (),
                    tuple(json.loads(r[8])) if r[8] and r[8] != "[]" else (),
                )
        return out

    def list_items(
        self,
        user_id: str,
        *,
        types: Sequence[str] | None = None,
        deleted: bool | None = False,
        session_id: str | None = None,
        time_range: tuple[float | None, float | None] | None = None,
        order: str = "created_at DESC",
        limit: int | None = None,
    ) -> list[MemoryItem]:
        """A user's memories, filtered (``deleted=None`` returns live and deleted).

        ``order`` is one of :data:`ORDERS` (anything else is :class:`InvalidInputError`).
        """
        order_sql = layout.order_sql(order)
        where, params = self._where(user_id, types, deleted, session_id, time_range)
        # Without statistics SQLite picks (user_id, created_at) to satisfy the ORDER BY and scans
        # every memory of the user; with a tier filter the (user_id, memory_type, ...) index wins.
        index = " INDEXED BY ix_mem_user_type_created" if types else ""
        sql = f"SELECT {','.join(layout.COLUMNS)} FROM memories{index} WHERE {where} ORDER BY {order_sql}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [self.from_row(r) for r in self.query(sql, params)]

    @staticmethod
    def _where(
        user_id: str,
        types: Sequence[str] | None,
        deleted: bool | None,
        session_id: str | None,
        time_range: tuple[float | None, float | None] | None,
        alias: str = "",
    ) -> tuple[str, list[Any]]:
        p = f"{alias}." if alias else ""
        clauses: list[str] = [f"{p}user_id=?"]
        params: list[Any] = [user_id]
        if types:
            clauses.append(f"{p}memory_type IN ({','.join('?' * len(types))})")
            params.extend(types)
        if deleted is not None:
            clauses.append(f"{p}deleted_at IS {'NOT ' if deleted else ''}NULL")
        if session_id is not None:
            clauses.append(f"{p}session_id=?")
            params.append(session_id)
        if time_range is not None:
            lo, hi = time_range
            if lo is not None:
                clauses.append(f"{p}created_at>=?")
                params.append(lo)
            if hi is not None:
                clauses.append(f"{p}created_at<=?")
                params.append(hi)
        return " AND ".join(clauses), params

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
        """BM25 (higher is better) of the user's live memories matching any of ``tokens``."""
        terms, postings = self._selective_terms(list(dict.fromkeys(fts_tokens(tokens))))
        if not terms:
            return {}
        match = "tokens:(" + " OR ".join(f'"{t}"' for t in terms) + ")"
        if self._scope_pays(user_id, postings):
            match = f'scope:"{scope_token(user_id)}" AND {match}'
        where, params = self._where(user_id, types, False, session_id, time_range, alias="m")
        sql = (
            "SELECT m.id, bm25(memories_fts, 0.0, 1.0) AS s FROM memories_fts "
            "JOIN memories m ON m.rowid = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {where} ORDER BY s LIMIT ?"
        )
        rows = self.query(sql, [match, *params, int(limit)])
        return {r[0]: -float(r[1]) for r in rows}

    def history(self, memory_id: str, user_id: str) -> list[HistoryEntry]:
        """Every recorded change of one of the user's memories, oldest first."""
        rows = self.query(
            "SELECT memory_id,event,old,new,at,actor FROM history WHERE memory_id=? AND +user_id=? ORDER BY seq",
            (memory_id, user_id),
        )
        return [
            HistoryEntry(
                memory_id=r[0],
                event=r[1],
                old=None if r[2] is None else json.loads(r[2]),
                new=None if r[3] is None else json.loads(r[3]),
                at=layout.dt_req(r[4]),
                actor=r[5],
            )
            for r in rows
        ]

    def users(self) -> list[str]:
        """Every user id with at least one memory row."""
        return [r[0] for r in self.query("SELECT DISTINCT user_id FROM memories")]

    def residue(self, user_id: str) -> dict[str, int]:
        """Rows left for ``user_id`` in every table (0 everywhere after :meth:`forget_user`)."""
        out = {
            t: self.query(f"SELECT COUNT(*) FROM {t} WHERE user_id=?", (user_id,))[0][0]
            for t in ("memories", "history", "pending", "facts")
        }
        out["lexical"] = self.query(
            "SELECT COUNT(*) FROM memories_fts WHERE scope=?", (scope_token(user_id),)
        )[0][0]
        return out

    def read(
        self, user_id: str, ids: Sequence[str], *, include_deleted: bool = False
    ) -> dict[str, StoredRecord]:
        """The user's memories among ``ids`` with their versions."""
        out: dict[str, StoredRecord] = {}
        for part in batches(ids):
            sql = f"SELECT {','.join(layout.COLUMNS)}, version FROM memories WHERE id IN ({marks(part)}) AND +user_id=?"
            if not include_deleted:
                sql += " AND deleted_at IS NULL"
            for row in self.query(sql, [*part, user_id]):
                out[row[0]] = StoredRecord(self.from_row(row[:-1]), int(row[-1]))
        return out

    def scan(self, user_id: str, query: RecordQuery) -> list[MemoryItem]:
        """The user's memories matching ``query`` (``types=()`` matches none)."""
        if query.types is not None and not query.types:
            return []
        return self.list_items(
            user_id,
            types=None if query.types is None else [t.value for t in query.types],
            deleted=query.deleted,
            session_id=query.session_id,
            time_range=query.time_range,
            order=_ORDER_SQL[RecordOrder(query.order)],
            limit=query.limit,
        )

    def ids(self, user_id: str) -> list[str]:
        """Every memory id of the user, live and soft-deleted."""
        return [r[0] for r in self.query("SELECT id FROM memories WHERE user_id=?", (user_id,))]

    def stats(self, user_id: str) -> RecordStats:
        """Counts per tier (live, soft-deleted) and mean importance of the live memories."""
        rows = self.query(
            "SELECT memory_type, deleted_at IS NULL, COUNT(*), SUM(importance) FROM memories "
            "WHERE user_id=? GROUP BY memory_type, deleted_at IS NULL",
            (user_id,),
        )
        live = {r[0]: int(r[2]) for r in rows if r[1]}
        total = sum(float(r[3]) for r in rows if r[1])
        return RecordStats(
            live=live,
            deleted={r[0]: int(r[2]) for r in rows if not r[1]},
            avg_importance=total / sum(live.values()) if live else 0.0,
        )

    def unsettled(self) -> list[Pending]:
        """Pending work of every user."""
        rows = self.query("SELECT memory_id, user_id, op, batch, at FROM pending")
        return [Pending(mid, uid, PendingOp(op), batch, float(at)) for mid, uid, op, batch, at in rows]
