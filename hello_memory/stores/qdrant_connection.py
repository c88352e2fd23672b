"""What every Qdrant adapter shares (vectors, records, chunks, graph): a lazy client, retries, collections.

:class:`QdrantConnection` builds the ``qdrant-client`` client on first use (a server URL,
``":memory:"`` or a local path — local mode locks its path to one client, so one process), retries
transient failures (connection errors, timeouts, HTTP 408/429/502/503/504) with exponential backoff
and wraps every remaining failure in :class:`~hello_memory.errors.StoreError`. Collections are
``<prefix>_<name>`` and carry a ``hello_memory`` metadata entry that says what they hold; opening one
whose metadata disagrees (another embedder, dimension or encoding) is refused.

Every Qdrant store takes the connection's keywords (:class:`QdrantOptions`) and hands them on, so
they are checked and documented here only.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from hello_memory._lazy import require
from hello_memory.errors import (
    DimensionMismatchError,
    EmbedderMismatchError,
    HelloMemoryError,
    InvalidInputError,
    StoreError,
)

logger = logging.getLogger(__name__)
# Local mode is not thread-safe: every store sharing one local client serialises on that client's lock.
_LOCAL_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_LOCAL_LOCKS_GUARD = threading.Lock()


def _local_lock(client: Any) -> threading.RLock:
    with _LOCAL_LOCKS_GUARD:
        lock = _LOCAL_LOCKS.get(client)
        if lock is None:
            lock = _LOCAL_LOCKS[client] = threading.RLock()
        return lock


#: The collection-metadata entry that says what a collection holds.
META_KEY = "hello_memory"
SCROLL_PAGE = 1024
_PREFIX_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_TRANSIENT_STATUS = frozenset({408, 429, 502, 503, 504})


def models() -> Any:
    """``qdrant_client.models`` (lazily; a clear error names the extra when it is missing)."""
    return require("qdrant_client.models", "qdrant", "qdrant-client")


def is_transient(error: BaseException) -> bool:
    """True for failures worth retrying: connection errors, timeouts, overload responses."""
    exceptions = require("qdrant_client.http.exceptions", "qdrant", "qdrant-client")
    httpx = require("httpx", "qdrant")
    if isinstance(error, exceptions.UnexpectedResponse):
        return error.status_code in _TRANSIENT_STATUS
    if isinstance(error, exceptions.ResponseHandlingException):
        return is_transient(error.source)
    return isinstance(error, (TimeoutError, ConnectionError, httpx.TransportError))


class QdrantOptions(TypedDict, total=False):
    """The keywords every Qdrant store takes after ``location`` (see :class:`QdrantConnection`)."""

    url: str | None
    path: str | None
    api_key: str | None
    timeout: float
    client: Any
    prefix: str
    retries: int


class QdrantConnection:
    """One ``qdrant-client`` client for a store: built on first use, shared by its threads.

    Exactly one of ``location``, ``url``, ``path`` or ``client`` is given.

    Args:
        location: ``":memory:"`` for an in-process instance, or a server URL.
        url: server URL, e.g. ``"http://localhost:6333"``.
        path: directory of a local (embedded, pure-Python) instance.
        api_key: server API key.
        timeout: request timeout in seconds (rounded up to whole seconds).
        client: a pre-built ``QdrantClient``; :meth:`close` leaves it open (several stores may share it).
        prefix: collection-name prefix, so several apps can share a server.
        retries: retries of a transient failure (exponential backoff from 0.2 s).

    Example:
        >>> conn = QdrantConnection(":memory:", prefix="demo")
        >>> conn.full("memories")
        'demo_memories'
        >>> conn.close()
    """

    def __init__(
        self,
        location: str | None = None,
        *,
        url: str | None = None,
        path: str | None = None,
        api_key: str | None = None,
        timeout: float = 30,
        client: Any = None,
        prefix: str = "hm",
        retries: int = 3,
    ) -> None:
        if sum(x is not None for x in (location, url, path, client)) != 1:
            raise InvalidInputError("give exactly one of location, url, path or client", field="location")
        if not isinstance(prefix, str) or not 1 <= len(prefix) <= 32 or not set(prefix) <= _PREFIX_CHARS:
            raise InvalidInputError(f"invalid prefix {prefix!r}: use 1-32 of [A-Za-z0-9_]", field="prefix")
        self._options: dict[str, Any] = {"location": location, "url": url, "path": path, "api_key": api_key}
        self._options["timeout"] = max(1, math.ceil(timeout))
        self._client: Any = client
        self._owns_client = client is None
        self.prefix = prefix
        self._retries = retries
        self._lock = threading.RLock()
        self._closed = False
        self._local: bool | None = None

    def full(self, name: str) -> str:
        """The collection name on the server."""
        return f"{self.prefix}_{name}"

    @property
    def is_local(self) -> bool:
        """True for qdrant-client's local mode (in memory or a path), which has no payload indexes."""
        if self._local is None:
            self._local = type(getattr(self.client(), "_client", None)).__name__ == "QdrantLocal"
        return self._local

    def client(self) -> Any:
        """The client (built on first use)."""
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            if self._client is None:
                qdrant_client = require("qdrant_client", "qdrant", "qdrant-client")
                options = {k: v for k, v in self._options.items() if v is not None}
                if options.get("location") == ":memory:" or "path" in options:
                    options = {k: v for k, v in options.items() if k in ("location", "path")}
                    options["force_disable_check_same_thread"] = True  # calls are serialised by _lock
                try:
                    self._client = qdrant_client.QdrantClient(**options)
                except Exception as e:  # a locked local path, a malformed URL, ...
                    raise StoreError(f"qdrant client could not start: {e}") from e
            return self._client

    def call(self, action: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call a client method, retrying transient failures and wrapping errors in StoreError."""
        client = self.client()
        fn: Callable[..., Any] = getattr(client, method)
        lock = _local_lock(client) if self.is_local else None
        for attempt in range(self._retries + 1):
            try:
                if lock is not None:  # the local engine is not thread-safe
                    with lock:
                        return fn(*args, **kwargs)
                return fn(*args, **kwargs)
            except HelloMemoryError:
                raise
            except Exception as e:
                if attempt < self._retries and is_transient(e):
                    delay = 0.2 * 2**attempt
                    logger.warning("qdrant %s failed (%s); retrying in %.1f s", action, e, delay)
                    time.sleep(delay)
                    continue
                raise StoreError(f"qdrant failed to {action}: {e}") from e
        raise AssertionError("unreachable")  # pragma: no cover

    def exists(self, name: str) -> bool:
        """Whether the collection ``name`` exists."""
        return bool(self.call("check the collection", "collection_exists", self.full(name)))

    def create_if_absent(self, name: str, meta: dict[str, Any], **create: Any) -> None:
        """Create ``name`` with the ``create`` arguments and ``meta`` unless it exists.

        Losing the race to a concurrent creator is not an error: the collection exists either way.
        """
        full = self.full(name)
        if self.exists(name):
            return
        try:
            self.call("create the collection", "create_collection", full, metadata={META_KEY: meta}, **create)
            logger.info("created collection %s", full)
        except StoreError:
            if not self.exists(name):
                raise

    def ensure_collection(
        self,
        name: str,
        meta: dict[str, Any],
        check: Callable[[dict[str, Any]], None],
        **create: Any,
    ) -> dict[str, Any]:
        """Create ``name`` with ``create`` and ``meta``, or ``check`` the metadata of the existing one.

        Returns the stored metadata (the creator's, when another worker won the race to create it).
        """
        full = self.full(name)
        self.create_if_absent(name, meta, **create)
        info = self.call("read the collection", "get_collection", full)
        stored = dict((info.config.metadata or {}).get(META_KEY) or {})
        if not stored:
            raise StoreError(
                f"collection {full!r} was not created by hello-memory (no {META_KEY!r} metadata)"
            )
        check(stored)
        return stored

    def ensure_indexes(
        self,
        name: str,
        *,
        keywords: Sequence[str],
        floats: Sequence[str] = (),
        texts: Sequence[str] = (),
        tenant: str | None = None,
    ) -> None:
        """Payload indexes on a server collection (local mode has none and warns about each)."""
        if self.is_local:
            return
        m = models()
        full = self.full(name)
        schema = self.call("read the collection", "get_collection", full).payload_schema or {}
        wanted: list[tuple[str, Any]] = []
        for key in keywords:  # without a tenant key: plain keyword indexes, as the vector store always made
            kind = (
                m.PayloadSchemaType.KEYWORD
                if tenant is None
                else m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=key == tenant)
            )
            wanted.append((key, kind))
        wanted += [(key, m.PayloadSchemaType.FLOAT) for key in floats]
        wanted += [  # space-separated terms, matched whole (``MatchText``)
            (
                key,
                m.TextIndexParams(
                    type=m.TextIndexType.TEXT, tokenizer=m.TokenizerType.WHITESPACE, lowercase=False
                ),
            )
            for key in texts
        ]
        for key, kind in wanted:
            if key not in schema:
                self.call("create a payload index", "create_payload_index", full, key, kind, wait=True)

    def scroll_all(self, name: str, qfilter: Any, **kwargs: Any) -> list[Any]:
        """Every point matching ``qfilter``, page by page."""
        out: list[Any] = []
        offset: Any = None
        while True:
            records, offset = self.call(
                "scroll",
                "scroll",
                self.full(name),
                scroll_filter=qfilter,
                limit=SCROLL_PAGE,
                offset=offset,
                **kwargs,
            )
            out.extend(records)
            if offset is None:
                return out

    def count(self, name: str, qfilter: Any) -> int:
        """Exact number of points matching ``qfilter``."""
        return int(self.call("count", "count", self.full(name), count_filter=qfilter, exact=True).count)

    def close(self) -> None:
        """Close the client if this connection built it; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            client, self._client = self._client, None
        if client is not None and self._owns_client:
            try:
                client.close()
            except Exception as e:
                raise StoreError(f"qdrant failed to close: {e}") from e


def kind_check(kind: str, schema: int) -> Callable[[dict[str, Any]], None]:
    """A metadata check: the collection holds ``kind`` at a schema this library reads."""

    def check(stored: dict[str, Any]) -> None:
        if stored.get("kind") != kind or int(stored.get("schema", 0)) > schema:
            raise StoreError(
                f"collection holds {stored.get('kind')!r} schema {stored.get('schema')}, not hello-memory "
                f"{kind!r} schema {schema}: use another prefix or a newer hello-memory"
            )

    return check


def check_dense(collection: str, stored: dict[str, Any], embedder: str | None, dimension: int | None) -> None:
    """Refuse to open a collection whose dense vectors come from another embedder or have another size.

    A store without an embedder (``dimension=None``) may open any collection: it reads, and
    writes no vectors.
    """
    if dimension is None:
        return
    if stored.get("dimension") is None:
        raise EmbedderMismatchError(collection, "(no dense vectors)", str(embedder))
    if stored["dimension"] != dimension:
        raise DimensionMismatchError(collection, int(stored["dimension"]), dimension, embedder=embedder)
    if stored.get("embedder") != embedder:
        raise EmbedderMismatchError(collection, str(stored.get("embedder")), str(embedder))
