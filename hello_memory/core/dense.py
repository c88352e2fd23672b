"""Dense candidates of a search: the one seam between retrieval and where memory vectors live.

Embedded mode keeps memory vectors in the data directory's vector index, one collection per tier
family (:class:`IndexDense`); server mode keeps each vector in its memory's point in the record
store (:class:`RecordDense`). The bundle picks one when it is built, so :mod:`hello_memory.core.retrieval`
has no backend branch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from hello_memory.core.index import MEMORY_COLLECTION, collection_tiers
from hello_memory.models import MemoryType
from hello_memory.stores.vectors.base import Filter, Range, VectorStore

Window = tuple[float | None, float | None] | None


class DenseIndex(Protocol):
    """Nearest memories by cosine, and exact cosine for given memories."""

    def search(
        self,
        user_id: str,
        qvec: np.ndarray,
        types: Sequence[MemoryType],
        *,
        limit: int,
        session_id: str | None,
        window: Window,
    ) -> dict[str, float]:
        """memory id -> cosine of the user's live memories of ``types`` nearest to ``qvec``."""
        ...

    def similarities(
        self, user_id: str, qvec: np.ndarray, ids: Mapping[str, tuple[MemoryType, str | None]]
    ) -> dict[str, float]:
        """memory id -> cosine with ``qvec`` for ``ids`` (id -> (tier, modality)) that have a vector."""
        ...

    def vectors(self, user_id: str, ids: Mapping[str, tuple[MemoryType, str | None]]) -> dict[str, np.ndarray]:
        """memory id -> its stored (unit) vector, for ``ids`` (id -> (tier, modality)) that have one."""
        ...


class IndexDense:
    """Dense candidates from a :class:`~hello_memory.stores.vectors.base.VectorStore` (embedded mode)."""

    def __init__(self, vectors: VectorStore) -> None:
        self._vectors = vectors

    def search(
        self,
        user_id: str,
        qvec: np.ndarray,
        types: Sequence[MemoryType],
        *,
        limit: int,
        session_id: str | None,
        window: Window,
    ) -> dict[str, float]:
        """Search every collection holding one of ``types``; a memory's best score wins."""
        dense: dict[str, float] = {}
        for collection, tier_types in _collections(self._vectors, types):
            # A collection holds only its own tiers: asking for all of them needs no type condition,
            # which costs qdrant a payload check per point when one user holds most of them.
            held = collection_tiers(collection)
            where = _filter(user_id, None if held <= set(tier_types) else tier_types, session_id, window)
            for hit in self._vectors.search(collection, qvec, limit=limit, where=where):
                dense[hit.id] = max(hit.score, dense.get(hit.id, -1.0))
        return dense

    def similarities(
        self, user_id: str, qvec: np.ndarray, ids: Mapping[str, tuple[MemoryType, str | None]]
    ) -> dict[str, float]:
        """Exact cosine read from each memory's collection."""
        return {mid: float(np.dot(vec, qvec)) for mid, vec in self.vectors(user_id, ids).items()}

    def vectors(self, user_id: str, ids: Mapping[str, tuple[MemoryType, str | None]]) -> dict[str, np.ndarray]:
        """Each memory's vector, read from its collection."""
        by_collection: dict[str, list[str]] = {}
        for mid, (tier, modality) in ids.items():
            name = f"perceptual_{modality or 'other'}" if tier == MemoryType.PERCEPTUAL else MEMORY_COLLECTION
            by_collection.setdefault(name, []).append(mid)
        existing = set(self._vectors.collections()) if by_collection else set()
        out: dict[str, np.ndarray] = {}
        for collection, group in by_collection.items():
            if collection in existing:
                out.update((p.id, p.vector) for p in self._vectors.get(collection, group, with_vectors=True))
        return out


class RecordDense:
    """Dense candidates from the record store's own vectors (server mode: one point per memory)."""

    def __init__(self, records: Any) -> None:
        self._records = records  # a QdrantRecordStore (dense_search, dense_vectors)

    def search(
        self,
        user_id: str,
        qvec: np.ndarray,
        types: Sequence[MemoryType],
        *,
        limit: int,
        session_id: str | None,
        window: Window,
    ) -> dict[str, float]:
        """One filtered search of the user's points (every tier lives in one collection)."""
        found: dict[str, float] = self._records.dense_search(
            user_id,
            qvec,
            limit=limit,
            types=[t.value for t in types],
            session_id=session_id,
            time_range=window,
        )
        return found

    def similarities(
        self, user_id: str, qvec: np.ndarray, ids: Mapping[str, tuple[MemoryType, str | None]]
    ) -> dict[str, float]:
        """Exact cosine from the stored unit vectors."""
        return {mid: float(np.dot(vec, qvec)) for mid, vec in self.vectors(user_id, ids).items()}

    def vectors(self, user_id: str, ids: Mapping[str, tuple[MemoryType, str | None]]) -> dict[str, np.ndarray]:
        """The vectors kept in the memories' points."""
        if not ids:
            return {}
        found: dict[str, np.ndarray] = self._records.dense_vectors(user_id, list(ids))
        return found


def _collections(vectors: VectorStore, types: Sequence[MemoryType]) -> list[tuple[str, list[MemoryType]]]:
    existing = set(vectors.collections())
    out: list[tuple[str, list[MemoryType]]] = []
    text_types: list[MemoryType] = [t for t in types if t in (MemoryType.EPISODIC, MemoryType.SEMANTIC)]
    if text_types and MEMORY_COLLECTION in existing:
        out.append((MEMORY_COLLECTION, text_types))
    if MemoryType.PERCEPTUAL in types:
        out += [(c, [MemoryType.PERCEPTUAL]) for c in sorted(existing) if c.startswith("perceptual_")]
    return out


def _filter(user_id: str, types: list[MemoryType] | None, session_id: str | None, window: Window) -> Filter:
    """Payload filter of a vector search; ``types=None`` adds no memory-type condition."""
    equals: dict[str, Any] = {"user_id": user_id}
    if types is not None:
        equals["memory_type"] = [t.value for t in types]
    if session_id is not None:
        equals["session_id"] = session_id
    ranges = {"created_ts": Range(gte=window[0], lte=window[1])} if window else {}
    return Filter(equals=equals, ranges=ranges)
