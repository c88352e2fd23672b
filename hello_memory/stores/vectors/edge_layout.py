"""Vector layouts of the embedded store's collections: which each has, and rebuilding one in another.

A mixin of :class:`~hello_memory.stores.vectors.edge.QdrantEdgeVectorStore` (the state it reads is
the store's); the rebuild is a background index build (:mod:`.edge_build`) run to its end.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from hello_memory.errors import StoreError
from hello_memory.stores.vectors import edge_build
from hello_memory.stores.vectors.edge_engine import SHARD_DIR, read_meta, write_meta
from hello_memory.stores.vectors.rules import CollectionMeta

logger = logging.getLogger(__name__)


def layout_name(compact: bool) -> str:
    """``"compact"`` or ``"mapped"``."""
    return "compact" if compact else "mapped"


class EdgeLayouts:
    """``layouts`` and ``relayout`` over the store's state."""

    _path: Path
    _metas: dict[str, CollectionMeta]
    _compact: bool
    _lock: threading.RLock
    _budget: Any
    _builds: dict[str, edge_build.Build]
    _shards: dict[str, Any]
    _closed: bool

    def collections(self) -> list[str]:
        raise NotImplementedError

    def wait_for_index(self, collection: str, timeout: float | None = None) -> bool:
        raise NotImplementedError

    def _open(self, name: str) -> tuple[Any, CollectionMeta]:
        raise NotImplementedError

    def layouts(self) -> dict[str, str]:
        """Each collection's vector layout, ``"compact"`` or ``"mapped"`` (see ``compact`` above)."""
        out = {}
        for name in self.collections():
            meta = self._metas.get(name) or read_meta(self._path / name)
            if meta is not None:
                out[name] = layout_name(meta.compact)
        return out

    def relayout(self, collection: str) -> bool:
        """Rebuild a collection in this store's layout (``compact`` or not); whether it changed.

        Blocking (a background index build, run to its end: the collection keeps serving meanwhile,
        and a write made during it is replayed). The layout is recorded once the rebuilt shard is
        in place; a process killed before that leaves the old record, and running this again rebuilds.

        Raises:
            StoreError: the rebuild failed or there is no room for it; the collection is as it was.
        """
        wanted = layout_name(self._compact)
        if not self.wait_for_index(collection):
            raise StoreError(f"collection {collection!r} is being indexed; try again")
        with self._lock:
            shard, meta = self._open(collection)
            if meta.compact == self._compact:
                return False
            build = edge_build.start(self._path / collection, SHARD_DIR, shard, meta.dimension, self._budget,
                                     self._compact)
            if build is None:
                raise StoreError(f"collection {collection!r} could not be rebuilt in the {wanted} layout (no room "
                                 "on the disk, see the log); it keeps its own")
            self._builds[collection] = build
        try:
            done = edge_build.complete(build, collection, self._shards, self._lock, lambda: self._closed)
        finally:
            self._builds.pop(collection, None)
            build.done.set()
        if not done:
            raise StoreError(f"rebuilding collection {collection!r} in the {wanted} layout failed (see the log); "
                             "it keeps its own")
        with self._lock:
            new = CollectionMeta(meta.dimension, meta.embedder, self._compact)
            write_meta(self._path / collection, new)
            self._metas[collection] = new
        logger.info("collection %s rebuilt in the %s layout", collection, wanted)
        return True

