"""Client-side ids of remote adds, so that retrying an add can never store it twice.

:class:`~hello_memory.client.remote.RemoteMemory` sends every memory with a ``memory_id`` (the caller's,
or a fresh ``uuid4``); the service stores an id once and answers a repeat with the stored memory.
That makes the transport's own retries safe. For the caller's retry — the same ``add`` called
again after it raised, e.g. a :class:`~hello_memory.errors.ServiceTimeoutError` — :class:`PendingIds`
remembers the ids generated for a failed call, keyed by the call's arguments, and hands them to the
next identical call, so it names the same memories.

Example:
    >>> pending = PendingIds()
    >>> key = fingerprint("add", {"content": "tea at noon"})
    >>> first = pending.take(key, 1)          # nothing failed yet: fresh ids
    >>> pending.keep(key, first)              # the call failed, outcome unknown
    >>> pending.take(key, 1) == first         # the retry reuses them
    True
    >>> pending.take(key, 1) == first         # once: a later identical call is a new memory
    False
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from hello_memory.client.calls import Call
from hello_memory.client.encoding import encode_body
from hello_memory.errors import ServiceError

MAX_PENDING = 1024
PENDING_TTL = 600.0  # seconds an identical call is taken for a retry of the failed one


def fingerprint(operation: str, arguments: Mapping[str, Any]) -> str:
    """A digest of one call's arguments, encoded as they are sent (before the ids are added).

    Raises:
        InvalidInputError: an argument cannot be sent as JSON (the error the request would raise).
    """
    return hashlib.sha256(operation.encode() + b"\0" + encode_body(arguments)).hexdigest()


class PendingIds:
    """Generated ids of failed calls, by :func:`fingerprint`; bounded in size and age, thread-safe."""

    def __init__(self, *, size: int = MAX_PENDING, ttl: float = PENDING_TTL) -> None:
        self._size = size
        self._ttl = ttl
        self._ids: OrderedDict[str, tuple[float, list[str]]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: str, count: int) -> list[str]:
        """The ids a failed identical call used (forgotten now), else ``count`` fresh ones."""
        with self._lock:
            found = self._ids.pop(key, None)
        if found is not None and time.monotonic() - found[0] < self._ttl and len(found[1]) == count:
            return found[1]
        return [str(uuid.uuid4()) for _ in range(count)]

    @contextmanager
    def naming(self, call: Call[Any]) -> Iterator[None]:
        """Send an add (``call.named``) with every memory named by an id, so that repeating it is a no-op.

        Memories without a ``memory_id`` get the ids a failed identical call used, else fresh ones;
        if the call sent inside the ``with`` fails — or is cancelled: an async caller's timeout — its
        ids are kept for the next identical call and named in its :class:`~hello_memory.errors.ServiceError`.
        A call that is no add passes as it is. Both clients use it around their (sync or awaited) send.
        """
        if call.named is None or call.request.body is None:
            yield
            return
        unnamed = [spec for spec in call.named if spec.get("memory_id") is None]
        key = fingerprint(call.request.path, call.request.body)
        ids = self.take(key, len(unnamed))
        for spec, memory_id in zip(unnamed, ids, strict=True):
            spec["memory_id"] = memory_id
        try:
            yield
        except BaseException as e:  # the outcome is unknown: it may have stored them
            if ids:
                self.keep(key, ids)
                if isinstance(e, ServiceError):
                    name_ids(e, ids)
            raise

    def keep(self, key: str, ids: list[str]) -> None:
        """Remember ``ids`` for the next identical call (the call failed: it may have stored them)."""
        with self._lock:
            self._ids[key] = (time.monotonic(), ids)
            self._ids.move_to_end(key)
            while len(self._ids) > self._size:
                self._ids.popitem(last=False)


def name_ids(error: ServiceError, ids: list[str]) -> None:
    """Tell the caller of a failed add that calling it again is safe, and which ids it sent."""
    error.memory_ids = ids
    which = f"memory_id {ids[0]}" if len(ids) == 1 else f"the same {len(ids)} memory_ids"
    error.args = (
        f"{error}; calling it again with the same arguments reuses {which}, so nothing is stored twice",
    )
