"""``AsyncMemoryAPI``: :class:`~hello_memory.api.MemoryAPI` for asyncio, in process and through a service.

:class:`~hello_memory.manager_async.AsyncMemoryManager` (a ``MemoryManager`` whose calls run in
worker threads) and :class:`~hello_memory.client.remote_async.AsyncRemoteMemory` (``httpx.AsyncClient``)
implement it: the methods of ``MemoryAPI`` with the same arguments, results and errors, each a
coroutine. ``user_id`` and ``enabled`` stay plain attributes. Instead of ``close`` and ``with``:
``await aclose()`` and ``async with``; ``await open()`` does what the first call would otherwise do
(open the stores, or ask the service who the key is). :class:`AsyncMemoryAdminAPI` is
:class:`~hello_memory.api.MemoryAdminAPI` the same way; an export is an async iterator.

Example:
    >>> from hello_memory.api_async import AsyncMemoryAPI
    >>> async def remember(memory: AsyncMemoryAPI, text: str) -> str:
    ...     return (await memory.add(text, memory_type="semantic")).id
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol, overload, runtime_checkable

from hello_memory import models
from hello_memory.api import Messages, Query, TimeRange
from hello_memory.context import ContextBlock

#: ``MemoryAPI``'s names of the async API's differently named methods.
SYNC_NAMES = {"aclose": "close", "__aenter__": "__enter__", "__aexit__": "__exit__"}


@runtime_checkable
class AsyncMemoryAPI(Protocol):
    """:class:`~hello_memory.api.MemoryAPI`, each call awaitable (semantics and errors: there)."""

    @property
    def user_id(self) -> str:
        """The default user of every call."""
        ...

    @property
    def enabled(self) -> tuple[models.MemoryType, ...]:
        """The memory tiers this memory serves."""
        ...

    @overload
    async def add(
        self, content: str, *, memory_type: str | models.MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> models.MemoryItem: ...
    @overload
    async def add(
        self, content: Messages, *, memory_type: str | models.MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> list[models.MemoryItem]: ...
    async def add(
        self, content: str | Messages, *, memory_type: str | models.MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> models.MemoryItem | list[models.MemoryItem]:
        """:meth:`MemoryAPI.add <hello_memory.api.MemoryAPI.add>`: a memory, or a conversation's turns."""
        ...

    async def add_many(self, items: Iterable[dict[str, Any]]) -> list[models.MemoryItem]:
        """:meth:`MemoryAPI.add_many <hello_memory.api.MemoryAPI.add_many>`."""
        ...

    async def get(self, memory_id: str, *, user_id: str | None = None,
                  include_deleted: bool = False) -> models.MemoryItem:
        """:meth:`MemoryAPI.get <hello_memory.api.MemoryAPI.get>`."""
        ...

    async def get_all(self, *, user_id: str | None = None, memory_type: str | models.MemoryType | None = None,
                      limit: int | None = None, include_deleted: bool = False) -> list[models.MemoryItem]:
        """:meth:`MemoryAPI.get_all <hello_memory.api.MemoryAPI.get_all>`."""
        ...

    async def search(self, query: Query, *, user_id: str | None = None,
                     memory_types: Sequence[str | models.MemoryType] | None = None, limit: int = 10,
                     min_importance: float = 0.0, min_score: float | None = None, time_range: TimeRange | None = None,
                     session_id: str | None = None, reference_time: datetime | str | None = None,
                     ) -> list[models.ScoredMemory]:
        """:meth:`MemoryAPI.search <hello_memory.api.MemoryAPI.search>`."""
        ...

    async def history(self, memory_id: str, *, user_id: str | None = None) -> list[models.HistoryEntry]:
        """:meth:`MemoryAPI.history <hello_memory.api.MemoryAPI.history>`."""
        ...

    async def update(self, memory_id: str, content: str | None = None, importance: float | None = None,
                     metadata: dict[str, Any] | None = None, *, user_id: str | None = None) -> models.MemoryItem:
        """:meth:`MemoryAPI.update <hello_memory.api.MemoryAPI.update>`."""
        ...

    async def remove(self, memory_id: str, *, user_id: str | None = None) -> None:
        """:meth:`MemoryAPI.remove <hello_memory.api.MemoryAPI.remove>`."""
        ...

    async def restore(self, memory_id: str, *, user_id: str | None = None) -> models.MemoryItem:
        """:meth:`MemoryAPI.restore <hello_memory.api.MemoryAPI.restore>`."""
        ...

    async def forget(self, strategy: str = "importance_based", threshold: float = 0.1, max_age_days: float = 30, *,
                     capacity: int | None = None, memory_types: Sequence[str | models.MemoryType] | None = None,
                     user_id: str | None = None, purge: bool = False) -> models.ForgetReport:
        """:meth:`MemoryAPI.forget <hello_memory.api.MemoryAPI.forget>`."""
        ...

    async def consolidate(self, from_type: str | models.MemoryType = "working",
                          to_type: str | models.MemoryType = "episodic", importance_threshold: float = 0.7, *,
                          user_id: str | None = None) -> models.ConsolidateReport:
        """:meth:`MemoryAPI.consolidate <hello_memory.api.MemoryAPI.consolidate>`."""
        ...

    async def clear_all(self, user_id: str | None = None) -> int:
        """:meth:`MemoryAPI.clear_all <hello_memory.api.MemoryAPI.clear_all>`."""
        ...

    async def forget_user(self, user_id: str) -> dict[str, int]:
        """:meth:`MemoryAPI.forget_user <hello_memory.api.MemoryAPI.forget_user>`."""
        ...

    async def stats(self, *, user_id: str | None = None) -> models.MemoryStats:
        """:meth:`MemoryAPI.stats <hello_memory.api.MemoryAPI.stats>`."""
        ...

    async def summary(self, limit: int = 10, *, user_id: str | None = None) -> str:
        """:meth:`MemoryAPI.summary <hello_memory.api.MemoryAPI.summary>`."""
        ...

    async def build_context(self, query: str, *, budget_tokens: int = 800, floor: float | None = None,
                            position: str = "user", user_id: str | None = None, limit: int = 20) -> ContextBlock:
        """:meth:`MemoryAPI.build_context <hello_memory.api.MemoryAPI.build_context>`."""
        ...

    async def aclose(self) -> None:
        """Release the stores or the connection; idempotent."""
        ...

    async def __aenter__(self) -> AsyncMemoryAPI:
        """``async with`` support: the memory itself, opened."""
        ...

    async def __aexit__(self, *exc: object) -> None:
        """``async with`` support: :meth:`aclose`."""
        ...


@runtime_checkable
class AsyncMemoryAdminAPI(Protocol):
    """:class:`~hello_memory.api.MemoryAdminAPI` for asyncio (semantics and errors: there).

    Example:
        >>> async def backup(memory: AsyncMemoryAdminAPI, path: str) -> None:
        ...     with open(path, "w", encoding="utf-8") as out:
        ...         async for line in memory.export_lines():
        ...             out.write(line + "\\n")
    """

    def export_lines(self, *, vectors: bool = True, users: Sequence[str] | None = None) -> AsyncIterator[str]:
        """The export as an async iterator of JSON Lines (arguments checked at the call, sent at the first line)."""
        ...

    async def import_lines(self, lines: Iterable[str] | AsyncIterable[str], *,
                           reembed: bool = False) -> models.ImportReport:
        """Import an export: its lines as an iterable (an open file, read in worker threads) or an async iterable."""
        ...

    async def reindex_graph(self, user_id: str | None = None) -> models.ReindexReport:
        """Rebuild the knowledge graph of one user (``None``: of every user reached) from the records."""
        ...
