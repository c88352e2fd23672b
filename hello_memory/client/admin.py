"""``RemoteMemory``'s whole-store operations (:class:`~hello_memory.api.MemoryAdminAPI`) over HTTP.

Both directions stream, so an export of any size passes through a bounded amount of memory:

- :meth:`RemoteAdmin.export_lines` reads ``POST /v1/export`` line by line as the service sends it;
- :meth:`RemoteAdmin.import_lines` sends the lines as *one streamed body* (chunks of about
  :data:`CHUNK_BYTES`), which the service spools to a temporary file, checking every line's user as
  it arrives, and imports only once the whole file is there. One body rather than bounded batches,
  because the export's guarantees are about the whole file: its header's counts are verified after
  the last line, and a refusal (a line of another user, a malformed line, a body over the service's
  upload limit, a connection lost half-way) must leave nothing stored. Batches would each be stored
  on their own, so any of those would leave a partial import behind, and every batch would need a
  header of its own. The price: the service's upload limit (``HELLO_MEMORY_SERVICE_MAX_UPLOAD_BYTES``)
  bounds one import, and an upload is never retried (its lines are read once); importing again is
  safe, the import being idempotent by id.

:class:`AsyncRemoteAdmin` is the same for :class:`~hello_memory.client.remote_async.AsyncRemoteMemory`:
an export is an async iterator, an import takes an iterable or an async iterable of lines. The
requests are built in :mod:`hello_memory.client.calls` for both.

Example:
    >>> from hello_memory.client.remote import RemoteMemory
    >>> with RemoteMemory("http://127.0.0.1:8765", api_key="k-admin-…") as mm:    # doctest: +SKIP
    ...     with open("backup.jsonl", "w", encoding="utf-8") as out:
    ...         out.writelines(line + "\\n" for line in mm.export_lines())
    ...     with open("backup.jsonl", encoding="utf-8") as lines:
    ...         mm.import_lines(lines).memories
    42
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from hello_memory._aio import in_threads
from hello_memory.client import calls
from hello_memory.client.calls import Call
from hello_memory.client.replies import quote
from hello_memory.client.transport import Transport
from hello_memory.client.transport_async import AsyncTransport
from hello_memory.errors import InvalidInputError, ServiceError
from hello_memory.models import ImportReport, ReindexReport
from hello_memory.validation import check_flag

T = TypeVar("T")
CHUNK_BYTES = 1 << 20
EXPORT_KIND = "hello-memory-export"
"""The ``kind`` of an export's header line (:mod:`hello_memory.core.transfer`, not imported: the client stays light)."""


class RemoteAdmin:
    """Export, import and graph reindex over HTTP; mixed into ``RemoteMemory`` (needs its ``_http`` and ``_run``)."""

    _http: Transport

    def _run(self, call: Call[T]) -> T:
        raise NotImplementedError

    def export_lines(self, *, vectors: bool = True, users: Sequence[str] | None = None) -> Iterator[str]:
        """Every user's memories (or ``users``'), with history and vectors, as JSON Lines, streamed.

        An API key reaches only its own user: ``users=None`` exports that user, naming another is
        ``PermissionDeniedError``; the admin key (or a service without keys) exports everyone.
        The request is sent at the first ``next()``; a stream that breaks off raises ``ServiceError``.
        """
        request = calls.export(vectors=vectors, users=users)
        return _export(self._http.stream(request), self._http.url)

    def import_lines(self, lines: Iterable[str], *, reembed: bool = False) -> ImportReport:
        """Import an export (e.g. an open file), streamed to the service; see the module docstring.

        Raises:
            PermissionDeniedError: a line belongs to a user the API key does not reach (nothing stored).
            InvalidInputError: not an export, or a malformed line (nothing stored); a line this client
                cannot send (a line break inside it, a lone surrogate) likewise.
            EmbedderMismatchError, StoreError: as ``MemoryManager.import_lines``.
        """
        check_flag(reembed, "reembed")
        return self._run(calls.import_lines(chunks(_checked(lines)), reembed=reembed))

    def reindex_graph(self, user_id: str | None = None) -> ReindexReport:
        """Rebuild the knowledge graph from the records: of ``user_id``, else of every user the key reaches."""
        return self._run(calls.reindex_graph(user_id))


class AsyncRemoteAdmin:
    """:class:`RemoteAdmin` for ``AsyncRemoteMemory`` (needs its ``_http`` and ``_run``)."""

    _http: AsyncTransport

    async def _run(self, call: Call[T]) -> T:
        raise NotImplementedError

    def export_lines(self, *, vectors: bool = True, users: Sequence[str] | None = None) -> AsyncIterator[str]:
        """:meth:`RemoteAdmin.export_lines` as an async iterator (``async for line in mm.export_lines()``)."""
        request = calls.export(vectors=vectors, users=users)
        return _export_async(self._http.stream(request), self._http.url)

    async def import_lines(self, lines: Iterable[str] | AsyncIterable[str], *, reembed: bool = False) -> ImportReport:
        """:meth:`RemoteAdmin.import_lines`; ``lines`` may also be an async iterable (an iterable, e.g.
        an open file, is read in worker threads)."""
        check_flag(reembed, "reembed")
        if isinstance(lines, AsyncIterable):
            content: AsyncIterator[bytes] = _async_chunks(lines)
        else:
            content = in_threads(chunks(_checked(lines)))
        return await self._run(calls.import_lines(content, reembed=reembed))

    async def reindex_graph(self, user_id: str | None = None) -> ReindexReport:
        """:meth:`RemoteAdmin.reindex_graph`."""
        return await self._run(calls.reindex_graph(user_id))


def _export(lines: Iterator[str], url: str) -> Iterator[str]:
    yield _header(next(lines, ""), url)
    yield from lines


async def _export_async(lines: AsyncIterator[str], url: str) -> AsyncIterator[str]:
    yield _header(await anext(lines, ""), url)
    async for line in lines:
        yield line


def _header(first: str, url: str) -> str:
    """The first line of an export, checked to be its header (not a proxy's page, not other JSON)."""
    try:
        header = json.loads(first)
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("kind") != EXPORT_KIND:
        raise ServiceError(
            f"the memory service at {url} answered POST /v1/export with HTTP 200 and no export header "
            f"(its first line: {quote(first) or 'none'}); is something else at that URL?",
            url=url,
            status=200,
        )
    return first


def _checked(lines: Any) -> Iterable[str]:
    if isinstance(lines, str | bytes) or not isinstance(lines, Iterable):
        raise InvalidInputError("lines must be an iterable of lines (an open file, a list of str)", field="lines")
    return lines


class _Chunker:
    """Lines in, UTF-8 chunks of about :data:`CHUNK_BYTES` out, one ``\\n`` after each line."""

    def __init__(self) -> None:
        self._batch: list[bytes] = []
        self._size = 0
        self._n = 0

    def add(self, line: object) -> bytes | None:
        """Take the next line; a chunk once there is enough."""
        self._n += 1
        self._batch.append(_encoded(line, self._n))
        self._size += len(self._batch[-1])
        return self.rest() if self._size >= CHUNK_BYTES else None

    def rest(self) -> bytes | None:
        """What is left, as the last chunk."""
        out = b"".join(self._batch) if self._batch else None
        self._batch, self._size = [], 0
        return out


def chunks(lines: Iterable[str]) -> Iterator[bytes]:
    """``lines`` as UTF-8, one ``\\n`` after each, in chunks of about :data:`CHUNK_BYTES`."""
    chunker = _Chunker()
    for line in lines:
        if (chunk := chunker.add(line)) is not None:
            yield chunk
    if (chunk := chunker.rest()) is not None:
        yield chunk


async def _async_chunks(lines: AsyncIterable[str]) -> AsyncIterator[bytes]:
    chunker = _Chunker()
    async for line in lines:
        if (chunk := chunker.add(line)) is not None:
            yield chunk
    if (chunk := chunker.rest()) is not None:
        yield chunk


def _encoded(line: object, n: int) -> bytes:
    if not isinstance(line, str):
        raise InvalidInputError(f"line {n} of the export must be a str, got {type(line).__name__}", field="lines")
    text = line.rstrip("\r\n")
    if "\n" in text or "\r" in text:
        raise InvalidInputError(f"line {n} of the export holds a line break: one JSON document per line", field="lines")
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError as e:
        raise InvalidInputError(f"line {n} of the export is not valid Unicode text ({e.reason})", field="lines") from e
