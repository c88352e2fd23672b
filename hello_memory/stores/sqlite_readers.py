"""Read connections of one SQLite file in WAL mode: readers never wait for the writer.

In WAL mode a reader and the one writer proceed at the same time, each reader seeing the database
as it was when its read began (sqlite.org/wal.html). That needs a connection per concurrent reader:
one connection is one transaction at a time. :class:`ReadConnections` lends a connection of its
own to every read — outside the store's write lock — and keeps a few idle ones for the next reads.
A read inside :meth:`ReadConnections.snapshot` keeps its thread's connection in one read
transaction, so several reads see one consistent state.

The store's writer keeps its own connection under its lock; reads made by the thread that holds
an open write transaction go there instead (they must see that transaction's own writes), which
the store decides (:meth:`hello_memory.stores.sqlite_base.SQLiteDatabase.query`).

A connection opened in one process is never used in another: after a fork the child opens its
own (SQLite's rule: "do not open a database connection and then fork").

Example:
    >>> import sqlite3, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.db")
    >>> w = sqlite3.connect(path, isolation_level=None); _ = w.execute("PRAGMA journal_mode=WAL")
    >>> _ = w.execute("CREATE TABLE t (x)"); _ = w.execute("INSERT INTO t VALUES (1)")
    >>> readers = ReadConnections(path)
    >>> with readers.borrow() as conn:
    ...     conn.execute("SELECT x FROM t").fetchall()
    [(1,)]
    >>> readers.close(); w.close()
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MAX_IDLE = 8  # idle connections kept for the next reads; more concurrent readers open and close their own


class ReadConnections:
    """Lends read-only connections of the SQLite file at ``path`` (see the module docstring).

    Args:
        path: the database file (not ``":memory:"``: another connection would be another database).
        max_idle: idle connections kept open.
    """

    def __init__(self, path: str | Path, *, max_idle: int = MAX_IDLE) -> None:
        self.path = str(path)
        self._max_idle = max_idle
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()  # guards the idle list only; never held while a read runs
        self._local = threading.local()  # this thread's snapshot: (pid, connection)
        self._pid = os.getpid()
        self._closed = False  # connections given back after close() are closed, not kept

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        try:
            conn.execute("PRAGMA mmap_size=0")  # as the writer: a mapped file on a full disk is SIGBUS
            conn.execute("PRAGMA query_only=1")  # a read connection never writes, even by mistake
        except BaseException:
            conn.close()
            raise
        return conn

    def _take(self) -> sqlite3.Connection:
        with self._lock:
            if self._pid != os.getpid():  # forked: the parent's connections are not ours to use or close
                self._idle, self._pid = [], os.getpid()
            self._closed = False  # a store used again after close() reopens lazily
            if self._idle:
                return self._idle.pop()
        return self._open()

    def _give_back(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:  # a read that failed midway: end its read transaction
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                conn.close()
                return
        with self._lock:
            if not self._closed and self._pid == os.getpid() and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def _current(self) -> sqlite3.Connection | None:
        held = getattr(self._local, "held", None)
        if held is None or held[0] != os.getpid():
            return None
        conn: sqlite3.Connection = held[1]
        return conn

    @contextmanager
    def borrow(self) -> Iterator[sqlite3.Connection]:
        """A connection for one read (this thread's snapshot connection inside :meth:`snapshot`)."""
        current = self._current()
        if current is not None:
            yield current
            return
        conn = self._take()
        try:
            yield conn
        finally:
            self._give_back(conn)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads of this thread inside the block see one state of the database (nested: the outer one)."""
        if self._current() is not None:
            yield
            return
        conn = self._take()
        conn.execute("BEGIN")  # deferred: the snapshot starts at the first read
        self._local.held = (os.getpid(), conn)
        try:
            yield
        finally:
            self._local.held = None
            self._give_back(conn)

    def close(self) -> None:
        """Close the idle connections (one lent out closes when it is given back); idempotent."""
        with self._lock:
            idle, self._idle, self._closed = self._idle, [], True
        for conn in idle:
            conn.close()
