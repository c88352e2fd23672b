"""FastAPI dependencies of the routes: the service state, the core and the request's principal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from apps.service.auth import KeyRing, Principal, is_loopback
from apps.service.core import ServiceCore
from hello_memory.errors import PermissionDeniedError


@dataclass
class ServiceState:
    """What the routes reach through ``request.app.state.service``."""

    core: ServiceCore
    keys: KeyRing


def state_of(request: Request) -> ServiceState:
    """The service state of a request's app."""
    state: ServiceState = request.app.state.service
    return state


async def principal(request: Request) -> Principal:
    """FastAPI dependency: who the request acts as (``PermissionDeniedError`` 401/403 otherwise)."""
    state = state_of(request)
    if state.keys.open:
        _check_local(request)
    return state.keys.authenticate(request.headers.get("authorization"))


def _check_local(request: Request) -> None:
    """Without keys only local programs may call: no remote peer, no browser page of another origin.

    A web page can make a browser send simple POSTs (a form upload) to a loopback port, and DNS
    rebinding can aim a foreign name at it; the peer address alone does not stop either, so the
    ``Host`` must be a loopback name and an ``Origin`` (browsers send it) must be the service's own.
    """
    peer = request.client.host if request.client else ""
    host = request.headers.get("host") or "localhost"
    origin = request.headers.get("origin")
    if not is_loopback(peer) or not is_loopback(_host_name(host)):
        raise PermissionDeniedError("this service has no API keys and serves local programs only", status=403)
    if origin is not None and origin != f"http://{host}":
        raise PermissionDeniedError(f"cross-origin request from {origin!r} refused", status=403)


def _host_name(host: str) -> str:
    """The name of a ``Host`` header without its port (``[::1]:8765`` → ``::1``)."""
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


async def core_of(request: Request) -> ServiceCore:
    """FastAPI dependency: the open stores."""
    return state_of(request).core


Who = Annotated[Principal, Depends(principal)]
