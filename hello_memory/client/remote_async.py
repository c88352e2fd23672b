"""``AsyncRemoteMemory``: :class:`~hello_memory.client.remote.RemoteMemory` for asyncio, on ``httpx.AsyncClient``.

The same methods, arguments, results and errors as ``RemoteMemory`` (it satisfies
:class:`hello_memory.api_async.AsyncMemoryAPI` and ``AsyncMemoryAdminAPI``), each awaitable; the
requests are the ones ``RemoteMemory`` sends (:mod:`hello_memory.client.calls`), with the same
retries (:mod:`hello_memory.client.transport`) and the same ids for adds
(:mod:`hello_memory.client.write_ids`). Waiting for the service never blocks the event loop: many
calls may be in flight at once (``asyncio.gather``), over one connection pool.

``user_id`` and ``enabled`` are plain attributes. ``enabled``, and ``user_id`` when none was given,
come from the service (``GET /v1/me``): ``await mm.open()`` — or ``async with`` — fetches them;
the other calls need nothing first. Before, reading them raises ``InvalidInputError`` saying so
(and so does ``isinstance(mm, AsyncMemoryAPI)`` before Python 3.12, which reads a protocol's
properties). An add whose awaiting task is cancelled keeps its ids for the same call made again,
as a failed add does: the service may have stored it.

Example:
    >>> import asyncio
    >>> from hello_memory import AsyncRemoteMemory
    >>> async def main() -> None:
    ...     async with AsyncRemoteMemory("http://127.0.0.1:8765", user_id="alice") as mm:
    ...         await mm.add("Alice prefers green tea", memory_type="semantic")
    ...         hits = await mm.search("what does Alice drink?")
    ...         print(hits[0].item.content)
    >>> asyncio.run(main())                                                          # doctest: +SKIP
    Alice prefers green tea
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from hello_memory import models
from hello_memory._aio import AsyncAdd
from hello_memory.api import Messages, Query, TimeRange
from hello_memory.client import calls
from hello_memory.client.admin import AsyncRemoteAdmin
from hello_memory.client.calls import Call
from hello_memory.client.remote_base import RemoteBase
from hello_memory.client.transport_async import AsyncTransport
from hello_memory.context import ContextBlock
from hello_memory.errors import InvalidInputError
from hello_memory.wire import Identity

T = TypeVar("T")


class AsyncRemoteMemory(AsyncAdd, RemoteBase[AsyncTransport], AsyncRemoteAdmin):
    """A memory served by a hello-memory service, for asyncio (see the module docstring).

    Arguments as :class:`~hello_memory.client.remote_base.RemoteBase` (``client``: an ``httpx.AsyncClient``).
    Nothing connects until the first call; :meth:`aclose` releases the connection pool.
    """

    def _transport(self, url: str, **options: Any) -> AsyncTransport:
        return AsyncTransport(url, **options)

    # -- plumbing ---------------------------------------------------------------------------
    async def open(self) -> AsyncRemoteMemory:
        """Fetch :meth:`identity` (``user_id``, ``enabled``): checks the service answers and knows the key."""
        await self.identity()
        return self

    async def identity(self) -> Identity:
        """Who the API key is and what the service serves (fetched once)."""
        if self._identity is None:
            self._identity = await self._run(calls.identity())
        return self._identity

    @property
    def user_id(self) -> str:
        """The default user of every call (the key's user once :meth:`open` has asked the service)."""
        if self._user_id is not None:
            return self._user_id
        return self._known().user_id

    @property
    def enabled(self) -> tuple[models.MemoryType, ...]:
        """The memory tiers the service serves (known once :meth:`open` has asked the service)."""
        return tuple(self._known().memory_types)

    def _known(self) -> Identity:
        if self._identity is None:
            raise InvalidInputError(
                f"the service at {self.url} has not been asked yet: `await mm.open()` (or `async with "
                "AsyncRemoteMemory(...) as mm`) first, or pass user_id="
            )
        return self._identity

    async def _run(self, call: Call[T]) -> T:
        """Send one call (an add with its memories named by ids: :mod:`hello_memory.client.write_ids`)."""
        with self._pending.naming(call):
            reply = await self._http.send(call.request)
        return call.read(reply, self.url)

    async def aclose(self) -> None:
        """Release the connection pool; idempotent."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncRemoteMemory:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- add --------------------------------------------------------------------------------
    async def _add(self, content: str | Messages, user_id: str | None,
                   arguments: dict[str, Any]) -> models.MemoryItem | list[models.MemoryItem]:
        """Send an add (:class:`~hello_memory._aio.AsyncAdd` is ``add``)."""
        return await self._run(calls.add(content, self._user(user_id), arguments))

    async def add_many(self, items: Iterable[dict[str, Any]]) -> list[models.MemoryItem]:
        """Awaitable ``add_many``: all validated before any is stored."""
        call = calls.add_many(items, self._user_id)
        return [] if call is None else await self._run(call)

    # -- read -------------------------------------------------------------------------------
    async def get(self, memory_id: str, *, user_id: str | None = None,
                  include_deleted: bool = False) -> models.MemoryItem:
        """Awaitable ``get``: ``NotFoundError`` if absent or another user's."""
        return await self._run(calls.get(memory_id, user=self._user(user_id), include_deleted=include_deleted))

    async def get_all(self, *, user_id: str | None = None, memory_type: str | models.MemoryType | None = None,
                      limit: int | None = None, include_deleted: bool = False) -> list[models.MemoryItem]:
        """Awaitable ``get_all``: the user's memories, newest first."""
        call = calls.get_all(user=self._user(user_id), memory_type=memory_type, limit=limit,
                             include_deleted=include_deleted)
        return await self._run(call)

    async def search(self, query: Query, *, user_id: str | None = None,
                     memory_types: Sequence[str | models.MemoryType] | None = None, limit: int = 10,
                     min_importance: float = 0.0, min_score: float | None = None, time_range: TimeRange | None = None,
                     session_id: str | None = None, reference_time: datetime | str | None = None,
                     ) -> list[models.ScoredMemory]:
        """Awaitable ``search``: one ranked list across tiers by final score."""
        call = calls.search(query, user=self._user(user_id), memory_types=memory_types, limit=limit,
                            min_importance=min_importance, min_score=min_score, time_range=time_range,
                            session_id=session_id, reference_time=reference_time)
        return await self._run(call)

    async def history(self, memory_id: str, *, user_id: str | None = None) -> list[models.HistoryEntry]:
        """Awaitable ``history``: every change of one memory, oldest first."""
        return await self._run(calls.history(memory_id, user=self._user(user_id)))

    # -- change -----------------------------------------------------------------------------
    async def update(self, memory_id: str, content: str | None = None, importance: float | None = None,
                     metadata: dict[str, Any] | None = None, *, user_id: str | None = None) -> models.MemoryItem:
        """Awaitable ``update``: content (re-embedded), importance and/or metadata (merged)."""
        return await self._run(calls.update(memory_id, content, importance, metadata, user=self._user(user_id)))

    async def remove(self, memory_id: str, *, user_id: str | None = None) -> None:
        """Awaitable ``remove``: deleted from every store, history included (not restorable)."""
        await self._run(calls.remove(memory_id, user=self._user(user_id)))

    async def restore(self, memory_id: str, *, user_id: str | None = None) -> models.MemoryItem:
        """Awaitable ``restore``: undo a soft delete."""
        return await self._run(calls.restore(memory_id, user=self._user(user_id)))

    async def forget(self, strategy: str = "importance_based", threshold: float = 0.1, max_age_days: float = 30, *,
                     capacity: int | None = None, memory_types: Sequence[str | models.MemoryType] | None = None,
                     user_id: str | None = None, purge: bool = False) -> models.ForgetReport:
        """Awaitable ``forget`` by ``importance_based``, ``time_based``, ``capacity_based`` or ``combined``."""
        call = calls.forget(strategy, threshold, max_age_days, capacity=capacity, memory_types=memory_types,
                            user=self._user(user_id), purge=purge)
        return await self._run(call)

    async def consolidate(self, from_type: str | models.MemoryType = "working",
                          to_type: str | models.MemoryType = "episodic", importance_threshold: float = 0.7, *,
                          user_id: str | None = None) -> models.ConsolidateReport:
        """Awaitable ``consolidate``: important memories promoted to a longer-lived tier."""
        return await self._run(calls.consolidate(from_type, to_type, importance_threshold, user=self._user(user_id)))

    async def clear_all(self, user_id: str | None = None) -> int:
        """Awaitable ``clear_all``: how many of the user's memories were deleted."""
        return (await self._run(calls.clear_all(self._user(user_id)))).count

    async def forget_user(self, user_id: str) -> dict[str, int]:
        """Awaitable ``forget_user``: per-store counts."""
        return await self._run(calls.forget_user(user_id))

    # -- reports ----------------------------------------------------------------------------
    async def stats(self, *, user_id: str | None = None) -> models.MemoryStats:
        """Awaitable ``stats``."""
        return await self._run(calls.stats(user=self._user(user_id)))

    async def all_stats(self) -> list[models.MemoryStats]:
        """Awaitable ``all_stats``: every user's (admin key, or a loopback service without keys)."""
        return await self._run(calls.all_stats())

    async def summary(self, limit: int = 10, *, user_id: str | None = None) -> str:
        """Awaitable ``summary``."""
        return (await self._run(calls.summary(limit, user=self._user(user_id)))).summary

    async def build_context(self, query: str, *, budget_tokens: int = 800, floor: float | None = None,
                            position: str = "user", user_id: str | None = None, limit: int = 20) -> ContextBlock:
        """Awaitable ``build_context``: relevant memories as labelled evidence within a token budget."""
        call = calls.build_context(query, budget_tokens=budget_tokens, floor=floor, position=position,
                                   user=self._user(user_id), limit=limit)
        return await self._run(call)
