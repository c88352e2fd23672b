"""Writes of the SQLite record store: the protocol's write unit and the row statements under it.

A whole :meth:`SQLiteWrites.apply` batch is one ``BEGIN IMMEDIATE`` transaction: records, FTS
documents, history, facts and pending markers commit together, and a reader sees the state before
or after it, never between. :meth:`SQLiteWrites.write` keeps that transaction open while the
caller writes the vectors and graph links (``hold``), so the records and the other stores change
together or not at all. Versions live in the ``version`` column, kept by a trigger
(:data:`~hello_memory.stores.records.sqlite_rows.VERSION_TRIGGER`); ``touch`` and
``record_access`` (access statistics) do not fire it.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from hello_memory.errors import InvalidInputError, NotFoundError
from hello_memory.language.text import lexical_tokens
from hello_memory.models import HistoryEntry, MemoryItem
from hello_memory.stores.records import sqlite_rows as layout
from hello_memory.stores.records.base import (
    FollowUp,
    FollowUpFailed,
    PendingOp,
    RecordWrite,
    Stored,
    StoredRecord,
)
from hello_memory.stores.records.checks import check_writes, same_memory, stale, taken
from hello_memory.stores.records.sqlite_lexical import fts_tokens, scope_token
from hello_memory.stores.records.sqlite_reads import SQLiteReads, batches, marks
from hello_memory.stores.sqlite_base import sqlite_error

logger = logging.getLogger(__name__)
_INSERT = f"INSERT INTO memories ({','.join(layout.COLUMNS)}, lex) VALUES ({','.join('?' * (len(layout.COLUMNS) + 1))})"


class SQLiteWrites(SQLiteReads):
    """The write half of :class:`~hello_memory.stores.records.sqlite.SQLiteRecordStore`."""

    @property
    def backend(self) -> str:
        """``"sqlite"``."""
        return "sqlite"

    @property
    def keeps_vectors(self) -> bool:
        """False: vectors go to the data directory's vector index, written by the caller."""
        return False

    def apply(self, writes: Sequence[RecordWrite]) -> list[StoredRecord]:
        """Apply the writes in one transaction (all or nothing); returns each memory as stored."""
        check_writes(writes)
        out: list[StoredRecord] = []
        with self.transaction() as conn:
            known = _stored_many(self, conn, [w.item.id for w in writes if w.expected_version is None])
            inserts: dict[str, RecordWrite] = {}  # consecutive inserts share one context refresh
            for w in writes:
                mid = w.item.id
                if w.expected_version is not None:
                    _flush_inserts(self, conn, inserts)
                    known[mid] = rec = _update(self, conn, w, _stored(self, conn, mid))
                    out.append(rec)
                    continue
                twin = inserts[mid].item if mid in inserts else known[mid].item if mid in known else None
                if twin is None:
                    inserts[mid] = w
                    out.append(StoredRecord(w.item, 1))
                elif not same_memory(twin, w.item):
                    raise taken(mid)
                else:
                    out.append(known.get(mid) or StoredRecord(twin, 1))
            _flush_inserts(self, conn, inserts)
        return out

    def write(self, writes: Sequence[RecordWrite], then: FollowUp | None = None, *, hold: bool = True) -> Stored:
        """The write unit (see :meth:`~hello_memory.stores.records.base.RecordStore.write`).

        The markers are committed first in a transaction of their own (a process killed while the
        vectors are written leaves them for recovery); with ``hold`` the records' transaction stays
        open while ``then`` runs and commits only after it, so a failure of ``then`` rolls them back.
        """
        check_writes(writes)
        marked = [(w.item.id, w.item.user_id, w.pending.value, w.batch) for w in writes if w.pending is not None]
        self.journal(marked, datetime.now().timestamp())
        try:
            if not hold:
                stored = self.apply(writes)
            else:
                with self.transaction():
                    stored = self.apply(writes)
                    _follow(then, stored, rolled_back=True)
                return stored
        except FollowUpFailed:
            raise
        except BaseException:  # nothing was applied: its markers have nothing to mark
            self._unmark([m[0] for m in marked])
            raise
        _follow(then, stored, rolled_back=False)
        return stored

    def _unmark(self, ids: Sequence[str]) -> None:
        try:
            self.clear_pending(ids)
        except Exception as e:  # a marker left behind only costs recovery a look
            logger.warning("could not clear %d markers of a failed write: %s", len(ids), e)

    def mark(self, user_id: str, ids: Sequence[str], op: PendingOp) -> None:
        """Set the pending marker of the user's memories ``ids``."""
        at = datetime.now().timestamp()
        with self.transaction() as conn:
            for part in batches(ids):
                conn.execute(
                    "INSERT OR REPLACE INTO pending(memory_id, user_id, op, at) SELECT id, user_id, ?, ? "
                    f"FROM memories WHERE id IN ({marks(part)}) AND +user_id=?",
                    [PendingOp(op).value, at, *part, user_id],
                )

    def settle(
        self, user_id: str, ids: Sequence[str], *, versions: Mapping[str, int] | None = None
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
            for part in batches(ids):
                conn.execute(
                    f"DELETE FROM pending WHERE memory_id IN ({marks(part)}) AND user_id=?", [*part, user_id]
                )

    def delete(self, user_id: str, ids: Sequence[str], *, keep_pending: bool = False) -> int:
        """Hard-delete the user's memories ``ids`` with their history and facts (and markers, unless
        ``keep_pending``: recovery then finishes the clean-up of the other stores)."""
        n = 0
        tables = ("history",) if keep_pending else ("history", "pending")
        with self.transaction() as conn:
            for part in batches(ids):
                found = conn.execute(
                    f"SELECT id FROM memories WHERE id IN ({marks(part)}) AND +user_id=?", [*part, user_id]
                ).fetchall()
                owned = [r[0] for r in found]
                if not owned:
                    continue
                self.delete_rows(conn, owned)
                for table in tables:
                    conn.execute(
                        f"DELETE FROM {table} WHERE memory_id IN ({marks(owned)}) AND user_id=?",
                        [*owned, user_id],
                    )
                n += len(owned)
        return n

    def record_access(self, user_id: str, ids: Sequence[str], at: datetime) -> None:
        """Count one access of each of the user's memories ``ids`` (no version bump)."""
        with self.transaction() as conn:
            for part in batches(ids):
                conn.execute(
                    "UPDATE memories SET last_accessed_at=?, access_count=access_count+1 "
                    f"WHERE id IN ({marks(part)}) AND +user_id=?",
                    [at.timestamp(), *part, user_id],
                )


    # -- row statements (inside a transaction) --
    def insert_many(
        self, conn: sqlite3.Connection, items: Sequence[tuple[MemoryItem, Sequence[str]]]
    ) -> None:
        """Insert memories with their lexical tokens; conversation context is refreshed once at the end."""
        touched: list[int] = []
        for item, tokens in items:
            cur = conn.execute(
                _INSERT,
                (*self.to_row(item), " ".join(fts_tokens(tokens))),
            )
            touched.append(int(cur.lastrowid or 0))
        self._refresh(conn, touched)

    def replace(self, conn: sqlite3.Connection, item: MemoryItem, tokens: Sequence[str] | None) -> None:
        """Overwrite a memory's row; re-index its tokens when ``tokens`` is given."""
        sets = ",".join(f"{c}=?" for c in layout.COLUMNS[1:])
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
                layout.ts(entry.at),
                entry.actor,
            ),
        )

    def add_pending(
        self, conn: sqlite3.Connection, memory_id: str, user_id: str, op: str, at: float, batch: str | None = None
    ) -> None:
        """Journal a vector-index operation (``index`` or ``unindex``) for ``memory_id``."""
        conn.execute(
            "INSERT OR REPLACE INTO pending(memory_id,user_id,op,at,batch) VALUES (?,?,?,?,?)",
            (memory_id, user_id, op, at, batch),
        )

    def journal(self, entries: Sequence[tuple[str, str, str, str | None]], at: float) -> None:
        """Set ``(memory_id, user_id, op, batch)`` markers in a transaction of their own (committed now),
        rows or not."""
        if not entries:
            return
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO pending(memory_id,user_id,op,at,batch) VALUES (?,?,?,?,?)",
                [(mid, uid, op, at, batch) for mid, uid, op, batch in entries],
            )

    def publish(self, user_id: str, batch: str) -> None:
        """The batch's ``BATCH`` markers become ``INDEX`` markers, in one transaction."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE pending SET op=?, batch=NULL WHERE batch=? AND user_id=? AND op=?",
                (PendingOp.INDEX.value, batch, user_id, PendingOp.BATCH.value),
            )

    def clear_pending(self, ids: Sequence[str]) -> None:
        """Remove journal entries whose vector operation completed."""
        if not ids:
            return
        with self.transaction() as conn:
            conn.executemany("DELETE FROM pending WHERE memory_id=?", [(i,) for i in ids])

    def add_fact(
        self, conn: sqlite3.Connection, user_id: str, memory_id: str, s: str, rel: str, o: str
    ) -> None:
        """Record a functional fact (subject, relation, object) asserted by a memory."""
        conn.execute("INSERT INTO facts VALUES (?,?,?,?,?)", (user_id, memory_id, s, rel, o))

    def set_meta(self, key: str, value: str) -> None:
        """Store a key/value in the meta table."""
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta(key,value) VALUES (?,?)", (key, value))

    def forget_user(self, user_id: str, *, keep_pending: bool = False) -> dict[str, int]:
        """Delete every row of ``user_id`` in every table; returns counts per table.

        ``keep_pending`` keeps the user's ``pending`` entries (their index clean-up is still to do).
        """
        tables = (
            ("memories", "history", "facts") if keep_pending else ("memories", "history", "pending", "facts")
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



def _stored(host: SQLiteWrites, conn: sqlite3.Connection, memory_id: str) -> StoredRecord | None:
    row = conn.execute(
        f"SELECT {','.join(layout.COLUMNS)}, version FROM memories WHERE id=?", (memory_id,)
    ).fetchone()
    return None if row is None else StoredRecord(host.from_row(row[:-1]), int(row[-1]))


def _stored_many(host: SQLiteWrites, conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, StoredRecord]:
    """The stored records among ``ids``, whoever's they are (one query per batch of ids)."""
    out: dict[str, StoredRecord] = {}
    for part in batches(ids):
        rows = conn.execute(
            f"SELECT {','.join(layout.COLUMNS)}, version FROM memories WHERE id IN ({marks(part)})", part
        ).fetchall()
        out.update((r[0], StoredRecord(host.from_row(r[:-1]), int(r[-1]))) for r in rows)
    return out


def _flush_inserts(host: SQLiteWrites, conn: sqlite3.Connection, inserts: dict[str, RecordWrite]) -> None:
    if not inserts:
        return
    host.insert_many(conn, [(w.item, lexical_tokens(w.item.content)) for w in inserts.values()])
    for w in inserts.values():
        _extras(host, conn, w)
    inserts.clear()


def _update(
    host: SQLiteWrites, conn: sqlite3.Connection, w: RecordWrite, stored: StoredRecord | None
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


def _extras(host: SQLiteWrites, conn: sqlite3.Connection, w: RecordWrite) -> None:
    """History, facts and the pending marker of one write."""
    item = w.item
    for entry in w.history:
        host.add_history(conn, entry, item.user_id)
    if w.facts is not None:
        conn.execute("DELETE FROM facts WHERE memory_id=?", (item.id,))
        for f in w.facts:
            host.add_fact(conn, item.user_id, item.id, f.subject_id, f.relation, f.object_id)
    if w.pending is not None:
        host.add_pending(conn, item.id, item.user_id, w.pending.value, datetime.now().timestamp(), w.batch)


def _follow(
    then: Callable[[list[StoredRecord]], None] | None, stored: list[StoredRecord], *, rolled_back: bool
) -> None:
    if then is None:
        return
    try:
        then(stored)
    except Exception as e:
        raise FollowUpFailed(e, rolled_back=rolled_back, stored=stored) from e
