"""Rules of the write unit both record stores apply the same way (see :mod:`.base`)."""

from __future__ import annotations

from collections.abc import Sequence

from hello_memory.errors import IdConflictError, InvalidInputError, WriteConflictError
from hello_memory.models import MemoryItem
from hello_memory.stores.records.base import PendingOp, RecordWrite
from hello_memory.stores.vectors.rules import is_canonical_uuid


def check_writes(writes: Sequence[RecordWrite]) -> None:
    """Refuse malformed writes before anything is applied (both backends call this)."""
    if isinstance(writes, RecordWrite) or not isinstance(writes, Sequence):
        raise InvalidInputError("writes must be a sequence of RecordWrite", field="writes")
    for w in writes:
        if not isinstance(w, RecordWrite) or not isinstance(w.item, MemoryItem):
            raise InvalidInputError("each write must be a RecordWrite holding a MemoryItem", field="writes")
        if not is_canonical_uuid(w.item.id):
            raise InvalidInputError(f"memory id {w.item.id!r} is not a lowercase UUID string", field="id")
        v = w.expected_version
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise InvalidInputError("expected_version must be None or an int >= 1", field="expected_version")
        if w.pending is not None and not isinstance(w.pending, PendingOp):
            raise InvalidInputError("pending must be a PendingOp", field="pending")


def same_memory(stored: MemoryItem, item: MemoryItem) -> bool:
    """Whether an insert of ``item`` repeats the stored insert (the duplicate policy's test)."""
    return (stored.user_id, stored.memory_type, stored.content) == (
        item.user_id,
        item.memory_type,
        item.content,
    )


def taken(memory_id: str) -> IdConflictError:
    """The error of an insert whose id holds another memory (which it must not describe)."""
    return IdConflictError(
        f"memory_id {memory_id} is already in use by a different memory; use a new UUID", memory_id=memory_id
    )


def stale(memory_id: str, expected: int, stored: int) -> WriteConflictError:
    """The error of an update that lost to a concurrent one."""
    return WriteConflictError(
        f"memory {memory_id!r} is at version {stored}, not {expected}: it changed since it was read; "
        "read it again and re-apply the change",
        memory_id=memory_id,
        expected_version=expected,
        stored_version=stored,
    )

