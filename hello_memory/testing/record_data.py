"""Values the record-store contract tests write: users, times, memories, history entries."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from hello_memory.models import HistoryEntry, MemoryItem, MemoryType
from hello_memory.stores.records.base import RecordStore
from hello_memory.stores.records.sqlite_lexical import TURN_EVENT_TYPE

ALICE, BOB = "user-alice", "user-bob"
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
Factory = Callable[..., RecordStore]


def memory(
    content: str, *, user: str = ALICE, kind: str = "episodic", minutes: float = 0, **fields: Any
) -> MemoryItem:
    """A memory created ``minutes`` after ``T0``; an episodic one with a session is a conversation turn
    (``event_type="conversation"``) unless ``event_type`` says otherwise."""
    at = T0 + timedelta(minutes=minutes)
    if kind == "episodic" and fields.get("session_id") is not None:
        fields.setdefault("event_type", TURN_EVENT_TYPE)
    return MemoryItem(
        user_id=user, memory_type=MemoryType(kind), content=content, created_at=at, updated_at=at, **fields
    )


def entry(item: MemoryItem, event: str, n: int = 0) -> HistoryEntry:
    """A history entry of ``item`` (``n`` seconds after its creation)."""
    return HistoryEntry(
        memory_id=item.id, event=event, new={"n": n}, at=item.created_at + timedelta(seconds=n)
    )
