"""Opening the stores of one data directory, shared within a process, exclusive across processes.

Several objects in one process (a MemoryManager, a RAG pipeline, tools, an app) may use the same
data directory at once: they share one :class:`StoreBundle`, reference-counted. Another process
opening the same directory gets :class:`~hello_memory.errors.StoreLockedError` at once instead of
corrupting the embedded stores (see :class:`DirLock`; :func:`lock_holder` says who holds one).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import threading
from pathlib import Path
from typing import Any

from hello_memory.errors import DiskFullError, InvalidInputError, StoreError, StoreLockedError
from hello_memory.settings import Settings
from hello_memory.stores import open_server as server_stores
from hello_memory.stores.bundle import StoreBundle
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.home import resolve_home
from hello_memory.stores.records.base import RecordStore
from hello_memory.stores.records.sqlite import SQLiteRecordStore
from hello_memory.stores.vectors.base import VectorStore

logger = logging.getLogger(__name__)


_registry: dict[str, StoreBundle] = {}
_registry_lock = threading.Lock()


def check_settings(settings: Any, home: Any = None) -> Any:
    """``settings`` (a ``Settings``, ``None`` = from the environment) with ``home`` applied, if given."""
    if settings is not None and not isinstance(settings, Settings):
        raise InvalidInputError(f"settings must be a Settings, got {type(settings).__name__}", field="settings")
    settings = settings or Settings()
    return settings if home is None else settings.model_copy(update={"home": resolve_home(home)})


def _path_error(home: Path, e: OSError) -> StoreError:
    if e.errno == errno.ENOSPC:
        return DiskFullError(str(home))
    return StoreError(f"cannot use {str(home)!r} as the data directory: {e.strerror or e}")


class DirLock:
    """An exclusive ``flock`` on the data directory itself, plus ``LOCK`` describing the holder.

    The lock is on the directory's own file descriptor: unlike a lock file it cannot be deleted
    from under its holder (the issue-17 attack removed ``LOCK`` and a second process got in). ``LOCK``
    is also ``flock``ed, which keeps out a process of an older hello-memory that only locks the file.
    SQLite's POSIX ``fcntl`` locks are independent of ``flock`` on Linux, so neither interferes.
    Locks die with the process, SIGKILL included.
    """

    def __init__(self, home: Path) -> None:
        self._fds: list[int] = []
        try:
            home.mkdir(parents=True, exist_ok=True)
            self._fds.append(os.open(home, os.O_RDONLY | os.O_DIRECTORY))
        except OSError as e:  # home is a file, a device, read-only, ...
            raise _path_error(home, e) from e
        try:
            _try_flock(self._fds[0], home)
            self._fds.append(_lock_file(home))
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Unlock and close (idempotent); closing the last descriptor drops its ``flock``."""
        while self._fds:
            os.close(self._fds.pop())


def _try_flock(fd: int, home: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as e:
        raise StoreLockedError(str(home), _describe_holder(home)) from e


def _lock_file(home: Path) -> int:
    """Open, lock and fill in ``LOCK``; a full disk only costs the description, never the open."""
    try:
        fd = os.open(home / "LOCK", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise _path_error(home, e) from e
    try:
        _try_flock(fd, home)
    except BaseException:
        os.close(fd)
        raise
    try:  # unbuffered: nothing is left to flush (and fail) on close
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
    except OSError as e:
        logger.warning("cannot write the lock holder into %s: %s", home / "LOCK", e.strerror or e)
    return fd


def _describe_holder(home: Path) -> str:
    try:
        text = (home / "LOCK").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        text = ""
    return text or "an unknown process (its LOCK file is gone)"


def lock_holder(home: str | os.PathLike[str]) -> str | None:
    """Who holds the data directory ``home``: its description (``"pid 1234"``) or ``None`` if free.

    The current process counts as a holder while it has the directory open.

    Example:
        >>> lock_holder("/nonexistent/hello-memory-home") is None
        True
    """
    path = resolve_home(home)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _path_error(path, e) from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return _describe_holder(path)
    finally:
        os.close(fd)  # also drops the probe's lock when it was granted
    return None


def check_components(**given: object) -> None:
    """Injected components (``embedder``, ``vector_store``, ``graph_store``, ``llm``) must implement
    their protocol: checked when the façade is built, not at first use deep inside a write."""
    from hello_memory.embedders.base import Embedder
    from hello_memory.llm.base import LLMClient

    protocols: dict[str, type] = {
        "record_store": RecordStore,
        "embedder": Embedder,
        "vector_store": VectorStore,
        "graph_store": GraphStore,
        "llm": LLMClient,
    }
    for name, value in given.items():
        if value is not None and not isinstance(value, protocols[name]):
            raise InvalidInputError(
                f"{name} must implement {protocols[name].__name__}, got {type(value).__name__}", field=name
            )


def _open_graph(settings: Settings, home: Path) -> GraphStore:
    if settings.neo4j_uri:
        return server_stores.open_neo4j(settings)
    from hello_memory.stores.graph.sqlite import SQLiteGraphStore

    return SQLiteGraphStore(home / "graph.db")


def acquire(
    settings: Settings,
    *,
    vectors: VectorStore | None = None,
    graph: GraphStore | None = None,
    records: RecordStore | None = None,
) -> StoreBundle:
    """Open (or share) the stores for ``settings``; pair every call with :func:`release`.

    Server mode (``settings.qdrant_url`` set, or an injected ``records`` store that keeps vectors)
    opens no data directory: see :mod:`hello_memory.stores.open_server`. Otherwise the stores of
    ``settings.home``. Injected stores give a private bundle that is not shared.
    """
    server = server_stores.wanted(settings, records)
    if records is not None and not server:
        raise InvalidInputError(
            "record_store: only a store that keeps vectors (QdrantRecordStore, server mode) can be injected; "
            "the embedded record store is the data directory's own",
            field="record_store",
        )
    if vectors is not None or graph is not None or records is not None:
        if server:
            bundle = server_stores.open_bundle(settings, records=records, vectors=vectors, graph=graph)
        else:
            bundle = _new_bundle(settings, resolve_home(settings.home), vectors, graph)
        bundle.refs = 1
        return bundle
    key = server_stores.registry_key(settings) if server else str(resolve_home(settings.home))
    with _registry_lock:
        shared = _registry.get(key)
        if shared is not None and shared.pid != os.getpid():  # a forked child's inherited entry: not ours
            shared = None
        if shared is None:
            if server:
                shared = server_stores.open_bundle(settings)
            else:
                shared = _new_bundle(settings, resolve_home(settings.home), None, None)
            shared.key = key
            _registry[key] = shared
        shared.refs += 1
        return shared


def _new_bundle(
    settings: Settings, home: Path, vectors: VectorStore | None, graph: GraphStore | None
) -> StoreBundle:
    from hello_memory.stores.vectors.factory import open_vector_store

    dir_lock = DirLock(home)
    try:
        records = SQLiteRecordStore(home / "records.db", context_window=settings.lexical_context_window)
        records.conn  # noqa: B018 - open now so a corrupt file fails here, not mid-operation
        return StoreBundle(
            home=home,
            records=records,
            vectors=vectors or open_vector_store(settings),
            graph=graph or _open_graph(settings, home),
            dir_lock=dir_lock,
        )
    except BaseException:
        dir_lock.release()
        raise


def release(bundle: StoreBundle) -> None:
    """Drop one reference; the last one closes the stores (a forked child's copy is left alone: the
    stores belong to the process that opened them)."""
    if bundle.pid != os.getpid():
        return
    with _registry_lock:
        bundle.refs -= 1
        if bundle.refs > 0:
            return
        if bundle.key and _registry.get(bundle.key) is bundle:
            del _registry[bundle.key]
    bundle.close()
