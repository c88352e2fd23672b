"""The Memory tab's operations: browse, search, edit, delete, forget, consolidate."""

from __future__ import annotations

import threading

from hello_memory import ConsolidateReport, ForgetReport, MemoryItem, ScoredMemory
from hello_memory.api import MemoryAPI
from hello_memory.models import MemoryType, cleared


class MemoryOps:
    """Memory management for one learner; mixed into :class:`apps.assistant.LearningAssistant`.

    Every call touches only ``memory.user_id``'s memories. Errors are the core's:
    ``InvalidInputError`` for bad arguments, ``NotFoundError`` for an unknown (or another
    user's) memory id.
    """

    memory: MemoryAPI
    lock: threading.RLock

    def browse_memories(self, memory_type: str | None = None, limit: int = 200) -> list[MemoryItem]:
        """The user's memories, newest first, optionally of one tier."""
        return self.memory.get_all(memory_type=memory_type or None, limit=limit)

    def search_memories(
        self, query: str, memory_type: str | None = None, limit: int = 20
    ) -> list[ScoredMemory]:
        """Memories ranked by the tier formulas, each with its score breakdown: those that
        cleared the relevance floor (the candidates search lists after them are not shown: unmarked in a
        table, they read as relevant, and their scores out of the table's order; docs/design.md §5)."""
        types = [memory_type] if memory_type else None
        return cleared(self.memory.search(query, memory_types=types, limit=limit))

    def update_importance(self, memory_id: str, importance: float) -> MemoryItem:
        """Set a memory's importance (0-1)."""
        with self.lock:
            return self.memory.update(memory_id.strip(), importance=importance)

    def delete_memory(self, memory_id: str) -> None:
        """Delete a memory for good (every store, its history included)."""
        with self.lock:
            self.memory.remove(memory_id.strip())

    def forget(
        self,
        strategy: str = "importance_based",
        threshold: float = 0.1,
        max_age_days: float = 30.0,
        capacity: int | None = None,
        memory_type: str | None = None,
    ) -> ForgetReport:
        """Forget by ``importance_based``, ``time_based``, ``capacity_based`` or ``combined`` policy."""
        types: list[str | MemoryType] | None = [memory_type] if memory_type else None
        with self.lock:
            return self.memory.forget(strategy, threshold=threshold, max_age_days=max_age_days,
                                      capacity=capacity, memory_types=types)

    def consolidate(
        self, from_type: str = "working", to_type: str = "episodic", threshold: float = 0.7
    ) -> ConsolidateReport:
        """Promote memories of at least ``threshold`` importance to a longer-lived tier."""
        with self.lock:
            return self.memory.consolidate(from_type, to_type, threshold)
