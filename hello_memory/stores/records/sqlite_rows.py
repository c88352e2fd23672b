"""The SQLite record store's schema and row format (shared by its read and write halves)."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

from hello_memory.errors import InvalidInputError
from hello_memory.models import Entity, MemoryItem, MemoryType, Modality, Relation
from hello_memory.pace import pace
from hello_memory.validation import clamp_timestamp

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
COLUMNS = (
    "id",
    "user_id",
    "agent_id",
    "session_id",
    "memory_type",
    "content",
    "importance",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "access_count",
    "deleted_at",
    "metadata",
    "fields",
    "valid_to",
    "modality",
    "entity_ids",
)
FIELDS = (
    "event_type",
    "context",
    "outcome",
    "participants",
    "tags",
    "entities",
    "relations",
    "valid_from",
    "valid_to",
    "superseded_by",
    "modality",
    "source_path",
    "media_hash",
    "message_id",
    "message_digest",
)
SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, agent_id TEXT, session_id TEXT,
    memory_type TEXT NOT NULL, content TEXT NOT NULL, importance REAL NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, last_accessed_at REAL,
    access_count INTEGER NOT NULL DEFAULT 0, deleted_at REAL,
    metadata TEXT NOT NULL DEFAULT '{}', fields TEXT NOT NULL DEFAULT '{}',
    valid_to REAL, modality TEXT, entity_ids TEXT NOT NULL DEFAULT '', lex TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS ix_mem_user_type ON memories(user_id, memory_type, deleted_at);
CREATE INDEX IF NOT EXISTS ix_mem_user_session_created ON memories(user_id, session_id, created_at);
CREATE INDEX IF NOT EXISTS ix_mem_user_created ON memories(user_id, created_at);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(scope, tokens, tokenize='unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS memories_vocab USING fts5vocab(memories_fts, 'col');
CREATE INDEX IF NOT EXISTS ix_mem_user_type_created ON memories(user_id, memory_type, created_at);
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, memory_id TEXT NOT NULL, user_id TEXT NOT NULL,
    event TEXT NOT NULL, old TEXT, new TEXT, at REAL NOT NULL, actor TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_hist_mem ON history(memory_id);
CREATE INDEX IF NOT EXISTS ix_hist_user ON history(user_id);
CREATE TABLE IF NOT EXISTS pending (
    memory_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, op TEXT NOT NULL, at REAL NOT NULL, batch TEXT
);
CREATE TABLE IF NOT EXISTS facts (
    user_id TEXT NOT NULL, memory_id TEXT NOT NULL, subject_id TEXT NOT NULL,
    relation TEXT NOT NULL, object_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_facts_subject ON facts(user_id, subject_id, relation);
CREATE INDEX IF NOT EXISTS ix_facts_memory ON facts(memory_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def ts(dt: datetime | None) -> float | None:
    if dt is None:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def id_batches(ids: Sequence[str], size: int = 500) -> Iterator[tuple[list[str], str]]:
    """The distinct ``ids`` in batches under SQLite's parameter limit, each with its ``?,?,...``."""
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), size):
        part = unique[start : start + size]
        yield part, ",".join("?" * len(part))


def dt(ts: float | None) -> datetime | None:
    return None if ts is None else dt_req(ts)


def dt_req(ts: float) -> datetime:
    # Clamped: a time written before inputs were range-checked (year 10000 in UTC) must not make
    # every read of its user fail.
    return datetime.fromtimestamp(clamp_timestamp(ts), tz=timezone.utc)


#: The orders :meth:`SQLiteRecordStore.list_items` accepts (a whitelist: ``order`` is never SQL).
ORDERS = {
    "created_at DESC": "created_at DESC",
    "created_at": "created_at",
    "created_at ASC": "created_at ASC",
    "importance DESC, created_at DESC": "importance DESC, created_at DESC",
}


def order_sql(order: object) -> str:
    sql = ORDERS.get(order) if isinstance(order, str) else None
    if sql is None:
        raise InvalidInputError(f"order must be one of {sorted(ORDERS)}, got {order!r}", field="order")
    return sql


# Columns added after the first release of the schema, with how to fill them from ``fields``.
ADDED_COLUMNS = (
    ("valid_to", "REAL", "(julianday(json_extract(fields, '$.valid_to')) - 2440587.5) * 86400.0"),
    ("modality", "TEXT", "json_extract(fields, '$.modality')"),
    (
        "entity_ids",
        "TEXT NOT NULL DEFAULT ''",
        "coalesce((SELECT group_concat(json_extract(e.value, '$.id'), ' ') "
        "FROM json_each(fields, '$.entities') AS e), '')",
    ),
    # Own lexical tokens (the FTS document adds context); before it existed the FTS row held exactly these.
    (
        "lex",
        "TEXT NOT NULL DEFAULT ''",
        "coalesce((SELECT tokens FROM memories_fts f WHERE f.rowid = memories.rowid), '')",
    ),
    # Record version (RecordStore protocol): 1 when inserted, +1 per change (sqlite_records.VERSION_TRIGGER).
    ("version", "INTEGER NOT NULL DEFAULT 1", "1"),
)


def add_missing_columns(conn: sqlite3.Connection) -> None:
    """Upgrade tables written by an earlier version (``CREATE IF NOT EXISTS`` keeps them)."""
    if "batch" not in {r[1] for r in conn.execute("PRAGMA table_info(pending)")}:
        conn.execute("ALTER TABLE pending ADD COLUMN batch TEXT")  # a batch written in steps
    conn.execute("CREATE INDEX IF NOT EXISTS ix_pending_batch ON pending(batch) WHERE batch IS NOT NULL")
    have = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
    missing = [c for c in ADDED_COLUMNS if c[0] not in have]
    if not missing:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for name, decl, fill in missing:
            conn.execute(f"ALTER TABLE memories ADD COLUMN {name} {decl}")
            conn.execute(f"UPDATE memories SET {name} = {fill}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    logger.info("added columns %s to memories", [c[0] for c in missing])


# Columns whose rewrite is a change of the memory (access statistics are not).
_VERSIONED = (
    "user_id, agent_id, session_id, memory_type, content, importance, created_at, updated_at, "
    "deleted_at, metadata, fields, valid_to, modality, entity_ids"
)
VERSION_TRIGGER = f"""
CREATE TRIGGER IF NOT EXISTS memories_version AFTER UPDATE OF {_VERSIONED} ON memories
WHEN NEW.version = OLD.version
BEGIN UPDATE memories SET version = OLD.version + 1 WHERE rowid = NEW.rowid; END;
"""


def to_row(item: MemoryItem) -> tuple[Any, ...]:
    """Column values of ``item`` in ``_COLUMNS`` order."""
    data = item.model_dump(mode="json", include=set(FIELDS))
    return (
        item.id,
        item.user_id,
        item.agent_id,
        item.session_id,
        item.memory_type.value,
        item.content,
        item.importance,
        ts(item.created_at),
        ts(item.updated_at),
        ts(item.last_accessed_at),
        item.access_count,
        ts(item.deleted_at),
        json.dumps(item.metadata, ensure_ascii=False),
        json.dumps(data, ensure_ascii=False),
        ts(item.valid_to),
        item.modality.value if item.modality else None,
        " ".join(e.id for e in item.entities),
    )


def from_row(row: Sequence[Any]) -> MemoryItem:
    """Rebuild a :class:`MemoryItem` from a row in ``_COLUMNS`` order.

    Rows were validated when written, so the model is constructed without re-validation
    (search reads ~100 rows per query; validating them again cost more than the search).
    """
    pace()  # a scan of a whole store rebuilds thousands (hello_memory.pace)
    fields = {k: v for k, v in json.loads(row[13]).items() if v is not None}
    if "entities" in fields:
        fields["entities"] = [Entity.model_construct(**e) for e in fields["entities"]]
    if "relations" in fields:
        fields["relations"] = [Relation.model_construct(**r) for r in fields["relations"]]
    for key in ("valid_from", "valid_to"):
        if key in fields:
            fields[key] = datetime.fromisoformat(fields[key].replace("Z", "+00:00"))
    if "modality" in fields:
        fields["modality"] = Modality(fields["modality"])
    return MemoryItem.model_construct(
        id=row[0],
        user_id=row[1],
        agent_id=row[2],
        session_id=row[3],
        memory_type=MemoryType(row[4]),
        content=row[5],
        importance=row[6],
        created_at=dt_req(row[7]),
        updated_at=dt_req(row[8]),
        last_accessed_at=dt(row[9]),
        access_count=row[10],
        deleted_at=dt(row[11]),
        metadata=json.loads(row[12]),
        **fields,
    )

