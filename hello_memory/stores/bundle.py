"""The stores behind one memory, opened together and closed together (:mod:`hello_memory.stores.open`)."""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hello_memory.errors import ForkedProcessError
from hello_memory.stores.dense.base import DenseIndex
from hello_memory.stores.dense.index import IndexDense
from hello_memory.stores.dense.records import RecordDense
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.records.base import RecordStore
from hello_memory.stores.vectors.base import VectorStore

if TYPE_CHECKING:
    from hello_memory.embedders.lazy import LazyEmbedder
    from hello_memory.stores.open import DirLock

logger = logging.getLogger(__name__)


@dataclass
class StoreBundle:
    """The stores behind one data directory (or one server configuration).

    ``home`` is ``None`` in server mode (:mod:`hello_memory.stores.open_server`): no data directory,
    no lock, every durable byte in the servers. ``dense`` is where memory vectors live: the vector
    index (embedded) or the record store's own points (a record store that keeps vectors).
    """

    home: Path | None
    records: RecordStore
    vectors: VectorStore
    graph: GraphStore
    lock: threading.RLock = field(default_factory=threading.RLock)
    refs: int = 0
    dir_lock: DirLock | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # stores of higher layers (e.g. RAG chunks)
    key: str = ""  # the registry key ("" for a private bundle)
    pid: int = field(default_factory=os.getpid)  # the process that opened the stores
    dense: DenseIndex = field(init=False)

    def __post_init__(self) -> None:
        self.dense = RecordDense(self.records) if self.records.keeps_vectors else IndexDense(self.vectors)

    def check_process(self) -> None:
        """Raise :class:`~hello_memory.errors.ForkedProcessError` in a forked child of the opener."""
        if self.pid != os.getpid():
            raise ForkedProcessError(self.pid)

    def bind_embedder(self, embedder: LazyEmbedder) -> None:
        """Name the memory vectors' embedder to a record store that keeps them (before it is used).

        A store that keeps vectors checks them against its collection's embedder; the others need
        nothing (and the embedder is not loaded for them).
        """
        if self.records.keeps_vectors:
            bind = getattr(self.records, "use_embedder", None)
            if bind is not None:
                bind(embedder.name, embedder.dimension)

    def close(self) -> None:
        """Close every store and release the directory lock."""
        closers = [getattr(x, "close", None) for x in self.extras.values()]
        for closer in [*closers, self.vectors.close, self.graph.close, self.records.close]:
            if closer is None:
                continue
            try:
                closer()
            except Exception:  # closing must release the rest even if one store fails
                logger.exception("closing a store failed")
        if self.dir_lock is not None:
            self.dir_lock.release()
            self.dir_lock = None
