"""Opening the stores of one data directory, shared within a process, exclusive across processes.

Several objects in one process (a MemoryManager, a RAG pipeline, tools, an app) may use the same
data directory at once: they share one :class:`StoreBundle`, reference-counted. Another process
opening the same directory gets :class:`~hello_memory.errors.StoreLockedError` at once instead of
corrupting the embedded stores.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from hello_memory.errors import StoreError, StoreLockedError
from hello_memory.settings import Settings
from hello_memory.stores.base import GraphStore, VectorStore
from hello_memory.stores.sqlite import SQLiteRecordStore

logger = logging.getLogger(__name__)


@dataclass
class StoreBundle:
    """The stores behind one data directory (or one server configuration)."""

    home: Path
    records: SQLiteRecordStore
    vectors: VectorStore
    graph: GraphStore
    lock: threading.RLock = field(default_factory=threading.RLock)
    refs: int = 0
    lock_file: IO[str] | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # stores of higher layers (e.g. RAG chunks)

    def close(self) -> None:
        """Close every store and release the directory lock."""
        closers = [getattr(x, "close", None) for x in self.extras.values()]
        for closer in [*closers, self.vectors.close, self.graph.close, self.records.close]:
            if closer is None:
                continue
            try:
                closer()
            except Exception:  # closing must release the rest even if one store fails
                logger.exception("closing a store failed")
        if self.lock_file is not None:
            fcntl.flock(self.lock_file, fcntl.LOCK_UN)
            self.lock_file.close()
            self.lock_file = None


_registry: dict[str, StoreBundle] = {}
_registry_lock = threading.Lock()


def _acquire_dir_lock(home: Path) -> IO[str]:
    try:
        home.mkdir(parents=True, exist_ok=True)
        fh = open(home / "LOCK", "a+", encoding="utf-8")  # noqa: SIM115 - held for the bundle's life
    except OSError as e:  # home is a file, a device, read-only, ...
        raise StoreError(f"cannot use {str(home)!r} as the data directory: {e.strerror or e}") from e
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as e:
        fh.seek(0)
        holder = fh.read().strip() or None
        fh.close()
        raise StoreLockedError(str(home), holder) from e
    fh.seek(0)
    fh.truncate()
    fh.write(f"pid {os.getpid()}\n")
    fh.flush()
    return fh


def _open_graph(settings: Settings, home: Path) -> GraphStore:
    if settings.neo4j_uri:
        from hello_memory.stores.neo4j import Neo4jGraphStore

        password = settings.neo4j_password.get_secret_value() if settings.neo4j_password else None
        graph: GraphStore = Neo4jGraphStore(
            settings.neo4j_uri,
            username=settings.neo4j_username,
            password=password,
            database=settings.neo4j_database,
        )
        return graph
    from hello_memory.stores.graph_sqlite import SQLiteGraphStore

    return SQLiteGraphStore(home / "graph.db")


def acquire(
    settings: Settings, *, vectors: VectorStore | None = None, graph: GraphStore | None = None
) -> StoreBundle:
    """Open (or share) the stores for ``settings.home``; pair every call with :func:`release`.

    Injected ``vectors``/``graph`` stores give a private bundle that is not shared.
    """
    home = Path(settings.home).expanduser().resolve()
    if vectors is not None or graph is not None:
        bundle = _new_bundle(settings, home, vectors, graph)
        bundle.refs = 1
        return bundle
    key = str(home)
    with _registry_lock:
        shared = _registry.get(key)
        if shared is None:
            shared = _new_bundle(settings, home, None, None)
            _registry[key] = shared
        shared.refs += 1
        return shared


def _new_bundle(
    settings: Settings, home: Path, vectors: VectorStore | None, graph: GraphStore | None
) -> StoreBundle:
    from hello_memory.stores.vectors import open_vector_store

    lock_file = _acquire_dir_lock(home)
    try:
        records = SQLiteRecordStore(home / "records.db", context_window=settings.lexical_context_window)
        records.conn  # noqa: B018 - open now so a corrupt file fails here, not mid-operation
        return StoreBundle(
            home=home,
            records=records,
            vectors=vectors or open_vector_store(settings),
            graph=graph or _open_graph(settings, home),
            lock_file=lock_file,
        )
    except BaseException:
        fcntl.flock(lock_file, fcntl.LOCK_UN)
        lock_file.close()
        raise


def release(bundle: StoreBundle) -> None:
    """Drop one reference; the last one closes the stores."""
    with _registry_lock:
        bundle.refs -= 1
        if bundle.refs > 0:
            return
        key = str(bundle.home)
        if _registry.get(key) is bundle:
            del _registry[key]
    bundle.close()
