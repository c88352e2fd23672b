"""What the clients send and how they read a stream: JSON bodies, query values, lines of bytes.

Pure functions, no I/O: :class:`~hello_memory.client.transport.Transport` and
:class:`~hello_memory.client.transport_async.AsyncTransport` both use them, so a request is encoded
and a streamed reply is split the same way whichever client sends it.

Example:
    >>> from datetime import datetime, timezone
    >>> jsonable((datetime(2024, 1, 2, tzinfo=timezone.utc), "x"))
    ['2024-01-02T00:00:00+00:00', 'x']
    >>> lines = TextLines("http://m", 200)
    >>> lines.feed(b'{"a": 1}\\n\\n{"b"'), lines.feed(b": 2}"), lines.end()
    (['{"a": 1}'], [], ['{"b": 2}'])
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from hello_memory.errors import InvalidInputError, ServiceError


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


def query_param(value: Any) -> Any:
    """A query-string value: booleans as ``true``/``false`` (never ``True``), the rest as given."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return jsonable(value)


class LineSplitter:
    """Bytes in, complete lines out: split on ``\\n`` only, a trailing ``\\r`` dropped.

    Example:
        >>> split = LineSplitter()
        >>> split.feed(b'{"a": 1}\\n{"b"'), split.feed(b': 2}\\n'), split.end()
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


class TextLines:
    """The non-empty lines of a streamed reply as text (split as :class:`LineSplitter` does).

    Args:
        url: the service's URL, for the error of a line that is not UTF-8.
        status: the reply's HTTP status, for the same error.
    """

    def __init__(self, url: str, status: int) -> None:
        self._split = LineSplitter()
        self._url = url
        self._status = status

    def feed(self, chunk: bytes) -> list[str]:
        """The lines ``chunk`` completes."""
        return [self._text(line) for line in self._split.feed(chunk) if line]

    def end(self) -> list[str]:
        """The last line, when the reply did not end with a line break."""
        return [self._text(line) for line in self._split.end() if line]

    def _text(self, line: bytes) -> str:
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ServiceError(
                f"the memory service at {self._url} sent (HTTP {self._status}) a line that is not UTF-8 ({e})",
                url=self._url, status=self._status,
            ) from e
