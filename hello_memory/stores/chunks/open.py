"""Opening the chunk store of a set of stores: the one place RAG's mode is chosen.

Embedded (the bundle has a data directory): :class:`~hello_memory.stores.chunks.sqlite.SQLiteChunkStore`
on ``rag.db`` with its passages in the bundle's vector index. Server mode: a
:class:`~hello_memory.stores.chunks.qdrant.QdrantChunkStore` on the record store's Qdrant client.
Either way one store per embedder is shared by every pipeline of the process, kept in
``bundle.extras`` and closed with the bundle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hello_memory.errors import StoreError
from hello_memory.stores.chunks.base import ChunkStore, PassageEncoder

if TYPE_CHECKING:
    from hello_memory.stores.open import StoreBundle


def open_chunk_store(bundle: StoreBundle, passages: PassageEncoder, *, prefix: str = "hm") -> ChunkStore:
    """The chunk store of ``bundle`` for passages embedded by ``passages`` (shared in-process).

    Args:
        bundle: the open stores (:func:`hello_memory.stores.open.acquire`).
        passages: the passage embedder; a store records it, and refuses another one.
        prefix: the Qdrant collection prefix (server mode; ``Settings.collection_prefix``).

    Raises:
        StoreError: server mode whose record store has no Qdrant client to share.
    """
    key = f"rag:{passages.name}:{passages.dimension}"
    with bundle.lock:  # pipelines opened by several threads share one store
        store: ChunkStore | None = bundle.extras.get(key)
        if store is None:
            store = _open(bundle, passages, prefix)
            bundle.extras[key] = store
        return store


def _open(bundle: StoreBundle, passages: PassageEncoder, prefix: str) -> ChunkStore:
    if bundle.home is not None:
        from hello_memory.stores.chunks.sqlite import SQLiteChunkStore

        return SQLiteChunkStore(bundle.home / "rag.db", vectors=bundle.vectors, passages=passages)
    from hello_memory.stores.chunks.qdrant import QdrantChunkStore

    client = getattr(bundle.records, "client", None)
    if client is None:
        raise StoreError("server-mode RAG needs a Qdrant record store (QdrantRecordStore)")
    return QdrantChunkStore(
        client=client(), prefix=prefix, embedder=passages.name, dimension=passages.dimension
    )
