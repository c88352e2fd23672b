"""The FastAPI application of the memory service: auth, limits, structured errors, health, routes.

Every error is JSON (:mod:`hello_memory.wire`): a ``HelloMemoryError`` keeps its class, message
and fields; request validation errors, unknown query parameters and form fields, and JSON nested
too deep to parse are ``invalid_input`` (422) naming the field (:mod:`apps.service.routing`); unknown
routes, bad methods and oversized bodies get their 4xx; anything unexpected is a 500 with a
request id, the traceback only in the service's log.

Example:
    >>> from apps.service import ServiceCore, ServiceSettings, create_app
    >>> core = ServiceCore(Settings(home="/tmp/hm"), ServiceSettings())   # doctest: +SKIP
    >>> app = create_app(core)                                             # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from apps.service import routes_documents, routes_memory, routes_transfer
from apps.service.auth import KeyRing
from apps.service.core import ServiceCore
from apps.service.deps import ServiceState
from apps.service.limits import BodyLimit, ServerTiming
from apps.service.routing import ServiceRoute
from hello_memory import __version__
from hello_memory._lazy import require
from hello_memory.errors import HelloMemoryError, InvalidInputError, NotFoundError
from hello_memory.wire import ErrorBody, ErrorDetail, encode

logger = logging.getLogger(__name__)

_HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large",
               415: "unsupported_media_type", 429: "busy", 503: "unavailable"}


def _error_response(status: int, detail: ErrorDetail) -> JSONResponse:
    return JSONResponse(ErrorBody(error=detail).model_dump(mode="json"), status_code=status)


async def _library_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HelloMemoryError)
    status, body = encode(exc)
    if status >= 500:
        logger.warning("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
    return _error_response(status, body.error)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = []
    field = None
    for err in exc.errors()[:5]:
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path")]
        field = field or next((p for p in reversed(loc) if not p.isdigit()), None)
        if not loc and err.get("type") == "model_attributes_type":
            problems.append("the body must be a JSON object of the call's arguments")
            continue
        problems.append(f"{'.'.join(loc) or 'body'}: {err.get('msg', 'invalid')}")
    error = InvalidInputError("invalid request: " + "; ".join(problems), field=field)
    status, body = encode(error)
    return _error_response(status, body.error)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if isinstance(exc.__cause__, HelloMemoryError):  # raised while FastAPI read the body (routing.loads)
        return await _library_error(request, exc.__cause__)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    message = str(exc.detail)
    if exc.status_code == 404 and message == "Not Found":
        message = f"no endpoint {request.method} {request.url.path}; the API is described at /docs"
    elif exc.status_code == 400 and message == "There was an error parsing the body":
        message = ("the request body could not be parsed: send UTF-8 JSON (Content-Type: application/json) "
                   "or, for uploads, multipart form data")
    error_type = {404: NotFoundError.__name__, 413: InvalidInputError.__name__, 429: "ServiceError"}.get(
        exc.status_code)
    if error_type is None:
        error_type = InvalidInputError.__name__ if exc.status_code < 500 else "ServiceError"
    detail = ErrorDetail(code=code, type=error_type, message=message)
    response = _error_response(exc.status_code, detail)
    for key, value in (exc.headers or {}).items():
        response.headers[key] = value
    return response


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    ref = uuid.uuid4().hex[:12]
    logger.error("request %s: %s %s failed", ref, request.method, request.url.path, exc_info=exc)
    detail = ErrorDetail(code="internal_error", type="ServiceError",
                         message=f"internal error in the memory service (request {ref}; see the service log)")
    return _error_response(500, detail)


def create_app(core: ServiceCore, keys: KeyRing | None = None, *, close_on_shutdown: bool = True) -> FastAPI:
    """The ASGI app serving ``core``.

    Args:
        core: the open stores (see :class:`~apps.service.core.ServiceCore`).
        keys: the API keys; from the core's service settings when omitted.
        close_on_shutdown: close ``core`` when the app shuts down (after running writes finished).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        if close_on_shutdown:  # waits for running operations, then closes the stores: not on the event loop
            await anyio.to_thread.run_sync(core.close)

    # /docs and /redoc from files shipped in fastapi-offline, not FastAPI's CDN (blank offline), and no
    # online validator badge: the pages name no other host.
    offline = require("fastapi_offline", "service", "fastapi-offline")
    app: FastAPI = offline.FastAPIOffline(
        title="hello-memory",
        version=__version__,
        description="Multi-tier memory and RAG for LLM agents: the MemoryManager and RAGPipeline API over HTTP.",
        lifespan=lifespan,
        swagger_ui_parameters={"validatorUrl": None},
    )
    app.router.route_class = ServiceRoute  # the health routes too: every route checks what it is sent
    app.state.service = ServiceState(core=core, keys=keys or KeyRing.from_settings(core.service))
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[JSONResponse]]] = {
        HelloMemoryError: _library_error,
        RequestValidationError: _validation_error,
        HTTPException: _http_error,
        Exception: _unexpected,
    }
    for exc_class, handler in handlers.items():
        app.add_exception_handler(exc_class, handler)
    app.add_middleware(BodyLimit, max_bytes=core.service.max_body_bytes,
                       max_upload_bytes=core.service.max_upload_bytes)
    app.add_middleware(ServerTiming)  # outermost: times the limits, auth and errors too
    _health_routes(app, core)
    app.include_router(routes_memory.router)
    app.include_router(routes_documents.router)
    app.include_router(routes_transfer.router)
    return app


def _health_routes(app: FastAPI, core: ServiceCore) -> None:
    @app.get("/health", tags=["health"], summary="Liveness: the process answers")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "service": "hello-memory", "version": __version__, "home": core.home_id,
                "pid": os.getpid(), "running": core.running}

    @app.get("/ready", tags=["health"], summary="Readiness: stores open and accepting operations")
    async def ready() -> JSONResponse:
        if core.draining:
            return JSONResponse({"status": "draining"}, status_code=503)
        return JSONResponse({"status": "ready", "embedder": core.embedder.name})
