"""What every SQLite store shares: a lazily opened WAL connection, transactions, guarded reads.

Full disks: SQLite reports them as ``SQLITE_FULL`` ("database or disk is full"), or as an I/O error
when the WAL or its shared-memory index cannot grow. :func:`sqlite_error` turns both into
:class:`~hello_memory.errors.DiskFullError`, and the database is never memory-mapped
(``mmap_size=0``): a mapped file that grows into a full filesystem raises SIGBUS, which kills
the process instead of raising. Opening an existing file writes nothing, so reads keep working on
a full disk.
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hello_memory.errors import CorruptStoreError, DiskFullError, StoreError
from hello_memory.stores.space import free_bytes
from hello_memory.stores.sqlite_readers import ReadConnections

LOW_SPACE_BYTES = 1 << 20  # an I/O error with less free space than this is a full disk


def sqlite_error(e: sqlite3.Error, path: Path, action: str) -> StoreError:
    """The typed error for a SQLite failure on the file at ``path``."""
    code = getattr(e, "sqlite_errorcode", None)
    free = free_bytes(path)
    full = code == sqlite3.SQLITE_FULL or (
        code is not None
        and code & 0xFF == sqlite3.SQLITE_IOERR
        and free is not None
        and free < LOW_SPACE_BYTES
    )
    if full:
        return DiskFullError(str(path.parent), free_bytes=free)
    return StoreError(f"SQLite {action} failed on {str(path)!r}: {e}")


class SQLiteDatabase:
    """One SQLite file with a versioned schema; subclasses set ``schema`` and ``schema_version``.

    The write connection opens on first use (a damaged file raises :class:`CorruptStoreError`
    there), is shared by writing threads under a re-entrant lock, and uses WAL with
    ``secure_delete`` so deleted rows are zeroed rather than left in free pages. Reads
    (:meth:`query`) never take that lock: each runs on a read connection of its own
    (:class:`~hello_memory.stores.sqlite_readers.ReadConnections`) and sees the last committed
    state — except reads of the thread inside a write transaction, which see its own writes.
    An in-memory database (``":memory:"``) has one connection: there reads take the lock.
    """

    schema: str = ""
    schema_version: int = 1

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._depth = 0  # open transactions of the thread holding the lock (savepoints when > 0)
        self._writer = 0  # the thread holding the open write transaction (when _depth > 0)
        self._readers = None if str(path) == ":memory:" else ReadConnections(self.path)

    @property
    def conn(self) -> sqlite3.Connection:
        """The write connection (opened on first use)."""
        conn = self._conn
        if conn is None:
            with self._lock:  # two first users must not both create the schema
                if self._conn is None:
                    self._conn = self._open()
                conn = self._conn
        return conn

    def _writing(self) -> bool:
        """True in the thread that holds this store's open write transaction."""
        return self._depth > 0 and self._writer == threading.get_ident()

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """Reads of this thread inside the block see one committed state (reads of a thread inside a
        write transaction see that transaction instead)."""
        if self._readers is None or self._writing():
            return contextlib.nullcontext()
        self.conn  # noqa: B018 - the schema exists before the first read
        return self._readers.snapshot()

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise DiskFullError(str(self.path.parent), free_bytes=free_bytes(self.path)) from e
            raise StoreError(f"cannot create {str(self.path)!r}: {e.strerror or e}") from e
        except sqlite3.Error as e:
            raise self._open_error(e) from e
        try:
            self._configure(conn)
        except BaseException as e:
            conn.close()
            if isinstance(e, sqlite3.Error):
                raise self._open_error(e) from e
            raise
        return conn

    def _configure(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA mmap_size=0")  # never map the file: growing into a full disk would be SIGBUS
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA secure_delete=ON")  # deleted rows are zeroed, not left in free pages
        conn.execute("PRAGMA foreign_keys=ON")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > self.schema_version:
            raise CorruptStoreError(str(self.path), f"schema version {version} is newer than this library")
        conn.executescript(self.schema)
        self._migrate(conn)
        if version != self.schema_version:  # an up-to-date file is opened without writing to it
            conn.execute(f"PRAGMA user_version={self.schema_version}")

    def _open_error(self, e: sqlite3.Error) -> StoreError:
        error = sqlite_error(e, self.path, "open")
        if isinstance(error, DiskFullError) or not isinstance(e, sqlite3.DatabaseError):
            return error
        return CorruptStoreError(str(self.path), str(e))

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring an older file up to ``schema`` (after the CREATE ... IF NOT EXISTS statements)."""

    def close(self) -> None:
        """Close the connections; idempotent."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        if self._readers is not None:
            self._readers.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """An IMMEDIATE transaction: everything inside commits together or not at all.

        Nested in another transaction of the same store (same thread: the store's lock is held),
        it is a savepoint: its writes roll back alone when its body fails, and commit with the
        outer transaction. That lets a write unit hold one transaction open while the writes it
        runs (history, supersession, deletions) open their own.

        SQLite errors (from the body or the commit) become :class:`StoreError` /
        :class:`DiskFullError`; other exceptions from the body pass through unchanged.
        """
        with self._lock:
            conn = self.conn
            nested = self._depth > 0
            begin, done, undo = (
                (f"SAVEPOINT sp{self._depth}", f"RELEASE sp{self._depth}", f"ROLLBACK TO sp{self._depth}")
                if nested
                else ("BEGIN IMMEDIATE", "COMMIT", "ROLLBACK")
            )
            try:
                conn.execute(begin)
            except sqlite3.Error as e:
                raise sqlite_error(e, self.path, "transaction") from e
            self._depth += 1
            self._writer = threading.get_ident()
            try:
                yield conn
                conn.execute(done)
            except BaseException as e:
                if conn.in_transaction:  # SQLite may have rolled back already (e.g. on SQLITE_FULL)
                    with contextlib.suppress(sqlite3.Error):  # the first error is the one to report
                        conn.execute(undo)
                        if nested:
                            conn.execute(done)
                if isinstance(e, sqlite3.Error):
                    raise sqlite_error(e, self.path, "write") from e
                raise
            finally:
                self._depth -= 1

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Run a read query, without waiting for writers; SQLite errors become :class:`StoreError`."""
        try:
            if self._readers is None or self._writing():
                with self._lock:
                    return self.conn.execute(sql, params).fetchall()
            self.conn  # noqa: B018 - the schema exists before the first read
            with self._readers.borrow() as conn:
                return conn.execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise sqlite_error(e, self.path, "query") from e
