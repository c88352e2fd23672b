"""Memory vectors in a :class:`~hello_memory.stores.vectors.base.VectorStore` (embedded mode).

One collection holds the episodic and semantic memories (``memories``), one per perceptual
modality (``perceptual_<modality>``). A point's payload carries only the filter keys: the record
store is the memory of record, and every hit is checked against it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from hello_memory.errors import StoreError
from hello_memory.models import MemoryItem, MemoryType, Modality
from hello_memory.stores.dense.base import VECTOR_TIERS, DenseIndex, DenseState, Tiers, Window
from hello_memory.stores.vectors.base import Filter, Range, VectorPoint, VectorStore

MEMORY_COLLECTION = "memories"
_UPSERT_BATCH = 256


def collection_for(item: MemoryItem) -> str:
    """Vector collection of a memory: one for episodic+semantic, one per perceptual modality."""
    if item.memory_type == MemoryType.PERCEPTUAL:
        return _perceptual((item.modality or Modality.OTHER).value)
    return MEMORY_COLLECTION


def _perceptual(modality: str | None) -> str:
    return f"perceptual_{modality or 'other'}"


def collection_tiers(name: str) -> frozenset[MemoryType]:
    """The tiers whose memories :func:`collection_for` puts in collection ``name``."""
    if name == MEMORY_COLLECTION:
        return frozenset({MemoryType.EPISODIC, MemoryType.SEMANTIC})
    return frozenset({MemoryType.PERCEPTUAL})


def is_memory_collection(name: str) -> bool:
    """True for the collections memory vectors live in (not RAG's)."""
    return name == MEMORY_COLLECTION or name.startswith("perceptual_")


def payload(item: MemoryItem) -> dict[str, Any]:
    """Vector payload: the filter keys only."""
    return {
        "user_id": item.user_id,
        "memory_type": item.memory_type.value,
        "session_id": item.session_id,
        "created_ts": item.created_at.timestamp(),
    }


def _by_collection(items: Sequence[MemoryItem]) -> dict[str, list[MemoryItem]]:
    out: dict[str, list[MemoryItem]] = {}
    for it in items:
        if it.memory_type in VECTOR_TIERS:
            out.setdefault(collection_for(it), []).append(it)
    return out


class IndexDense(DenseIndex):
    """The :class:`~hello_memory.stores.dense.base.DenseIndex` over a vector store's collections."""

    def __init__(self, vectors: VectorStore) -> None:
        self._vectors = vectors

    @property
    def backend(self) -> str:
        """The vector store's backend name."""
        return self._vectors.backend

    # -- reads ------------------------------------------------------------------------------
    def _nearest(
        self, user: str, qvec: np.ndarray, types: Sequence[MemoryType], limit: int, session: str | None, window: Window
    ) -> dict[str, float]:
        """Search every collection holding one of ``types``; a memory's best score wins."""
        dense: dict[str, float] = {}
        for collection, tier_types in self._collections(types):
            # A collection holds only its own tiers: asking for all of them needs no type condition,
            # which costs qdrant a payload check per point when one user holds most of them.
            held = collection_tiers(collection)
            where = _filter(user, None if held <= set(tier_types) else tier_types, session, window)
            for hit in self._vectors.search(collection, qvec, limit=limit, where=where, with_payload=False):
                dense[hit.id] = max(hit.score, dense.get(hit.id, -1.0))
        return dense

    def similarities(self, user_id: str, qvec: np.ndarray, ids: Tiers) -> dict[str, float]:
        """Exact cosines, scored by the vector engine in each memory's collection (reading ~100
        vectors out to score them in Python took 2.2 ms of a search, the engine 0.09 ms)."""
        def cosines(q: np.ndarray) -> dict[str, float]:
            existing = set(self._vectors.collections()) if ids else set()
            out: dict[str, float] = {}
            for collection, group in _by_tier_collection(ids).items():
                if collection in existing:
                    out.update(self._vectors.scores(collection, q, group))
            return out

        return self._scored(user_id, qvec, ids, cosines)

    def vectors(self, user_id: str, ids: Tiers) -> dict[str, np.ndarray]:
        """Each memory's vector, read from its collection."""
        return self._read(_by_tier_collection(ids))

    def _read(self, by_collection: Mapping[str, Sequence[str]]) -> dict[str, np.ndarray]:
        existing = set(self._vectors.collections()) if by_collection else set()
        out: dict[str, np.ndarray] = {}
        for collection, group in by_collection.items():
            if collection in existing:
                out.update((p.id, p.vector) for p in self._vectors.get(collection, list(group), with_vectors=True))
        return out

    def _collections(self, types: Sequence[MemoryType]) -> list[tuple[str, list[MemoryType]]]:
        existing = set(self._vectors.collections())
        out: list[tuple[str, list[MemoryType]]] = []
        text_types: list[MemoryType] = [t for t in types if t in (MemoryType.EPISODIC, MemoryType.SEMANTIC)]
        if text_types and MEMORY_COLLECTION in existing:
            out.append((MEMORY_COLLECTION, text_types))
        if MemoryType.PERCEPTUAL in types:
            out += [(c, [MemoryType.PERCEPTUAL]) for c in sorted(existing) if c.startswith("perceptual_")]
        return out

    # -- writes -----------------------------------------------------------------------------
    def write(self, items: Sequence[MemoryItem], vectors: Mapping[str, np.ndarray], embedder: str) -> None:
        """Upsert the vectors of ``items`` found in ``vectors``, creating collections as needed."""
        for name, group in _by_collection([it for it in items if it.id in vectors]).items():
            points = [VectorPoint(id=it.id, vector=vectors[it.id], payload=payload(it)) for it in group]
            self._vectors.ensure_collection(name, len(points[0].vector), embedder=embedder)
            for start in range(0, len(points), _UPSERT_BATCH):
                self._vectors.upsert(name, points[start : start + _UPSERT_BATCH])

    def remove(self, items: Sequence[MemoryItem]) -> None:
        """Delete the vectors of the vector-tier ``items`` (absent points are ignored)."""
        groups = _by_collection(items)
        existing = set(self._vectors.collections()) if groups else set()
        for name, group in groups.items():
            if name in existing:
                self._vectors.delete(name, [it.id for it in group])

    def remove_ids(self, ids: Sequence[str]) -> None:
        """Delete ``ids`` from every memory collection."""
        if ids:
            for name in self._vectors.collections():
                if is_memory_collection(name):
                    self._vectors.delete(name, list(ids))

    def capture(self, items: Sequence[MemoryItem]) -> DenseState:
        """Read the current vectors of ``items`` (the state before a write overwrites or removes them)."""
        state = DenseState(list(items))
        try:
            state.vectors = self._read({k: [it.id for it in g] for k, g in _by_collection(items).items()})
        except StoreError:
            state.readable = False
        return state

    def put_back(self, state: DenseState, added: Sequence[MemoryItem] = ()) -> None:
        """Drop ``added``'s vectors, give ``state``'s live items their captured vectors back."""
        self.remove([*added, *(it for it in state.items if it.deleted_at is not None)])
        if not state.readable:
            raise StoreError("the previous vectors could not be read before the write")
        live = [it for it in state.items if it.deleted_at is None]
        self.remove([it for it in live if it.id not in state.vectors])
        for name, group in _by_collection([it for it in live if it.id in state.vectors]).items():
            points = [VectorPoint(id=it.id, vector=state.vectors[it.id], payload=payload(it)) for it in group]
            self._vectors.upsert(name, points)

    def restore(
        self, items: Sequence[MemoryItem], embed: Callable[[Sequence[MemoryItem]], dict[str, np.ndarray]], embedder: str
    ) -> None:
        """Embed ``items`` again and upsert their vectors (the index may hold a stale one, or none)."""
        self.write(items, embed(items), embedder)

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete every memory vector of the user, per collection."""
        return {
            name: self._vectors.delete_where(name, Filter(equals={"user_id": user_id}))
            for name in self._vectors.collections()
            if is_memory_collection(name)
        }


def _by_tier_collection(ids: Tiers) -> dict[str, list[str]]:
    """The ids of ``ids`` grouped by the collection holding their vectors."""
    by_collection: dict[str, list[str]] = {}
    for mid, (tier, modality) in ids.items():
        name = _perceptual(modality) if tier == MemoryType.PERCEPTUAL else MEMORY_COLLECTION
        by_collection.setdefault(name, []).append(mid)
    return by_collection


def _filter(user_id: str, types: list[MemoryType] | None, session_id: str | None, window: Window) -> Filter:
    """Payload filter of a vector search; ``types=None`` adds no memory-type condition."""
    equals: dict[str, Any] = {"user_id": user_id}
    if types is not None:
        equals["memory_type"] = [t.value for t in types]
    if session_id is not None:
        equals["session_id"] = session_id
    ranges = {"created_ts": Range(gte=window[0], lte=window[1])} if window else {}
    return Filter(equals=equals, ranges=ranges)
