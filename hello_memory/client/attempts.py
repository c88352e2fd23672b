"""A request before it is sent, and what one attempt of it came to: the sans-I/O half of the transports.

:class:`Request` says what to send (encoded by :meth:`Request.arguments`); :class:`Outcome` says what
an attempt gave and :func:`failure` what an httpx error means for retrying it. Neither sends
anything: :class:`~hello_memory.client.transport.Transport` (``httpx.Client``) and
:class:`~hello_memory.client.transport_async.AsyncTransport` (``httpx.AsyncClient``) do, with the
same :class:`~hello_memory.client.transport.Schedule` of retries.

Example:
    >>> request = Request("POST", "/v1/memories/search", body={"query": "tea"}, idempotent=True)
    >>> request.call, request.arguments()["content"], request.read_once
    ('POST /v1/memories/search', b'{"query": "tea"}', False)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal, TypeVar

from hello_memory.client import replies
from hello_memory.client.encoding import encode_body, query_param
from hello_memory.errors import ServiceError, ServiceTimeoutError

E = TypeVar("E", bound=Exception)
RETRY_STATUSES = frozenset({502, 503, 504})
BUSY_STATUS = 429


@dataclass(frozen=True, slots=True)
class Request:
    """One request to the memory service.

    Attributes:
        method / path: e.g. ``"GET"``, ``"/v1/memories"`` (relative to the service's URL).
        body: the JSON arguments.
        params: query-string arguments (``None`` values are left out).
        files / data: a multipart upload; read once, so never retried.
        content: a body streamed as it is produced (chunked): an iterable of bytes, or an async
            iterable for the async transport; read once, so never retried.
        content_type: the media type of ``content``.
        timeout: seconds for this request instead of the transport's.
        idempotent: the request may be repeated after a lost reply or a 502/503/504 without
            changing the outcome; default: only ``GET``.
    """

    method: str
    path: str
    body: Mapping[str, Any] | None = None
    params: Mapping[str, Any] | None = None
    files: Any = None
    data: Mapping[str, Any] | None = None
    content: Any = None
    content_type: str = "application/octet-stream"
    timeout: float | None = None
    idempotent: bool | None = None

    @property
    def call(self) -> str:
        """``METHOD path``, as messages name the request."""
        return f"{self.method} {self.path}"

    @property
    def read_once(self) -> bool:
        """The body is an upload or a stream: it cannot be sent a second time."""
        return self.files is not None or self.content is not None

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``httpx``'s ``build_request``.

        Raises:
            InvalidInputError: an argument of ``body`` is not representable in JSON.
        """
        kwargs: dict[str, Any] = {}
        if self.body is not None:
            kwargs["content"] = encode_body(self.body)
            kwargs["headers"] = {"Content-Type": "application/json"}
        if self.params:
            kwargs["params"] = {k: query_param(v) for k, v in self.params.items() if v is not None}
        if self.files is not None:
            kwargs["files"], kwargs["data"] = self.files, self.data
        if self.content is not None:
            kwargs["content"], kwargs["headers"] = self.content, {"Content-Type": self.content_type}
        return kwargs


@dataclass(frozen=True, slots=True)
class Outcome:
    """One attempt of a request: its response body, or its error and what kind of failure it was.

    ``unsent``: the request never reached the service; ``lost``: it may have been carried out, its
    reply is lost or a gateway error; ``busy``: a 429, nothing started; ``final``: never retried.
    """

    kind: Literal["ok", "unsent", "lost", "busy", "final"]
    reply: replies.Reply = replies.NO_REPLY
    error: Exception | None = None
    response: Any = None  # a streamed response, still open
    wait: float = 0.0  # seconds the service asked to wait before another try (Retry-After of a 429)


def failure(httpx: ModuleType, error: Exception, *, url: str, call: str, status: int | None = None) -> Outcome:
    """What an httpx error means: raised while sending (``status`` None) or reading a reply of ``status``."""
    if status is None and isinstance(error, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        return Outcome("unsent", error=unreachable(error, url=url, call=call))
    if isinstance(error, httpx.TimeoutException):  # sent, and no reply in time: the caller's bound is spent
        return Outcome("final", error=timed_out(error, url=url, call=call))
    if status is None:  # the connection dropped after the request was sent
        return Outcome("lost", error=unreachable(error, url=url, call=call))
    return Outcome("lost", error=replies.broke_off(error, url=url, call=call, status=status))


def timed_out(error: Exception, *, url: str, call: str) -> ServiceTimeoutError:
    """The error of a request sent and not answered within its timeout."""
    return _caused(ServiceTimeoutError(
        f"the memory service at {url} did not answer {call} in time ({error}); "
        "the call may still complete there: check before repeating a write (an add is safe to repeat)",
        url=url,
    ), error)


def unreachable(error: Exception, *, url: str, call: str) -> ServiceError:
    """The error of a request that did not reach the service, or whose connection dropped."""
    return _caused(ServiceError(
        f"cannot reach the memory service at {url} ({type(error).__name__}: {error}) for {call}; "
        "is `hello-memory serve` running there?",
        url=url,
    ), error)


def _caused(error: E, cause: Exception) -> E:
    """``error``, raised later, with ``cause`` as its ``__cause__`` (as ``raise error from cause`` sets it)."""
    error.__cause__ = cause
    return error
