"""Pure ASGI middlewares: request body limits and a ``Server-Timing`` header.

Body limits (JSON bodies, and uploads: documents and imports): a declared ``Content-Length`` over the
limit is refused before anything is read; a body without one (chunked) is counted as it streams
and refused when it passes the limit. Either way the client gets a JSON 413 and nothing is stored.

``Server-Timing: app;dur=<ms>, op;dur=<ms>`` says how long the service spent on a response and,
of that, in the library call itself (``op``, absent when there was none), so a client can tell the
HTTP path's share of a call's latency (client − ``op``) from the memory's own work.
"""

from __future__ import annotations

import json
import time
from contextvars import ContextVar
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

OPERATION_MS: ContextVar[float | None] = ContextVar("operation_ms", default=None)
"""Milliseconds the library call of the current request took (set by ``ServiceCore.run``)."""
UPLOAD_SUFFIXES = ("/documents", "/v1/import")
DRAIN_BYTES = 64 * 1024 * 1024
"""Bytes of a refused body still read (and dropped), so that the client sees the 413, not a reset."""


class BodyLimit:
    """Refuse bodies over ``max_bytes`` (``max_upload_bytes`` for ``POST …/documents`` and ``/v1/import``)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, max_upload_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_upload_bytes = max_upload_bytes

    def _limit(self, scope: Scope) -> int:
        upload = scope.get("method") == "POST" and str(scope.get("path", "")).endswith(UPLOAD_SUFFIXES)
        return self.max_upload_bytes if upload else self.max_bytes

    def _too_large(self, size: int, limit: int) -> str:
        setting = "MAX_UPLOAD_BYTES" if limit == self.max_upload_bytes else "MAX_BODY_BYTES"
        return (f"request body of {size} bytes or more is over this service's limit of {limit} bytes; "
                f"send less at once (split add_many batches) or raise the limit (HELLO_MEMORY_SERVICE_{setting})")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await _refuse(send, 400, "bad_request", "the Content-Length header is not a number")
                return
            if size > limit:
                if size <= limit + DRAIN_BYTES:
                    await _drain(receive)
                await _refuse(send, 413, "too_large", self._too_large(size, limit))
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:  # raised inside the route's body parsing: FastAPI re-raises HTTPException
                    if message.get("more_body", False):
                        await _drain(receive)
                    raise HTTPException(413, self._too_large(seen, limit))
            return message

        await self.app(scope, limited, send)


async def _drain(receive: Receive) -> None:
    """Read and drop the rest of a request body, at most ``DRAIN_BYTES``."""
    dropped = 0
    while dropped <= DRAIN_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            return
        dropped += len(message.get("body", b""))
        if not message.get("more_body", False):
            return




async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    error_type = "InvalidInputError"
    body: dict[str, Any] = {"error": {"code": code, "type": error_type, "message": message, "fields": {}}}
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": payload})


class ServerTiming:
    """Add ``Server-Timing: app;dur=<milliseconds>`` to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        OPERATION_MS.set(None)

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                value = f"app;dur={(time.perf_counter() - started) * 1000:.3f}"
                if (op := OPERATION_MS.get()) is not None:
                    value += f", op;dur={op:.3f}"
                message["headers"] = [*message.get("headers", []), (b"server-timing", value.encode())]
            await send(message)

        await self.app(scope, receive, timed)
