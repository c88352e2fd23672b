"""Vector index on a Qdrant server through ``qdrant-client`` (also ``:memory:`` and local paths).

Collections are named ``f"{prefix}_{name}"``; the embedder name and dimension live in the
collection's ``metadata`` (Qdrant >= 1.16). Writes use ``wait=True``, so an upsert is applied
(and in the server's WAL) when it returns. Transient failures (connection errors, timeouts,
HTTP 408/429/502/503/504) are retried with exponential backoff; every failure that remains is a
:class:`~hello_memory.errors.StoreError`.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory._lazy import require
from hello_memory.errors import (
    DimensionMismatchError,
    HelloMemoryError,
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from hello_memory.stores.vectors.base import Filter, VectorHit, VectorPoint
from hello_memory.stores.vectors.rules import (
    FLOAT_INDEX_KEYS,
    KEYWORD_INDEX_KEYS,
    Clause,
    CollectionMeta,
    CompiledFilter,
    check_collection_args,
    check_collection_name,
    check_limit,
    compile_delete_filter,
    compile_filter,
    existing_id_candidates,
    prepare_points,
    unit_vector,
)

logger = logging.getLogger(__name__)

META_KEY = "hello_memory"
_UPSERT_BATCH = 256
_SCROLL_PAGE = 1024
_TRANSIENT_STATUS = frozenset({408, 429, 502, 503, 504})
_PREFIX = re.compile(r"^[A-Za-z0-9_]{1,32}$")
_NO_VECTOR = np.empty(0, dtype=np.float32)


def _models() -> Any:
    return require("qdrant_client.models", "qdrant", "qdrant-client")


def to_qdrant_filter(where: Filter | CompiledFilter | None) -> Any:
    """Convert a hello-memory filter to ``qdrant_client.models.Filter`` (``None`` = match all)."""
    compiled = where if isinstance(where, CompiledFilter) or where is None else compile_filter(where)
    if compiled is None:
        return None
    m = _models()
    must = [_qdrant_condition(m, c) for c in compiled.must]
    must_not = [_qdrant_condition(m, c) for c in compiled.must_not]
    return m.Filter(must=must or None, must_not=must_not or None)


def _qdrant_condition(m: Any, clause: Clause) -> Any:
    key = clause.key
    alts: list[Any] = []
    for values in (clause.strings, clause.ints):
        if len(values) == 1:
            alts.append(m.FieldCondition(key=key, match=m.MatchValue(value=values[0])))
        elif values:
            alts.append(m.FieldCondition(key=key, match=m.MatchAny(any=list(values))))
    alts += [m.FieldCondition(key=key, match=m.MatchValue(value=b)) for b in clause.bools]
    alts += [m.FieldCondition(key=key, range=m.Range(gte=lo, lte=hi)) for lo, hi in clause.ranges]
    if clause.empty:
        alts.append(m.IsEmptyCondition(is_empty=m.PayloadField(key=key)))
    if not alts:
        return m.HasIdCondition(has_id=[])  # an empty "any of": matches nothing
    return alts[0] if len(alts) == 1 else m.Filter(should=alts)


def is_transient(error: BaseException) -> bool:
    """True for failures worth retrying: connection errors, timeouts, overload responses."""
    exceptions = require("qdrant_client.http.exceptions", "qdrant", "qdrant-client")
    httpx = require("httpx", "qdrant")
    if isinstance(error, exceptions.UnexpectedResponse):
        return error.status_code in _TRANSIENT_STATUS
    if isinstance(error, exceptions.ResponseHandlingException):
        return is_transient(error.source)
    return isinstance(error, (TimeoutError, ConnectionError, httpx.TransportError))


class QdrantVectorStore:
    """A :class:`~hello_memory.stores.vectors.base.VectorStore` over ``qdrant-client``.

    Exactly one of ``location`` (``":memory:"`` or a URL), ``url``, ``path`` or ``client`` is
    given. The client is built on first use; an injected ``client`` is not closed by ``close()``.

    Args:
        location: ``":memory:"`` for an in-process instance, or a server URL.
        url: server URL, e.g. ``"http://localhost:6333"``.
        path: directory of a local (embedded, pure-Python) instance.
        api_key: server API key.
        timeout: request timeout in seconds.
        client: a pre-built ``QdrantClient``.
        prefix: collection-name prefix, so several apps can share a server.
        retries: retries of a transient failure (exponential backoff from 0.2 s).

    Example:
        >>> import uuid, numpy as np
        >>> from hello_memory.stores.vectors.base import VectorPoint
        >>> store = QdrantVectorStore(":memory:")
        >>> store.ensure_collection("memories", 3, embedder="fake")
        >>> pid = str(uuid.uuid4())
        >>> store.upsert("memories", [VectorPoint(pid, np.array([1, 0, 0], np.float32), {})])
        >>> store.search("memories", np.array([1, 0, 0], np.float32), limit=1)[0].id == pid
        True
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
        if not _PREFIX.match(prefix):
            raise InvalidInputError(f"invalid prefix {prefix!r}: use 1-32 of [A-Za-z0-9_]", field="prefix")
        self._options: dict[str, Any] = {"location": location, "url": url, "path": path, "api_key": api_key}
        self._options["timeout"] = max(1, math.ceil(timeout))
        self._client: Any = client
        self._owns_client = client is None
        self._prefix = prefix
        self._retries = retries
        self._metas: dict[str, CollectionMeta] = {}
        self._lock = threading.RLock()
        self._closed = False

    @property
    def backend(self) -> str:
        """``"qdrant"``."""
        return "qdrant"

    def __enter__(self) -> QdrantVectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- collections ----------------------------------------------------------------------------
    def ensure_collection(self, name: str, dimension: int, *, embedder: str) -> None:
        """Create ``name`` or verify that it matches ``dimension`` and ``embedder``."""
        check_collection_args(name, dimension, embedder)
        cached = self._metas.get(name)
        if cached is not None and cached.embedder:  # verified before: no round trip (callers repeat this)
            cached.check(name, dimension, embedder)
            return
        full = self._full(name)
        if not self._call("check the collection", "collection_exists", full):
            meta = CollectionMeta(dimension, embedder)
            m = _models()
            try:
                self._call(
                    "create the collection",
                    "create_collection",
                    full,
                    vectors_config=m.VectorParams(size=dimension, distance=m.Distance.COSINE),
                    metadata={META_KEY: meta.to_json()},
                )
                logger.info("created collection %s (%s dims, embedder %s)", full, dimension, embedder)
            except StoreError:  # a concurrent creator may have won the race
                if not self._call("check the collection", "collection_exists", full):
                    raise
        meta = self._read_meta(name, full)
        if not meta.embedder:  # created without metadata (older server): adopt it if the size fits
            if meta.dimension != dimension:
                raise DimensionMismatchError(name, meta.dimension, dimension, embedder=embedder)
            meta = CollectionMeta(dimension, embedder)
            self._call("record metadata", "update_collection", full, metadata={META_KEY: meta.to_json()})
        meta.check(name, dimension, embedder)
        self._metas[name] = meta
        self._ensure_indexes(full)

    def collections(self) -> list[str]:
        """Names of existing collections (under this store's prefix)."""
        start = f"{self._prefix}_"
        response = self._call("list collections", "get_collections")
        return sorted(c.name[len(start) :] for c in response.collections if c.name.startswith(start))

    def drop_collection(self, name: str) -> None:
        """Delete a collection and all its points (no error if absent)."""
        full = self._full(name)
        self._metas.pop(name, None)
        if self._call("check the collection", "collection_exists", full):
            self._call("drop the collection", "delete_collection", full)
            logger.info("dropped collection %s", full)

    # -- writes ---------------------------------------------------------------------------------
    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points in batches of 256; nothing is written if any point is invalid."""
        meta, full = self._meta(collection), self._full(collection)
        ids, matrix, payloads = prepare_points(collection, points, meta.dimension)
        m = _models()
        batches = []
        for start in range(0, len(ids), _UPSERT_BATCH):  # build (and validate) every batch before writing
            end = start + _UPSERT_BATCH
            try:
                batches.append(
                    m.Batch(
                        ids=ids[start:end], vectors=matrix[start:end].tolist(), payloads=payloads[start:end]
                    )
                )
            except Exception as e:  # pydantic refusing a value json.dumps accepted
                raise StoreError(f"qdrant-client refused the batch: {e}") from e
        for batch in batches:
            self._call("upsert", "upsert", full, points=batch, wait=True)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id (absent ids are ignored)."""
        self._meta(collection)
        candidates = existing_id_candidates(ids)
        if candidates:
            selector = _models().PointIdsList(points=candidates)
            self._call("delete", "delete", self._full(collection), points_selector=selector, wait=True)

    def delete_where(self, collection: str, where: Filter) -> int:
        """Delete every point matching ``where`` (which must have a condition); returns the count."""
        qfilter = to_qdrant_filter(compile_delete_filter(where))
        n = self.count(collection, where)
        if n:
            selector = _models().FilterSelector(filter=qfilter)
            self._call("delete", "delete", self._full(collection), points_selector=selector, wait=True)
        return n

    # -- reads ----------------------------------------------------------------------------------
    def search(
        self,
        collection: str,
        vector: npt.NDArray[np.float32],
        *,
        limit: int,
        where: Filter | None = None,
    ) -> list[VectorHit]:
        """Nearest neighbours by cosine similarity."""
        qfilter = to_qdrant_filter(where)
        query = unit_vector(collection, vector, self._meta(collection).dimension)
        if check_limit(limit) == 0:
            return []
        response = self._call(
            "search",
            "query_points",
            self._full(collection),
            query=query.tolist(),
            query_filter=qfilter,
            limit=limit,
            with_payload=True,
        )
        return [VectorHit(str(p.id), float(p.score), p.payload or {}) for p in response.points]

    def get(self, collection: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[VectorPoint]:
        """Points by id (absent ids are skipped); vectors come back L2-normalised."""
        self._meta(collection)
        candidates = existing_id_candidates(ids)
        if not candidates:
            return []
        records = self._call(
            "retrieve",
            "retrieve",
            self._full(collection),
            candidates,
            with_payload=True,
            with_vectors=with_vectors,
        )
        return [
            VectorPoint(
                str(r.id),
                np.asarray(r.vector, dtype=np.float32) if with_vectors else _NO_VECTOR.copy(),
                r.payload or {},
            )
            for r in records
        ]

    def count(self, collection: str, where: Filter | None = None) -> int:
        """Number of points (matching ``where``)."""
        qfilter = to_qdrant_filter(where)
        self._meta(collection)
        result = self._call("count", "count", self._full(collection), count_filter=qfilter, exact=True)
        return int(result.count)

    def ids(self, collection: str, where: Filter | None = None) -> list[str]:
        """Every point id (matching ``where``)."""
        qfilter = to_qdrant_filter(where)
        self._meta(collection)
        out: list[str] = []
        offset: Any = None
        while True:
            records, offset = self._call(
                "scroll",
                "scroll",
                self._full(collection),
                scroll_filter=qfilter,
                limit=_SCROLL_PAGE,
                offset=offset,
                with_payload=False,
                with_vectors=False,
            )
            out.extend(str(r.id) for r in records)
            if offset is None:
                return out

    def close(self) -> None:
        """Close the client if this store built it; idempotent."""
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

    # -- internals ------------------------------------------------------------------------------
    def _full(self, name: str) -> str:
        check_collection_name(name)
        return f"{self._prefix}_{name}"

    def _meta(self, name: str) -> CollectionMeta:
        """The (cached) metadata of ``name``; raises NotFoundError when it does not exist."""
        meta = self._metas.get(name)
        if meta is None:
            full = self._full(name)
            if not self._call("check the collection", "collection_exists", full):
                raise NotFoundError(
                    f"collection {name!r} does not exist; call ensure_collection first", object_id=name
                )
            meta = self._read_meta(name, full)
        return meta

    def _read_meta(self, name: str, full: str) -> CollectionMeta:
        """Dimension from the vector config, embedder from the metadata ("" when absent)."""
        config = self._call("read the collection", "get_collection", full).config
        size = getattr(config.params.vectors, "size", None)
        if not isinstance(size, int):
            raise StoreError(f"collection {full!r} is not a single unnamed-vector collection")
        stored = (config.metadata or {}).get(META_KEY) or {}
        if not stored:
            logger.warning("collection %s has no hello-memory metadata; its embedder is unknown", full)
        meta = CollectionMeta(size, str(stored.get("embedder", "")))
        self._metas[name] = meta
        return meta

    def _ensure_indexes(self, full: str) -> None:
        if self._is_local():
            return  # local mode ignores payload indexes (and warns about each one)
        m = _models()
        wanted = [(k, m.PayloadSchemaType.KEYWORD) for k in KEYWORD_INDEX_KEYS]
        wanted += [(k, m.PayloadSchemaType.FLOAT) for k in FLOAT_INDEX_KEYS]
        schema = self._call("read the collection", "get_collection", full).payload_schema or {}
        for key, kind in wanted:
            if key not in schema:
                self._call("create a payload index", "create_payload_index", full, key, kind, wait=True)

    def _is_local(self) -> bool:
        return type(getattr(self._get_client(), "_client", None)).__name__ == "QdrantLocal"

    def _get_client(self) -> Any:
        with self._lock:
            if self._closed:
                raise StoreError("the vector store is closed")
            if self._client is None:
                qdrant_client = require("qdrant_client", "qdrant", "qdrant-client")
                options = {k: v for k, v in self._options.items() if v is not None}
                if options.get("location") == ":memory:" or "path" in options:
                    options = {k: v for k, v in options.items() if k in ("location", "path")}
                    options["force_disable_check_same_thread"] = True  # calls are serialised by _lock
                self._client = qdrant_client.QdrantClient(**options)
            return self._client

    def _call(self, action: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call a client method, retrying transient failures and wrapping errors in StoreError."""
        client = self._get_client()
        fn: Callable[..., Any] = getattr(client, method)
        local = self._is_local()
        for attempt in range(self._retries + 1):
            try:
                if local:  # the local engine is not thread-safe
                    with self._lock:
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
