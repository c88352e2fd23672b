"""How a memory is laid out in Qdrant: the record point's payload, its filters, history points, turns.

A memory is one point of ``<prefix>_records`` (id = the memory id). Its payload holds:

- ``record``: the whole :class:`~hello_memory.models.MemoryItem` as JSON — the system of record
  (access statistics excepted: ``access_count`` and ``last_accessed_ts`` sit at the top level, so
  counting an access never rewrites the record);
- flat filter keys, payload-indexed on a server: ``user_id`` (the tenant key), ``memory_type``,
  ``session_id``, ``modality``, ``created_ts`` / ``updated_ts`` / ``deleted_ts`` / ``valid_to_ts``
  (float epoch seconds; ``deleted_ts`` null = live), ``importance``, ``entity_ids``,
  ``participants``;
- write bookkeeping: ``version``, ``write_id`` (a UUID per write) and ``recent_writes`` (the
  last ``RECENT_WRITES`` of them, carried over by every write: a writer that reads its point back
  after a newer write already replaced it still learns that its own write landed), ``seq``
  (insertion time in ns: the tie-break of a session's turn order),
  ``history_count`` and ``outbox`` (history entries written with the record and not yet copied
  to ``<prefix>_record_history``), ``pending`` / ``pending_ts`` (the pending-work marker),
  ``facts`` / ``fact_keys`` (``subject\\x1frelation\\x1fobject`` and ``subject\\x1frelation``);
- ``lex``: the memory's own lexical terms (neighbours' documents are rebuilt from them).

Vectors: ``dense`` (the embedding, cosine) and ``lexical`` (sparse, IDF by the server;
:mod:`hello_memory.stores.sparse`); a soft-deleted memory has neither.

History entries are payload-only points of ``<prefix>_record_history`` with id
``uuid5(memory_id/seq)``, so copying one twice writes it once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from hello_memory.errors import InvalidInputError
from hello_memory.models import HistoryEntry, MemoryItem, MemoryType
from hello_memory.stores.qdrant_connection import models
from hello_memory.stores.records.base import Fact, PendingOp
from hello_memory.stores.records.sqlite_lexical import TURN_EVENT_TYPE
from hello_memory.stores.vectors.rules import _check_ints

_HISTORY_NAMESPACE = uuid.UUID("6f1c2a9e-5b7d-4e3a-9c81-2d4f6a8b0e17")
_SEP = "\x1f"
RECENT_WRITES = 32
#: Top-level payload keys that get a keyword index on a server (``user_id`` is the tenant key).
KEYWORD_KEYS = (
    "user_id", "memory_type", "session_id", "modality", "pending", "pending_batch", "fact_keys", "write_id",
)
#: Top-level payload keys that get a float (range) index on a server.
FLOAT_KEYS = ("created_ts", "updated_ts", "deleted_ts", "valid_to_ts", "importance")


def ts(dt: datetime | None) -> float | None:
    """Epoch seconds of ``dt`` (naive = UTC), or ``None``."""
    if dt is None:
        return None
    return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).timestamp()


def history_id(memory_id: str, seq: int) -> str:
    """Point id of a memory's ``seq``-th history entry."""
    return str(uuid.uuid5(_HISTORY_NAMESPACE, f"{memory_id}/{seq}"))


def fact_strings(facts: Iterable[Fact]) -> tuple[list[str], list[str]]:
    """``(facts, fact_keys)`` payload values of a memory's facts."""
    full = [_SEP.join((f.subject_id, f.relation, f.object_id)) for f in facts]
    return full, sorted({s.rsplit(_SEP, 1)[0] for s in full})


def facts_of(payload: dict[str, Any]) -> tuple[Fact, ...]:
    """The facts stored on a record point."""
    return tuple(Fact(*s.split(_SEP, 2)) for s in payload.get("facts") or ())


def outbox_entries(start: int, entries: Sequence[HistoryEntry]) -> list[dict[str, Any]]:
    """History entries as outbox items numbered from ``start``."""
    return [{"seq": start + i, "entry": e.model_dump(mode="json")} for i, e in enumerate(entries)]


@dataclass(frozen=True, slots=True)
class Bookkeeping:
    """The write-bookkeeping part of a record payload."""

    version: int
    write_id: str
    seq: int
    history_count: int
    outbox: list[dict[str, Any]]
    facts: tuple[Fact, ...]
    pending: str | None
    pending_ts: float | None
    access_count: int
    last_accessed_ts: float | None
    recent_writes: list[str]
    pending_batch: str | None = None


def record_payload(item: MemoryItem, book: Bookkeeping, lex: Sequence[str]) -> dict[str, Any]:
    """The payload of a memory's point."""
    record = item.model_dump(mode="json", exclude={"access_count", "last_accessed_at"})
    facts, keys = fact_strings(book.facts)
    payload = {
        "record": record,
        "user_id": item.user_id,
        "memory_type": item.memory_type.value,
        "session_id": item.session_id,
        "turn": is_turn(item),
        "modality": item.modality.value if item.modality else None,
        "created_ts": ts(item.created_at),
        "updated_ts": ts(item.updated_at),
        "deleted_ts": ts(item.deleted_at),
        "valid_to_ts": ts(item.valid_to),
        "importance": item.importance,
        "entity_ids": [e.id for e in item.entities],
        "participants": list(item.participants),
        "access_count": book.access_count,
        "last_accessed_ts": book.last_accessed_ts,
        "version": book.version,
        "write_id": book.write_id,
        "recent_writes": book.recent_writes,
        "seq": book.seq,
        "history_count": book.history_count,
        "outbox": book.outbox,
        "facts": facts,
        "fact_keys": keys,
        "pending": book.pending,
        "pending_ts": book.pending_ts,
        "pending_batch": book.pending_batch,
        "lex": " ".join(lex),
    }
    return clean(payload)


def clean(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` checked to be plain JSON that Qdrant stores (no NaN, integers within 64 bits)."""
    try:
        json.dumps(payload, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"memory is not storable as JSON: {e}", field="metadata") from e
    _check_ints(payload)
    return payload


def item_of(payload: dict[str, Any]) -> MemoryItem:
    """The memory a record point holds (access statistics from the top level)."""
    record = dict(payload["record"])
    record["access_count"] = int(payload.get("access_count") or 0)
    last = payload.get("last_accessed_ts")
    record["last_accessed_at"] = None if last is None else datetime.fromtimestamp(last, tz=timezone.utc)
    return MemoryItem.model_validate(record)


def match(key: str, value: Any) -> Any:
    """``key == value`` (a list value: any of them)."""
    m = models()
    if isinstance(value, list | tuple):
        return m.FieldCondition(key=key, match=m.MatchAny(any=list(value)))
    return m.FieldCondition(key=key, match=m.MatchValue(value=value))


def empty(key: str) -> Any:
    """``key`` is missing or null."""
    m = models()
    return m.IsEmptyCondition(is_empty=m.PayloadField(key=key))


def has_ids(ids: Sequence[str]) -> Any:
    """The point id is one of ``ids``."""
    return models().HasIdCondition(has_id=list(ids))


def scope_filter(
    user_id: str,
    *,
    types: Sequence[str] | None = None,
    deleted: bool | None = False,
    session_id: str | None = None,
    time_range: tuple[float | None, float | None] | None = None,
    extra: Sequence[Any] = (),
) -> Any:
    """The filter of a user's memories (the SQLite store's ``_where``: empty ``types`` = all)."""
    m = models()
    must: list[Any] = [match("user_id", user_id), *extra]
    must_not: list[Any] = []
    if types:
        must.append(match("memory_type", list(types)))
    if deleted is False:
        must.append(empty("deleted_ts"))
    elif deleted is True:
        must_not.append(empty("deleted_ts"))
    if session_id is not None:
        must.append(match("session_id", session_id))
    if time_range is not None and (time_range[0] is not None or time_range[1] is not None):
        must.append(m.FieldCondition(key="created_ts", range=m.Range(gte=time_range[0], lte=time_range[1])))
    return m.Filter(must=must, must_not=must_not or None)


@dataclass(frozen=True, slots=True)
class Turn:
    """A live episodic memory of a session, as its neighbours' lexical documents need it."""

    id: str
    created_ts: float
    seq: int
    terms: tuple[str, ...]


def turn_of(point_id: str, payload: dict[str, Any]) -> Turn:
    """A session turn from a record point's payload (``created_ts``, ``seq``, ``lex``)."""
    lex = payload.get("lex") or ""
    return Turn(point_id, float(payload["created_ts"]), int(payload.get("seq") or 0), tuple(lex.split()))


def ordered(turns: Iterable[Turn]) -> list[Turn]:
    """Turns in conversation order: time, then insertion order, then id."""
    return sorted(turns, key=lambda t: (t.created_ts, t.seq, t.id))


def is_turn(item: MemoryItem) -> bool:
    """Whether a memory is a conversation turn (``sqlite_lexical``: episodic, a session, ``event_type``)."""
    return (
        item.memory_type == MemoryType.EPISODIC
        and item.session_id is not None
        and item.event_type == TURN_EVENT_TYPE
    )


def has_context(item: MemoryItem) -> bool:
    """Whether a memory's lexical document carries its session neighbours (as in ``sqlite_lexical``)."""
    return is_turn(item) and item.deleted_at is None


TURN_FIELDS = ["created_ts", "seq", "lex", "turn"]
RECORD_FIELDS = [
    "record",
    "user_id",
    "version",
    "write_id",
    "recent_writes",
    "seq",
    "history_count",
    "outbox",
    "facts",
    "pending",
    "pending_ts",
    "pending_batch",
    "access_count",
    "last_accessed_ts",
    "session_id",
    "memory_type",
    "deleted_ts",
]


def pending_op(value: Any) -> PendingOp | None:
    """The pending marker stored on a point."""
    return None if value is None else PendingOp(value)
