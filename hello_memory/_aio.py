"""Bridges between blocking iterators and the event loop, for the async façades.

The async classes (:mod:`hello_memory.manager_async`, :mod:`hello_memory.client.remote_async`,
:mod:`rag.pipeline_async`) run each blocking call in a worker thread (``asyncio.to_thread``);
iterators need one more step, both ways: :func:`in_threads` reads a blocking iterator (an export,
an open file) a batch at a time in worker threads, and :func:`blocking` lets a worker thread read
an async iterable by handing each step back to the event loop.

Example:
    >>> import asyncio
    >>> async def collect() -> list[int]:
    ...     return [n async for n in in_threads(iter(range(5)), batch=2)]
    >>> asyncio.run(collect())
    [0, 1, 2, 3, 4]
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")
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
