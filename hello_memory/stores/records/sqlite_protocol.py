"""The :class:`~hello_memory.stores.records.base.RecordStore` protocol on the SQLite record store.

:class:`RecordStoreMethods` is a mixin of :class:`~hello_memory.stores.records.sqlite.SQLiteRecordStore`:
the new write unit (:meth:`RecordStoreMethods.apply`) and the user-scoped calls the protocol adds,
built on the store's existing statements, which the core keeps calling until it moves onto the
protocol. A whole :meth:`~RecordStoreMethods.apply` batch is one ``BEGIN IMMEDIATE`` transaction:
records, FTS documents, history, facts and pending markers commit together, and a reader sees the
state before or after it, never between.

Versions live in the ``version`` column. A trigger adds one whenever a statement rewrites a
record's content columns, so the core's current write paths (``replace``) keep versions right too;
``touch`` (access statistics) does not fire it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from hello_memory.errors import IdConflictError, InvalidInputError, NotFoundError, WriteConflictError
from hello_memory.language.text import lexical_tokens
from hello_memory.models import HistoryEntry, MemoryItem
from hello_memory.stores.records.base import (
    Pending,
    PendingOp,
    RecordOrder,
    RecordQuery,
    RecordStats,
    RecordWrite,
    StoredRecord,
)
from hello_memory.stores.vectors.rules import is_canonical_uuid

_ORDER_SQL = {
    RecordOrder.NEWEST: "created_at DESC",
    RecordOrder.OLDEST: "created_at",
    RecordOrder.IMPORTANT: "importance DESC, created_at DESC",
}
# Columns whose rewrite is a change of the memory (access statistics are not).
_VERSIONED = (
    "user_id, agent_id, session_id, memory_type, content, importance, created_at, updated_at, "
    "deleted_at, metadata, fields, valid_to, modality, entity_ids"
)
VERSION_TRIGGER = f"""
CREATE TRIGGER IF NOT EXISTS memories_version AFTER UPDATE OF {_VERSIONED} ON memories
WHEN NEW.version = OLD.version
BEGIN UPDATE memories SET version = OLD.version + 1 WHERE rowid = NEW.rowid; END;
"""


class _Host(Protocol):
    """What the mixin uses of :class:`~hello_memory.stores.records.sqlite.SQLiteRecordStore`."""

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...
    def insert_many(
        self, conn: sqlite3.Connection, items: Sequence[tuple[MemoryItem, Sequence[str]]]
    ) -> None: ...
    def replace(self, conn: sqlite3.Connection, item: MemoryItem, tokens: Sequence[str] | None) -> None: ...
    def unindex(self, conn: sqlite3.Connection, memory_id: str) -> None: ...
    def reindex(self, conn: sqlite3.Connection, item: MemoryItem, tokens: Sequence[str]) -> None: ...
    def add_history(self, conn: sqlite3.Connection, entry: HistoryEntry, user_id: str) -> None: ...
    def add_pending(
        self, conn: sqlite3.Connection, memory_id: str, user_id: str, op: str, at: float
    ) -> None: ...
    def add_fact(
        self, conn: sqlite3.Connection, user_id: str, memory_id: str, s: str, rel: str, o: str
    ) -> None: ...
    def delete_rows(self, conn: sqlite3.Connection, ids: Sequence[str]) -> None: ...
    def list_items(self, user_id: str, **kwargs: Any) -> list[MemoryItem]: ...
    def pending(self) -> list[tuple[str, str, str]]: ...
    def from_row(self, row: Sequence[Any]) -> MemoryItem: ...


def check_writes(writes: Sequence[RecordWrite]) -> None:
    """Refuse malformed writes before anything is applied (both backends call this)."""
    if isinstance(writes, RecordWrite) or not isinstance(writes, Sequence):
        raise InvalidInputError("writes must be a sequence of RecordWrite", field="writes")
    for w in writes:
        if not isinstance(w, RecordWrite) or not isinstance(w.item, MemoryItem):
            raise InvalidInputError("each write must be a RecordWrite holding a MemoryItem", field="writes")
        if not is_canonical_uuid(w.item.id):
            raise InvalidInputError(f"memory id {w.item.id!r} is not a lowercase UUID string", field="id")
        v = w.expected_version
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise InvalidInputError("expected_version must be None or an int >= 1", field="expected_version")
        if w.pending is not None and not isinstance(w.pending, PendingOp):
            raise InvalidInputError("pending must be a PendingOp", field="pending")


def same_memory(stored: MemoryItem, item: MemoryItem) -> bool:
    """Whether an insert of ``item`` repeats the stored insert (the duplicate policy's test)."""
    return (stored.user_id, stored.memory_type, stored.content) == (
        item.user_id,
        item.memory_type,
        item.content,
    )


def taken(memory_id: str) -> IdConflictError:
    """The error of an insert whose id holds another memory (which it must not describe)."""
    return IdConflictError(
        f"memory_id {memory_id} is already in use by a different memory; use a new UUID", memory_id=memory_id
    )


def stale(memory_id: str, expected: int, stored: int) -> WriteConflictError:
    """The error of an update that lost to a concurrent one."""
    return WriteConflictError(
        f"memory {memory_id!r} is at version {stored}, not {expected}: it changed since it was read; "
        "read it again and re-apply the change",
        memory_id=memory_id,
        expected_version=expected,
        stored_version=stored,
    )


def _marks(ids: Sequence[str]) -> str:
    return ",".join("?" * len(ids))


def _batches(ids: Sequence[str], size: int = 500) -> Iterator[list[str]]:
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), size):
        yield unique[start : start + size]


class RecordStoreMethods:
    """Mixin: the record-store protocol over the SQLite tables (see the module docstring)."""

    @property
    def backend(self) -> str:
        """``"sqlite"``."""
        return "sqlite"

    @property
    def keeps_vectors(self) -> bool:
        """False: vectors go to the data directory's vector index, written by the caller."""
        return False

    # -- writes -------------------------------------------------------------------------------
    def apply(self: _Host, writes: Sequence[RecordWrite]) -> list[StoredRecord]:
        """Apply the writes in one transaction (all or nothing); returns each memory as stored."""
        check_writes(writes)
        out: list[StoredRecord] = []
        with self.transaction() as conn:
            inserts: list[RecordWrite] = []  # consecutive inserts share one context refresh
            for w in writes:
                if w.expected_version is not None:
                    _flush_inserts(self, conn, inserts)
                stored = _stored(self, conn, w.item.id)
                if w.expected_version is None:
                    if stored is not None or any(i.item.id == w.item.id for i in inserts):
                        twin = (
                            stored.item if stored else next(i.item for i in inserts if i.item.id == w.item.id)
                        )
                        if not same_memory(twin, w.item):
                            raise taken(w.item.id)
                        out.append(stored or StoredRecord(twin, 1))
                        continue
                    inserts.append(w)
                    out.append(StoredRecord(w.item, 1))
                    continue
                out.append(_update(self, conn, w, stored))
            _flush_inserts(self, conn, inserts)
        return out

    def mark(self: _Host, user_id: str, ids: Sequence[str], op: PendingOp) -> None:
        """Set the pending marker of the user's memories ``ids``."""
        at = datetime.now().timestamp()
        with self.transaction() as conn:
            for part in _batches(ids):
                conn.execute(
                    "INSERT OR REPLACE INTO pending(memory_id, user_id, op, at) SELECT id, user_id, ?, ? "
                    f"FROM memories WHERE id IN ({_marks(part)}) AND +user_id=?",
                    [PendingOp(op).value, at, *part, user_id],
                )

    def settle(
        self: _Host, user_id: str, ids: Sequence[str], *, versions: Mapping[str, int] | None = None
    ) -> None:
        """Clear the pending markers of the user's memories ``ids`` (with ``versions``: at those versions)."""
        with self.transaction() as conn:
            if versions is not None:
                conn.executemany(
                    "DELETE FROM pending WHERE memory_id=? AND user_id=? "
                    "AND (SELECT version FROM memories WHERE id=?)=?",
                    [(i, user_id, i, versions[i]) for i in dict.fromkeys(ids) if i in versions],
                )
                return
            for part in _batches(ids):
                conn.execute(
                    f"DELETE FROM pending WHERE memory_id IN ({_marks(part)}) AND user_id=?", [*part, user_id]
                )

    def delete(self: _Host, user_id: str, ids: Sequence[str]) -> int:
        """Hard-delete the user's memories ``ids`` with their history, facts and markers."""
        n = 0
        with self.transaction() as conn:
            for part in _batches(ids):
                rows = conn.execute(
                    f"SELECT id FROM memories WHERE id IN ({_marks(part)}) AND +user_id=?", [*part, user_id]
                ).fetchall()
                owned = [r[0] for r in rows]
                if not owned:
                    continue
                self.delete_rows(conn, owned)
                for table, key in (("history", "memory_id"), ("pending", "memory_id")):
                    conn.execute(
                        f"DELETE FROM {table} WHERE {key} IN ({_marks(owned)}) AND user_id=?",
                        [*owned, user_id],
                    )
                n += len(owned)
        return n

    def record_access(self: _Host, user_id: str, ids: Sequence[str], at: datetime) -> None:
        """Count one access of each of the user's memories ``ids`` (no version bump)."""
        with self.transaction() as conn:
            for part in _batches(ids):
                conn.execute(
                    "UPDATE memories SET last_accessed_at=?, access_count=access_count+1 "
                    f"WHERE id IN ({_marks(part)}) AND +user_id=?",
                    [at.timestamp(), *part, user_id],
                )

    # -- reads --------------------------------------------------------------------------------
    def read(
        self: _Host, user_id: str, ids: Sequence[str], *, include_deleted: bool = False
    ) -> dict[str, StoredRecord]:
        """The user's memories among ``ids`` with their versions."""
        from hello_memory.stores.records.sqlite import _COLUMNS

        out: dict[str, StoredRecord] = {}
        for part in _batches(ids):
            sql = f"SELECT {','.join(_COLUMNS)}, version FROM memories WHERE id IN ({_marks(part)}) AND +user_id=?"
            if not include_deleted:
                sql += " AND deleted_at IS NULL"
            for row in self.query(sql, [*part, user_id]):
                out[row[0]] = StoredRecord(self.from_row(row[:-1]), int(row[-1]))
        return out

    def scan(self: _Host, user_id: str, query: RecordQuery) -> list[MemoryItem]:
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

    def ids(self: _Host, user_id: str) -> list[str]:
        """Every memory id of the user, live and soft-deleted."""
        return [r[0] for r in self.query("SELECT id FROM memories WHERE user_id=?", (user_id,))]

    def stats(self: _Host, user_id: str) -> RecordStats:
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

    def unsettled(self: _Host) -> list[Pending]:
        """Pending work of every user."""
        return [Pending(mid, uid, PendingOp(op)) for mid, uid, op in self.pending()]


def _stored(host: _Host, conn: sqlite3.Connection, memory_id: str) -> StoredRecord | None:
    from hello_memory.stores.records.sqlite import _COLUMNS

    row = conn.execute(
        f"SELECT {','.join(_COLUMNS)}, version FROM memories WHERE id=?", (memory_id,)
    ).fetchone()
    return None if row is None else StoredRecord(host.from_row(row[:-1]), int(row[-1]))


def _flush_inserts(host: _Host, conn: sqlite3.Connection, inserts: list[RecordWrite]) -> None:
    if not inserts:
        return
    host.insert_many(conn, [(w.item, lexical_tokens(w.item.content)) for w in inserts])
    for w in inserts:
        _extras(host, conn, w)
    inserts.clear()


def _update(
    host: _Host, conn: sqlite3.Connection, w: RecordWrite, stored: StoredRecord | None
) -> StoredRecord:
    item, expected = w.item, w.expected_version
    if stored is None or stored.item.user_id != item.user_id:
        raise NotFoundError(f"no memory {item.id!r} for user {item.user_id!r}", object_id=item.id)
    assert expected is not None
    if stored.version != expected:
        raise stale(item.id, expected, stored.version)
    if stored.item.memory_type != item.memory_type:
        raise InvalidInputError(
            "a memory's tier cannot change; store a new memory instead", field="memory_type"
        )
    was_live, live = stored.item.deleted_at is None, item.deleted_at is None
    if was_live and not live:
        host.replace(conn, item, None)
        host.unindex(conn, item.id)
    elif live and (not was_live or stored.item.content != item.content):
        host.replace(conn, item, None)
        host.reindex(conn, item, lexical_tokens(item.content))
    else:
        host.replace(conn, item, None)
    _extras(host, conn, w)
    return StoredRecord(item, expected + 1)


def _extras(host: _Host, conn: sqlite3.Connection, w: RecordWrite) -> None:
    """History, facts and the pending marker of one write."""
    item = w.item
    for entry in w.history:
        host.add_history(conn, entry, item.user_id)
    if w.facts is not None:
        conn.execute("DELETE FROM facts WHERE memory_id=?", (item.id,))
        for f in w.facts:
            host.add_fact(conn, item.user_id, item.id, f.subject_id, f.relation, f.object_id)
    if w.pending is not None:
        host.add_pending(conn, item.id, item.user_id, w.pending.value, datetime.now().timestamp())
