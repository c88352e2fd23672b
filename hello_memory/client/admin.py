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
from collections.abc import Iterable, Iterator, Sequence

from pydantic import TypeAdapter

from hello_memory.client.replies import quote
from hello_memory.client.transport import Transport
from hello_memory.errors import InvalidInputError, ServiceError
from hello_memory.models import ImportReport, ReindexReport
from hello_memory.validation import check_flag, check_id

JSON_LINES = "application/x-ndjson"
TRANSFER_TIMEOUT = 900.0
"""Seconds an export may wait for its next lines, and an import or a reindex for its reply."""
CHUNK_BYTES = 1 << 20
EXPORT_KIND = "hello-memory-export"
"""The ``kind`` of an export's header line (:mod:`hello_memory.core.transfer`, not imported: the client stays light)."""
_IMPORT = TypeAdapter(ImportReport)
_REINDEX = TypeAdapter(ReindexReport)


class RemoteAdmin:
    """Export, import and graph reindex over HTTP; mixed into ``RemoteMemory`` (needs its ``_http``)."""

    _http: Transport

    def export_lines(self, *, vectors: bool = True, users: Sequence[str] | None = None) -> Iterator[str]:
        """Every user's memories (or ``users``'), with history and vectors, as JSON Lines, streamed.

        An API key reaches only its own user: ``users=None`` exports that user, naming another is
        ``PermissionDeniedError``; the admin key (or a service without keys) exports everyone.
        The request is sent at the first ``next()``; a stream that breaks off raises ``ServiceError``.
        """
        body = {
            "vectors": check_flag(vectors, "vectors"),
            "users": None if users is None else [check_id(u, "users") for u in users],
        }
        lines = self._http.stream_lines("POST", "/v1/export", body=body, timeout=TRANSFER_TIMEOUT, idempotent=True)
        return _export(lines, self._http.url)

    def import_lines(self, lines: Iterable[str], *, reembed: bool = False) -> ImportReport:
        """Import an export (e.g. an open file), streamed to the service; see the module docstring.

        Raises:
            PermissionDeniedError: a line belongs to a user the API key does not reach (nothing stored).
            InvalidInputError: not an export, or a malformed line (nothing stored); a line this client
                cannot send (a line break inside it, a lone surrogate) likewise.
            EmbedderMismatchError, StoreError: as ``MemoryManager.import_lines``.
        """
        flag = check_flag(reembed, "reembed")
        if isinstance(lines, str | bytes) or not isinstance(lines, Iterable):
            raise InvalidInputError("lines must be an iterable of lines (an open file, a list of str)", field="lines")
        return self._http.call(
            "POST",
            "/v1/import",
            _IMPORT,
            params={"reembed": flag},
            content=_chunks(lines),
            content_type=JSON_LINES,
            timeout=TRANSFER_TIMEOUT,
        )

    def reindex_graph(self, user_id: str | None = None) -> ReindexReport:
        """Rebuild the knowledge graph from the records: of ``user_id``, else of every user the key reaches."""
        body = {"user_id": None if user_id is None else check_id(user_id, "user_id")}
        return self._http.call(
            "POST", "/v1/graph/reindex", _REINDEX, body=body, timeout=TRANSFER_TIMEOUT, idempotent=True
        )


def _export(lines: Iterator[str], url: str) -> Iterator[str]:
    """The lines of an export, the first checked to be its header (not a proxy's page, not other JSON)."""
    first = next(lines, "")
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
    yield first
    yield from lines


def _chunks(lines: Iterable[str]) -> Iterator[bytes]:
    """``lines`` as UTF-8, one ``\\n`` after each, in chunks of about :data:`CHUNK_BYTES`."""
    batch: list[bytes] = []
    size = 0
    for n, line in enumerate(lines, start=1):
        batch.append(_encoded(line, n))
        size += len(batch[-1])
        if size >= CHUNK_BYTES:
            yield b"".join(batch)
            batch, size = [], 0
    if batch:
        yield b"".join(batch)


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
