"""The one validation gate every write passes before anything is stored (docs/design.md §2).

Whatever the entry point — ``add``, ``add_many``, ``update``, ``restore``, consolidation, an
import of an export, the memory service, a tool — the core's write unit (:mod:`hello_memory.core.writes`)
calls :func:`check_write` on every record it is about to write. The façade validates arguments
earlier, with messages about the arguments; this gate guards the stores, so a path that builds
memories by other means (``import`` reads them from a file) cannot store what ``add`` would refuse:
a user id with a NUL (that user could never be named again), a memory over the length limit, a
time outside 1900–2200, metadata nested deeper than the readers can parse, a vector that is not
finite or not of the collection's dimension.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from hello_memory.errors import DimensionMismatchError, InvalidInputError
from hello_memory.models import HistoryEntry, MemoryItem
from hello_memory.stores.records.base import RecordWrite
from hello_memory.validation import (
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    check_datetime,
    check_depth,
    check_id,
    check_importance,
    check_memory_id,
    check_metadata,
    check_text,
)

#: The typed (type-specific) fields of a memory, bounded like its metadata.
TYPED_FIELDS = {
    "event_type",
    "context",
    "outcome",
    "participants",
    "tags",
    "modality",
    "source_path",
    "agent_id",
    "valid_from",
}
_DIGEST = re.compile(r"[0-9a-f]{64}")
_TIMES = ("created_at", "updated_at", "last_accessed_at", "deleted_at", "valid_from", "valid_to")


def check_item(item: Any) -> MemoryItem:
    """A memory that may be stored: every field within the limits ``add`` enforces.

    Raises:
        InvalidInputError: naming the field; nothing has been stored.
    """
    if not isinstance(item, MemoryItem):
        raise InvalidInputError(f"a memory must be a MemoryItem, got {type(item).__name__}")
    check_memory_id(item.id, "id")
    check_id(item.user_id, "user_id")
    for name in ("session_id", "agent_id"):
        if getattr(item, name) is not None:
            check_id(getattr(item, name), name)
    check_text(item.content, "content")
    check_importance(item.importance)
    for name in _TIMES:
        if getattr(item, name) is not None:
            check_datetime(getattr(item, name), name)
    if item.metadata:
        check_metadata(item.metadata)
    if item.message_id is not None:
        check_id(item.message_id, "message_id")
    if item.message_digest is not None and not _DIGEST.fullmatch(item.message_digest):
        raise InvalidInputError("message_digest must be 64 lowercase hex characters (SHA-256)", field="message_digest")
    if any(getattr(item, name) for name in (*TYPED_FIELDS, "entities", "relations")):
        check_typed_fields(item)
    return item


def check_typed_fields(item: MemoryItem) -> None:
    """Typed fields must be storable text (no lone surrogates, no NUL) and as bounded as metadata."""
    data = item.model_dump(mode="json", include=TYPED_FIELDS | {"entities", "relations"})
    check_depth(data, "memory fields")
    try:
        encoded = json.dumps(data, ensure_ascii=False)
        size = len(encoded.encode("utf-8"))
    except UnicodeEncodeError as e:
        raise InvalidInputError(f"typed memory fields are not valid Unicode text ({e.reason})") from e
    if "\\u0000" in encoded:
        raise InvalidInputError("typed memory fields contain NUL characters")
    if size > MAX_METADATA_BYTES * 4:  # entities and relations of a long text take room
        raise InvalidInputError(f"typed memory fields are larger than {MAX_METADATA_BYTES * 4} bytes")


def check_history(entry: Any, memory_id: str | None = None) -> HistoryEntry:
    """A history entry that may be stored (an import carries them): bounded, in the time range.

    ``memory_id``: the memory the entry is stored with; an entry naming another memory (another
    user's, say) is refused — it would be stored under that memory's id.
    """
    if not isinstance(entry, HistoryEntry):
        raise InvalidInputError(f"a history entry must be a HistoryEntry, got {type(entry).__name__}")
    check_memory_id(entry.memory_id, "history.memory_id")
    if memory_id is not None and entry.memory_id != memory_id:
        raise InvalidInputError(
            f"a history entry names memory {entry.memory_id}, not the memory {memory_id} it is stored with",
            field="history.memory_id",
        )
    check_datetime(entry.at, "history.at")
    for side in (entry.old, entry.new):
        if side is not None:  # a side holds the metadata one level down ({"metadata": ...}): one level more
            check_depth(side, "history", limit=MAX_METADATA_DEPTH + 1)
    return entry


def check_vector(vector: Any, dimension: int, memory_id: str) -> np.ndarray:
    """A memory's vector: 1-D, finite, non-zero, of the collection's ``dimension``; returned as float32."""
    array = np.asarray(vector, dtype=np.float32)
    if array.ndim != 1:
        raise InvalidInputError(f"the vector of memory {memory_id} is not one-dimensional", field="vector")
    if array.shape[0] != dimension:
        raise DimensionMismatchError("memories", dimension, int(array.shape[0]))
    norm = float(np.linalg.norm(array)) if np.isfinite(array).all() else math.nan
    if not math.isfinite(norm) or norm == 0.0:
        raise InvalidInputError(
            f"the vector of memory {memory_id} is not finite or is all zeros", field="vector"
        )
    return array


def check_write(write: RecordWrite, dimension: int | None) -> None:
    """Everything a record write stores (``dimension``: of the memory vectors, when it carries one)."""
    check_item(write.item)
    for entry in write.history:
        check_history(entry, write.item.id)
    if write.vector is not None:
        if dimension is None:
            raise InvalidInputError("a vector was given for a memory without an embedder dimension")
        check_vector(write.vector, dimension, write.item.id)
