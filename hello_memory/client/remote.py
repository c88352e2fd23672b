"""``RemoteMemory``: the :class:`~hello_memory.MemoryManager` API over HTTP, against ``hello-memory serve``.

Same method names, arguments, return types and errors as ``MemoryManager`` (both satisfy
:class:`hello_memory.api.MemoryAPI`, and ``MemoryAdminAPI`` through :mod:`hello_memory.client.admin`), so
switching is one line. The service validates as the library does and decides what a key reaches (its user).

Adds are safe to retry: every memory is sent with a ``memory_id`` (the caller's, else a fresh ``uuid4``;
a conversation's turns have ids derived from it), and the service stores an id once. Reads, searches and
adds are retried after a lost reply or a 502/503/504, every call when the service could not be reached
(:mod:`hello_memory.client.transport`); when an add still fails, the same call made again reuses its ids
(:mod:`hello_memory.client.write_ids`), so a retry after a :class:`~hello_memory.errors.ServiceTimeoutError`
stores nothing twice either. The requests are built in :mod:`hello_memory.client.calls`, shared with
:class:`~hello_memory.client.remote_async.AsyncRemoteMemory` (the same API, awaitable).

Example:
    >>> from hello_memory.client.remote import RemoteMemory
    >>> mm = RemoteMemory("http://127.0.0.1:8765", api_key="...", user_id="alice")  # doctest: +SKIP
    >>> mm.add("Alice prefers green tea", memory_type="semantic").id                # doctest: +SKIP
    '0b9e…'
    >>> mm.search("what does Alice drink?")[0].item.content                         # doctest: +SKIP
    'Alice prefers green tea'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar, overload

from hello_memory.api import Messages, Query, TimeRange
from hello_memory.client import calls
from hello_memory.client.admin import RemoteAdmin
from hello_memory.client.calls import Call
from hello_memory.client.remote_base import RemoteBase
from hello_memory.client.transport import Transport
from hello_memory.context import ContextBlock
from hello_memory.models import (
    ConsolidateReport,
    ForgetReport,
    HistoryEntry,
    MemoryItem,
    MemoryStats,
    MemoryType,
    ScoredMemory,
)
from hello_memory.wire import Identity

T = TypeVar("T")


class RemoteMemory(RemoteBase[Transport], RemoteAdmin):
    """A memory served by a hello-memory service (``hello-memory serve``); arguments: :class:`RemoteBase`.

    Nothing connects until the first call; :meth:`close` releases the connection pool.
    """

    def _transport(self, url: str, **options: Any) -> Transport:
        return Transport(url, **options)

    # -- plumbing ---------------------------------------------------------------------------
    def identity(self) -> Identity:
        """Who the API key is and what the service serves (fetched once)."""
        if self._identity is None:
            self._identity = self._run(calls.identity())
        return self._identity

    @property
    def user_id(self) -> str:
        """The default user of every call."""
        return self._user_id if self._user_id is not None else self.identity().user_id

    @property
    def enabled(self) -> tuple[MemoryType, ...]:
        """The memory tiers the service serves."""
        return tuple(self.identity().memory_types)

    def _run(self, call: Call[T]) -> T:
        """Send one call (an add with its memories named by ids: :mod:`hello_memory.client.write_ids`)."""
        with self._pending.naming(call):
            reply = self._http.send(call.request)
        return call.read(reply, self.url)

    def close(self) -> None:
        """Release the connection pool; idempotent."""
        self._http.close()

    def __enter__(self) -> RemoteMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- add --------------------------------------------------------------------------------
    @overload
    def add(
        self, content: str, *, memory_type: str | MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> MemoryItem: ...
    @overload
    def add(
        self, content: Messages, *, memory_type: str | MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> list[MemoryItem]: ...
    def add(
        self, content: str | Messages, *, memory_type: str | MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> MemoryItem | list[MemoryItem]:
        """Store one memory, or a conversation's turns (see :meth:`hello_memory.api.MemoryAPI.add`)."""
        arguments = {**fields, "memory_type": memory_type, "importance": importance, "session_id": session_id,
                     "created_at": created_at, "metadata": metadata, "memory_id": memory_id}
        return self._run(calls.add(content, self._user(user_id), arguments))

    def add_many(self, items: Iterable[dict[str, Any]]) -> list[MemoryItem]:
        """Store many memories at once; all are validated before any is stored."""
        call = calls.add_many(items, self._user_id)
        return [] if call is None else self._run(call)

    # -- read -------------------------------------------------------------------------------
    def get(self, memory_id: str, *, user_id: str | None = None, include_deleted: bool = False) -> MemoryItem:
        """One memory of the user; ``NotFoundError`` if absent or another user's."""
        return self._run(calls.get(memory_id, user=self._user(user_id), include_deleted=include_deleted))

    def get_all(
        self,
        *,
        user_id: str | None = None,
        memory_type: str | MemoryType | None = None,
        limit: int | None = None,
        include_deleted: bool = False,
    ) -> list[MemoryItem]:
        """The user's memories, newest first."""
        return self._run(calls.get_all(user=self._user(user_id), memory_type=memory_type, limit=limit,
                                       include_deleted=include_deleted))

    def search(
        self,
        query: Query,
        *,
        user_id: str | None = None,
        memory_types: Sequence[str | MemoryType] | None = None,
        limit: int = 10,
        min_importance: float = 0.0,
        min_score: float | None = None,
        time_range: TimeRange | None = None,
        session_id: str | None = None,
        reference_time: datetime | str | None = None,
    ) -> list[ScoredMemory]:
        """One ranked list across tiers by final score (see :meth:`hello_memory.MemoryManager.search`)."""
        return self._run(calls.search(
            query, user=self._user(user_id), memory_types=memory_types, limit=limit, min_importance=min_importance,
            min_score=min_score, time_range=time_range, session_id=session_id, reference_time=reference_time,
        ))

    def history(self, memory_id: str, *, user_id: str | None = None) -> list[HistoryEntry]:
        """Every change of one memory, oldest first; ``NotFoundError`` as ``get`` (also after ``remove``)."""
        return self._run(calls.history(memory_id, user=self._user(user_id)))

    # -- change -----------------------------------------------------------------------------
    def update(
        self,
        memory_id: str,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        user_id: str | None = None,
    ) -> MemoryItem:
        """Change content (re-embedded), importance and/or metadata (merged into the old dict)."""
        return self._run(calls.update(memory_id, content, importance, metadata, user=self._user(user_id)))

    def remove(self, memory_id: str, *, user_id: str | None = None) -> None:
        """Delete a memory from every store, history and graph edges included (not restorable)."""
        self._run(calls.remove(memory_id, user=self._user(user_id)))

    def restore(self, memory_id: str, *, user_id: str | None = None) -> MemoryItem:
        """Undo a soft delete (``forget`` without ``purge``)."""
        return self._run(calls.restore(memory_id, user=self._user(user_id)))

    def forget(
        self,
        strategy: str = "importance_based",
        threshold: float = 0.1,
        max_age_days: float = 30,
        *,
        capacity: int | None = None,
        memory_types: Sequence[str | MemoryType] | None = None,
        user_id: str | None = None,
        purge: bool = False,
    ) -> ForgetReport:
        """Forget by ``importance_based``, ``time_based``, ``capacity_based`` or ``combined`` policy."""
        return self._run(calls.forget(strategy, threshold, max_age_days, capacity=capacity, memory_types=memory_types,
                                      user=self._user(user_id), purge=purge))

    def consolidate(
        self,
        from_type: str | MemoryType = "working",
        to_type: str | MemoryType = "episodic",
        importance_threshold: float = 0.7,
        *,
        user_id: str | None = None,
    ) -> ConsolidateReport:
        """Promote important memories to a longer-lived tier, atomically and de-duplicated."""
        return self._run(calls.consolidate(from_type, to_type, importance_threshold, user=self._user(user_id)))

    def clear_all(self, user_id: str | None = None) -> int:
        """Delete all of one user's memories (never another user's); returns how many."""
        return self._run(calls.clear_all(self._user(user_id))).count

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Remove every memory of ``user_id`` and their default knowledge base ``docs_<user>``; counts."""
        return self._run(calls.forget_user(user_id))

    # -- reports ----------------------------------------------------------------------------
    def stats(self, *, user_id: str | None = None) -> MemoryStats:
        """Counts per tier, deleted count, graph size and the backends in use."""
        return self._run(calls.stats(user=self._user(user_id)))

    def all_stats(self) -> list[MemoryStats]:
        """Stats of every user (admin key, or a loopback service without keys)."""
        return self._run(calls.all_stats())

    def summary(self, limit: int = 10, *, user_id: str | None = None) -> str:
        """A readable summary: counts per tier and the most important memories of each."""
        return self._run(calls.summary(limit, user=self._user(user_id))).summary

    def build_context(
        self,
        query: str,
        *,
        budget_tokens: int = 800,
        floor: float | None = None,
        position: str = "user",
        user_id: str | None = None,
        limit: int = 20,
    ) -> ContextBlock:
        """Relevant memories rendered as labelled evidence within a token budget (docs/design.md §7)."""
        return self._run(calls.build_context(query, budget_tokens=budget_tokens, floor=floor, position=position,
                                             user=self._user(user_id), limit=limit))
