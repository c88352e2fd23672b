"""``AsyncMemoryManager``: :class:`~hello_memory.MemoryManager` for asyncio (docs/design.md §2, "Concurrency").

It wraps a ``MemoryManager`` and runs each of its calls in a worker thread (``asyncio.to_thread``,
as mem0's ``AsyncMemory`` does): the core is thread-safe — reads never wait for a writer, writes
take the write lock in bounded steps — so calls awaited side by side (``asyncio.gather``) run side
by side, and the event loop never waits for a store or the embedder. Same methods, arguments,
results and errors as ``MemoryManager`` (it satisfies :class:`~hello_memory.api_async.AsyncMemoryAPI`
and ``AsyncMemoryAdminAPI``); nothing is re-implemented here.

Opening the stores blocks (files, a lock, recovery, perhaps a server), so the constructor only
checks its arguments; the stores open in a worker thread at ``await mm.open()``, ``async with``, or
the first call, whichever comes first. ``user_id`` and ``enabled`` are plain attributes from the
start. A call whose awaiting task is cancelled still completes in its thread (a thread cannot be
interrupted mid-write; every write is all-or-nothing); its result is dropped. Calls run in the
event loop's default executor: ``loop.set_default_executor`` bounds how many run at once.

Example:
    >>> import asyncio
    >>> from hello_memory import AsyncMemoryManager
    >>> async def main() -> None:
    ...     async with AsyncMemoryManager(home="/tmp/hm-async-doc", user_id="alice") as mm:
    ...         await mm.add("Alice prefers green tea", memory_type="semantic")
    ...         hits, stats = await asyncio.gather(mm.search("what does Alice drink?"), mm.stats())
    ...         print(hits[0].item.content, stats.total)
    >>> asyncio.run(main())                                                       # doctest: +SKIP
    Alice prefers green tea 1
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from hello_memory import models
from hello_memory._aio import AsyncAdd, InThreads, blocking, in_threads
from hello_memory.api import Messages, Query, TimeRange
from hello_memory.context import ContextBlock
from hello_memory.embedders.base import Embedder
from hello_memory.errors import InvalidInputError
from hello_memory.llm.base import LLMClient
from hello_memory.manager import MemoryManager
from hello_memory.settings import Settings
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.records.base import RecordStore
from hello_memory.stores.vectors.base import VectorStore
from hello_memory.validation import check_id, check_tiers


class AsyncMemoryManager(AsyncAdd, InThreads[MemoryManager]):
    """A ``MemoryManager`` whose every call is awaitable (see the module docstring).

    Args:
        settings, home, user_id, enable_working, enable_episodic, enable_semantic, enable_perceptual,
            embedder, vector_store, graph_store, llm, record_store: as :class:`~hello_memory.MemoryManager`,
            which is opened with them (in a worker thread). To wrap a manager already open, use :meth:`wrap`.
    """

    def __init__(
        self, settings: Settings | None = None, *, home: str | Path | None = None, user_id: str = "default_user",
        enable_working: bool = True, enable_episodic: bool = True, enable_semantic: bool = True,
        enable_perceptual: bool = False, embedder: Embedder | None = None, vector_store: VectorStore | None = None,
        graph_store: GraphStore | None = None, llm: LLMClient | None = None, record_store: RecordStore | None = None,
    ) -> None:
        self._user_id = check_id(user_id, "user_id")
        self._enabled = check_tiers(working=enable_working, episodic=enable_episodic, semantic=enable_semantic,
                                    perceptual=enable_perceptual)
        super().__init__(partial(
            MemoryManager, settings, home=home, user_id=user_id, enable_working=enable_working,
            enable_episodic=enable_episodic, enable_semantic=enable_semantic, enable_perceptual=enable_perceptual,
            embedder=embedder, vector_store=vector_store, graph_store=graph_store, llm=llm, record_store=record_store,
        ))

    @classmethod
    def wrap(cls, manager: MemoryManager) -> AsyncMemoryManager:
        """An async view of an open ``manager`` (closing the view closes it)."""
        view = cls(user_id=manager.user_id)
        view._facade = manager
        return view

    @property
    def user_id(self) -> str:
        """The default user of every call."""
        return self._user_id if self._facade is None else self._facade.user_id

    @property
    def enabled(self) -> tuple[models.MemoryType, ...]:
        """The memory tiers this memory serves."""
        return self._enabled if self._facade is None else self._facade.enabled

    @property
    def manager(self) -> MemoryManager:
        """The ``MemoryManager`` (``settings``, ``bundle``, ``embedder``...); only once open."""
        if self._facade is None:
            raise InvalidInputError("this AsyncMemoryManager is not open yet: `await mm.open()` (or `async with`)")
        return self._facade

    # -- add --------------------------------------------------------------------------------
    async def _add(self, content: str | Messages, user_id: str | None,
                   arguments: dict[str, Any]) -> models.MemoryItem | list[models.MemoryItem]:
        """``MemoryManager.add`` in a worker thread (:class:`~hello_memory._aio.AsyncAdd` is ``add``)."""
        added: models.MemoryItem | list[models.MemoryItem] = await asyncio.to_thread(
            lambda: self._opened().add(content, user_id=user_id, **arguments))  # overloaded: no ParamSpec for it
        return added

    async def add_many(self, items: Iterable[dict[str, Any]]) -> list[models.MemoryItem]:
        """``MemoryManager.add_many`` in a worker thread."""
        return await self._run(MemoryManager.add_many, items)

    # -- read -------------------------------------------------------------------------------
    async def get(self, memory_id: str, *, user_id: str | None = None,
                  include_deleted: bool = False) -> models.MemoryItem:
        """``MemoryManager.get`` in a worker thread."""
        return await self._run(MemoryManager.get, memory_id, user_id=user_id, include_deleted=include_deleted)

    async def get_all(self, *, user_id: str | None = None, memory_type: str | models.MemoryType | None = None,
                      limit: int | None = None, include_deleted: bool = False) -> list[models.MemoryItem]:
        """``MemoryManager.get_all`` in a worker thread."""
        return await self._run(MemoryManager.get_all, user_id=user_id, memory_type=memory_type, limit=limit,
                               include_deleted=include_deleted)

    async def search(self, query: Query, *, user_id: str | None = None,
                     memory_types: Sequence[str | models.MemoryType] | None = None, limit: int = 10,
                     min_importance: float = 0.0, min_score: float | None = None, time_range: TimeRange | None = None,
                     session_id: str | None = None, reference_time: datetime | str | None = None,
                     ) -> list[models.ScoredMemory]:
        """``MemoryManager.search`` in a worker thread."""
        return await self._run(MemoryManager.search, query, user_id=user_id, memory_types=memory_types, limit=limit,
                               min_importance=min_importance, min_score=min_score, time_range=time_range,
                               session_id=session_id, reference_time=reference_time)

    async def history(self, memory_id: str, *, user_id: str | None = None) -> list[models.HistoryEntry]:
        """``MemoryManager.history`` in a worker thread."""
        return await self._run(MemoryManager.history, memory_id, user_id=user_id)

    # -- change -----------------------------------------------------------------------------
    async def update(self, memory_id: str, content: str | None = None, importance: float | None = None,
                     metadata: dict[str, Any] | None = None, *, user_id: str | None = None) -> models.MemoryItem:
        """``MemoryManager.update`` in a worker thread."""
        return await self._run(MemoryManager.update, memory_id, content, importance, metadata, user_id=user_id)

    async def remove(self, memory_id: str, *, user_id: str | None = None) -> None:
        """``MemoryManager.remove`` in a worker thread."""
        await self._run(MemoryManager.remove, memory_id, user_id=user_id)

    async def restore(self, memory_id: str, *, user_id: str | None = None) -> models.MemoryItem:
        """``MemoryManager.restore`` in a worker thread."""
        return await self._run(MemoryManager.restore, memory_id, user_id=user_id)

    async def recover(self) -> int:
        """``MemoryManager.recover`` (pending index work completed now) in a worker thread."""
        return await self._run(MemoryManager.recover)

    async def forget(self, strategy: str = "importance_based", threshold: float = 0.1, max_age_days: float = 30, *,
                     capacity: int | None = None, memory_types: Sequence[str | models.MemoryType] | None = None,
                     user_id: str | None = None, purge: bool = False) -> models.ForgetReport:
        """``MemoryManager.forget`` in a worker thread."""
        return await self._run(MemoryManager.forget, strategy, threshold, max_age_days, capacity=capacity,
                               memory_types=memory_types, user_id=user_id, purge=purge)

    async def consolidate(self, from_type: str | models.MemoryType = "working",
                          to_type: str | models.MemoryType = "episodic", importance_threshold: float = 0.7, *,
                          user_id: str | None = None) -> models.ConsolidateReport:
        """``MemoryManager.consolidate`` in a worker thread."""
        return await self._run(MemoryManager.consolidate, from_type, to_type, importance_threshold, user_id=user_id)

    async def clear_all(self, user_id: str | None = None) -> int:
        """``MemoryManager.clear_all`` in a worker thread."""
        return await self._run(MemoryManager.clear_all, user_id)

    async def forget_user(self, user_id: str) -> dict[str, int]:
        """``MemoryManager.forget_user`` in a worker thread."""
        return await self._run(MemoryManager.forget_user, user_id)

    # -- reports ----------------------------------------------------------------------------
    async def stats(self, *, user_id: str | None = None) -> models.MemoryStats:
        """``MemoryManager.stats`` in a worker thread."""
        return await self._run(MemoryManager.stats, user_id=user_id)

    async def summary(self, limit: int = 10, *, user_id: str | None = None) -> str:
        """``MemoryManager.summary`` in a worker thread."""
        return await self._run(MemoryManager.summary, limit, user_id=user_id)

    async def build_context(self, query: str, *, budget_tokens: int = 800, floor: float | None = None,
                            position: str = "user", user_id: str | None = None, limit: int = 20) -> ContextBlock:
        """``MemoryManager.build_context`` in a worker thread."""
        block: ContextBlock = await self._run(MemoryManager.build_context, query, budget_tokens=budget_tokens,
                                              floor=floor, position=position, user_id=user_id, limit=limit)
        return block

    # -- whole store ------------------------------------------------------------------------
    def export_lines(self, *, vectors: bool = True, users: Sequence[str] | None = None) -> AsyncIterator[str]:
        """``MemoryManager.export_lines`` as an async iterator, read in batches in worker threads."""
        return self._export(vectors, users)

    async def _export(self, vectors: bool, users: Sequence[str] | None) -> AsyncIterator[str]:
        lines = await self._run(MemoryManager.export_lines, vectors=vectors, users=users)
        async for line in in_threads(lines):
            yield line

    async def import_lines(self, lines: Iterable[str] | AsyncIterable[str], *,
                           reembed: bool = False) -> models.ImportReport:
        """``MemoryManager.import_lines`` in a worker thread; ``lines`` may be an async iterable too."""
        if isinstance(lines, AsyncIterable):
            lines = blocking(lines, asyncio.get_running_loop())  # the thread asks the loop for each line
        return await self._run(MemoryManager.import_lines, lines, reembed=reembed)

    async def reindex_graph(self, user_id: str | None = None) -> models.ReindexReport:
        """``MemoryManager.reindex_graph`` in a worker thread."""
        return await self._run(MemoryManager.reindex_graph, user_id)

    async def relayout_vectors(self) -> list[str]:
        """``MemoryManager.relayout_vectors`` in a worker thread."""
        return await self._run(MemoryManager.relayout_vectors)
