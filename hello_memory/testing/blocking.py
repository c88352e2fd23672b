"""Sync views of async memories, so that one contract suite runs against the sync and the async API.

:class:`BlockingMemory` presents an :class:`~hello_memory.api_async.AsyncMemoryAPI` (``AsyncMemoryManager``,
``AsyncRemoteMemory``) as a :class:`~hello_memory.api.MemoryAPI` and ``MemoryAdminAPI``: every call
is awaited on the view's own event loop, which runs in a thread of its own for the view's whole
life (one loop, as an application has: the async object's connections and worker threads belong to
it). Each call must return an awaitable — a method that blocked and returned a value would fail
here — and an export is read with ``anext``, so what the contract checks is the async API itself.
:class:`~hello_memory.testing.memory_api.MemoryAPIContract` and
:class:`~hello_memory.testing.conversation_api.ConversationContract` then run unchanged.

Example:
    >>> class TestAsyncManager(MemoryAPIContract):                      # doctest: +SKIP
    ...     @pytest.fixture
    ...     def memory(self, tmp_path):
    ...         async_mm = AsyncMemoryManager(Settings(home=tmp_path, embedder="tfidf"), enable_perceptual=True)
    ...         with BlockingMemory(async_mm) as mm:
    ...             yield mm
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An event loop running in a daemon thread; :meth:`run` waits for an awaitable's result on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="blocking-view-loop", daemon=True)
        self._thread.start()

    def run(self, awaitable: Awaitable[T]) -> T:
        """``await awaitable`` on the loop, from any other thread; its result or its error."""

        async def wait() -> T:
            return await awaitable

        return asyncio.run_coroutine_threadsafe(wait(), self.loop).result()

    def stop(self) -> None:
        """Wait for the loop's worker threads, then stop and close the loop; idempotent."""
        if self.loop.is_closed():
            return
        self.run(self.loop.shutdown_default_executor())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


def _awaiting(name: str) -> Callable[..., Any]:
    """A method calling the async object's ``name`` and waiting for the awaitable it must return."""

    def method(self: BlockingMemory, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self.memory, name)(*args, **kwargs)
        if not inspect.isawaitable(result):
            raise TypeError(f"{type(self.memory).__name__}.{name} returned {type(result).__name__}, not an awaitable")
        return self.runner.run(result)

    method.__name__ = method.__qualname__ = name
    return method


class BlockingMemory:
    """An async memory, used through the sync API (see the module docstring).

    Args:
        memory: an ``AsyncMemoryAPI`` (and ``AsyncMemoryAdminAPI``); ``with`` opens it (``async with``).
    """

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.runner = LoopThread()

    add = _awaiting("add")
    add_many = _awaiting("add_many")
    get = _awaiting("get")
    get_all = _awaiting("get_all")
    search = _awaiting("search")
    history = _awaiting("history")
    update = _awaiting("update")
    remove = _awaiting("remove")
    restore = _awaiting("restore")
    forget = _awaiting("forget")
    consolidate = _awaiting("consolidate")
    clear_all = _awaiting("clear_all")
    forget_user = _awaiting("forget_user")
    stats = _awaiting("stats")
    summary = _awaiting("summary")
    build_context = _awaiting("build_context")
    import_lines = _awaiting("import_lines")
    reindex_graph = _awaiting("reindex_graph")

    def __getattr__(self, name: str) -> Any:
        """Any other coroutine method of the async object (``recover``, ``identity``...), waited for."""
        if name.startswith("_") or not inspect.iscoroutinefunction(getattr(type(self.memory), name, None)):
            raise AttributeError(name)
        return _awaiting(name).__get__(self)

    @property
    def user_id(self) -> str:
        """The async memory's ``user_id`` (a plain attribute there too)."""
        user: str = self.memory.user_id
        return user

    @property
    def enabled(self) -> Any:
        """The async memory's ``enabled``."""
        return self.memory.enabled

    def export_lines(self, **arguments: Any) -> Iterator[str]:
        """The async export (an async iterator), read one line at a time on the loop."""
        return self._lines(self.memory.export_lines(**arguments))

    def _lines(self, lines: AsyncIterator[str]) -> Iterator[str]:
        sentinel = object()
        while (line := self.runner.run(anext(lines, sentinel))) is not sentinel:
            yield line  # type: ignore[misc]  # not the sentinel: a line

    def close(self) -> None:
        """``await aclose()``, then the loop ends; idempotent."""
        if not self.runner.loop.is_closed():
            self.runner.run(self.memory.aclose())
            self.runner.stop()

    def __enter__(self) -> BlockingMemory:
        self.runner.run(self.memory.__aenter__())
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
