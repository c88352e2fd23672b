"""The index side of a memory: its vector (one collection per tier family) and its graph links.

The record in SQLite is the source of truth; these helpers write, remove, read back and put back
what the vector index and the graph hold for memories. :mod:`hello_memory.core.writes` composes them
into journalled writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hello_memory.errors import StoreError
from hello_memory.models import MemoryItem, MemoryType, Modality
from hello_memory.stores.vectors.base import VectorPoint

if TYPE_CHECKING:
    from hello_memory.core.semantic import Links
    from hello_memory.manager import MemoryManager

MEMORY_COLLECTION = "memories"
VECTOR_TIERS = (MemoryType.EPISODIC, MemoryType.SEMANTIC, MemoryType.PERCEPTUAL)
_UPSERT_BATCH = 256


def collection_for(item: MemoryItem) -> str:
    """Vector collection of a memory: one for episodic+semantic, one per perceptual modality."""
    if item.memory_type == MemoryType.PERCEPTUAL:
        return f"perceptual_{(item.modality or Modality.OTHER).value}"
    return MEMORY_COLLECTION


def collection_tiers(name: str) -> frozenset[MemoryType]:
    """The tiers whose memories :func:`collection_for` puts in collection ``name``."""
    if name == MEMORY_COLLECTION:
        return frozenset({MemoryType.EPISODIC, MemoryType.SEMANTIC})
    return frozenset({MemoryType.PERCEPTUAL})


def payload(item: MemoryItem) -> dict[str, Any]:
    """Vector payload: the filter keys only (the record in SQLite is the source of truth)."""
    return {
        "user_id": item.user_id,
        "memory_type": item.memory_type.value,
        "session_id": item.session_id,
        "created_ts": item.created_at.timestamp(),
    }


def embed(mm: MemoryManager, items: Sequence[MemoryItem]) -> dict[str, np.ndarray]:
    """Vectors for the items of vector-backed tiers, ``embed_batch_size`` texts per embedder call.

    Needs no lock and stores nothing: a failure raises before anything is written.
    """
    todo = [it for it in items if it.memory_type in VECTOR_TIERS]
    out: dict[str, np.ndarray] = {}
    size = mm.settings.embed_batch_size
    for start in range(0, len(todo), size):
        part = todo[start : start + size]
        vecs = mm.embedder.embed([it.content for it in part], kind="passage")
        out.update({it.id: vecs[i] for i, it in enumerate(part)})
    return out


def ensure_collections(mm: MemoryManager, items: Sequence[MemoryItem]) -> None:
    """Create (or check) the collections the vector-tier ``items`` go to."""
    for name in sorted({collection_for(it) for it in items if it.memory_type in VECTOR_TIERS}):
        mm.bundle.vectors.ensure_collection(name, mm.embedder.dimension, embedder=mm.embedder.name)


def write(
    mm: MemoryManager,
    items: Sequence[MemoryItem],
    vectors: Mapping[str, np.ndarray],
    links: Mapping[str, Links],
) -> None:
    """Upsert the items' vectors (those in ``vectors``) and replace their graph links (those in ``links``)."""
    by_collection: dict[str, list[VectorPoint]] = {}
    for it in items:
        if it.id in vectors:
            point = VectorPoint(id=it.id, vector=vectors[it.id], payload=payload(it))
            by_collection.setdefault(collection_for(it), []).append(point)
    for name, points in by_collection.items():
        for start in range(0, len(points), _UPSERT_BATCH):
            mm.bundle.vectors.upsert(name, points[start : start + _UPSERT_BATCH])
    for it in items:
        if it.id in links:
            ents, rels = links[it.id]
            mm.bundle.graph.link(it.user_id, it.id, ents, rels)


def delete_points(mm: MemoryManager, items: Sequence[MemoryItem]) -> None:
    """Delete the vectors of the vector-tier ``items`` (absent points are ignored)."""
    by_collection: dict[str, list[str]] = {}
    for it in items:
        if it.memory_type in VECTOR_TIERS:
            by_collection.setdefault(collection_for(it), []).append(it.id)
    existing = set(mm.bundle.vectors.collections()) if by_collection else set()
    for name, ids in by_collection.items():
        if name in existing:
            mm.bundle.vectors.delete(name, ids)


def unindex(mm: MemoryManager, items: Sequence[MemoryItem]) -> None:
    """Remove items from the vector index and the graph (records untouched)."""
    delete_points(mm, items)
    for it in items:
        if it.memory_type == MemoryType.SEMANTIC:
            mm.bundle.graph.unlink_memory(it.user_id, it.id)


def unindex_everywhere(mm: MemoryManager, ids_by_user: Mapping[str, Sequence[str]]) -> None:
    """Remove memories whose rows are gone from every memory collection and the graph."""
    ids = [mid for group in ids_by_user.values() for mid in group]
    for name in mm.bundle.vectors.collections():
        if name == MEMORY_COLLECTION or name.startswith("perceptual_"):
            mm.bundle.vectors.delete(name, ids)
    for user_id, group in ids_by_user.items():
        for mid in group:
            mm.bundle.graph.unlink_memory(user_id, mid)


@dataclass
class IndexState:
    """What the index held for some memories before a write: enough to put it back without embedding.

    ``vectors`` maps the id of every vector-tier item that had a point to its vector (read back from
    the index); ``readable`` is False when the index could not be read, and :func:`put_back` then
    leaves the repair to recovery (which re-embeds the rows).
    """

    items: list[MemoryItem]
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    readable: bool = True


def capture(mm: MemoryManager, items: Sequence[MemoryItem]) -> IndexState:
    """Read the current vectors of ``items`` (the state before a write overwrites or removes them)."""
    state = IndexState(list(items))
    by_collection: dict[str, list[str]] = {}
    for it in items:
        if it.memory_type in VECTOR_TIERS:
            by_collection.setdefault(collection_for(it), []).append(it.id)
    try:
        existing = set(mm.bundle.vectors.collections()) if by_collection else set()
        for name, ids in by_collection.items():
            if name in existing:
                for point in mm.bundle.vectors.get(name, ids, with_vectors=True):
                    state.vectors[point.id] = point.vector
    except StoreError:
        state.readable = False
    return state


def put_back(mm: MemoryManager, before: IndexState, added: Sequence[MemoryItem] = ()) -> None:
    """Undo an index write: drop ``added`` (memories that did not exist), restore ``before``'s items.

    A live item gets its captured vector and its stored graph links back; a forgotten one (its
    index was empty) is unindexed.
    """
    from hello_memory.core.semantic import links_of

    live = [it for it in before.items if it.deleted_at is None]
    unindex(mm, [*added, *(it for it in before.items if it.deleted_at is not None)])
    if not before.readable:
        raise StoreError("the previous vectors could not be read before the write")
    delete_points(mm, [it for it in live if it.id not in before.vectors])
    links = {it.id: links_of(it) for it in live if it.memory_type == MemoryType.SEMANTIC}
    write(mm, [it for it in live if it.id in before.vectors or it.id in links], before.vectors, links)
