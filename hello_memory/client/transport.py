"""HTTP transport of the memory-service clients (:mod:`hello_memory.client.remote`, :mod:`rag.remote`).

One keep-alive ``httpx.Client`` per client object (thread-safe), imported lazily: without httpx the
error names the extra (``pip install 'hello-memory[client]'``). Error responses become the same
:class:`~hello_memory.errors.HelloMemoryError` subclasses the library raises (:mod:`hello_memory.wire`);
a service that cannot be reached or times out is a :class:`~hello_memory.errors.ServiceError`.

Retries (bounded: ``retries`` more attempts, 0.25 s then 0.5 s apart with jitter, never beyond the
call's ``timeout`` in total):

- a connection that could not be made (refused, connect timeout, no free connection in the pool):
  the request never reached the service, so every request is retried;
- a reply lost after the request was sent (the connection dropped) and HTTP 502/503/504: only
  requests that are safe to repeat (``idempotent``: reads, searches, and adds, which always carry
  their ``memory_id``);
- HTTP 429 (the service started nothing: the user has as many writes running as it allows): every
  request, after the ``Retry-After`` the service asked for (at least the backoff) if that still
  fits in the call's timeout;
- never: a request that timed out waiting for its reply (the timeout is the caller's bound; a
  :class:`~hello_memory.errors.ServiceTimeoutError` is raised), any other status, and uploads.

Streams: :meth:`Transport.stream_lines` yields a response's lines as they arrive (retried as above
until the response starts, never after); a body sent as ``content`` (an iterator of bytes) goes out
chunked, read once, never retried. Lines are split on ``\n`` only (:class:`LineSplitter`), never on
the other characters ``str.splitlines`` treats as line ends (U+2028 in a memory's text is data).
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Literal, TypeVar

from pydantic import SecretStr, TypeAdapter

from hello_memory import __version__
from hello_memory._lazy import require
from hello_memory.client import replies
from hello_memory.errors import InvalidInputError, ServiceError, ServiceTimeoutError

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 2
BACKOFF = 0.25  # seconds before the first retry, doubled for each next one (±50 % jitter)
RETRY_STATUSES = frozenset({502, 503, 504})
BUSY_STATUS = 429
API_KEY_HEADER = "Authorization"


def jsonable(value: Any) -> Any:
    """An argument as JSON: datetimes as ISO 8601, enums as their value, tuples as lists."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [jsonable(v) for v in value]
    return value


def encode_body(body: Mapping[str, Any]) -> bytes:
    """``body`` as JSON bytes (non-ASCII escaped, so lone surrogates reach the service's validation).

    Raises:
        InvalidInputError: an argument is not representable in JSON (bytes, a set, an object...).
    """
    try:
        return json.dumps(body, ensure_ascii=True).encode("ascii")
    except (TypeError, ValueError, RecursionError):
        pass
    for key, value in body.items():  # name the argument that cannot be sent
        try:
            json.dumps(value)
        except (TypeError, ValueError, RecursionError) as e:
            raise InvalidInputError(
                f"{key} cannot be sent to the memory service as JSON: {e}", field=key
            ) from e
    raise InvalidInputError("the request cannot be encoded as JSON")  # pragma: no cover - unreachable


@dataclass(frozen=True, slots=True)
class _Outcome:
    """One attempt of a request: its response body, or its error and what kind of failure it was."""

    kind: Literal["ok", "unsent", "lost", "busy", "final"]
    reply: replies.Reply = replies.NO_REPLY
    error: Exception | None = None
    response: Any = None  # a streamed response, still open
    wait: float = 0.0  # seconds the service asked to wait before another try (Retry-After of a 429)


class Transport:
    """Requests to one memory service.

    Args:
        url: the service's base URL, e.g. ``http://127.0.0.1:8765``.
        api_key: sent as ``Authorization: Bearer <key>``; none for a loopback service without keys.
        timeout: seconds per call, retries included (document uploads may take longer: pass
            ``timeout`` per call).
        client: a pre-built ``httpx.Client`` (its base URL and headers are used as they are).
        retries: how many more attempts a failed request may get (see the module docstring).
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | SecretStr | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        client: Any = None,
        retries: int = DEFAULT_RETRIES,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InvalidInputError(
                f"server URL must start with http:// or https://, got {url!r}", field="url"
            )
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise InvalidInputError(
                f"retries must be an integer in [0, 10], got {retries!r}", field="retries"
            )
        self.url = url.rstrip("/")
        self._httpx = require("httpx", "client")
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        headers = {"User-Agent": f"hello-memory/{__version__}"}
        if key:
            headers[API_KEY_HEADER] = f"Bearer {key}"
        self._client = client or self._httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
        self.timeout = timeout
        self.retries = retries
        self.closed = False

    def reply(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        files: Any = None,
        data: Mapping[str, Any] | None = None,
        content: Iterable[bytes] | None = None,
        content_type: str = "application/octet-stream",
        timeout: float | None = None,
        idempotent: bool | None = None,
    ) -> replies.Reply:
        """Send one request, retried as the module docstring says; the successful (2xx) reply.

        Args:
            content: a body streamed as it is produced (chunked); read once, so never retried.
            content_type: the media type of ``content``.
            idempotent: the request may be repeated after a lost reply or a 502/503/504 without
                changing the outcome; default: only ``GET``.

        Raises:
            HelloMemoryError: the service's error (the same class it raised), or a
                :class:`~hello_memory.errors.ServiceError` when it could not be reached, did not
                answer, or answered what the service never does (see :mod:`hello_memory.client.replies`).
        """
        kwargs = self._arguments(body, params)
        if files is not None:
            kwargs["files"], kwargs["data"] = files, data
        if content is not None:
            kwargs["content"], kwargs["headers"] = content, {"Content-Type": content_type}
        once = files is not None or content is not None  # an upload's body is read once
        return self._send(method, path, kwargs, timeout=timeout, idempotent=idempotent, once=once).reply

    def request(self, method: str, path: str, **kwargs: Any) -> bytes:
        """The body of :meth:`reply` (same arguments)."""
        return self.reply(method, path, **kwargs).content

    def call(self, method: str, path: str, adapter: TypeAdapter[T], **kwargs: Any) -> T:
        """:meth:`reply` read as ``adapter``'s type (same arguments); a body that is not one — HTML,
        truncated, nested too deep, the wrong type — is a :class:`~hello_memory.errors.ServiceError`."""
        return replies.value(adapter, self.reply(method, path, **kwargs), url=self.url, call=f"{method} {path}")

    def stream_lines(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        idempotent: bool | None = None,
    ) -> Iterator[str]:
        """Send one request and yield the lines of its response as they arrive (empty lines skipped).

        Nothing is sent before the first ``next()``. ``timeout`` bounds each wait for more of the
        response, not the whole stream, so a long export only needs the service to keep sending.

        Raises:
            HelloMemoryError: as :meth:`request`; a response that breaks off is a
                :class:`~hello_memory.errors.ServiceError` (a :class:`~hello_memory.errors.ServiceTimeoutError`
                when the service stopped sending for ``timeout`` seconds): the lines so far are incomplete.
        """
        outcome = self._send(
            method, path, self._arguments(body, params), timeout=timeout, idempotent=idempotent, stream=True
        )
        response = outcome.response
        try:
            splitter = LineSplitter()
            for chunk in self._chunks(response, method, path):
                yield from (_text(line, self.url, response.status_code) for line in splitter.feed(chunk) if line)
            yield from (_text(line, self.url, response.status_code) for line in splitter.end() if line)
        finally:
            response.close()

    def _arguments(self, body: Mapping[str, Any] | None, params: Mapping[str, Any] | None) -> dict[str, Any]:
        if self.closed:
            raise InvalidInputError(f"this client of {self.url} is closed")
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs["content"] = encode_body(body)
            kwargs["headers"] = {"Content-Type": "application/json"}
        if params:
            kwargs["params"] = {k: _param(v) for k, v in params.items() if v is not None}
        return kwargs

    def _send(
        self,
        method: str,
        path: str,
        kwargs: dict[str, Any],
        *,
        timeout: float | None,
        idempotent: bool | None,
        once: bool = False,
        stream: bool = False,
    ) -> _Outcome:
        """The first successful attempt's outcome; retries as the module docstring says, else raises."""
        repeatable = method == "GET" if idempotent is None else idempotent
        retries = 0 if once else self.retries
        budget = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        for attempt in range(retries + 1):
            left = max(deadline - time.monotonic(), 0.05)
            outcome = self._attempt(method, path, kwargs, budget if stream else left, stream=stream)
            if outcome.error is None:
                return outcome
            delay = max(BACKOFF * 2**attempt * random.uniform(0.5, 1.5), outcome.wait)  # jitter, not secrecy
            retry = outcome.kind in ("unsent", "busy") or (outcome.kind == "lost" and repeatable)
            if not retry or attempt == retries or time.monotonic() + delay >= deadline:
                raise outcome.error
            logger.info("%s %s: %s; retry %d of %d in %.2f s", method, path, outcome.error, attempt + 1, retries,
                        delay)
            time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover - the last attempt returns or raises

    def _attempt(
        self, method: str, path: str, kwargs: dict[str, Any], timeout: float, *, stream: bool = False
    ) -> _Outcome:
        """One try, and whether another may help (``unsent``: the request never reached the
        service; ``lost``: it may have been carried out, its reply is lost or a gateway error)."""
        httpx = self._httpx
        call = f"{method} {path}"
        try:
            response = self._client.send(self._client.build_request(method, path, timeout=timeout, **kwargs),
                                         stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as e:
            return _Outcome("unsent", error=self._unreachable(method, path, e))
        except httpx.TimeoutException as e:  # sent, and no reply in time: the caller's bound is spent
            return _Outcome("final", error=self._timed_out(method, path, e))
        except httpx.HTTPError as e:  # the connection dropped after the request was sent
            return _Outcome("lost", error=self._unreachable(method, path, e))
        status = response.status_code
        if not stream or not 200 <= status < 300:
            try:
                response.read()
            except httpx.TimeoutException as e:
                return _Outcome("final", error=self._timed_out(method, path, e))
            except httpx.HTTPError as e:  # the reply began and broke off: lost, like one never received
                return _Outcome("lost", error=replies.broke_off(e, url=self.url, call=call, status=status))
            finally:
                response.close()
        if status >= 400:
            error = replies.error_of(status, response.content, response.text, url=self.url)
            if status == BUSY_STATUS:
                return _Outcome("busy", error=error, wait=retry_after(response.headers))
            return _Outcome("lost" if status in RETRY_STATUSES else "final", error=error)
        if not 200 <= status < 300:
            location = response.headers.get("location")
            return _Outcome("final", error=replies.unexpected(status, location, url=self.url, call=call))
        if stream:
            return _Outcome("ok", response=response)
        reply = replies.Reply(status, response.content, response.headers.get("content-type", ""))
        return _Outcome("ok", reply=reply)

    def _chunks(self, response: Any, method: str, path: str) -> Iterator[bytes]:
        """The bytes of a streamed response; a reply that breaks off is a typed error."""
        httpx = self._httpx
        try:
            yield from response.iter_bytes()
        except httpx.TimeoutException as e:
            raise self._timed_out(method, path, e) from e
        except httpx.HTTPError as e:
            raise replies.broke_off(e, url=self.url, call=f"{method} {path}", status=response.status_code) from e

    def _timed_out(self, method: str, path: str, e: Exception) -> ServiceTimeoutError:
        error = ServiceTimeoutError(
            f"the memory service at {self.url} did not answer {method} {path} in time ({e}); "
            "the call may still complete there: check before repeating a write (an add is safe to repeat)",
            url=self.url,
        )
        error.__cause__ = e
        return error

    def _unreachable(self, method: str, path: str, e: Exception) -> ServiceError:
        error = ServiceError(
            f"cannot reach the memory service at {self.url} ({type(e).__name__}: {e}) for {method} {path}; "
            "is `hello-memory serve` running there?",
            url=self.url,
        )
        error.__cause__ = e
        return error

    def close(self) -> None:
        """Close the connection pool; idempotent."""
        self.closed = True
        self._client.close()


def retry_after(headers: Mapping[str, str]) -> float:
    """Seconds a ``Retry-After`` header asks to wait (delay-seconds or an HTTP date); 0 without one.

    Example:
        >>> retry_after({"Retry-After": "2"}), retry_after({})
        (2.0, 0.0)
    """
    value = headers.get("Retry-After") or headers.get("retry-after")
    if not value:
        return 0.0
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 0.0
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _param(value: Any) -> Any:
    """A query-string value: booleans as ``true``/``false`` (never ``True``), the rest as given."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return jsonable(value)


class LineSplitter:
    """Bytes in, complete lines out: split on ``\n`` only, a trailing ``\r`` dropped.

    Example:
        >>> split = LineSplitter()
        >>> split.feed(b'{"a": 1}\n{"b"'), split.feed(b': 2}\n'), split.end()
        ([b'{"a": 1}'], [b'{"b": 2}'], [])
    """

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completes (the rest waits for the next chunk)."""
        *done, tail = chunk.split(b"\n")
        if done:
            done[0] = bytes(self._pending) + done[0]
            self._pending.clear()
        self._pending += tail
        return [line.removesuffix(b"\r") for line in done]

    def end(self) -> list[bytes]:
        """The last line, when the input did not end with a line break."""
        rest, self._pending = bytes(self._pending), bytearray()
        return [rest.removesuffix(b"\r")] if rest else []


def _text(line: bytes, url: str, status: int) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ServiceError(
            f"the memory service at {url} sent (HTTP {status}) a line that is not UTF-8 ({e})", url=url, status=status
        ) from e
