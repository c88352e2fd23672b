"""One exception tree for hello-memory, rooted in :class:`HelloMemoryError`.

Each error also inherits the matching built-in (``ValueError``, ``KeyError``, ...) so that
callers who catch built-ins keep working, and carries the fields a caller needs to react.
"""

from __future__ import annotations

import os


class HelloMemoryError(Exception):
    """Root of every error raised by hello-memory."""


class InvalidInputError(HelloMemoryError, ValueError):
    """An argument was rejected before anything was stored.

    Attributes:
        field: the name of the offending argument, when there is one.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFoundError(HelloMemoryError, KeyError):
    """The requested object does not exist for this user (or at all)."""

    def __init__(self, message: str, *, object_id: str | None = None) -> None:
        super().__init__(message)
        self.object_id = object_id

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else ""


class IdConflictError(InvalidInputError):
    """A client-supplied ``memory_id`` is already taken by a different memory; nothing was stored.

    Retrying an ``add`` with the same id and the same content is not a conflict: it returns the
    stored memory. The message never shows the other memory's content or owner.
    """

    def __init__(self, message: str, *, memory_id: str) -> None:
        super().__init__(message, field="memory_id")
        self.memory_id = memory_id


class StoreError(HelloMemoryError, RuntimeError):
    """A storage backend failed; the original exception is chained as ``__cause__``."""


class IndexPendingError(StoreError):
    """Committed, index pending: a deletion took effect, but the vector index or graph still lags.

    Raised by forget, remove, clear_all and forget_user when the rows were deleted (or marked
    forgotten) and committed, so no read returns the memories any more, but removing their vectors
    or graph links failed. The work is journalled and completed when the data directory is next
    opened, or by :meth:`MemoryManager.recover`. Callers that only need the deletion to be visible
    may treat it as success.

    Attributes:
        memory_ids: the memories whose index clean-up is pending.
        result: what the call would have returned (e.g. the ``ForgetReport``), when there is one.
    """

    def __init__(self, message: str, *, memory_ids: list[str], result: object = None) -> None:
        super().__init__(message)
        self.memory_ids = memory_ids
        self.result = result


class DimensionMismatchError(StoreError, ValueError):
    """A vector's dimension does not match its collection's dimension."""

    def __init__(self, collection: str, expected: int, got: int, *, embedder: str | None = None) -> None:
        who = f" (embedder {embedder})" if embedder else ""
        super().__init__(
            f"collection {collection!r} holds {expected}-dimensional vectors but got {got}-dimensional "
            f"vectors{who}; use the embedder that filled it or a new data directory / collection"
        )
        self.collection = collection
        self.expected = expected
        self.got = got


class EmbedderMismatchError(StoreError, ValueError):
    """A collection was filled by another embedder; vectors of two embedders never mix."""

    def __init__(self, collection: str, stored: str, requested: str) -> None:
        super().__init__(
            f"collection {collection!r} was filled by embedder {stored!r}, not {requested!r}; "
            "re-index into a new data directory or configure the original embedder"
        )
        self.collection = collection
        self.stored = stored
        self.requested = requested


class StoreLockedError(StoreError):
    """The data directory is in use by another process.

    Attributes:
        path: the data directory.
        holder: who holds it (``"pid 1234"``, with its command line when known), if known.
    """

    def __init__(self, path: str, holder: str | None = None, *, hint: str | None = None) -> None:
        who = f" (held by {holder})" if holder else ""
        what_to_do = f"; {hint}" if hint else ""
        super().__init__(f"data directory {path!r} is in use by another process{who}{what_to_do}")
        self.path = path
        self.holder = holder


class ForkedProcessError(StoreError):
    """The stores were opened by another process: this one is a fork of it.

    A forked child inherits the parent's open stores without their threads, file locks and
    connections' state, so it may neither use nor close them. Open the memory in the child instead
    (a data directory belongs to one process at a time: use the memory service, ``hello-memory
    serve`` with ``RemoteMemory``, to share one), or start children with multiprocessing's
    ``"spawn"`` method.

    Attributes:
        opened_by: the process id that opened the stores.
    """

    def __init__(self, opened_by: int) -> None:
        super().__init__(
            f"these stores were opened by process {opened_by}, and this process ({os.getpid()}) is a fork of "
            "it: open the memory in this process instead (a data directory belongs to one process at a time; "
            "to share one, run `hello-memory serve` and use RemoteMemory), or start child processes with "
            "multiprocessing's 'spawn' method"
        )
        self.opened_by = opened_by


class DiskFullError(StoreError):
    """The filesystem holding a store has no room left for a write; nothing of the write was kept.

    Reads keep working. Free space in ``path`` (or move the data directory) and retry.

    Attributes:
        path: the directory or file that could not grow.
        free_bytes: free bytes on its filesystem when the write was refused, if known.
        needed_bytes: the free space writes ask for, when the refusal came from that check.
    """

    def __init__(self, path: str, *, free_bytes: int | None = None, needed_bytes: int | None = None) -> None:
        detail = ""
        if free_bytes is not None:
            detail = f" ({free_bytes / 2**20:.1f} MiB free"
            detail += f", writes need {needed_bytes / 2**20:.0f} MiB)" if needed_bytes is not None else ")"
        super().__init__(f"disk full: free space in {path!r}{detail}; nothing was written, reads still work")
        self.path = path
        self.free_bytes = free_bytes
        self.needed_bytes = needed_bytes

    def __reduce__(self) -> tuple[object, ...]:
        return (_disk_full, (self.path, self.free_bytes, self.needed_bytes))


def _disk_full(path: str, free_bytes: int | None, needed_bytes: int | None) -> DiskFullError:
    return DiskFullError(path, free_bytes=free_bytes, needed_bytes=needed_bytes)


class CorruptStoreError(StoreError):
    """A store file exists but cannot be read (for example a damaged SQLite file)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"store file {path!r} is unreadable: {reason}")
        self.path = path


class EmbeddingError(HelloMemoryError, RuntimeError):
    """An embedder failed; no vector (zero or otherwise) was produced for the batch."""


class LLMError(HelloMemoryError, RuntimeError):
    """An LLM call failed."""


class LLMUnavailableError(LLMError):
    """A feature needs an LLM and none is configured."""


class MissingDependencyError(HelloMemoryError, ImportError):
    """An optional dependency is not installed; the message names the pip command."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(f"{package} is not installed; install it with: pip install 'hello-memory[{extra}]'")
        self.package = package
        self.extra = extra


class ConversionError(HelloMemoryError, ValueError):
    """A document could not be converted to text; nothing was indexed."""

    def __init__(self, path: str, reason: str, *, extra: str | None = None) -> None:
        hint = f"; install: pip install 'hello-memory[{extra}]'" if extra else ""
        super().__init__(f"cannot convert {path!r}: {reason}{hint}")
        self.path = path
        self.reason = reason
        self.extra = extra


class WriteConflictError(HelloMemoryError, RuntimeError):
    """An update lost to a concurrent change of the same memory; nothing of it was applied.

    The update named the version it read (``expected_version``) and another writer (a thread, a
    process, another worker on the same servers) changed the memory since: the first writer wins.
    Re-read the memory and apply the change again, or give up. (An insert of an id that holds a
    different memory is an :class:`IdConflictError`, not this.)

    Attributes:
        memory_id: the id written.
        expected_version: the version the write expected.
        stored_version: the version found (``None`` when unknown).
    """

    def __init__(
        self,
        message: str,
        *,
        memory_id: str,
        expected_version: int | None = None,
        stored_version: int | None = None,
    ) -> None:
        super().__init__(message)
        self.memory_id = memory_id
        self.expected_version = expected_version
        self.stored_version = stored_version


# -- the memory service (``hello-memory serve``) and its clients ---------------------------------
class PermissionDeniedError(HelloMemoryError, PermissionError):
    """The API key is missing or invalid, or does not grant what the request asks for.

    Attributes:
        status: the HTTP status the service answered (401 no or unknown key, 403 not allowed).
    """

    def __init__(self, message: str, *, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


class ServiceError(HelloMemoryError, RuntimeError):
    """The memory service could not be reached, timed out or answered something unexpected.

    Attributes:
        url: the service's base URL.
        status: the HTTP status, when there was a response.
        memory_ids: for a failed ``RemoteMemory.add``/``add_many``, the ids it sent: the call may
            have stored them, and calling it again with the same arguments reuses them (a no-op
            if they were stored).
    """

    memory_ids: list[str] | None = None

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class ServiceTimeoutError(ServiceError):
    """A request took longer than its timeout; a write may still complete on the service.

    Calling a ``RemoteMemory.add``/``add_many`` again with the same arguments is safe (it reuses
    the ids of the timed-out call); other writes should be checked before they are repeated.
    """
