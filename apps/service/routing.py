"""How every route of the service reads a request, beyond what FastAPI checks itself.

Every router of the service (and the app's own health routes) builds its routes as
:class:`ServiceRoute`, so these hold for every endpoint at once rather than route by route:

- **Unknown names are refused.** The request models forbid unknown JSON fields (422); a query
  parameter or a form field the endpoint does not take is refused the same way, naming it,
  instead of being ignored (a misspelt ``?limt=5`` or ``purge=true`` would otherwise look accepted).
- **JSON nested past the parser.** Python's JSON parser recurses; a body nested deeper than it can
  go (about 1,000 levels) raised ``RecursionError``, which FastAPI answered with a bare 400. It is an
  :class:`~hello_memory.errors.InvalidInputError` naming the field that holds the deep value (422,
  like the write gate's answer for metadata deeper than ``MAX_METADATA_DEPTH``), found by an
  iterative scan of the text that cannot itself run out of stack.

Example:
    >>> error = too_deep('{"content": "x", "metadata": ' + '{"a": ' * 3000 + '1' + '}' * 3000 + '}')
    >>> str(error), error.field
    ('metadata is nested deeper than 32 levels', 'metadata')
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from fastapi import params
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from hello_memory.errors import InvalidInputError
from hello_memory.validation import MAX_METADATA_DEPTH

# A JSON string (escapes included) or one of the structural characters: all the scan needs to see.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]')
_PREFIX_FRAMES = 8


def loads(data: str | bytes, field: str | None = None) -> Any:
    """``json.loads``, except that JSON nested too deep for it is an ``InvalidInputError`` naming the field.

    Args:
        field: the name of the value (a form field); default: found in the body (:func:`too_deep`).
    """
    try:
        return json.loads(data)
    except RecursionError:
        raise too_deep(data, field) from None


def too_deep(data: str | bytes, field: str | None = None) -> InvalidInputError:
    """The error for JSON too deep to parse, naming the field whose value is deepest.

    The field is the innermost key of the request's own structure on the path to the deepest
    value: ``metadata`` for ``{"metadata": {...}}``, ``items.1.metadata`` for a batch, ``query`` for
    a list of lists. Its last name is the error's ``field``, as for any invalid field.
    """
    where = field
    if field is None:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        path = _deepest(text)
        field = next((p for p in reversed(path) if isinstance(p, str)), None)
        where = ".".join(map(str, path)) if field is not None else None
    return InvalidInputError(f"{where or 'the request body'} is nested deeper than {MAX_METADATA_DEPTH} levels",
                             field=field)


def _deepest(text: str) -> list[str | int]:
    """The request-level path (see :func:`too_deep`) to the deepest value of ``text``, iteratively."""
    kinds: list[str] = []  # "{" or "[" per open container
    labels: list[str | int] = []  # its current key, or index
    last_string = ""
    best, path = 0, []
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in ("{", "["):
            kinds.append(token)
            labels.append("" if token == "{" else 0)
            if len(kinds) > best:
                best, path = len(kinds), _request_path(kinds[:_PREFIX_FRAMES], labels[:_PREFIX_FRAMES])
        elif token in ("}", "]"):
            if kinds:
                kinds.pop()
                labels.pop()
        elif token == ":" and kinds and kinds[-1] == "{":
            labels[-1] = last_string
        elif token == "," and kinds and kinds[-1] == "[":
            labels[-1] = int(labels[-1]) + 1
        elif token.startswith('"'):
            last_string = token[1:-1]
    return path


def _request_path(kinds: list[str], labels: list[str | int]) -> list[str | int]:
    """Keys and indexes from the root while they still look like the request's own structure: a
    key whose value is an object (free JSON, like metadata) or an index holding a list ends it."""
    out: list[str | int] = []
    for n, label in enumerate(labels[:-1]):
        out.append(label)
        child = kinds[n + 1]
        if (kinds[n] == "{" and child == "{") or (kinds[n] == "[" and child == "["):
            break
    return out


class ServiceRequest(Request):
    """A request whose JSON body is parsed by :func:`loads`."""

    async def json(self) -> Any:
        """The body as JSON; too deep is an ``InvalidInputError`` (FastAPI chains it: see ``app.py``)."""
        if not hasattr(self, "_json"):
            self._json = loads(await self.body())
        return self._json


class ServiceRoute(APIRoute):
    """A route that refuses unknown query parameters and form fields and parses JSON with :func:`loads`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """FastAPI's handler, behind the checks of the module docstring."""
        handler = super().get_route_handler()
        query = frozenset(_names(self.dependant, "query_params"))
        form = frozenset(_names(self.dependant, "body_params")) if _takes_form(self) else None
        endpoint = f"{'|'.join(sorted(self.methods or ()))} {self.path}"

        async def checked(request: Request) -> Response:
            request = ServiceRequest(request.scope, request.receive)
            refuse_unknown(request.query_params.keys(), query, "query parameter", endpoint)
            if form is not None:
                received = await request.form()  # kept on the request: FastAPI reads this one
                try:
                    refuse_unknown(received.keys(), form, "form field", endpoint)
                except InvalidInputError:
                    await received.close()
                    raise
            return await handler(request)

        return checked


def refuse_unknown(names: Iterable[str], known: frozenset[str], what: str, endpoint: str) -> None:
    """``InvalidInputError`` naming the first of ``names`` that is not ``known``."""
    for name in names:
        if name not in known:
            takes = ", ".join(sorted(known)) or "none"
            raise InvalidInputError(f"unknown {what} {name!r} for {endpoint} (it takes: {takes})", field=name)


def _names(dependant: Dependant, kind: str) -> Iterable[str]:
    """The names (aliases) of ``kind`` parameters of a dependant and its dependencies."""
    for field in getattr(dependant, kind):
        yield field.alias
    for sub in dependant.dependencies:
        yield from _names(sub, kind)


def _takes_form(route: APIRoute) -> bool:
    return route.body_field is not None and isinstance(route.body_field.field_info, params.Form)

