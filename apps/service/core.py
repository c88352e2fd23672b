"""What the service serves: one ``MemoryManager`` and a ``RAGPipeline`` per namespace over one data directory.

The stores are opened before the server accepts anything (a locked or corrupt data directory is a
clear error at start-up, not on the first request) and closed after the last running operation
has finished. Store operations run in worker threads; each has a timeout, after which the client
gets HTTP 504 while the operation itself still completes (a thread cannot be interrupted
mid-write). Writes take a slot of their user first and a retried add joins its first try
(:mod:`apps.service.admission`). Shutdown waits for running operations until ``drain_timeout``
after it began, and no longer: operations still running then are left to the process's exit
(every write is all-or-nothing, or completed by recovery at the next start).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from starlette.exceptions import HTTPException

from apps.service.admission import InFlight, Ticket, WriteSlots
from apps.service.limits import OPERATION_MS
from apps.service.settings import ServiceSettings
from hello_memory import MemoryManager, Settings
from hello_memory.client.discovery import home_id
from hello_memory.embedders.base import Embedder
from hello_memory.errors import PermissionDeniedError, ServiceError, ServiceTimeoutError
from hello_memory.llm.base import LLMClient
from rag import RAGPipeline

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ServiceCore:
    """The open stores of a service, its worker threads and its in-flight operations.

    Args:
        settings: the library's settings (data directory, stores, embedder).
        service: the service's own settings (limits, timeouts, allowed roots).
        embedder / llm: injected components; built from ``settings`` when omitted.
    """

    def __init__(
        self,
        settings: Settings,
        service: ServiceSettings,
        *,
        embedder: Embedder | None = None,
        llm: LLMClient | None = None,
    ) -> None:
        from hello_memory.embedders.factory import make_embedder
        from hello_memory.llm.factory import make_llm

        self.settings = settings
        self.service = service
        self.embedder = embedder or make_embedder(settings)
        self.llm = llm if llm is not None else make_llm(settings)
        self.memory = MemoryManager(settings, enable_perceptual=True, embedder=self.embedder)
        self.home = Path(settings.home).expanduser().resolve()
        self.home_id = home_id(self.home)
        """The data directory's fingerprint that ``/health`` shows (computed once: it reads the file system)."""
        self.data_dir: Path | None = self.memory.bundle.home
        """The data directory the stores keep their files in; ``None`` when they keep none (servers)."""
        self.roots = [Path(r).expanduser().resolve() for r in service.allowed_roots]
        self._pipelines: dict[str, RAGPipeline] = {}
        self._lock = threading.Lock()
        self._idle = threading.Condition()
        self._running = 0
        self.draining = False
        self._drain_deadline: float | None = None
        self._closed = False
        self.abandoned = 0
        """Operations still running when the stores were left unclosed at shutdown (``drain_timeout`` passed)."""
        self.limiter = anyio.CapacityLimiter(service.threads)
        self.slots = WriteSlots(service.user_writes, service.busy_retry_after)
        self.inflight = InFlight()
        self._waiting: set[anyio.CancelScope] = set()  # requests awaiting an operation (event loop only)

    # -- stores -----------------------------------------------------------------------------
    def rag(self, namespace: str) -> RAGPipeline:
        """The pipeline of ``namespace`` (opened on first use; they share the stores)."""
        with self._lock:
            pipeline = self._pipelines.get(namespace)
            if pipeline is None:
                if self._closed:
                    raise ServiceError("the service is shutting down")
                pipeline = RAGPipeline(self.settings, namespace=namespace, embedder=self.embedder, llm=self.llm)
                self._pipelines[namespace] = pipeline
            return pipeline

    def describe(self) -> str:
        """Where this service's memory lives, for people: its data directory, else its Qdrant."""
        home = self.data_dir
        return str(home) if home is not None else f"Qdrant at {self.settings.qdrant_url}"

    def warm_up(self) -> None:
        """Load the embedder now, so the first request does not pay for it."""
        started = time.perf_counter()
        self.embedder.embed(["warm up"], kind="query")
        logger.info("embedder %s ready in %.1f s", self.embedder.name, time.perf_counter() - started)

    def resolve_root_path(self, path: str, what: str = "path") -> Path:
        """The real path of ``path`` if it lies under an allowed root, else ``PermissionDeniedError``."""
        if not self.roots:
            raise PermissionDeniedError(
                f"this service reads no files of its own: upload the file instead, or start the service "
                f"with --allow-root DIR ({what} {path!r} refused)"
            )
        try:
            p = Path(path).expanduser()
            real = (p if p.is_absolute() else self.roots[0] / p).resolve()
        except (OSError, ValueError, RuntimeError) as e:  # NUL bytes, symlink loops
            raise PermissionDeniedError(f"{what} {path!r} is not a usable path: {e}") from e
        if not any(real == root or real.is_relative_to(root) for root in self.roots):
            raise PermissionDeniedError(
                f"{what} {path!r} is outside the folders this service may read "
                f"({', '.join(str(r) for r in self.roots)})"
            )
        return real

    # -- running operations -----------------------------------------------------------------
    async def run(
        self, fn: Callable[..., T], *args: Any, timeout: float | None = None, writer: str | None = None,
        join: Hashable | None = None, **kwargs: Any,
    ) -> T:
        """``fn(*args, **kwargs)`` in a worker thread, within the request timeout.

        Args:
            writer: the owner of a write (``"user 'bob'"``): it takes one of the owner's slots
                until it ends (HTTP 429 when there is none left).
            join: the call's key: if the same call is running, wait for its outcome instead.

        Raises:
            ServiceTimeoutError: the timeout passed; the operation keeps running to its end.
            HTTPException: 429, ``writer`` has every slot taken.
        """
        limit = self.service.request_timeout if timeout is None else timeout
        if join is not None and (first := self.inflight.find(join)) is not None:
            return await self._joined(first, limit)
        ticket = Ticket()
        if writer is not None:
            ticket.release = self.slots.take(writer)
        if join is not None:
            future, runs = self.inflight.enter(join)
            if not runs:
                ticket.finish()
                return await self._joined(future, limit)
            ticket.join(self.inflight, join, future)
        try:
            result, ms = await self._bounded(lambda: anyio.to_thread.run_sync(
                self._tracked, fn, args, kwargs, ticket, abandon_on_cancel=True, limiter=self.limiter), limit)
        except BaseException as e:
            ticket.abandon(e if isinstance(e, Exception) else ServiceError("the request was cancelled"))
            raise
        OPERATION_MS.set(ms)
        return result

    async def _joined(self, outcome: Any, limit: float) -> Any:
        """The outcome of the same call's first try (its result, or its error raised)."""
        return await self._bounded(lambda: asyncio.wrap_future(outcome), limit)

    async def _bounded(self, wait: Callable[[], Awaitable[T]], limit: float) -> T:
        """``await wait()`` within ``limit`` seconds, and no longer than the drain after shutdown began.

        Raises:
            ServiceTimeoutError: ``limit`` passed (504).
            HTTPException: 503, the drain timeout passed (the response goes out before the exit).
        """
        scope = anyio.CancelScope()
        self._waiting.add(scope)
        try:
            with scope, anyio.fail_after(limit):
                return await wait()
        except TimeoutError:
            raise _timed_out(limit) from None
        finally:
            self._waiting.discard(scope)
        raise HTTPException(503, "the service is shutting down and its drain timeout passed; the operation "
                                 "may or may not complete: check, or repeat it (an add is safe to repeat)")

    def _stop_waiting(self) -> None:
        """The drain timeout passed: answer every request still waiting (503) rather than drop it."""
        for scope in list(self._waiting):
            scope.cancel()

    def _tracked(
        self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any], ticket: Ticket
    ) -> tuple[T, float]:
        """``fn``'s result and its duration in milliseconds, counted as running meanwhile."""
        if not ticket.start():  # its request gave up before a thread was free: nobody waits for it
            raise ServiceError("the request gave up before its operation started")
        try:
            with self._idle:
                if self.draining:
                    raise ServiceError("the service is shutting down; retry against its next start")
                self._running += 1
            try:
                started = time.perf_counter()
                result = fn(*args, **kwargs)
                ms = (time.perf_counter() - started) * 1000
            finally:
                with self._idle:
                    self._running -= 1
                    self._idle.notify_all()
        except BaseException as e:
            ticket.finish(error=e)
            raise
        ticket.finish(result=result)
        return result, ms

    @property
    def running(self) -> int:
        """Operations running now."""
        return self._running

    def begin_drain(self) -> None:
        """Shutdown has begun: ``drain_timeout`` counts from now (once, however many steps wait).

        Called in the event loop, requests still waiting when it passes are answered 503.
        """
        with self._idle:
            if self._drain_deadline is not None:
                return
            self._drain_deadline = time.monotonic() + self.service.drain_timeout
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not in the event loop (a plain close())
            return
        loop.call_later(self.service.drain_timeout, self._stop_waiting)

    def close(self) -> None:
        """Refuse new operations, wait for the running ones until the drain deadline, close the stores.

        Operations still running at the deadline keep the stores open (closing them under a write
        would fail it half-way); :func:`apps.service.server.serve` then exits without waiting.
        """
        self.begin_drain()
        with self._idle:
            self.draining = True
            assert self._drain_deadline is not None
            while self._running and time.monotonic() < self._drain_deadline:
                self._idle.wait(timeout=max(0.0, self._drain_deadline - time.monotonic()))
            if self._running:
                if self.abandoned:
                    return
                self.abandoned = self._running
                logger.warning(
                    "%d operations still running after the drain timeout (%g s): leaving them to the exit; "
                    "each write is all-or-nothing or completed by recovery at the next start",
                    self._running, self.service.drain_timeout,
                )
                return
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pipelines, self._pipelines = list(self._pipelines.values()), {}
        for pipeline in pipelines:
            pipeline.close()
        self.memory.close()
        logger.info("stores of %s closed", self.home)


def _timed_out(limit: float) -> ServiceTimeoutError:
    return ServiceTimeoutError(
        f"the operation did not finish within {limit:g} s; it continues on the service "
        "(check its result before retrying a write)"
    )
