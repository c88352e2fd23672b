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
- never: a request that timed out waiting for its reply (the timeout is the caller's bound; a
  :class:`~hello_memory.errors.ServiceTimeoutError` is raised), any other status, and uploads.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Literal

from pydantic import SecretStr, ValidationError

from hello_memory import __version__
from hello_memory._lazy import require
from hello_memory.errors import InvalidInputError, ServiceError, ServiceTimeoutError
from hello_memory.wire import ErrorBody, decode

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 2
BACKOFF = 0.25  # seconds before the first retry, doubled for each next one (±50 % jitter)
RETRY_STATUSES = frozenset({502, 503, 504})
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

    kind: Literal["ok", "unsent", "lost", "final"]
    content: bytes = b""
    error: Exception | None = None


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

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        files: Any = None,
        data: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        idempotent: bool | None = None,
    ) -> bytes:
        """Send one request, retried as the module docstring says; the response body on success.

        Args:
            idempotent: the request may be repeated after a lost reply or a 502/503/504 without
                changing the outcome; default: only ``GET``.

        Raises:
            HelloMemoryError: the service's error (the same class it raised), or a
                :class:`~hello_memory.errors.ServiceError` when it could not be reached or did not answer.
        """
        if self.closed:
            raise InvalidInputError(f"this client of {self.url} is closed")
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs["content"] = encode_body(body)
            kwargs["headers"] = {"Content-Type": "application/json"}
        if params:
            kwargs["params"] = {k: _param(v) for k, v in params.items() if v is not None}
        if files is not None:
            kwargs["files"], kwargs["data"] = files, data
        repeatable = method == "GET" if idempotent is None else idempotent
        retries = 0 if files is not None else self.retries  # an upload's file is read once
        budget = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        for attempt in range(retries + 1):
            outcome = self._attempt(method, path, kwargs, max(deadline - time.monotonic(), 0.05))
            if outcome.error is None:
                return outcome.content
            delay = BACKOFF * 2**attempt * random.uniform(0.5, 1.5)  # jitter, not secrecy
            retry = outcome.kind == "unsent" or (outcome.kind == "lost" and repeatable)
            if not retry or attempt == retries or time.monotonic() + delay >= deadline:
                raise outcome.error
            logger.info(
                "%s %s: %s; retry %d of %d in %.2f s",
                method,
                path,
                outcome.error,
                attempt + 1,
                retries,
                delay,
            )
            time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover - the last attempt returns or raises

    def _attempt(self, method: str, path: str, kwargs: dict[str, Any], timeout: float) -> _Outcome:
        """One try, and whether another may help (``unsent``: the request never reached the
        service; ``lost``: it may have been carried out, its reply is lost or a gateway error)."""
        httpx = self._httpx
        try:
            response = self._client.request(method, path, timeout=timeout, **kwargs)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as e:
            return _Outcome("unsent", error=self._unreachable(method, path, e))
        except httpx.TimeoutException as e:  # sent, and no reply in time: the caller's bound is spent
            error = ServiceTimeoutError(
                f"the memory service at {self.url} did not answer {method} {path} in time ({e}); "
                "the call may still complete there: check before repeating a write (an add is safe to repeat)",
                url=self.url,
            )
            error.__cause__ = e
            return _Outcome("final", error=error)
        except httpx.HTTPError as e:  # the connection dropped after the request was sent
            return _Outcome("lost", error=self._unreachable(method, path, e))
        if response.status_code >= 400:
            return _Outcome(
                "lost" if response.status_code in RETRY_STATUSES else "final", error=self._error(response)
            )
        return _Outcome("ok", content=response.content)

    def _unreachable(self, method: str, path: str, e: Exception) -> ServiceError:
        error = ServiceError(
            f"cannot reach the memory service at {self.url} ({type(e).__name__}: {e}) for {method} {path}; "
            "is `hello-memory serve` running there?",
            url=self.url,
        )
        error.__cause__ = e
        return error

    def _error(self, response: Any) -> Exception:
        try:
            body = ErrorBody.model_validate_json(response.content)
        except ValidationError:
            text = response.text[:200].strip() or response.reason_phrase
            return ServiceError(
                f"the memory service at {self.url} answered HTTP {response.status_code}: {text}",
                url=self.url,
                status=response.status_code,
            )
        return decode(body, status=response.status_code, url=self.url)

    def close(self) -> None:
        """Close the connection pool; idempotent."""
        self.closed = True
        self._client.close()


def _param(value: Any) -> Any:
    """A query-string value: booleans as ``true``/``false`` (never ``True``), the rest as given."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return jsonable(value)
