"""In-process reference vector store: brute-force cosine over numpy arrays.

Zero dependencies beyond numpy, exact results, nothing persisted. Unit tests use it and the
congruence tests treat it as the oracle the Qdrant backends must agree with.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.errors import NotFoundError, StoreError
from hello_memory.stores.vectors.base import Filter, VectorHit, VectorPoint
from hello_memory.stores.vectors.rules import (
    CollectionMeta,
    CompiledFilter,
    check_collection_args,
    check_limit,
    compile_delete_filter,
    compile_filter,
    existing_id_candidates,
    prepare_points,
    unit_vector,
)

_NO_VECTOR = np.empty(0, dtype=np.float32)


@dataclass
class _Collection:
    meta: CollectionMeta
    vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    payloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    _matrix: tuple[list[str], npt.NDArray[np.float32]] | None = None  # rebuilt after writes

    def select(self, where: CompiledFilter | None) -> list[str]:
        if where is None:
            return list(self.payloads)
        return [i for i, p in self.payloads.items() if where.matches(p)]

    def changed(self) -> None:
        self._matrix = None

    def scores(self, query: npt.NDArray[np.float32]) -> tuple[list[str], npt.NDArray[np.float32]]:
        """Every id and its cosine similarity to the unit ``query``."""
        if self._matrix is None:
            ids = list(self.vectors)
            matrix = np.stack([self.vectors[i] for i in ids]) if ids else np.empty((0, self.meta.dimension))
            self._matrix = (ids, matrix.astype(np.float32))
        ids, matrix = self._matrix
        return ids, matrix @ query


class InMemoryVectorStore:
    """A :class:`~hello_memory.stores.vectors.base.VectorStore` kept in a dict; exact and thread-safe.

    Example:
        >>> import uuid, numpy as np
        >>> from hello_memory.stores.vectors.base import VectorPoint
        >>> store = InMemoryVectorStore()
        >>> store.ensure_collection("memories", 3, embedder="fake")
        >>> pid = str(uuid.uuid4())
        >>> store.upsert("memories", [VectorPoint(pid, np.array([1, 0, 0], np.float32), {"user_id": "u1"})])
        >>> store.search("memories", np.array([1, 0, 0], np.float32), limit=1)[0].id == pid
        True
    """

    def __init__(self) -> None:
        self._collections: dict[str, _Collection] = {}
        self._lock = threading.RLock()
        self._closed = False

    @property
    def backend(self) -> str:
        """``"memory"``."""
        return "memory"

    def ensure_collection(self, name: str, dimension: int, *, embedder: str) -> None:
        """Create ``name`` or verify that it matches ``dimension`` and ``embedder``."""
        check_collection_args(name, dimension, embedder)
        with self._lock:
            self._check_open()
            existing = self._collections.get(name)
            if existing is not None:
                existing.meta.check(name, dimension, embedder)
                return
            self._collections[name] = _Collection(CollectionMeta(dimension, embedder))

    def collections(self) -> list[str]:
        """Names of existing collections."""
        with self._lock:
            self._check_open()
            return sorted(self._collections)

    def drop_collection(self, name: str) -> None:
        """Delete a collection and all its points (no error if absent)."""
        with self._lock:
            self._check_open()
            self._collections.pop(name, None)

    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points; nothing is written if any point is invalid."""
        with self._lock:
            coll = self._get(collection)
            ids, matrix, payloads = prepare_points(collection, points, coll.meta.dimension)
            for pid, vector, payload in zip(ids, matrix, payloads, strict=True):
                coll.vectors[pid] = vector
                coll.payloads[pid] = payload
            coll.changed()

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id (absent ids are ignored)."""
        with self._lock:
            coll = self._get(collection)
            for pid in ids:
                coll.vectors.pop(pid, None)
                coll.payloads.pop(pid, None)
            coll.changed()

    def delete_where(self, collection: str, where: Filter) -> int:
        """Delete every point matching ``where`` (which must have a condition); returns the count."""
        compiled = compile_delete_filter(where)
        with self._lock:
            coll = self._get(collection)
            doomed = coll.select(compiled)
            for pid in doomed:
                del coll.vectors[pid], coll.payloads[pid]
            coll.changed()
            return len(doomed)

    def search(
        self,
        collection: str,
        vector: npt.NDArray[np.float32],
        *,
        limit: int,
        where: Filter | None = None,
    ) -> list[VectorHit]:
        """Exact nearest neighbours by cosine similarity."""
        compiled = compile_filter(where)
        with self._lock:
            coll = self._get(collection)
            query = unit_vector(collection, vector, coll.meta.dimension)
            if check_limit(limit) == 0:
                return []
            ids, scores = coll.scores(query)
            if compiled is not None:
                keep = np.fromiter((compiled.matches(coll.payloads[i]) for i in ids), bool, len(ids))
                scores = np.where(keep, scores, -np.inf)
            k = min(limit, len(ids))
            top = np.argpartition(-scores, k - 1)[:k] if 0 < k < len(ids) else np.arange(k)
            order = [i for i in top[np.argsort(-scores[top], kind="stable")] if np.isfinite(scores[i])]
            return [VectorHit(ids[k], float(scores[k]), copy.deepcopy(coll.payloads[ids[k]])) for k in order]

    def get(self, collection: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[VectorPoint]:
        """Points by id (absent ids are skipped); vectors come back L2-normalised."""
        with self._lock:
            coll = self._get(collection)
            return [
                VectorPoint(
                    pid,
                    coll.vectors[pid].copy() if with_vectors else _NO_VECTOR.copy(),
                    copy.deepcopy(coll.payloads[pid]),
                )
                for pid in existing_id_candidates(ids)
                if pid in coll.payloads
            ]

    def count(self, collection: str, where: Filter | None = None) -> int:
        """Number of points (matching ``where``)."""
        return len(self.ids(collection, where))

    def ids(self, collection: str, where: Filter | None = None) -> list[str]:
        """Every point id (matching ``where``)."""
        compiled = compile_filter(where)
        with self._lock:
            return self._get(collection).select(compiled)

    def close(self) -> None:
        """Drop everything; idempotent."""
        with self._lock:
            self._collections.clear()
            self._closed = True

    def _get(self, name: str) -> _Collection:
        self._check_open()
        coll = self._collections.get(name)
        if coll is None:
            raise NotFoundError(
                f"collection {name!r} does not exist; call ensure_collection first", object_id=name
            )
        return coll

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the vector store is closed")
