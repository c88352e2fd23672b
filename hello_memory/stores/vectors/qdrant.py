"""Vector index on a Qdrant server through ``qdrant-client`` (also ``:memory:`` and local paths).

Collections are named ``f"{prefix}_{name}"``; the embedder name and dimension live in the
collection's ``metadata`` (Qdrant >= 1.16). Writes use ``wait=True``, so an upsert is applied
(and in the server's WAL) when it returns. The connection (:mod:`hello_memory.stores.qdrant_connection`)
retries transient failures; every failure that remains is a :class:`~hello_memory.errors.StoreError`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from hello_memory.errors import DimensionMismatchError, StoreError
from hello_memory.stores.qdrant_connection import META_KEY, QdrantConnection, models
from hello_memory.stores.vectors.base import Filter, VectorHit, VectorPoint
from hello_memory.stores.vectors.common import VectorStoreAdapter, fetched_point, missing_collection
from hello_memory.stores.vectors.filters import CompiledFilter, compiled_filter, translate
from hello_memory.stores.vectors.rules import (
    FLOAT_INDEX_KEYS,
    KEYWORD_INDEX_KEYS,
    CollectionMeta,
    check_collection_name,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from hello_memory.stores.qdrant_connection import QdrantOptions

logger = logging.getLogger(__name__)

_UPSERT_BATCH = 256


class _QdrantFilters:
    """Filters spelled in ``qdrant_client.models`` (a :class:`~hello_memory.stores.vectors.filters.FilterDialect`)."""

    def __init__(self) -> None:
        self._m = models()

    def match_value(self, key: str, value: str | int | bool) -> Any:
        return self._m.FieldCondition(key=key, match=self._m.MatchValue(value=value))

    def match_any(self, key: str, values: Sequence[str] | Sequence[int]) -> Any:
        return self._m.FieldCondition(key=key, match=self._m.MatchAny(any=list(values)))

    def match_range(self, key: str, gte: float | None, lte: float | None) -> Any:
        return self._m.FieldCondition(key=key, range=self._m.Range(gte=gte, lte=lte))

    def is_empty(self, key: str) -> Any:
        return self._m.IsEmptyCondition(is_empty=self._m.PayloadField(key=key))

    def nothing(self) -> Any:
        return self._m.HasIdCondition(has_id=[])

    def any_of(self, conditions: list[Any]) -> Any:
        return self._m.Filter(should=conditions)

    def all_of(self, must: list[Any] | None, must_not: list[Any] | None) -> Any:
        return self._m.Filter(must=must, must_not=must_not)


def to_qdrant_filter(where: Filter | CompiledFilter | None) -> Any:
    """Convert a hello-memory filter to ``qdrant_client.models.Filter`` (``None`` = match all)."""
    compiled = compiled_filter(where)
    return None if compiled is None else translate(compiled, _QdrantFilters())


class QdrantVectorStore(VectorStoreAdapter):
    """A :class:`~hello_memory.stores.vectors.base.VectorStore` over ``qdrant-client``.

    Args:
        location: ``":memory:"`` for an in-process instance, or a server URL.
        **connection: ``url``, ``path``, ``api_key``, ``timeout``, ``client``, ``prefix``, ``retries``:
            see :class:`~hello_memory.stores.qdrant_connection.QdrantConnection` (exactly one of
            ``location``, ``url``, ``path`` or ``client``). The client is built on first use; an
            injected ``client`` is not closed by ``close()``.

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

    BACKEND = "qdrant"

    def __init__(self, location: str | None = None, **connection: Unpack[QdrantOptions]) -> None:
        self._conn = QdrantConnection(location, **connection)
        self._metas: dict[str, CollectionMeta] = {}

    def collections(self) -> list[str]:
        """Names of existing collections (under this store's prefix)."""
        start = f"{self._conn.prefix}_"
        response = self._conn.call("list collections", "get_collections")
        return sorted(c.name[len(start) :] for c in response.collections if c.name.startswith(start))

    def drop_collection(self, name: str) -> None:
        """Delete a collection and all its points (no error if absent)."""
        full = self._full(name)
        self._metas.pop(name, None)
        if self._conn.exists(name):
            self._conn.call("drop the collection", "delete_collection", full)
            logger.info("dropped collection %s", full)

    def close(self) -> None:
        """Close the client if this store built it; idempotent."""
        self._conn.close()

    # -- primitives ---------------------------------------------------------------------------------
    def _meta(self, name: str) -> CollectionMeta:
        """The (cached) metadata of ``name``."""
        meta = self._metas.get(name)
        if meta is None:
            self._full(name)
            if not self._conn.exists(name):
                raise missing_collection(name)
            meta = self._read_meta(name)
        return meta

    def _ensure(self, name: str, meta: CollectionMeta) -> None:
        cached = self._metas.get(name)
        if cached is not None and cached.embedder:  # verified before: no round trip (callers repeat this)
            cached.check(name, meta.dimension, meta.embedder)
            return
        m = models()
        vectors = m.VectorParams(size=meta.dimension, distance=m.Distance.COSINE)
        self._conn.create_if_absent(name, meta.to_json(), vectors_config=vectors)
        stored = self._read_meta(name)
        if not stored.embedder:  # created without metadata (older server): adopt it if the size fits
            if stored.dimension != meta.dimension:
                raise DimensionMismatchError(name, stored.dimension, meta.dimension, embedder=meta.embedder)
            stored = meta
            self._conn.call(
                "record metadata", "update_collection", self._full(name), metadata={META_KEY: meta.to_json()}
            )
        stored.check(name, meta.dimension, meta.embedder)
        self._metas[name] = stored
        self._conn.ensure_indexes(name, keywords=KEYWORD_INDEX_KEYS, floats=FLOAT_INDEX_KEYS)

    def _write(
        self, name: str, ids: list[str], matrix: npt.NDArray[np.float32], payloads: list[dict[str, Any]]
    ) -> None:
        """In batches of 256, every batch built (and so validated) before the first is written."""
        m = models()
        batches = []
        for start in range(0, len(ids), _UPSERT_BATCH):
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
            self._conn.call("upsert", "upsert", self._full(name), points=batch, wait=True)

    def _remove(self, name: str, ids: list[str]) -> None:
        self._delete(name, models().PointIdsList(points=ids))

    def _remove_where(self, name: str, where: CompiledFilter) -> int:
        n = self._count(name, where)
        if n:
            self._delete(name, models().FilterSelector(filter=to_qdrant_filter(where)))
        return n

    def _nearest(
        self, name: str, query: npt.NDArray[np.float32], limit: int, where: CompiledFilter | None, with_payload: bool
    ) -> list[VectorHit]:
        response = self._conn.call(
            "search",
            "query_points",
            self._full(name),
            query=query.tolist(),
            query_filter=to_qdrant_filter(where),
            limit=limit,
            with_payload=with_payload,
        )
        return [VectorHit(str(p.id), float(p.score), p.payload or {}) for p in response.points]

    def _fetch(self, name: str, ids: list[str], with_vectors: bool) -> list[VectorPoint]:
        records = self._conn.call(
            "retrieve", "retrieve", self._full(name), ids, with_payload=True, with_vectors=with_vectors
        )
        return [fetched_point(str(r.id), r.vector if with_vectors else None, r.payload) for r in records]

    def _count(self, name: str, where: CompiledFilter | None) -> int:
        self._full(name)
        return self._conn.count(name, to_qdrant_filter(where))

    def _ids(self, name: str, where: CompiledFilter | None) -> list[str]:
        self._full(name)
        points = self._conn.scroll_all(name, to_qdrant_filter(where), with_payload=False, with_vectors=False)
        return [str(p.id) for p in points]

    # -- internals ----------------------------------------------------------------------------------
    def _full(self, name: str) -> str:
        check_collection_name(name)
        return self._conn.full(name)

    def _delete(self, name: str, selector: Any) -> None:
        self._conn.call("delete", "delete", self._full(name), points_selector=selector, wait=True)

    def _read_meta(self, name: str) -> CollectionMeta:
        """Dimension from the vector config, embedder from the metadata ("" when absent)."""
        full = self._full(name)
        config = self._conn.call("read the collection", "get_collection", full).config
        size = getattr(config.params.vectors, "size", None)
        if not isinstance(size, int):
            raise StoreError(f"collection {full!r} is not a single unnamed-vector collection")
        stored = (config.metadata or {}).get(META_KEY) or {}
        if not stored:
            logger.warning("collection %s has no hello-memory metadata; its embedder is unknown", full)
        meta = CollectionMeta(size, str(stored.get("embedder", "")))
        self._metas[name] = meta
        return meta
