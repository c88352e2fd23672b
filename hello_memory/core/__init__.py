"""The memory core: the stores a memory was opened with, travelling together (docs/design.md §2).

Every function under :mod:`hello_memory.core` takes a :class:`MemoryCore` (or only the stores it
needs), never the :class:`~hello_memory.MemoryManager` façade, and runs the same lines in embedded
and server mode: the mode only decides which stores the core holds (:mod:`hello_memory.stores.open`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from hello_memory.core.state import RunningBatches, Upkeep
from hello_memory.embedders.lazy import LazyEmbedder
from hello_memory.llm.base import LLMClient
from hello_memory.models import MemoryItem, MemoryType, utcnow
from hello_memory.settings import Settings
from hello_memory.stores.dense.base import DenseIndex
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.records.base import RecordStore


@dataclass(frozen=True, slots=True, eq=False)
class MemoryCore:
    """The stores, models and settings of one open memory.

    Attributes:
        records: the memory of record (records, history, lexical index, facts, pending markers).
        dense: where memory vectors are searched and written.
        graph: entities and relations.
        embedder: the text embedder (built on first use).
        llm: the LLM for extraction and consolidation summaries; ``None`` = offline rules.
        settings: configuration.
        enabled: the tiers this memory serves.
        lock: serialises the write steps of this process; reads never take it.
        clock: the current time (a test may move it).
        upkeep: writes that reads queue instead of waiting for the lock (:mod:`.upkeep`).
        batches: the batches this process is writing in steps (:mod:`.batches`).
    """

    records: RecordStore
    dense: DenseIndex
    graph: GraphStore
    embedder: LazyEmbedder
    llm: LLMClient | None
    settings: Settings
    enabled: tuple[MemoryType, ...]
    lock: threading.RLock = field(default_factory=threading.RLock)
    clock: Callable[[], datetime] = utcnow
    upkeep: Upkeep = field(default_factory=Upkeep)
    batches: RunningBatches = field(default_factory=RunningBatches)

    def now(self) -> datetime:
        """The current time (UTC)."""
        return self.clock()

    @property
    def ttl(self) -> timedelta:
        """How long a working memory lives."""
        return timedelta(minutes=self.settings.working_ttl_minutes)

    def expired(self, item: MemoryItem) -> bool:
        """True when a working memory outlived its TTL."""
        return item.memory_type == MemoryType.WORKING and self.now() - item.created_at > self.ttl

