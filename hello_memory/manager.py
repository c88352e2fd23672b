"""MemoryManager: the public façade over the four tiers and their stores (docs/design.md §3-§6).

Example:
    >>> from hello_memory import MemoryManager
    >>> mm = MemoryManager(home="/tmp/hm-doc", user_id="alice")       # doctest: +SKIP
    >>> mm.add("Alice prefers green tea", memory_type="semantic")      # doctest: +SKIP
    >>> mm.search("what does Alice drink?")[0].item.content            # doctest: +SKIP
    'Alice prefers green tea'
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, overload

from hello_memory.api import Messages
from hello_memory.core import (
    MemoryCore,
    batches,
    conversations,
    deletes,
    lifecycle,
    recovery,
    reports,
    retrieval,
    upkeep,
    writes,
)
from hello_memory.core import items as _items
from hello_memory.core.opening import open_core
from hello_memory.core.prepare import existing, prepare
from hello_memory.embedders.base import Embedder
from hello_memory.errors import IndexPendingError, InvalidInputError
from hello_memory.llm.base import LLMClient
from hello_memory.manager_admin import ManagerAdmin
from hello_memory.models import (
    ConsolidateReport,
    ForgetReport,
    HistoryEntry,
    MemoryItem,
    MemoryStats,
    MemoryType,
    ScoredMemory,
)
from hello_memory.settings import Settings
from hello_memory.stores.bundle import StoreBundle
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.open import acquire, check_components, check_settings, release
from hello_memory.stores.records.base import RecordQuery, RecordStore
from hello_memory.stores.vectors.base import VectorStore
from hello_memory.validation import (
    check_flag,
    check_id,
    check_limit,
    check_memory_type,
    check_tiers,
)

logger = logging.getLogger(__name__)


class MemoryManager(ManagerAdmin):
    """Coordinates working, episodic, semantic and perceptual memory for one or many users.

    The façade validates arguments and delegates to the core (:mod:`hello_memory.core`), which
    holds the stores the manager was opened with.

    Args:
        settings: configuration; ``Settings()`` (environment) when omitted.
        home: data directory, overriding ``settings.home``.
        user_id: the default user of every call that takes ``user_id=None``.
        enable_working / enable_episodic / enable_semantic / enable_perceptual: tiers to enable.
        embedder: text embedder; built from settings when omitted (offline e5 by default).
        vector_store / graph_store / record_store: injected stores (a private bundle, not shared
            in-process). A ``record_store`` that keeps vectors (``QdrantRecordStore``) means server
            mode, as ``QDRANT_URL`` does: no data directory (see :mod:`hello_memory.stores.open_server`).
        llm: LLM client for extraction and consolidation summaries; none = offline rules.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        home: str | Path | None = None,
        user_id: str = "default_user",
        enable_working: bool = True,
        enable_episodic: bool = True,
        enable_semantic: bool = True,
        enable_perceptual: bool = False,
        embedder: Embedder | None = None,
        vector_store: VectorStore | None = None,
        graph_store: GraphStore | None = None,
        llm: LLMClient | None = None,
        record_store: RecordStore | None = None,
    ) -> None:
        settings = check_settings(settings, home)
        self.user_id = check_id(user_id, "user_id")
        check_components(
            embedder=embedder, vector_store=vector_store, graph_store=graph_store, llm=llm, record_store=record_store
        )
        self.enabled = check_tiers(
            working=enable_working, episodic=enable_episodic, semantic=enable_semantic, perceptual=enable_perceptual
        )
        self.llm = llm
        self._bundle: StoreBundle | None = acquire(
            settings, vectors=vector_store, graph=graph_store, records=record_store
        )
        try:
            self.core = open_core(self._bundle, settings, self.enabled, embedder=embedder, llm=llm)
        except BaseException:
            self.close()
            raise

    # -- plumbing ---------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """The configuration (assigning new settings applies them to every later call)."""
        return self.core.settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        if not isinstance(value, Settings):
            raise InvalidInputError(f"settings must be a Settings, got {type(value).__name__}", field="settings")
        self.core = replace(self.core, settings=value)

    @property
    def bundle(self) -> StoreBundle:
        """The open stores; raises once the manager is closed."""
        if self._bundle is None:
            raise InvalidInputError("this MemoryManager is closed")
        self._bundle.check_process()
        return self._bundle

    @property
    def embedder(self) -> Embedder:
        """The text embedder (built from settings on first use)."""
        return self.core.embedder.get()

    def _open(self) -> MemoryCore:
        self.bundle  # noqa: B018 - raises once closed
        return self.core

    def _bundle_vectors(self) -> VectorStore:
        return self.bundle.vectors

    def _user(self, user_id: str | None) -> str:
        return self.user_id if user_id is None else check_id(user_id, "user_id")

    def _now(self) -> datetime:
        return self.core.now()

    def close(self) -> None:
        """Release the stores (the last user of a data directory closes them); idempotent."""
        if self._bundle is not None:
            bundle, self._bundle = self._bundle, None
            core = getattr(self, "core", None)  # None: the open itself failed
            if core is not None and bundle.pid == os.getpid():
                with core.lock:  # what reads queued (access counts) is written before the stores close
                    upkeep.run(core)
            release(bundle)

    def __enter__(self) -> MemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- add --------------------------------------------------------------------------------
    @overload
    def add(
        self, content: str, *, memory_type: str | MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> MemoryItem: ...
    @overload
    def add(
        self, content: Messages, *, memory_type: str | MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> list[MemoryItem]: ...
    def add(
        self,
        content: str | Messages,
        *,
        memory_type: str | MemoryType | None = None,
        importance: float = 0.5,
        user_id: str | None = None,
        session_id: str | None = None,
        created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None,
        memory_id: str | None = None,
        **fields: Any,
    ) -> MemoryItem | list[MemoryItem]:
        """See :meth:`MemoryAPI.add <hello_memory.api.MemoryAPI.add>`."""
        core = self._open()
        args: dict[str, Any] = {
            "enabled": self.enabled, "now": core.now(), "content": content, "memory_type": memory_type,
            "importance": importance, "user_id": self._user(user_id), "session_id": session_id,
            "created_at": created_at, "metadata": metadata, "fields": fields, "memory_id": memory_id,
        }
        if _items.is_conversation(content):
            return conversations.add(core, _items.build_turns(**args), store=self._store)
        return self._store([_items.build_item(**args)])[0]

    def add_many(self, items: Iterable[dict[str, Any]]) -> list[MemoryItem]:
        """See :meth:`MemoryAPI.add_many <hello_memory.api.MemoryAPI.add_many>`."""
        core = self._open()
        return self._store(_items.build_items(items, enabled=self.enabled, now=core.now(), user=self._user))

    def _store(self, built: list[MemoryItem]) -> list[MemoryItem]:
        """validate → embed (no lock) → write in bounded steps; items of an earlier try come back as stored."""
        if not built:
            return []
        core = self._open()
        known = existing(core, built)
        prepared = prepare(core, [it for it in built if it.id not in known])
        stored = {it.id: it for it in batches.insert_in_steps(core, prepared)}
        return [known[it.id] if it.id in known else stored[it.id] for it in built]

    # -- read -------------------------------------------------------------------------------
    def get(self, memory_id: str, *, user_id: str | None = None, include_deleted: bool = False) -> MemoryItem:
        """See :meth:`MemoryAPI.get <hello_memory.api.MemoryAPI.get>`."""
        deleted_too = check_flag(include_deleted, "include_deleted")
        return writes.get(self._open(), self._user(user_id), check_id(memory_id, "memory_id"), deleted_too)

    def get_all(
        self,
        *,
        user_id: str | None = None,
        memory_type: str | MemoryType | None = None,
        limit: int | None = None,
        include_deleted: bool = False,
    ) -> list[MemoryItem]:
        """See :meth:`MemoryAPI.get_all <hello_memory.api.MemoryAPI.get_all>`."""
        core = self._open()
        uid = self._user(user_id)
        types = (check_memory_type(memory_type, self.enabled),) if memory_type is not None else self.enabled
        deleted = None if check_flag(include_deleted, "include_deleted") else False
        core.upkeep.expire(uid)  # deleted when no writer holds the lock; never returned meanwhile
        upkeep.after_read(core)
        query = RecordQuery(
            types=tuple(types), deleted=deleted, limit=None if limit is None else check_limit(limit, maximum=10**9)
        )
        return [it for it in core.records.scan(uid, query) if not core.expired(it)]

    def search(
        self,
        query: str | Sequence[Mapping[str, Any] | tuple[str, str]],
        *,
        user_id: str | None = None,
        memory_types: Sequence[str | MemoryType] | None = None,
        limit: int = 10,
        min_importance: float = 0.0,
        min_score: float | None = None,
        time_range: tuple[datetime | str | None, datetime | str | None] | None = None,
        session_id: str | None = None,
        reference_time: datetime | str | None = None,
    ) -> list[ScoredMemory]:
        """See :meth:`MemoryAPI.search <hello_memory.api.MemoryAPI.search>`."""
        return retrieval.search(
                self._open(),
                query,
                user_id=self._user(user_id),
                memory_types=memory_types,
                limit=limit,
                min_importance=min_importance,
                min_score=min_score,
                time_range=time_range,
                session_id=session_id,
                reference_time=reference_time,
            )

    def history(self, memory_id: str, *, user_id: str | None = None) -> list[HistoryEntry]:
        """See :meth:`MemoryAPI.history <hello_memory.api.MemoryAPI.history>`."""
        core, uid, mid = self._open(), self._user(user_id), check_id(memory_id, "memory_id")
        writes.get(core, uid, mid, include_deleted=True)  # NotFoundError as get: not the user's, or removed
        return core.records.history(mid, uid)

    # -- change -----------------------------------------------------------------------------
    def update(
        self,
        memory_id: str,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        user_id: str | None = None,
    ) -> MemoryItem:
        """See :meth:`MemoryAPI.update <hello_memory.api.MemoryAPI.update>`."""
        memory_id = check_id(memory_id, "memory_id")
        return writes.update_memory(self._open(), self._user(user_id), memory_id, content, importance, metadata)

    def remove(self, memory_id: str, *, user_id: str | None = None) -> None:
        """See :meth:`MemoryAPI.remove <hello_memory.api.MemoryAPI.remove>`."""
        core = self._open()
        with core.lock:
            deletes.remove(core, [self.get(memory_id, user_id=user_id, include_deleted=True)])

    def restore(self, memory_id: str, *, user_id: str | None = None) -> MemoryItem:
        """See :meth:`MemoryAPI.restore <hello_memory.api.MemoryAPI.restore>`."""
        return writes.restore_memory(self._open(), self._user(user_id), check_id(memory_id, "memory_id"))

    def recover(self) -> int:
        """Complete pending index work now (it also runs on open); returns how many operations.

        After an :class:`~hello_memory.errors.IndexPendingError` (or a ``StoreError`` saying the
        index is repaired later), call this once the store works again.
        """
        return recovery.recover(self._open())

    def forget(
        self,
        strategy: str = "importance_based",
        threshold: float = 0.1,
        max_age_days: float = 30,
        *,
        capacity: int | None = None,
        memory_types: Sequence[str | MemoryType] | None = None,
        user_id: str | None = None,
        purge: bool = False,
    ) -> ForgetReport:
        """See :meth:`MemoryAPI.forget <hello_memory.api.MemoryAPI.forget>`."""
        return lifecycle.forget(
                self._open(),
                strategy,
                threshold=threshold,
                max_age_days=max_age_days,
                capacity=capacity,
                memory_types=memory_types,
                user_id=self._user(user_id),
                purge=purge,
            )

    def consolidate(
        self,
        from_type: str | MemoryType = "working",
        to_type: str | MemoryType = "episodic",
        importance_threshold: float = 0.7,
        *,
        user_id: str | None = None,
    ) -> ConsolidateReport:
        """See :meth:`MemoryAPI.consolidate <hello_memory.api.MemoryAPI.consolidate>`."""
        return lifecycle.consolidate(
            self._open(), from_type, to_type, importance_threshold, user_id=self._user(user_id)
        )

    def clear_all(self, user_id: str | None = None) -> int:
        """See :meth:`MemoryAPI.clear_all <hello_memory.api.MemoryAPI.clear_all>`."""
        core = self._open()
        uid = self._user(user_id)
        found = core.records.ids(uid)
        try:
            deletes.in_steps(core, uid, found, hard=True)
        except IndexPendingError as e:
            e.result = len(found)
            raise
        return len(found)

    def forget_user(self, user_id: str) -> dict[str, int]:
        """See :meth:`MemoryAPI.forget_user <hello_memory.api.MemoryAPI.forget_user>`."""
        return deletes.forget_user(self._open(), check_id(user_id, "user_id"))

    # -- reports ----------------------------------------------------------------------------
    def stats(self, *, user_id: str | None = None) -> MemoryStats:
        """See :meth:`MemoryAPI.stats <hello_memory.api.MemoryAPI.stats>`."""
        return reports.stats(self._open(), self._user(user_id))

    def summary(self, limit: int = 10, *, user_id: str | None = None) -> str:
        """See :meth:`MemoryAPI.summary <hello_memory.api.MemoryAPI.summary>`."""
        return reports.summary(self._open(), check_limit(limit), self._user(user_id))

    def build_context(
        self,
        query: str,
        *,
        budget_tokens: int = 800,
        floor: float | None = None,
        position: str = "user",
        user_id: str | None = None,
        limit: int = 20,
    ) -> Any:
        """See :meth:`MemoryAPI.build_context <hello_memory.api.MemoryAPI.build_context>`."""
        from hello_memory.context import build_context

        return build_context(
            self.search,
            query,
            budget_tokens=budget_tokens,
            floor=floor,
            position=position,
            user_id=user_id,
            limit=limit,
        )

