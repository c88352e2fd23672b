"""What the Edge store says to the ``qdrant-edge`` engine: filters, payload indexes, metadata files, errors.

A collection's directory holds ``collection.json`` (dimension and embedder, written atomically; its
presence marks the collection as created) and ``shard/``, the Edge shard.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from hello_memory.errors import (
    CorruptStoreError,
    DiskFullError,
    HelloMemoryError,
    StoreError,
    StoreLockedError,
)
from hello_memory.stores import space
from hello_memory.stores.vectors.base import Filter
from hello_memory.stores.vectors.filters import CompiledFilter, compiled_filter, translate
from hello_memory.stores.vectors.rules import FLOAT_INDEX_KEYS, KEYWORD_INDEX_KEYS, CollectionMeta

META_FILE = "collection.json"
SHARD_DIR = "shard"


class _EdgeFilters:
    """Filters spelled in ``qdrant_edge`` classes (a :class:`~hello_memory.stores.vectors.filters.FilterDialect`)."""

    def match_value(self, key: str, value: str | int | bool) -> Any:
        # qdrant-edge 0.9 converts MatchValue(True) to the integer 1 (it tries int before bool);
        # numpy.bool_ has no __index__, so it can only convert as a bool.
        match = qe.MatchValue(np.bool_(value) if isinstance(value, bool) else value)  # type: ignore[arg-type]
        return qe.FieldCondition(key, match=match)

    def match_any(self, key: str, values: Sequence[str] | Sequence[int]) -> Any:
        return qe.FieldCondition(key, match=qe.MatchAny(list(values)))  # type: ignore[arg-type]

    def match_range(self, key: str, gte: float | None, lte: float | None) -> Any:
        return qe.FieldCondition(key, range=qe.RangeFloat(gte=gte, lte=lte))

    def is_empty(self, key: str) -> Any:
        return qe.IsEmptyCondition(key)

    def nothing(self) -> Any:
        return qe.HasIdCondition(set())

    def any_of(self, conditions: list[Any]) -> Any:
        return qe.Filter(should=conditions)

    def all_of(self, must: list[Any] | None, must_not: list[Any] | None) -> Any:
        return qe.Filter(must=must, must_not=must_not)


def to_edge_filter(where: Filter | CompiledFilter | None) -> qe.Filter | None:
    """Convert a hello-memory filter to a ``qdrant_edge.Filter`` (``None`` = match all)."""
    compiled = compiled_filter(where)
    return None if compiled is None else edge_filter(compiled)


def edge_filter(compiled: CompiledFilter) -> qe.Filter:
    """A compiled filter as a ``qdrant_edge.Filter``."""
    return translate(compiled, _EdgeFilters())


TENANT_KEY = "user_id"
COMPACT_OVERSAMPLING = 2.0  # candidates re-scored with the original vectors, per result asked for


def vector_params(dimension: int, compact: bool) -> qe.EdgeVectorParams:
    """How a collection keeps its vectors.

    Mapped (the default): the float32 vectors are memory-mapped and loaded into the page cache
    when the shard opens (1.5 GB at 1M 384-d vectors), and the graph search reads them.
    Compact: the engine keeps an int8 copy of each indexed vector (a quarter of the size) and the
    graph pinned in memory and leaves the float32 vectors on disk, reading them only to re-score the
    best candidates (:data:`COMPACT_OVERSAMPLING` per result): at 1M, 1.3 GB resident instead of
    2.2 GB and faster searches from a cold start, while scores below the very top can differ slightly
    from exact ones (BENCHMARKS.md "Scale"). Vectors not yet in the graph are searched as float32.
    """
    if not compact:
        return qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine)
    int8 = qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, memory=qe.Memory.Pinned)
    graph = qe.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000, memory=qe.Memory.Pinned)
    return qe.EdgeVectorParams(
        size=dimension, distance=qe.Distance.Cosine, memory=qe.Memory.Cold, quantization_config=int8, hnsw_config=graph
    )


def search_params(meta: CollectionMeta) -> qe.SearchParams | None:
    """A compact collection's searches re-score their int8 candidates with the original vectors."""
    if not meta.compact:
        return None
    rescore = qe.QuantizationSearchParams(rescore=True, oversampling=COMPACT_OVERSAMPLING)
    return qe.SearchParams(quantization=rescore)


def nearest_request(
    query: np.ndarray, limit: int, where: qe.Filter | None, with_payload: bool, meta: CollectionMeta
) -> qe.QueryRequest:
    """A search for the ``limit`` points nearest to the unit vector ``query`` among ``where``."""
    nearest = qe.Query.Nearest(query.tolist())
    return qe.QueryRequest(limit, query=nearest, filter=where, with_payload=with_payload, params=search_params(meta))


def scores_request(query: np.ndarray, ids: list[str], meta: CollectionMeta) -> qe.QueryRequest:
    """The engine scores the points ``ids`` against ``query``, as a search would (a filter of
    ``len(ids)`` points is searched exactly, not through the graph), and reads no payload."""
    return nearest_request(query, len(ids), qe.Filter(must=[qe.HasIdCondition(set(ids))]), False, meta)


def ensure_indexes(shard: qe.EdgeShard, before_write: Callable[[], None] | None = None) -> None:
    """Create the payload indexes the shard lacks (idempotent, cheap when present).

    ``user_id`` is the tenant key, as on a Qdrant server (``is_tenant``): the engine keeps a user's
    points together when it builds a segment, so a user's filtered search reads their points, not
    pages shared with every other user's. A shard made before keeps its plain keyword index."""
    present = set(shard.info().payload_schema)
    wanted: list[tuple[str, Any]] = [
        (k, qe.KeywordIndexParams(is_tenant=True) if k == TENANT_KEY else qe.PayloadSchemaType.Keyword)
        for k in KEYWORD_INDEX_KEYS
    ]
    wanted += [(k, qe.PayloadSchemaType.Float) for k in FLOAT_INDEX_KEYS]
    for key, schema in wanted:
        if key not in present:
            if before_write is not None:
                before_write()
            shard.update(qe.UpdateOperation.create_field_index(key, schema))


def read_meta(collection_dir: Path) -> CollectionMeta | None:
    """The collection's recorded metadata; ``None`` when it was never (completely) created."""
    path = collection_dir / META_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return CollectionMeta(int(data["dimension"]), str(data["embedder"]), bool(data.get("compact", False)))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CorruptStoreError(str(path), str(e)) from e


def write_meta(collection_dir: Path, meta: CollectionMeta) -> None:
    """Record the metadata, which commits the collection's creation."""
    _write_json_atomic(collection_dir / META_FILE, meta.to_json())


@contextlib.contextmanager
def engine_errors(action: str, path: Path) -> Iterator[None]:
    """Wrap engine exceptions in :class:`StoreError` (a held WAL lock in StoreLockedError, a full disk in
    DiskFullError); our own errors pass through."""
    try:
        yield
    except HelloMemoryError:
        raise
    except Exception as e:
        if "WouldBlock" in str(e):  # the WAL's file lock is held by another EdgeShard
            raise StoreLockedError(str(path)) from e
        if "No space left" in str(e) or "os error 28" in str(e):
            raise DiskFullError(str(path), free_bytes=space.free_bytes(path)) from e
        raise StoreError(f"qdrant-edge failed to {action}: {e}") from e


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write JSON via a temporary file and ``os.replace`` so readers never see half a file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def scroll_ids(shard: qe.EdgeShard, scroll_filter: Any, page: int) -> list[str]:
    """Every point id of ``shard`` matching ``scroll_filter``, a page at a time."""
    out: list[str] = []
    offset: Any = None
    while True:
        request = qe.ScrollRequest(offset=offset, limit=page, filter=scroll_filter, with_payload=False,
                                   with_vector=False)
        records, offset = shard.scroll(request)
        out.extend(str(r.id) for r in records)
        if offset is None:
            return out
