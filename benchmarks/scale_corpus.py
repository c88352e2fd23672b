"""The corpora of :mod:`benchmarks.scale`: synthetic memories per user, built with template vectors.

A memory ``"<sentence> #<n>"`` gets the passage vector of ``"<sentence>"`` (:class:`TemplateEmbedder`):
9,600 distinct sentences, each embedded once, so a million memories cost no more embedding time
than ten thousand. The built memory is then opened as a user would, with the product's embedder.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.speed import synthetic_texts

_NUMBER = re.compile(r"\s*#\d+$")
BATCH = 1000



class TemplateEmbedder:
    """Passages embedded without their trailing ``#n`` (each distinct sentence once); queries as given."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._memo: dict[str, np.ndarray] = {}

    @property
    def name(self) -> str:
        """The wrapped embedder's name (the collection records it: the query side must match)."""
        return str(self._inner.name)

    @property
    def dimension(self) -> int:
        """The wrapped embedder's dimension."""
        return int(self._inner.dimension)

    def embed(self, texts: Sequence[str], *, kind: str = "passage") -> np.ndarray:
        """Vectors of ``texts``; passages by their sentence without the number."""
        if kind == "query":
            return np.asarray(self._inner.embed(list(texts), kind="query"))
        keys = [_NUMBER.sub("", t) for t in texts]
        todo = list(dict.fromkeys(k for k in keys if k not in self._memo))
        if todo:
            for key, vec in zip(todo, self._inner.embed(todo, kind="passage"), strict=True):
                self._memo[key] = np.asarray(vec, dtype=np.float32)
        return np.stack([self._memo[k] for k in keys])


def _settings(config: str, home: Path) -> Any:
    from hello_memory import Settings

    if config not in ("e5", "tfidf"):
        raise SystemExit(f"unknown scale config {config!r}; choose from ['e5', 'tfidf']")
    return Settings(home=home, embedder="tfidf" if config == "tfidf" else "e5")


def _build_embedder(config: str, cache: Path | None) -> Any:
    if config == "tfidf":
        from hello_memory.embedders.hashing import HashingTfidfEmbedder

        return TemplateEmbedder(HashingTfidfEmbedder())
    from benchmarks.systems.encoder import CachedE5Embedder, shared_encoder

    return TemplateEmbedder(CachedE5Embedder(shared_encoder(cache)))


def user_name(u: int) -> str:
    """The id of the ``u``-th benchmark user."""
    return f"user{u:05d}"


def user_texts(per_user: int, u: int, users: int) -> list[str]:
    """The memories of the ``u``-th of ``users`` users (one user alone gets :mod:`benchmarks.speed`'s corpus)."""
    return synthetic_texts(per_user, seed=u if users > 1 else 7)


def build(home: Path, config: str, users: int, per_user: int, cache: Path | None = None) -> float:
    """Fill ``home`` with ``users`` × ``per_user`` episodic memories; returns the seconds it took."""
    from hello_memory import MemoryManager

    now = datetime.now(timezone.utc)
    mm = MemoryManager(_settings(config, home), user_id=user_name(0), embedder=_build_embedder(config, cache))
    t0 = time.perf_counter()
    batch: list[dict[str, Any]] = []
    for u in range(users):
        for i, text in enumerate(user_texts(per_user, u, users)):
            batch.append(
                {
                    "content": text,
                    "memory_type": "episodic",
                    "user_id": user_name(u),
                    "session_id": f"s{i % 50}",
                    "created_at": now - timedelta(hours=i % 5000),
                }
            )
            if len(batch) == BATCH:
                mm.add_many(batch)
                batch = []
    if batch:
        mm.add_many(batch)
    seconds = time.perf_counter() - t0
    mm.close()
    return seconds


def build_index(mm: Any) -> float:
    """The HNSW graph of the memory collection: wait for the store's background build (started when
    the memory was opened, at sizes past its threshold), then build what is left in process (smaller
    sizes; a no-op when the graph is complete); returns the seconds it took."""
    t0 = time.perf_counter()
    vectors = mm.bundle.vectors
    if hasattr(vectors, "wait_for_index"):
        vectors.wait_for_index("memories")
    vectors.optimize("memories")
    return time.perf_counter() - t0


def open_memory(home: Path, config: str) -> Any:
    """The built memory, opened as a user would (the product's own embedder for queries)."""
    from hello_memory import MemoryManager

    mm = MemoryManager(_settings(config, home), user_id=user_name(0))
    mm.search("warm up the model", limit=1)
    return mm


def ask(mm: Any, query: str, user: str) -> list[Any]:
    """The benchmark's search (as :mod:`benchmarks.speed`: episodic memories, top 10)."""
    return list(mm.search(query, limit=10, memory_types=["episodic"], user_id=user))
