"""Embedded knowledge graph: SQLite tables are the truth, networkx graphs (cached per user) traverse.

Example:
    >>> from hello_memory.language.extraction import entity_id
    >>> store = SQLiteGraphStore(":memory:")
    >>> a, b = entity_id("u1", "Alice"), entity_id("u1", "Paris")
    >>> store.link("u1", "m1", [(a, "Alice", "person"), (b, "Paris", "place")], [(a, b, "lives_in")])
    >>> [(n.name, n.hops) for n in store.neighbours("u1", [a])]
    [('Alice', 0), ('Paris', 1)]
    >>> store.close()
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import networkx as nx

from hello_memory.errors import CorruptStoreError, DiskFullError, StoreError
from hello_memory.stores.graph.base import GraphNeighbour
from hello_memory.stores.graph.common import (
    COUNT_KEYS,
    EntityRow,
    GraphStoreAdapter,
    RelationRow,
    expand,
)
from hello_memory.stores.sqlite_base import sqlite_error
from hello_memory.stores.sqlite_readers import ReadConnections

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_TABLES = {
    "entities": {"user_id", "id", "name", "norm_name", "type"},
    "relations": {"user_id", "source_id", "target_id", "type", "memory_id"},
    "mentions": {"user_id", "memory_id", "entity_id"},
}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (
    user_id TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, norm_name TEXT NOT NULL,
    type TEXT NOT NULL, PRIMARY KEY (user_id, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entities_by_name ON entities (user_id, norm_name);
CREATE TABLE IF NOT EXISTS mentions (
    user_id TEXT NOT NULL, memory_id TEXT NOT NULL, entity_id TEXT NOT NULL,
    PRIMARY KEY (user_id, memory_id, entity_id),
    FOREIGN KEY (user_id, entity_id) REFERENCES entities (user_id, id) ON DELETE CASCADE) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_by_entity ON mentions (user_id, entity_id);
CREATE TABLE IF NOT EXISTS relations (
    user_id TEXT NOT NULL, source_id TEXT NOT NULL, target_id TEXT NOT NULL, type TEXT NOT NULL,
    memory_id TEXT NOT NULL, PRIMARY KEY (user_id, memory_id, source_id, type, target_id),
    FOREIGN KEY (user_id, source_id) REFERENCES entities (user_id, id) ON DELETE CASCADE,
    FOREIGN KEY (user_id, target_id) REFERENCES entities (user_id, id) ON DELETE CASCADE) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS relations_by_source ON relations (user_id, source_id);
CREATE INDEX IF NOT EXISTS relations_by_target ON relations (user_id, target_id);
"""
# A more specific type replaces "concept" (GENERIC_TYPE: a name first seen as a concept, later as a person).
_UPSERT_ENTITY = """
INSERT INTO entities (user_id, id, name, norm_name, type) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (user_id, id) DO UPDATE SET type = excluded.type
WHERE entities.type = 'concept' AND excluded.type <> 'concept'
"""
_DELETE_ORPHANS = """
DELETE FROM entities WHERE user_id = ? AND id = ? AND NOT EXISTS
    (SELECT 1 FROM mentions m WHERE m.user_id = entities.user_id AND m.entity_id = entities.id)
"""
_CHUNK = 500  # stay well below SQLite's host-parameter limit


class SQLiteGraphStore(GraphStoreAdapter):
    """A :class:`~hello_memory.stores.graph.base.GraphStore` in one SQLite file (or ``":memory:"``).

    Each ``link`` is one transaction. The connection opens on first use; the store is thread-safe
    and usable as a context manager.

    Args:
        path: the database file (its folder is created) or ``":memory:"``.
        graph_cache_users: how many users' traversal graphs to keep in memory.
    """

    BACKEND = "sqlite+networkx"

    def __init__(self, path: str | Path, *, graph_cache_users: int = 16) -> None:
        self._path = str(path)
        self._cache_size = max(1, graph_cache_users)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._graphs: OrderedDict[str, nx.Graph] = OrderedDict()
        # Reads run on connections of their own, never under the write lock (":memory:" has one).
        self._readers = None if self._path == ":memory:" else ReadConnections(self._path)
        self._writes: dict[str, int] = {}  # writes per user: a graph built meanwhile is not cached
        self._cache_lock = threading.Lock()

    @property
    def path(self) -> str:
        """The database file (``":memory:"`` when not persistent)."""
        return self._path

    def unlink_memory(self, user_id: str, memory_id: str) -> None:
        """Remove the memory's mentions, its relations and entities no memory mentions any more."""
        with self._write(user_id) as conn:
            previous = self._remove_links(conn, user_id, memory_id)
            conn.executemany(_DELETE_ORPHANS, [(user_id, e) for e in previous])

    def counts(self, user_id: str) -> dict[str, int]:
        """``{"entities": n, "relations": m, "mentions": k}`` for the user."""
        with self._reading("count") as conn:
            return {
                t: conn.execute(f"SELECT COUNT(*) FROM {t} WHERE user_id = ?", (user_id,)).fetchone()[0]
                for t in COUNT_KEYS
            }

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete every entity, relation and mention of the user; returns deleted rows per table."""
        with self._write(user_id) as conn:
            deleted = {
                t: conn.execute(f"DELETE FROM {t} WHERE user_id = ?", (user_id,)).rowcount
                for t in ("relations", "mentions", "entities")
            }
        logger.info("forgot graph of user %s: %s", user_id, deleted)
        return {t: deleted[t] for t in COUNT_KEYS}

    def scrub(self, *, vacuum: bool = False) -> None:
        """Checkpoint and truncate the WAL, whose old page images still hold deleted rows.

        ``vacuum=True`` first rebuilds the file, dropping deleted keys (user ids) that b-tree
        interior pages may keep as dividers.
        """
        with self._lock, _wrapped("scrub"):
            conn = self._connect()
            if vacuum:
                conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        """Close the connection and drop cached graphs; idempotent."""
        with self._lock:
            self._closed = True
            self._graphs.clear()
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        if self._readers is not None:
            self._readers.close()

    # -- primitives ---------------------------------------------------------------------------------

    def _link(self, user_id: str, memory_id: str, rows: list[EntityRow], rels: list[RelationRow]) -> None:
        with self._write(user_id) as conn:
            previous = self._remove_links(conn, user_id, memory_id)
            conn.executemany(_UPSERT_ENTITY, [(user_id, r.id, r.name, r.norm_name, r.type) for r in rows])
            conn.executemany(
                "INSERT INTO mentions VALUES (?, ?, ?)", [(user_id, memory_id, r.id) for r in rows]
            )
            conn.executemany(
                "INSERT OR IGNORE INTO relations VALUES (?, ?, ?, ?, ?)",
                [(user_id, r.source, r.target, r.type, memory_id) for r in rels],
            )
            conn.executemany(_DELETE_ORPHANS, [(user_id, e) for e in previous])

    def _neighbours(self, user_id: str, starts: list[str], max_hops: int) -> list[GraphNeighbour]:
        graph = self._graph(user_id)  # never mutated once built: traverse without the lock
        names: dict[str, str] = graph.graph["names"]

        def next_layer(frontier: list[str], seen: set[str]) -> dict[str, str]:
            return {n: names.get(n, n) for e in frontier for n in graph[e] if n not in seen}

        return expand({e: names.get(e, e) for e in starts if e in graph}, next_layer, max_hops)

    def _mentions(self, user_id: str, entity_ids: list[str]) -> list[tuple[str, str]]:
        sql = "SELECT memory_id, entity_id FROM mentions WHERE user_id = ? AND entity_id IN ({})"
        return [(m, e) for m, e in self._select_in(sql, user_id, entity_ids)]

    def _entities_named(self, user_id: str, keys: list[str]) -> list[tuple[str, str, str]]:
        # Without statistics SQLite would scan the primary key (user_id, id) instead.
        sql = (
            "SELECT norm_name, id, name FROM entities INDEXED BY entities_by_name"
            " WHERE user_id = ? AND norm_name IN ({})"
        )
        return [(k, e, n) for k, e, n in self._select_in(sql, user_id, keys)]

    # -- internals ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        """The open connection, opening (and creating or migrating) the database on first use."""
        if self._closed:
            raise StoreError(f"graph store {self._path!r} is closed")
        if self._conn is None:
            self._conn = _open(self._path)
        return self._conn

    @contextmanager
    def _reading(self, action: str) -> Iterator[sqlite3.Connection]:
        """A connection for a read: one of its own (the write lock is not taken), or, for an in-memory
        database, the only one under the lock."""
        if self._readers is None:
            with self._lock, _wrapped(action):
                yield self._connect()
            return
        with self._lock:
            self._connect()  # the schema exists before the first read
        with _wrapped(action), self._readers.borrow() as conn:
            yield conn

    @contextmanager
    def _write(self, user_id: str) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction under the lock; drops the user's cached graph afterwards."""
        with self._lock, _wrapped("write", self._path):
            conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                with self._cache_lock:
                    self._writes[user_id] = self._writes.get(user_id, 0) + 1
                    self._graphs.pop(user_id, None)

    @staticmethod
    def _remove_links(conn: sqlite3.Connection, user_id: str, memory_id: str) -> list[str]:
        """Delete a memory's relations and mentions; returns the entity ids it mentioned."""
        key = (user_id, memory_id)
        previous = [
            r[0]
            for r in conn.execute("SELECT entity_id FROM mentions WHERE user_id = ? AND memory_id = ?", key)
        ]
        conn.execute("DELETE FROM relations WHERE user_id = ? AND memory_id = ?", key)
        conn.execute("DELETE FROM mentions WHERE user_id = ? AND memory_id = ?", key)
        return previous

    def _select_in(self, sql: str, user_id: str, values: list[str]) -> list[tuple[str, ...]]:
        rows: list[tuple[str, ...]] = []
        with self._reading("read") as conn:
            for i in range(0, len(values), _CHUNK):
                chunk = values[i : i + _CHUNK]
                rows.extend(conn.execute(sql.format(",".join("?" * len(chunk))), (user_id, *chunk)))
        return rows

    def _graph(self, user_id: str) -> nx.Graph:
        """The user's undirected traversal graph, rebuilt from SQLite after any write of that user."""
        with self._cache_lock:
            graph = self._graphs.get(user_id)
            if graph is not None:
                self._graphs.move_to_end(user_id)
                return graph
            writes = self._writes.get(user_id, 0)
        with self._reading("read") as conn:  # built beside writers, from a committed state
            graph = _build_graph(conn, user_id)
        with self._cache_lock:
            # a write of this user committed meanwhile may be missing from it: used once, not kept
            # (a write drops the cached graph after it commits, so a stale one never survives it)
            if self._writes.get(user_id, 0) == writes and not self._closed:
                self._graphs[user_id] = graph
                while len(self._graphs) > self._cache_size:
                    self._graphs.popitem(last=False)
        return graph


def _open(path: str) -> sqlite3.Connection:
    """Open, configure and migrate the database; an unreadable file is a CorruptStoreError."""
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
    except sqlite3.Error as e:
        raise StoreError(f"cannot open graph store {path!r}: {e}") from e
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")  # WAL: durable across crashes, as the record store
        conn.execute("PRAGMA secure_delete = ON")  # deleted rows are zeroed, not left in free pages
        _migrate(conn, path)
    except sqlite3.OperationalError as e:
        conn.close()
        full = sqlite_error(e, Path(path), "open")
        if isinstance(full, DiskFullError):
            raise full from e
        raise StoreError(f"cannot open graph store {path!r}: {e}") from e
    except sqlite3.DatabaseError as e:  # "file is not a database", "disk image is malformed"
        conn.close()
        raise CorruptStoreError(path, str(e)) from e
    except BaseException:
        conn.close()
        raise
    return conn


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    """Create the schema in a new file; check the version and tables of an existing one."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"graph store {path!r} has schema version {version}, newer than this "
            f"hello-memory ({SCHEMA_VERSION}); upgrade hello-memory"
        )
    if version < SCHEMA_VERSION:  # idempotent DDL, one transaction (concurrent openers serialise)
        conn.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {SCHEMA_VERSION};COMMIT;")
        logger.info("created graph store schema v%s in %s", SCHEMA_VERSION, path)
    for table, columns in _TABLES.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if not columns <= have:
            raise CorruptStoreError(
                path, f"table {table!r} is missing or lacks columns {sorted(columns - have)}"
            )


def _build_graph(conn: sqlite3.Connection, user_id: str) -> nx.Graph:
    names = dict(conn.execute("SELECT id, name FROM entities WHERE user_id = ?", (user_id,)))
    graph = nx.Graph(names=names)  # names beside the nodes: per-node attribute dicts build 40 % slower
    graph.add_nodes_from(names)
    graph.add_edges_from(
        conn.execute("SELECT source_id, target_id FROM relations WHERE user_id = ?", (user_id,))
    )
    return graph


@contextmanager
def _wrapped(action: str, path: str | None = None) -> Iterator[None]:
    """Wrap sqlite3 errors in StoreError, a full disk in DiskFullError (our own errors pass through)."""
    try:
        yield
    except sqlite3.Error as e:
        full = sqlite_error(e, Path(path), action) if path and path != ":memory:" else None
        if isinstance(full, DiskFullError):
            raise full from e
        raise StoreError(f"graph store {action} failed: {e}") from e
