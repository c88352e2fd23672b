"""What the clients make of a reply: the value it holds, or a typed error — never an untyped one.

Every reply of the memory service that a client reads passes here (:class:`~hello_memory.client.transport.Transport`):

- a success body is validated as the type the call returns (the library's pydantic models); a body
  that is not one — HTML from a proxy, truncated or invalid JSON, JSON nested past the parser's
  limit, the wrong type — is a :class:`~hello_memory.errors.ServiceError` with the HTTP status and a
  short reason, never pydantic's ``ValidationError``;
- an error body (4xx/5xx) becomes the library's own error class (:func:`hello_memory.wire.decode`),
  with every attribute its class sets (``None`` where the body left one out); a body that is not
  the service's error format is a ``ServiceError`` quoting a few words of it (tags stripped);
- any other status (a redirect, ``1xx``) is a ``ServiceError``: no answer of the service has one;
- a reply cut off before its end is a ``ServiceError`` naming the status it had.

Example:
    >>> from pydantic import TypeAdapter
    >>> try:
    ...     value(TypeAdapter(int), Reply(200, b"<html>", "text/html"), url="http://m", call="GET /x")
    ... except ServiceError as e:
    ...     print(e.status, str(e)[:71])
    200 the memory service at http://m answered GET /x with HTTP 200 and a body
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from hello_memory.errors import HelloMemoryError, ServiceError
from hello_memory.wire import ErrorBody, decode

T = TypeVar("T")
MAX_QUOTE = 160
_TAGS = re.compile(r"(?:<[^>]*>|\s)+")
_MODULES = re.compile(r"\b(?:\w+\.)+(\w+)")


@dataclass(frozen=True, slots=True)
class Reply:
    """A reply read whole: its status, body and media type."""

    status: int
    content: bytes
    content_type: str = ""


NO_REPLY = Reply(0, b"")


def value(adapter: TypeAdapter[T], reply: Reply, *, url: str, call: str) -> T:
    """The reply's body as ``adapter``'s type, else a :class:`ServiceError` saying why it is not one."""
    try:
        return adapter.validate_json(reply.content)
    except (ValidationError, ValueError, RecursionError) as e:
        raise ServiceError(
            f"the memory service at {url} answered {call} with HTTP {reply.status} and a body this client "
            f"cannot read as {_name(adapter)} ({_reason(e, reply.content_type)})",
            url=url,
            status=reply.status,
        ) from None


def error_of(status: int, content: bytes, text: str, *, url: str) -> HelloMemoryError:
    """The error an error reply (4xx/5xx) stands for: the service's own, else a ``ServiceError``."""
    try:
        error = decode(ErrorBody.model_validate_json(content), status=status, url=url)
    except (ValidationError, ValueError, TypeError, RecursionError):
        return ServiceError(f"the memory service at {url} answered HTTP {status}: {quote(text)}",
                            url=url, status=status)
    return _complete(error)


def unexpected(status: int, location: str | None, *, url: str, call: str) -> ServiceError:
    """A status no answer of the service has (a redirect, ``1xx``)."""
    where = f" to {quote(location)}" if location else ""
    return ServiceError(
        f"the memory service at {url} answered {call} with HTTP {status}{where}, which it never sends: "
        "is something else (a proxy, a login page) at that URL? Point the client at the service itself",
        url=url,
        status=status,
    )


def broke_off(error: Exception, *, url: str, call: str, status: int | None) -> ServiceError:
    """A reply that ended before its end (the connection closed, a chunk went missing)."""
    got = f" (HTTP {status})" if status is not None else ""
    failure = ServiceError(
        f"the reply of the memory service at {url} to {call}{got} broke off "
        f"({type(error).__name__}: {quote(str(error))}); what arrived is incomplete",
        url=url,
        status=status,
    )
    failure.__cause__ = error
    return failure


def quote(text: str) -> str:
    """A few words of ``text`` for a message: tags and runs of white space dropped, shortened."""
    words = _TAGS.sub(" ", text[: MAX_QUOTE * 8]).strip()
    return words if len(words) <= MAX_QUOTE else words[: MAX_QUOTE - 1] + "…"


def _name(adapter: TypeAdapter[Any]) -> str:
    """``list[MemoryItem]``, ``MemoryItem``: the type a call returns, without module paths."""
    kind = adapter._type
    return kind.__name__ if isinstance(kind, type) else _MODULES.sub(r"\1", str(kind))


def _reason(error: Exception, content_type: str) -> str:
    if isinstance(error, ValidationError) and error.errors():
        first = error.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        reason = f"{where}: {first['msg']}" if where else first["msg"]
        more = error.error_count() - 1
        reason += f" (and {more} more)" if more else ""
    else:
        reason = f"{type(error).__name__}: {error}"
    media = content_type.split(";", 1)[0].strip().lower()
    if media and media != "application/json" and not media.endswith("+json"):
        reason = f"a {media} body, not JSON: {reason}"
    return quote(reason)


def _complete(error: HelloMemoryError) -> HelloMemoryError:
    """Give ``error`` every attribute its class's ``__init__`` sets, so reading one never fails."""
    try:
        params = inspect.signature(type(error).__init__).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - every class of hello_memory.errors has one
        return error
    for p in params:
        if p.name in ("self", "message") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name not in vars(error):
            setattr(error, p.name, None if p.default is p.empty else p.default)
    return error
