"""Running the service: open the stores, warm the embedder, listen (uvicorn), advertise, shut down gracefully.

Order at start: refuse a non-loopback host without keys → refuse a busy port (one line, nothing
opened) → open the stores (a locked or damaged data directory fails here, with one clear line) →
load the embedder → bind → write ``<home>/SERVICE``. On SIGTERM/SIGINT: remove ``SERVICE`` → stop
accepting → let running requests finish → wait for operations still running in worker threads →
close the stores (releasing the data directory). All of it within ``drain_timeout`` from the
signal: operations still running then are not waited for, the process exits without closing the
stores under them (each write is all-or-nothing or completed by recovery at the next start, as
after a crash).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from apps.ports import check_port
from apps.service.auth import KeyRing, check_bind
from apps.service.core import ServiceCore
from apps.service.settings import ServiceSettings
from hello_memory import Settings
from hello_memory._lazy import require
from hello_memory.client.discovery import locked_home, remove_service_file, write_service_file
from hello_memory.embedders.base import Embedder
from hello_memory.errors import ServiceError, StoreLockedError
from hello_memory.stores.open import resolve_home

logger = logging.getLogger(__name__)


def advertised_url(host: str, port: int) -> str:
    """The URL local clients use for a service bound to ``host:port`` (wildcards → loopback)."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _server_class(uvicorn: Any) -> Any:
    class AdvertisingServer(uvicorn.Server):
        """uvicorn's server, writing ``<home>/SERVICE`` once bound and removing it first at shutdown."""

        def __init__(self, config: Any, *, core: ServiceCore, advertise: Path | None, open_keys: bool) -> None:
            super().__init__(config)
            self.core, self.advertise, self.open_keys, self.url = core, advertise, open_keys, ""

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if not self.started:
                return
            port = self.servers[0].sockets[0].getsockname()[1]
            self.url = advertised_url(self.config.host, port)
            if self.advertise is not None:
                write_service_file(self.advertise, self.url)
            keys = "no API keys: loopback only" if self.open_keys else "API keys required"
            print(f"hello-memory serve: {self.core.describe()} at {self.url} ({keys}; API docs at {self.url}/docs)",
                  file=sys.stderr, flush=True)

        async def shutdown(self, sockets: Any = None) -> None:
            self.core.begin_drain()
            if self.advertise is not None:
                remove_service_file(self.advertise)
            await super().shutdown(sockets=sockets)

    return AdvertisingServer


@contextmanager
def _quiet_stop() -> Iterator[None]:
    """SIGTERM/SIGINT end the service with exit code 0 once uvicorn has shut down gracefully.

    uvicorn handles both signals while it runs, then re-raises the one it caught under the handler
    that was installed before it; a no-op handler there lets ``serve`` return normally instead of
    the process dying by the signal (or a ``KeyboardInterrupt`` traceback) after a clean stop.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve(
    settings: Settings | None = None,
    service: ServiceSettings | None = None,
    *,
    home: str | Path | None = None,
    embedder: Embedder | None = None,
    log_level: str = "warning",
) -> None:
    """Serve one data directory over HTTP until SIGTERM/SIGINT (blocking).

    Raises:
        InvalidInputError: a non-loopback host without API keys, or bad keys.
        PortInUseError: ``service.port`` cannot be bound (checked before anything is opened).
        StoreLockedError: another process (perhaps another service) holds the data directory.
        MissingDependencyError: FastAPI/uvicorn are absent (``pip install 'hello-memory[service]'``).
    """
    settings = settings or Settings()
    if home is not None:
        settings = settings.model_copy(update={"home": resolve_home(home)})
    service = service or ServiceSettings()
    keys = KeyRing.from_settings(service)
    check_bind(service.host, keys)
    require("fastapi", "service")
    require("fastapi_offline", "service", "fastapi-offline")  # the offline /docs
    uvicorn = require("uvicorn", "service")
    from apps.service.app import create_app

    if service.port:  # a busy port fails here, before the stores open and the embedder loads
        check_port(service.host, service.port, holder="another hello-memory serve?", retry="0 (any free one)")

    try:
        core = ServiceCore(settings, service, embedder=embedder)
    except StoreLockedError as e:  # another process (perhaps another service): say which, and what to do
        raise locked_home(settings.home, serving=True) from e
    try:
        if service.warm_up:
            core.warm_up()
        config = uvicorn.Config(
            create_app(core, keys), host=service.host, port=service.port,
            log_level=log_level, access_log=False, server_header=False, lifespan="on", loop="auto", http="auto",
            # the drain ends in the core (requests still waiting get a 503); uvicorn's own wait is a backstop
            timeout_graceful_shutdown=service.drain_timeout + 2, timeout_keep_alive=30,
        )
        advertise = _service_file_home(core, service)
        server = _server_class(uvicorn)(config, core=core, advertise=advertise, open_keys=keys.open)
        try:
            with _quiet_stop():
                server.run()
        except SystemExit:  # uvicorn exits when it cannot bind
            if server.started:
                raise
        if not server.started:
            raise ServiceError(
                f"could not listen on {service.host}:{service.port} (in use, or not an address of this "
                "machine); choose another with --port (0 picks a free one) or --host"
            )
    finally:
        home = _service_file_home(core, service)
        core.close()
        if home is not None:
            remove_service_file(home)
        if core.abandoned:
            _exit_now()


def _exit_now() -> None:
    """Exit although worker threads still run operations (the interpreter would wait for them)."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _service_file_home(core: ServiceCore, service: ServiceSettings) -> Path | None:
    """Where to advertise the service (``SERVICE``): in its data directory, when the stores keep one.

    Stores that keep no data directory (servers) get no file either: clients use the URL.
    """
    return core.data_dir if service.write_service_file else None
