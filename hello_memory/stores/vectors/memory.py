"""In-process reference vector store: brute-force cosine over numpy arrays.

Zero dependencies beyond numpy, exact results, nothing persisted. Unit tests use it and the
congruence tests treat it as the oracle the Qdrant backends must agree with.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.errors import StoreError
from hello_memory.stores.vectors.base import VectorHit, VectorPoint
from hello_memory.stores.vectors.common import VectorStoreAdapter, fetched_point, missing_collection
from hello_memory.stores.vectors.filters import CompiledFilter
from hello_memory.stores.vectors.rules import CollectionMeta


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


class InMemoryVectorStore(VectorStoreAdapter):
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

    BACKEND = "memory"

    def __init__(self) -> None:
        self._collections: dict[str, _Collection] = {}
        self._lock = threading.RLock()
        self._closed = False

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

    def close(self) -> None:
        """Drop everything; idempotent."""
        with self._lock:
            self._collections.clear()
            self._closed = True

    # -- primitives ---------------------------------------------------------------------------------
    def _guard(self) -> threading.RLock:
        return self._lock

    def _meta(self, name: str) -> CollectionMeta:
        with self._lock:
            return self._get(name).meta

    def _ensure(self, name: str, meta: CollectionMeta) -> None:
        with self._lock:
            self._check_open()
            existing = self._collections.get(name)
            if existing is not None:
                existing.meta.check(name, meta.dimension, meta.embedder)
                return
            self._collections[name] = _Collection(meta)

    def _write(
        self, name: str, ids: list[str], matrix: npt.NDArray[np.float32], payloads: list[dict[str, Any]]
    ) -> None:
        with self._lock:
            coll = self._get(name)
            for pid, vector, payload in zip(ids, matrix, payloads, strict=True):
                coll.vectors[pid] = vector
                coll.payloads[pid] = payload
            coll.changed()

    def _remove(self, name: str, ids: list[str]) -> None:
        with self._lock:
            coll = self._get(name)
            for pid in ids:
                coll.vectors.pop(pid, None)
                coll.payloads.pop(pid, None)
            coll.changed()

    def _remove_where(self, name: str, where: CompiledFilter) -> int:
        with self._lock:
            coll = self._get(name)
            doomed = coll.select(where)
            for pid in doomed:
                del coll.vectors[pid], coll.payloads[pid]
            coll.changed()
            return len(doomed)

    def _nearest(
        self, name: str, query: npt.NDArray[np.float32], limit: int, where: CompiledFilter | None, with_payload: bool
    ) -> list[VectorHit]:
        """Exact: every point is scored."""
        with self._lock:
            coll = self._get(name)
            ids, scores = coll.scores(query)
            if where is not None:
                keep = np.fromiter((where.matches(coll.payloads[i]) for i in ids), bool, len(ids))
                scores = np.where(keep, scores, -np.inf)
            k = min(limit, len(ids))
            top = np.argpartition(-scores, k - 1)[:k] if 0 < k < len(ids) else np.arange(k)
            order = [i for i in top[np.argsort(-scores[top], kind="stable")] if np.isfinite(scores[i])]
            kept = (copy.deepcopy(coll.payloads[ids[k]]) if with_payload else {} for k in order)
            return [VectorHit(ids[k], float(scores[k]), payload) for k, payload in zip(order, kept, strict=True)]

    def _fetch(self, name: str, ids: list[str], with_vectors: bool) -> list[VectorPoint]:
        with self._lock:
            coll = self._get(name)
            return [
                fetched_point(
                    pid, coll.vectors[pid] if with_vectors else None, copy.deepcopy(coll.payloads[pid])
                )
                for pid in ids
                if pid in coll.payloads
            ]

    def _count(self, name: str, where: CompiledFilter | None) -> int:
        return len(self._ids(name, where))

    def _ids(self, name: str, where: CompiledFilter | None) -> list[str]:
        with self._lock:
            return self._get(name).select(where)

    def _get(self, name: str) -> _Collection:
        self._check_open()
        coll = self._collections.get(name)
        if coll is None:
            raise missing_collection(name)
        return coll

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the vector store is closed")
