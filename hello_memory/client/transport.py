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

Streams: :meth:`Transport.stream` yields a response's lines as they arrive (retried as above
until the response starts, never after); a body sent as ``content`` (an iterator of bytes) goes out
chunked, read once, never retried. Lines are split on ``\\n`` only
(:class:`~hello_memory.client.encoding.LineSplitter`), never on the other characters
``str.splitlines`` treats as line ends (U+2028 in a memory's text is data).

Everything but the sending itself lives in :class:`BaseTransport` (what a request carries, the
retry :class:`Schedule`, what a reply or a failure means), shared with the ``httpx.AsyncClient``
transport of the async clients (:mod:`hello_memory.client.transport_async`).
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from typing import Any, TypeVar

from pydantic import SecretStr, TypeAdapter

from hello_memory import __version__
from hello_memory._lazy import require
from hello_memory.client import replies
from hello_memory.client.attempts import BUSY_STATUS, RETRY_STATUSES, Outcome, Request, failure
from hello_memory.client.encoding import TextLines
from hello_memory.errors import InvalidInputError

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 2
BACKOFF = 0.25  # seconds before the first retry, doubled for each next one (±50 % jitter)
API_KEY_HEADER = "Authorization"


class Schedule:
    """The retries of one request: how long each attempt may take, and whether and when to try again.

    Args:
        request: what is sent (its method, path, ``timeout`` and ``idempotent``).
        retries: further attempts allowed; none for a body read once (an upload).
        timeout: the caller's bound for all attempts, in seconds.

    Example:
        >>> read = Schedule(Request("GET", "/v1/memories"), retries=2, timeout=30)
        >>> upload = Schedule(Request("POST", "/v1/import", content=iter([b"{}"])), retries=2, timeout=30)
        >>> (read.repeatable, read.retries), (upload.repeatable, upload.retries)
        ((True, 2), (False, 0))
    """

    def __init__(self, request: Request, *, retries: int, timeout: float) -> None:
        self.request = request
        self.repeatable = request.method == "GET" if request.idempotent is None else request.idempotent
        self.retries = 0 if request.read_once else retries
        self.budget = timeout if request.timeout is None else request.timeout
        self.deadline = time.monotonic() + self.budget
        self.attempt = 0

    def timeout(self, stream: bool) -> float:
        """Seconds the next attempt may take (a stream: each wait for more of it)."""
        return self.budget if stream else max(self.deadline - time.monotonic(), 0.05)

    def delay(self, outcome: Outcome) -> float:
        """Seconds to wait before trying ``outcome``'s request again; raises its error when it is not retried."""
        assert outcome.error is not None
        delay = max(BACKOFF * 2**self.attempt * random.uniform(0.5, 1.5), outcome.wait)  # jitter, not secrecy
        retry = outcome.kind in ("unsent", "busy") or (outcome.kind == "lost" and self.repeatable)
        if not retry or self.attempt == self.retries or time.monotonic() + delay >= self.deadline:
            raise outcome.error
        self.attempt += 1
        logger.info("%s %s: %s; retry %d of %d in %.2f s", self.request.method, self.request.path, outcome.error,
                    self.attempt, self.retries, delay)
        return delay


class BaseTransport:
    """What the sync and async transports share: the URL, headers, limits, and reading replies.

    Args:
        url: the service's base URL, e.g. ``http://127.0.0.1:8765``.
        api_key: sent as ``Authorization: Bearer <key>``; none for a loopback service without keys.
        timeout: seconds per call, retries included (document uploads may take longer: pass
            ``timeout`` per call).
        client: a pre-built httpx client of the transport's kind (its base URL and headers are used
            as they are); default a new one (nothing connects before the first request).
        retries: how many more attempts a failed request may get (see the module docstring).
    """

    def __init__(
        self, url: str, *, api_key: str | SecretStr | None = None, timeout: float = DEFAULT_TIMEOUT,
        client: Any = None, retries: int = DEFAULT_RETRIES,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InvalidInputError(f"server URL must start with http:// or https://, got {url!r}", field="url")
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise InvalidInputError(f"retries must be an integer in [0, 10], got {retries!r}", field="retries")
        self.url = url.rstrip("/")
        self._httpx = require("httpx", "client")
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        self.headers = {"User-Agent": f"hello-memory/{__version__}"}
        if key:
            self.headers[API_KEY_HEADER] = f"Bearer {key}"
        self.timeout = timeout
        self.retries = retries
        self.closed = False
        self._client = client or self._new_client()

    def _new_client(self) -> Any:
        """An httpx client of the transport's kind, on :attr:`url` with :attr:`headers`."""
        raise NotImplementedError

    def _schedule(self, request: Request) -> Schedule:
        if self.closed:
            raise InvalidInputError(f"this client of {self.url} is closed")
        return Schedule(request, retries=self.retries, timeout=self.timeout)

    def _failed(self, request: Request, error: Exception, status: int | None = None) -> Outcome:
        """What an httpx error means: sending failed (no ``status``) or reading the reply did."""
        return failure(self._httpx, error, url=self.url, call=request.call, status=status)

    def _answered(self, request: Request, response: Any, stream: bool) -> Outcome:
        """A reply read whole (or a 2xx stream, still open): its body, or the error it stands for."""
        status = response.status_code
        if status >= 400:
            error = replies.error_of(status, response.content, response.text, url=self.url)
            if status == BUSY_STATUS:
                return Outcome("busy", error=error, wait=retry_after(response.headers))
            return Outcome("lost" if status in RETRY_STATUSES else "final", error=error)
        if not 200 <= status < 300:
            location = response.headers.get("location")
            return Outcome("final", error=replies.unexpected(status, location, url=self.url, call=request.call))
        if stream:
            return Outcome("ok", response=response)
        return Outcome("ok", reply=replies.Reply(status, response.content, response.headers.get("content-type", "")))

    def _broke_off(self, request: Request, error: Exception, status: int) -> Exception:
        """The error of a streamed reply that stopped before its end."""
        outcome = self._failed(request, error, status)
        assert outcome.error is not None
        return outcome.error


class Transport(BaseTransport):
    """Requests to one memory service, over a keep-alive ``httpx.Client`` (arguments: :class:`BaseTransport`).

    Example:
        >>> http = Transport("http://127.0.0.1:8765")                      # doctest: +SKIP
        >>> http.call("GET", "/v1/me", TypeAdapter(dict)).get("user_id")  # doctest: +SKIP
        'default_user'
    """

    def _new_client(self) -> Any:
        return self._httpx.Client(base_url=self.url, headers=self.headers, timeout=self.timeout)

    def send(self, request: Request) -> replies.Reply:
        """Send ``request``, retried as the module docstring says; the successful (2xx) reply.

        Raises:
            HelloMemoryError: the service's error (the same class it raised), or a
                :class:`~hello_memory.errors.ServiceError` when it could not be reached, did not
                answer, or answered what the service never does (see :mod:`hello_memory.client.replies`).
        """
        return self._outcome(request, stream=False).reply

    def reply(self, method: str, path: str, **options: Any) -> replies.Reply:
        """:meth:`send` of ``Request(method, path, **options)`` (see :class:`~hello_memory.client.attempts.Request`)."""
        return self.send(Request(method, path, **options))

    def request(self, method: str, path: str, **options: Any) -> bytes:
        """The body of :meth:`reply` (same arguments)."""
        return self.reply(method, path, **options).content

    def call(self, method: str, path: str, adapter: TypeAdapter[T], **options: Any) -> T:
        """:meth:`reply` read as ``adapter``'s type (same arguments); a body that is not one — HTML,
        truncated, nested too deep, the wrong type — is a :class:`~hello_memory.errors.ServiceError`."""
        return replies.value(adapter, self.reply(method, path, **options), url=self.url, call=f"{method} {path}")

    def stream(self, request: Request) -> Iterator[str]:
        """Send ``request`` and yield the lines of its response as they arrive (empty lines skipped).

        Nothing is sent before the first ``next()``. The request's ``timeout`` bounds each wait for
        more of the response, not the whole stream, so a long export only needs the service to keep sending.

        Raises:
            HelloMemoryError: as :meth:`send`; a response that breaks off is a
                :class:`~hello_memory.errors.ServiceError` (a :class:`~hello_memory.errors.ServiceTimeoutError`
                when the service stopped sending for ``timeout`` seconds): the lines so far are incomplete.
        """
        response = self._outcome(request, stream=True).response
        try:
            lines = TextLines(self.url, response.status_code)
            for chunk in self._chunks(request, response):
                yield from lines.feed(chunk)
            yield from lines.end()
        finally:
            response.close()

    def stream_lines(self, method: str, path: str, **options: Any) -> Iterator[str]:
        """:meth:`stream` of ``Request(method, path, **options)``."""
        return self.stream(Request(method, path, **options))

    def _outcome(self, request: Request, *, stream: bool) -> Outcome:
        """The first successful attempt's outcome; retries as the module docstring says, else raises."""
        schedule = self._schedule(request)
        while True:
            outcome = self._attempt(request, schedule.timeout(stream), stream)
            if outcome.error is None:
                return outcome
            time.sleep(schedule.delay(outcome))

    def _attempt(self, request: Request, timeout: float, stream: bool) -> Outcome:
        """One try, and whether another may help (``unsent``: the request never reached the
        service; ``lost``: it may have been carried out, its reply is lost or a gateway error)."""
        built = self._client.build_request(request.method, request.path, timeout=timeout, **request.arguments())
        try:
            response = self._client.send(built, stream=True)
        except self._httpx.HTTPError as e:
            return self._failed(request, e)
        if not (stream and response.is_success):
            try:
                response.read()
            except self._httpx.HTTPError as e:  # the reply began and broke off: lost, like one never received
                return self._failed(request, e, response.status_code)
            finally:
                response.close()
        return self._answered(request, response, stream)

    def _chunks(self, request: Request, response: Any) -> Iterator[bytes]:
        """The bytes of a streamed response; a reply that breaks off is a typed error."""
        try:
            yield from response.iter_bytes()
        except self._httpx.HTTPError as e:
            raise self._broke_off(request, e, response.status_code) from e

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
