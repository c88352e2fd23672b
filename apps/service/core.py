"""What the service serves: one ``MemoryManager`` and a ``RAGPipeline`` per namespace over one data directory.

The stores are opened before the server accepts anything (a locked or corrupt data directory is a
clear error at start-up, not on the first request) and closed after the last running operation
has finished. Store operations run in worker threads; each has a timeout, after which the client
gets HTTP 504 while the operation itself still completes (a thread cannot be interrupted
mid-write), and shutdown waits for such operations before closing the stores.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from apps.service.limits import OPERATION_MS
from apps.service.settings import ServiceSettings
from hello_memory import MemoryManager, Settings
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
        self.data_dir: Path | None = self.memory.bundle.home
        """The data directory the stores keep their files in; ``None`` when they keep none (servers)."""
        self.roots = [Path(r).expanduser().resolve() for r in service.allowed_roots]
        self._pipelines: dict[str, RAGPipeline] = {}
        self._lock = threading.Lock()
        self._idle = threading.Condition()
        self._running = 0
        self.draining = False
        self._closed = False
        self.limiter = anyio.CapacityLimiter(service.threads)

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
    async def run(self, fn: Callable[..., T], *args: Any, timeout: float | None = None, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a worker thread, within the request timeout.

        Raises:
            ServiceTimeoutError: the timeout passed; the operation keeps running to its end.
        """
        limit = self.service.request_timeout if timeout is None else timeout
        try:
            with anyio.fail_after(limit):
                result, ms = await anyio.to_thread.run_sync(
                    self._tracked, fn, args, kwargs, abandon_on_cancel=True, limiter=self.limiter
                )
                OPERATION_MS.set(ms)
                return result
        except TimeoutError:
            raise ServiceTimeoutError(
                f"the operation did not finish within {limit:g} s; it continues on the service "
                "(check its result before retrying a write)"
            ) from None

    def _tracked(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[T, float]:
        """``fn``'s result and its duration in milliseconds, counted as running meanwhile."""
        with self._idle:
            if self.draining:
                raise ServiceError("the service is shutting down; retry against its next start")
            self._running += 1
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs), (time.perf_counter() - started) * 1000
        finally:
            with self._idle:
                self._running -= 1
                self._idle.notify_all()

    @property
    def running(self) -> int:
        """Operations running now."""
        return self._running

    def close(self) -> None:
        """Refuse new operations, wait for the running ones (``drain_timeout``), close the stores."""
        with self._idle:
            self.draining = True
            deadline = time.monotonic() + self.service.drain_timeout
            while self._running and time.monotonic() < deadline:
                self._idle.wait(timeout=max(0.0, deadline - time.monotonic()))
            if self._running:
                logger.warning("closing with %d operations still running", self._running)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pipelines, self._pipelines = list(self._pipelines.values()), {}
        for pipeline in pipelines:
            pipeline.close()
        self.memory.close()
        logger.info("stores of %s closed", self.home)
