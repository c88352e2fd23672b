"""SQLite record store: memories, history, FTS5 lexical index, pending-index journal.

SQLite is the source of truth for memories. The FTS5 table (BM25 ranking, built into SQLite)
is written in the same transaction as the record, so the lexical index can never disagree
with the records. Writes that must also reach the vector index are journalled in ``pending``
in that same transaction and cleared once the vector write returned; on open, the owner
replays the journal (see :meth:`SQLiteRecordStore.pending`).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hello_memory.errors import DiskFullError, InvalidInputError
from hello_memory.models import Entity, HistoryEntry, MemoryItem, MemoryType, Modality, Relation
from hello_memory.stores.records.sqlite_lexical import ConversationLexicalIndex, fts_tokens, scope_token
from hello_memory.stores.records.sqlite_protocol import VERSION_TRIGGER, RecordStoreMethods
from hello_memory.stores.sqlite_base import SQLiteDatabase, sqlite_error
from hello_memory.validation import clamp_timestamp

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_COLUMNS = (
    "id",
    "user_id",
    "agent_id",
    "session_id",
    "memory_type",
    "content",
    "importance",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "access_count",
    "deleted_at",
    "metadata",
    "fields",
    "valid_to",
    "modality",
    "entity_ids",
)
_FIELDS = (
    "event_type",
    "context",
    "outcome",
    "participants",
    "tags",
    "entities",
    "relations",
    "valid_from",
    "valid_to",
    "superseded_by",
    "modality",
    "source_path",
    "media_hash",
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, agent_id TEXT, session_id TEXT,
    memory_type TEXT NOT NULL, content TEXT NOT NULL, importance REAL NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, last_accessed_at REAL,
    access_count INTEGER NOT NULL DEFAULT 0, deleted_at REAL,
    metadata TEXT NOT NULL DEFAULT '{}', fields TEXT NOT NULL DEFAULT '{}',
    valid_to REAL, modality TEXT, entity_ids TEXT NOT NULL DEFAULT '', lex TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS ix_mem_user_type ON memories(user_id, memory_type, deleted_at);
CREATE INDEX IF NOT EXISTS ix_mem_user_session_created ON memories(user_id, session_id, created_at);
CREATE INDEX IF NOT EXISTS ix_mem_user_created ON memories(user_id, created_at);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(scope, tokens, tokenize='unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS memories_vocab USING fts5vocab(memories_fts, 'col');
CREATE INDEX IF NOT EXISTS ix_mem_user_type_created ON memories(user_id, memory_type, created_at);
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, memory_id TEXT NOT NULL, user_id TEXT NOT NULL,
    event TEXT NOT NULL, old TEXT, new TEXT, at REAL NOT NULL, actor TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_hist_mem ON history(memory_id);
CREATE INDEX IF NOT EXISTS ix_hist_user ON history(user_id);
CREATE TABLE IF NOT EXISTS pending (
    memory_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, op TEXT NOT NULL, at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS facts (
    user_id TEXT NOT NULL, memory_id TEXT NOT NULL, subject_id TEXT NOT NULL,
    relation TEXT NOT NULL, object_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_facts_subject ON facts(user_id, subject_id, relation);
CREATE INDEX IF NOT EXISTS ix_facts_memory ON facts(memory_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _ts(dt: datetime | None) -> float | None:
    if dt is None:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _id_batches(ids: Sequence[str], size: int = 500) -> Iterator[tuple[list[str], str]]:
    """The distinct ``ids`` in batches under SQLite's parameter limit, each with its ``?,?,...``."""
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), size):
        part = unique[start : start + size]
        yield part, ",".join("?" * len(part))


def _dt(ts: float | None) -> datetime | None:
    return None if ts is None else _dt_req(ts)


def _dt_req(ts: float) -> datetime:
    # Clamped: a time written before inputs were range-checked (year 10000 in UTC) must not make
    # every read of its user fail.
    return datetime.fromtimestamp(clamp_timestamp(ts), tz=timezone.utc)


#: The orders :meth:`SQLiteRecordStore.list_items` accepts (a whitelist: ``order`` is never SQL).
ORDERS = {
    "created_at DESC": "created_at DESC",
    "created_at": "created_at",
    "created_at ASC": "created_at ASC",
    "importance DESC, created_at DESC": "importance DESC, created_at DESC",
}


def _order_sql(order: object) -> str:
    sql = ORDERS.get(order) if isinstance(order, str) else None
    if sql is None:
        raise InvalidInputError(f"order must be one of {sorted(ORDERS)}, got {order!r}", field="order")
    return sql


@dataclass(frozen=True, slots=True)
class ScoreRow:
    """What the tier formulas need of a memory, read without building the whole item."""

    id: str
    memory_type: MemoryType
    importance: float
    created_ts: float
    session_id: str | None
    valid_to_ts: float | None
    modality: str | None
    entity_ids: tuple[str, ...]
    participants: tuple[str, ...] = ()


# Columns added after the first release of the schema, with how to fill them from ``fields``.
_ADDED_COLUMNS = (
    ("valid_to", "REAL", "(julianday(json_extract(fields, '$.valid_to')) - 2440587.5) * 86400.0"),
    ("modality", "TEXT", "json_extract(fields, '$.modality')"),
    (
        "entity_ids",
        "TEXT NOT NULL DEFAULT ''",
        "coalesce((SELECT group_concat(json_extract(e.value, '$.id'), ' ') "
        "FROM json_each(fields, '$.entities') AS e), '')",
    ),
    # Own lexical tokens (the FTS document adds context); before it existed the FTS row held exactly these.
    (
        "lex",
        "TEXT NOT NULL DEFAULT ''",
        "coalesce((SELECT tokens FROM memories_fts f WHERE f.rowid = memories.rowid), '')",
    ),
    # Record version (RecordStore protocol): 1 when inserted, +1 per change (sqlite_records.VERSION_TRIGGER).
    ("version", "INTEGER NOT NULL DEFAULT 1", "1"),
)


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """Upgrade a ``memories`` table written by an earlier version (``CREATE IF NOT EXISTS`` keeps it)."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
    missing = [c for c in _ADDED_COLUMNS if c[0] not in have]
    if not missing:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for name, decl, fill in missing:
            conn.execute(f"ALTER TABLE memories ADD COLUMN {name} {decl}")
            conn.execute(f"UPDATE memories SET {name} = {fill}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    logger.info("added columns %s to memories", [c[0] for c in missing])


class SQLiteRecordStore(RecordStoreMethods, ConversationLexicalIndex, SQLiteDatabase):
    """Memories and their history in one SQLite file (WAL, transactions, versioned schema).

    Example:
        >>> store = SQLiteRecordStore("/tmp/hm-doc/records.db")
        >>> store.close()
    """

    schema = _SCHEMA
    schema_version = SCHEMA_VERSION

    def __init__(self, path: str | Path, *, context_window: int = 0) -> None:
        """Open (lazily) the store at ``path``.

        Args:
            context_window: session neighbours indexed lexically with each episodic memory
                (``Settings.lexical_context_window``); a file indexed with another window is
                re-indexed when opened.
        """
        if (
            isinstance(context_window, bool)
            or not isinstance(context_window, int)
            or not 0 <= context_window <= 10
        ):
            raise ValueError(f"context_window must be an integer in [0, 10], not {context_window!r}")
        self.context_window = context_window
        self._df_cache, self._user_docs = {}, {}
        super().__init__(path)

    def _migrate(self, conn: sqlite3.Connection) -> None:
        _add_missing_columns(conn)
        conn.execute("DROP INDEX IF EXISTS ix_mem_user_session")  # superseded by ix_mem_user_session_created
        conn.executescript(VERSION_TRIGGER)
        self._sync_context_window(conn)

    # -- rows -------------------------------------------------------------------------------
    @staticmethod
    def to_row(item: MemoryItem) -> tuple[Any, ...]:
        """Column values of ``item`` in ``_COLUMNS`` order."""
        data = item.model_dump(mode="json", include=set(_FIELDS))
        return (
            item.id,
            item.user_id,
            item.agent_id,
            item.session_id,
            item.memory_type.value,
            item.content,
            item.importance,
            _ts(item.created_at),
            _ts(item.updated_at),
            _ts(item.last_accessed_at),
            item.access_count,
            _ts(item.deleted_at),
            json.dumps(item.metadata, ensure_ascii=False),
            json.dumps(data, ensure_ascii=False),
            _ts(item.valid_to),
            item.modality.value if item.modality else None,
            " ".join(e.id for e in item.entities),
        )

    @staticmethod
    def from_row(row: Sequence[Any]) -> MemoryItem:
        """Rebuild a :class:`MemoryItem` from a row in ``_COLUMNS`` order.

        Rows were validated when written, so the model is constructed without re-validation
        (search reads ~100 rows per query; validating them again cost more than the search).
        """
        fields = {k: v for k, v in json.loads(row[13]).items() if v is not None}
        if "entities" in fields:
            fields["entities"] = [Entity.model_construct(**e) for e in fields["entities"]]
        if "relations" in fields:
            fields["relations"] = [Relation.model_construct(**r) for r in fields["relations"]]
        for key in ("valid_from", "valid_to"):
            if key in fields:
                fields[key] = datetime.fromisoformat(fields[key].replace("Z", "+00:00"))
        if "modality" in fields:
            fields["modality"] = Modality(fields["modality"])
        return MemoryItem.model_construct(
            id=row[0],
            user_id=row[1],
            agent_id=row[2],
            session_id=row[3],
            memory_type=MemoryType(row[4]),
            content=row[5],
            importance=row[6],
            created_at=_dt_req(row[7]),
            updated_at=_dt_req(row[8]),
            last_accessed_at=_dt(row[9]),
            access_count=row[10],
            deleted_at=_dt(row[11]),
            metadata=json.loads(row[12]),
            **fields,
        )

    # -- writes (call inside transaction()) --------------------------------------------------
    def insert(self, conn: sqlite3.Connection, item: MemoryItem, tokens: Sequence[str]) -> None:
        """Insert one memory and its lexical tokens (see :meth:`insert_many`)."""
        self.insert_many(conn, [(item, tokens)])

    def insert_many(
        self, conn: sqlite3.Connection, items: Sequence[tuple[MemoryItem, Sequence[str]]]
    ) -> None:
        """Insert memories with their lexical tokens; conversation context is refreshed once at the end."""
        touched: list[int] = []
        for item, tokens in items:
            cur = conn.execute(
                f"INSERT INTO memories ({','.join(_COLUMNS)}, lex) VALUES ({','.join('?' * (len(_COLUMNS) + 1))})",
                (*self.to_row(item), " ".join(fts_tokens(tokens))),
            )
            touched.append(int(cur.lastrowid or 0))
        self._refresh(conn, touched)

    def replace(self, conn: sqlite3.Connection, item: MemoryItem, tokens: Sequence[str] | None) -> None:
        """Overwrite a memory's row; re-index its tokens when ``tokens`` is given."""
        sets = ",".join(f"{c}=?" for c in _COLUMNS[1:])
        conn.execute(f"UPDATE memories SET {sets} WHERE id=?", (*self.to_row(item)[1:], item.id))
        if tokens is not None:
            self.reindex(conn, item, tokens)

    def delete_rows(self, conn: sqlite3.Connection, ids: Sequence[str]) -> None:
        """Delete memories, their tokens and facts (history is kept unless purged separately)."""
        neighbours: set[int] = set()
        for mid in ids:
            rowid = self._rowid(conn, mid)
            if rowid is None:
                continue
            neighbours.update(self._context_rowids(conn, rowid))
            self._fts_changed()
            conn.execute("DELETE FROM memories_fts WHERE rowid=?", (rowid,))
            conn.execute("DELETE FROM memories WHERE rowid=?", (rowid,))
            conn.execute("DELETE FROM facts WHERE memory_id=?", (mid,))
        self._refresh(conn, neighbours, include_context=False)

    def unindex(self, conn: sqlite3.Connection, memory_id: str) -> None:
        """Drop a memory's lexical tokens (soft delete: call after setting ``deleted_at``)."""
        rowid = self._rowid(conn, memory_id)
        if rowid is not None:
            self._fts_changed()
            conn.execute("DELETE FROM memories_fts WHERE rowid=?", (rowid,))
            self._refresh(conn, self._context_rowids(conn, rowid), include_context=False)

    def reindex(self, conn: sqlite3.Connection, item: MemoryItem, tokens: Sequence[str]) -> None:
        """Replace a memory's lexical tokens (content update, restore)."""
        conn.execute("UPDATE memories SET lex=? WHERE id=?", (" ".join(fts_tokens(tokens)), item.id))
        rowid = self._rowid(conn, item.id)
        if rowid is not None:
            self._refresh(conn, [rowid])

    def add_history(self, conn: sqlite3.Connection, entry: HistoryEntry, user_id: str) -> None:
        """Append one history entry."""
        conn.execute(
            "INSERT INTO history(memory_id,user_id,event,old,new,at,actor) VALUES (?,?,?,?,?,?,?)",
            (
                entry.memory_id,
                user_id,
                entry.event,
                None if entry.old is None else json.dumps(entry.old, ensure_ascii=False, default=str),
                None if entry.new is None else json.dumps(entry.new, ensure_ascii=False, default=str),
                _ts(entry.at),
                entry.actor,
            ),
        )

    def add_pending(self, conn: sqlite3.Connection, memory_id: str, user_id: str, op: str, at: float) -> None:
        """Journal a vector-index operation (``index`` or ``unindex``) for ``memory_id``."""
        conn.execute(
            "INSERT OR REPLACE INTO pending(memory_id,user_id,op,at) VALUES (?,?,?,?)",
            (memory_id, user_id, op, at),
        )

    def journal(self, entries: Sequence[tuple[str, str]], op: str, at: float) -> None:
        """Journal ``op`` for ``(memory_id, user_id)`` entries in a transaction of its own (committed now)."""
        if not entries:
            return
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO pending(memory_id,user_id,op,at) VALUES (?,?,?,?)",
                [(mid, uid, op, at) for mid, uid in entries],
            )

    def clear_pending(self, ids: Sequence[str]) -> None:
        """Remove journal entries whose vector operation completed."""
        if not ids:
            return
        with self.transaction() as conn:
            conn.executemany("DELETE FROM pending WHERE memory_id=?", [(i,) for i in ids])

    def pending(self) -> list[tuple[str, str, str]]:
        """Unfinished vector operations as (memory_id, user_id, op)."""
        return [(r[0], r[1], r[2]) for r in self.query("SELECT memory_id,user_id,op FROM pending")]

    def add_fact(
        self, conn: sqlite3.Connection, user_id: str, memory_id: str, s: str, rel: str, o: str
    ) -> None:
        """Record a functional fact (subject, relation, object) asserted by a memory."""
        conn.execute("INSERT INTO facts VALUES (?,?,?,?,?)", (user_id, memory_id, s, rel, o))

    def conflicting_facts(self, user_id: str, subject_id: str, relation: str, object_id: str) -> list[str]:
        """Ids of current memories asserting (subject, relation, another object)."""
        rows = self.query(
            "SELECT DISTINCT f.memory_id FROM facts f JOIN memories m ON m.id=f.memory_id "
            "WHERE f.user_id=? AND f.subject_id=? AND f.relation=? AND f.object_id<>? "
            "AND m.deleted_at IS NULL AND json_extract(m.fields,'$.valid_to') IS NULL",
            (user_id, subject_id, relation, object_id),
        )
        return [r[0] for r in rows]

    def touch(self, ids: Sequence[str], at: datetime) -> None:
        """Record an access (last_accessed_at, access_count) for ``ids``; best effort.

        A read must not fail because its bookkeeping cannot be written: on a full disk the access
        is not counted (logged) and the read goes on.
        """
        if not ids:
            return
        try:
            with self.transaction() as conn:
                conn.executemany(
                    "UPDATE memories SET last_accessed_at=?, access_count=access_count+1 WHERE id=?",
                    [(_ts(at), i) for i in ids],
                )
        except DiskFullError as e:
            logger.warning("access counts not updated: %s", e)

    def set_meta(self, key: str, value: str) -> None:
        """Store a key/value in the meta table."""
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta(key,value) VALUES (?,?)", (key, value))

    def get_meta(self, key: str) -> str | None:
        """Read a key from the meta table."""
        rows = self.query("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else None

    # -- reads ------------------------------------------------------------------------------
    def fetch(
        self, ids: Sequence[str], user_id: str | None, *, include_deleted: bool = False
    ) -> dict[str, MemoryItem]:
        """Memories by id, restricted to ``user_id`` (``None`` = any user, internal use only)."""
        out: dict[str, MemoryItem] = {}
        for part, marks in _id_batches(ids):
            sql = f"SELECT {','.join(_COLUMNS)} FROM memories WHERE id IN ({marks})"
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
        for part, marks in _id_batches(ids):
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
        for part, marks in _id_batches(ids):
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
        for part, marks in _id_batches(ids):
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
        order_sql = _order_sql(order)
        where, params = self._where(user_id, types, deleted, session_id, time_range)
        # Without statistics SQLite picks (user_id, created_at) to satisfy the ORDER BY and scans
        # every memory of the user; with a tier filter the (user_id, memory_type, ...) index wins.
        index = " INDEXED BY ix_mem_user_type_created" if types else ""
        sql = f"SELECT {','.join(_COLUMNS)} FROM memories{index} WHERE {where} ORDER BY {order_sql}"
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
                at=_dt_req(r[4]),
                actor=r[5],
            )
            for r in rows
        ]

    def count_by_type(self, user_id: str, *, deleted: bool = False) -> dict[str, int]:
        """Number of the user's (live or deleted) memories per tier."""
        rows = self.query(
            f"SELECT memory_type, COUNT(*) FROM memories WHERE user_id=? AND deleted_at IS "
            f"{'NOT ' if deleted else ''}NULL GROUP BY memory_type",
            (user_id,),
        )
        return {r[0]: r[1] for r in rows}

    def avg_importance(self, user_id: str) -> float:
        """Mean importance of the user's live memories (0 when none)."""
        rows = self.query(
            "SELECT AVG(importance) FROM memories WHERE user_id=? AND deleted_at IS NULL", (user_id,)
        )
        return float(rows[0][0] or 0.0)

    def users(self) -> list[str]:
        """Every user id with at least one memory row."""
        return [r[0] for r in self.query("SELECT DISTINCT user_id FROM memories")]

    def forget_user(self, user_id: str, *, keep_journal: bool = False) -> dict[str, int]:
        """Delete every row of ``user_id`` in every table; returns counts per table.

        ``keep_journal`` keeps the user's ``pending`` entries (their index clean-up is still to do).
        """
        tables = (
            ("memories", "history", "facts") if keep_journal else ("memories", "history", "pending", "facts")
        )
        with self.transaction() as conn:
            scope = scope_token(user_id)
            self._forget_frequencies()
            fts = conn.execute("DELETE FROM memories_fts WHERE scope=?", (scope,)).rowcount
            counts = {"lexical": fts}
            for table in tables:
                counts[table] = conn.execute(f"DELETE FROM {table} WHERE user_id=?", (user_id,)).rowcount
        return counts

    def scrub(self, *, vacuum: bool = False) -> None:
        """Remove deleted data from the file itself, after a deletion that must be provable.

        ``secure_delete`` zeroes deleted rows, but FTS5 keeps deleted tokens in its index
        segments until they merge, and the WAL keeps old page images until it is reset. This
        rebuilds the index from the stored rows (dropping deleted entries) and checkpoints and
        truncates the WAL: one pass over the lexical index (~0.1 s per 20k memories). It uses
        ``rebuild``, not ``optimize``: before SQLite 3.41 every insert+``optimize`` adds an FTS5
        level, and at the 2000-level limit the table is corrupt for good. Index b-tree interior pages
        may still hold deleted *keys* (ids, user ids) as dividers; ``vacuum=True`` rebuilds the
        whole file to drop those too (``forget_user``; one pass over the database).
        """
        with self._lock:
            try:
                self._forget_frequencies()
                self.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('rebuild')")
                if vacuum:
                    self.conn.execute("VACUUM")
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as e:
                raise sqlite_error(e, self.path, "scrub") from e

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
