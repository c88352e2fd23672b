"""SQLite record store: memories, history, FTS5 lexical index, facts and pending markers in one file.

The embedded :class:`~hello_memory.stores.records.base.RecordStore` (the data directory's
``records.db``). The FTS5 table (BM25 ranking, built into SQLite) is written in the same
transaction as the record, so the lexical index can never disagree with the records. Pending
markers are rows of their own (``pending``), written before the work they cover and cleared when
it is done; recovery reads them back (:meth:`SQLiteRecordStore.unsettled`). The store is built in
layers: rows (:mod:`.sqlite_rows`), lexical index (:mod:`.sqlite_lexical`), reads
(:mod:`.sqlite_reads`), writes (:mod:`.sqlite_writes`), conversation ledger (:mod:`.sqlite_ledger`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hello_memory.stores.records import sqlite_ledger
from hello_memory.stores.records import sqlite_rows as layout
from hello_memory.stores.records.sqlite_ledger import SQLiteTurnLedger
from hello_memory.stores.records.sqlite_writes import SQLiteWrites


class SQLiteRecordStore(SQLiteTurnLedger, SQLiteWrites):
    """Memories and their history in one SQLite file (WAL, transactions, versioned schema).

    Example:
        >>> store = SQLiteRecordStore("/tmp/hm-doc/records.db")
        >>> store.close()
    """

    schema = layout.SCHEMA + sqlite_ledger.SCHEMA
    schema_version = layout.SCHEMA_VERSION

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
        layout.add_missing_columns(conn)
        conn.execute("DROP INDEX IF EXISTS ix_mem_user_session")  # superseded by ix_mem_user_session_created
        conn.executescript(layout.VERSION_TRIGGER)
        self._sync_context_window(conn)


    def forget_user(self, user_id: str, *, keep_pending: bool = False) -> dict[str, int]:
        """Delete every row of ``user_id`` in every table, tombstones included, in one transaction."""
        with self.transaction():
            counts = super().forget_user(user_id, keep_pending=keep_pending)
            counts["tombstones"] = self.forget_tombstones(user_id)
        return counts

    def residue(self, user_id: str) -> dict[str, int]:
        """Rows left for ``user_id`` in every table (0 everywhere after :meth:`forget_user`)."""
        return {**super().residue(user_id), "tombstones": self.count_tombstones(user_id)}
