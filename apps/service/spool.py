"""An uploaded export, held in a temporary file until it has arrived whole, every line's user checked.

``POST /v1/import`` feeds the request body to :class:`ImportSpool` chunk by chunk; the import itself
starts only after the last chunk, so a refusal stores nothing: a line of a user the API key does not
reach (403), a line that is not JSON (422), a body over the upload limit (413), a client gone half-way.

Each line is written back as the JSON it was parsed into (ASCII, one line): what the library
imports is exactly what was checked here, whatever its own parser would make of duplicate keys or
odd whitespace. Blank lines are kept, so the library's line numbers in its errors stay the file's.

Example:
    >>> spool = ImportSpool(lambda uid: uid if uid == "alice" else None)
    >>> spool.feed(b'{"kind": "hello-memory-export", "users": {"alice": {}}}\\n')
    >>> [line[:30] for line in spool.finish()]
    ['{"kind": "hello-memory-export"']
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from hello_memory.client.encoding import LineSplitter
from hello_memory.errors import HelloMemoryError, InvalidInputError, PermissionDeniedError

NOTHING = "nothing was imported"
IN_MEMORY_BYTES = 8 * 1024 * 1024
"""Up to this size an upload stays in memory; beyond, it goes to a temporary file."""


class ImportSpool:
    """Collects an upload line by line.

    Args:
        user: the principal's check of a user id (``Principal.user``): returns it, or raises
            ``PermissionDeniedError`` for a user the API key does not reach.
    """

    def __init__(self, user: Callable[[str], object]) -> None:
        self._user = user
        # Closed by finish() / close(), or once the lines to import were read: it outlives this call.
        self._file = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY_BYTES, mode="w+b")  # noqa: SIM115
        self._split = LineSplitter()
        self._n = 0
        self.error: HelloMemoryError | None = None

    def feed(self, chunk: bytes) -> None:
        """Take the next part of the body; after a refusal the rest is read and dropped."""
        for line in self._split.feed(chunk):
            self._take(line)

    def finish(self) -> Iterator[str]:
        """The lines to import (the spool is closed once they are read); the first refusal, raised."""
        for line in self._split.end():
            self._take(line)
        if self.error is not None:
            self.close()
            raise self.error
        self._file.seek(0)
        return self._lines()

    def close(self) -> None:
        """Drop the spooled upload."""
        self._file.close()

    def _lines(self) -> Iterator[str]:
        try:
            for raw in self._file:
                yield raw.decode("ascii").rstrip("\n")
        finally:
            self.close()

    def _take(self, raw: bytes) -> None:
        self._n += 1
        if self.error is not None:
            return
        try:
            self._file.write(self._checked(raw, self._n))
        except HelloMemoryError as e:
            self.error = e

    def _checked(self, raw: bytes, n: int) -> bytes:
        """The line as canonical JSON, once every user it names is one the key reaches."""
        if not raw.strip():
            return b"\n"
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise InvalidInputError(f"line {n} of the export is not UTF-8 text ({e.reason}); {NOTHING}") from e
        except (ValueError, RecursionError) as e:
            raise InvalidInputError(f"line {n} of the export is not JSON: {e}; {NOTHING}") from e
        for uid in _users(data, header=n == 1):
            try:
                self._user(uid)
            except PermissionDeniedError as e:
                raise PermissionDeniedError(f"line {n} of the export: {e}; {NOTHING}", status=e.status) from e
        return json.dumps(data, ensure_ascii=True).encode("ascii") + b"\n"


def _users(data: Any, *, header: bool) -> list[Any]:
    """The user ids a line names: the header's ``users``, a memory line's ``item.user_id``."""
    if not isinstance(data, dict):
        return []
    if header:
        users = data.get("users")
        return list(users) if isinstance(users, dict) else []
    item = data.get("item")
    if isinstance(item, dict) and "user_id" in item:
        return [item["user_id"]]
    return []
