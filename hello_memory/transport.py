"""HTTP transport of the memory-service clients (:mod:`hello_memory.remote`, :mod:`rag.remote`).

One keep-alive ``httpx.Client`` per client object (thread-safe), imported lazily: without httpx the
error names the extra (``pip install 'hello-memory[client]'``). Error responses become the same
:class:`~hello_memory.errors.HelloMemoryError` subclasses the library raises (:mod:`hello_memory.wire`);
a service that cannot be reached or times out is a :class:`~hello_memory.errors.ServiceError`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import SecretStr, ValidationError

from hello_memory import __version__
from hello_memory._lazy import require
from hello_memory.errors import InvalidInputError, ServiceError, ServiceTimeoutError
from hello_memory.wire import ErrorBody, decode

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
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


class Transport:
    """Requests to one memory service.

    Args:
        url: the service's base URL, e.g. ``http://127.0.0.1:8765``.
        api_key: sent as ``Authorization: Bearer <key>``; none for a loopback service without keys.
        timeout: seconds per request (document uploads may take longer: pass ``timeout`` per call).
        client: a pre-built ``httpx.Client`` (its base URL and headers are used as they are).
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | SecretStr | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        client: Any = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InvalidInputError(
                f"server URL must start with http:// or https://, got {url!r}", field="url"
            )
        self.url = url.rstrip("/")
        self._httpx = require("httpx", "client")
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        headers = {"User-Agent": f"hello-memory/{__version__}"}
        if key:
            headers[API_KEY_HEADER] = f"Bearer {key}"
        self._client = client or self._httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
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
    ) -> bytes:
        """Send one request; the response body on success, the service's error raised otherwise."""
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
        if timeout is not None:
            kwargs["timeout"] = timeout
        httpx = self._httpx
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.TimeoutException as e:
            raise ServiceTimeoutError(
                f"the memory service at {self.url} did not answer {method} {path} in time ({e}); "
                "a write may still complete there: check before retrying",
                url=self.url,
            ) from e
        except httpx.HTTPError as e:
            raise ServiceError(
                f"cannot reach the memory service at {self.url} ({type(e).__name__}: {e}); "
                "is `hello-memory serve` running there?",
                url=self.url,
            ) from e
        if response.status_code >= 400:
            raise self._error(response)
        content: bytes = response.content
        return content

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
