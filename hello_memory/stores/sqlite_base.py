"""What every SQLite store shares: a lazily opened WAL connection, transactions, guarded reads."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hello_memory.errors import CorruptStoreError, StoreError


class SQLiteDatabase:
    """One SQLite file with a versioned schema; subclasses set ``schema`` and ``schema_version``.

    The connection opens on first use (a damaged file raises :class:`CorruptStoreError` there),
    is shared by threads under a re-entrant lock, and uses WAL with ``secure_delete`` so deleted
    rows are zeroed rather than left in free pages.
    """

    schema: str = ""
    schema_version: int = 1

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection (opened on first use)."""
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA secure_delete=ON")  # deleted rows are zeroed, not left in free pages
            conn.execute("PRAGMA foreign_keys=ON")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > self.schema_version:
                raise CorruptStoreError(
                    str(self.path), f"schema version {version} is newer than this library"
                )
            conn.executescript(self.schema)
            self._migrate(conn)
            conn.execute(f"PRAGMA user_version={self.schema_version}")
        except sqlite3.DatabaseError as e:
            raise CorruptStoreError(str(self.path), str(e)) from e
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring an older file up to ``schema`` (after the CREATE ... IF NOT EXISTS statements)."""

    def close(self) -> None:
        """Close the connection; idempotent."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """An IMMEDIATE transaction: everything inside commits together or not at all."""
        with self._lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Run a read query; SQLite errors become :class:`StoreError`."""
        with self._lock:
            try:
                return self.conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as e:
                raise StoreError(f"SQLite query failed: {e}") from e
