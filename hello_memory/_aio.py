"""The async façades' common part: a blocking façade run in worker threads, and iterators bridged.

:class:`AsyncAdd` is ``add`` of both async memories (its overloads and arguments, written once).
:class:`InThreads` is the base of :class:`~hello_memory.manager_async.AsyncMemoryManager` and
:class:`~rag.pipeline_async.AsyncRAGPipeline`: the façade it wraps is opened at first use, in a
worker thread, and every call runs in one (``asyncio.to_thread``), as STYLE's concurrency rule 3
asks (an async API wraps the thread-safe core, it does not re-implement it). Iterators need one
more step, both ways: :func:`in_threads` reads a blocking iterator (an export, an open file) a batch
at a time in worker threads, and :func:`blocking` lets a worker thread read an async iterable by
handing each step back to the event loop.

Example:
    >>> import asyncio
    >>> async def collect() -> list[int]:
    ...     return [n async for n in in_threads(iter(range(5)), batch=2)]
    >>> asyncio.run(collect())
    [0, 1, 2, 3, 4]
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterator
from datetime import datetime
from itertools import islice
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from hello_memory.api import Messages
from hello_memory.errors import InvalidInputError
from hello_memory.models import MemoryItem, MemoryType

P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S", bound="InThreads[Any]")


class AsyncAdd:
    """``add`` of the async memories: the overloads of :meth:`MemoryAPI.add <hello_memory.api.MemoryAPI.add>`,
    awaited; the memory sends the call in :meth:`_add`."""

    @overload
    async def add(
        self, content: str, *, memory_type: str | MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> MemoryItem: ...
    @overload
    async def add(
        self, content: Messages, *, memory_type: str | MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> list[MemoryItem]: ...
    async def add(
        self, content: str | Messages, *, memory_type: str | MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> MemoryItem | list[MemoryItem]:
        """Store one memory and return it, or a conversation and return its turns (``MemoryAPI.add``)."""
        arguments = dict(fields, memory_type=memory_type, importance=importance, session_id=session_id,
                         created_at=created_at, metadata=metadata, memory_id=memory_id)
        return await self._add(content, user_id, arguments)

    async def _add(self, content: str | Messages, user_id: str | None,
                   arguments: dict[str, Any]) -> MemoryItem | list[MemoryItem]:
        raise NotImplementedError


class Closable(Protocol):
    """A blocking façade: ``MemoryManager``, ``RAGPipeline``."""

    def close(self) -> None:
        """Release what it holds; idempotent."""
        ...


F = TypeVar("F", bound=Closable)


class InThreads(Generic[F]):
    """An async view of a blocking façade: opened once, at first use, and every call in a worker thread.

    Args:
        opener: builds the façade (blocking: opens its stores); called at most once, in a worker thread.

    Example:
        >>> class Clock:
        ...     def now(self) -> str:
        ...         return "noon"
        ...     def close(self) -> None:
        ...         pass
        >>> class AsyncClock(InThreads[Clock]):
        ...     async def now(self) -> str:
        ...         return await self._run(Clock.now)
        >>> async def main() -> str:
        ...     async with AsyncClock(Clock) as clock:
        ...         return await clock.now()
        >>> asyncio.run(main())
        'noon'
    """

    def __init__(self, opener: Callable[[], F]) -> None:
        self._opener = opener
        self._facade: F | None = None
        self._closed = False
        self._opening = threading.Lock()  # a thread lock: opening runs in a worker thread, on any event loop

    def _opened(self) -> F:
        """The façade, opened on first use (in the calling worker thread, once)."""
        with self._opening:
            if self._closed:
                raise InvalidInputError(f"this {type(self).__name__} is closed")
            if self._facade is None:
                self._facade = self._opener()
            return self._facade

    async def _run(self, method: Callable[Concatenate[F, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``method(facade, *args, **kwargs)`` in a worker thread."""
        return await asyncio.to_thread(lambda: method(self._opened(), *args, **kwargs))

    async def open(self: S) -> S:
        """Open now (in a worker thread) rather than at the first call; returns itself."""
        await asyncio.to_thread(self._opened)
        return self

    def close(self) -> None:
        """Release the façade (blocking: call it from a worker thread or outside the event loop); idempotent."""
        with self._opening:
            self._closed = True
            facade = self._facade
        if facade is not None:
            facade.close()

    async def aclose(self) -> None:
        """Release the façade in a worker thread; idempotent."""
        await asyncio.to_thread(self.close)

    async def __aenter__(self: S) -> S:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
BATCH = 256
"""Items one worker-thread step reads: a thread hop costs about as much as reading a few lines."""


async def in_threads(items: Iterator[T], *, batch: int = BATCH) -> AsyncIterator[T]:
    """The items of a blocking iterator, read ``batch`` at a time in a worker thread.

    The event loop runs while a batch is read; the iterator is only ever advanced by one thread at
    a time (one step after the other), so iterators that are not thread-safe are read safely.
    """
    while chunk := await asyncio.to_thread(lambda: list(islice(items, batch))):
        for item in chunk:
            yield item


def blocking(items: AsyncIterable[T], loop: asyncio.AbstractEventLoop) -> Iterator[T]:
    """The items of an async iterable, for a worker thread: each step runs on ``loop`` and is waited for.

    Call it only from a thread other than ``loop``'s, while ``loop`` runs (e.g. from a function given
    to ``asyncio.to_thread``): the loop is free then, waiting for that thread.
    """
    source = aiter(items)

    async def step() -> list[T]:  # the next item, or none at the end
        try:
            return [await anext(source)]
        except StopAsyncIteration:
            return []

    while got := asyncio.run_coroutine_threadsafe(step(), loop).result():
        yield got[0]
