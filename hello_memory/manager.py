"""MemoryManager: the public façade over the four tiers and their stores (DESIGN §3-§6).

Example:
    >>> from hello_memory import MemoryManager
    >>> mm = MemoryManager(home="/tmp/hm-doc", user_id="alice")       # doctest: +SKIP
    >>> mm.add("Alice prefers green tea", memory_type="semantic")      # doctest: +SKIP
    >>> mm.search("what does Alice drink?")[0].item.content            # doctest: +SKIP
    'Alice prefers green tea'
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from hello_memory.core import items as _items
from hello_memory.core import lifecycle, recovery, reports, retrieval
from hello_memory.core import writes as indexing
from hello_memory.embedders.base import Embedder
from hello_memory.errors import IndexPendingError, InvalidInputError, NotFoundError
from hello_memory.llm.base import LLMClient
from hello_memory.models import (
    ConsolidateReport,
    ForgetReport,
    HistoryEntry,
    MemoryItem,
    MemoryStats,
    MemoryType,
    ScoredMemory,
    utcnow,
)
from hello_memory.settings import Settings
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.open import StoreBundle, acquire, check_components, release, resolve_home
from hello_memory.stores.records.base import RecordQuery, RecordStore
from hello_memory.stores.vectors.base import VectorStore
from hello_memory.validation import check_flag, check_id, check_limit, check_memory_type

logger = logging.getLogger(__name__)


class MemoryManager:
    """Coordinates working, episodic, semantic and perceptual memory for one or many users.

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
        if settings is not None and not isinstance(settings, Settings):
            raise InvalidInputError(
                f"settings must be a Settings, got {type(settings).__name__}", field="settings"
            )
        settings = settings or Settings()
        if home is not None:
            settings = settings.model_copy(update={"home": resolve_home(home)})
        self.settings = settings
        self.user_id = check_id(user_id, "user_id")
        check_components(
            embedder=embedder, vector_store=vector_store, graph_store=graph_store, llm=llm, record_store=record_store
        )
        flags = {
            MemoryType.WORKING: check_flag(enable_working, "enable_working"),
            MemoryType.EPISODIC: check_flag(enable_episodic, "enable_episodic"),
            MemoryType.SEMANTIC: check_flag(enable_semantic, "enable_semantic"),
            MemoryType.PERCEPTUAL: check_flag(enable_perceptual, "enable_perceptual"),
        }
        self.enabled: tuple[MemoryType, ...] = tuple(t for t, on in flags.items() if on)
        if not self.enabled:
            raise InvalidInputError("enable at least one memory type")
        self._embedder = embedder
        self.llm = llm
        self._bundle: StoreBundle | None = acquire(
            settings, vectors=vector_store, graph=graph_store, records=record_store
        )
        try:
            bind = getattr(self._bundle.records, "use_embedder", None) if self._bundle.server else None
            if bind is not None:  # the record points carry the vectors: name their embedder first
                bind(self.embedder.name, self.embedder.dimension)
            recovery.recover(self, opening=True)
        except BaseException:
            self.close()
            raise

    # -- plumbing ---------------------------------------------------------------------------
    @property
    def bundle(self) -> StoreBundle:
        """The open stores; raises once the manager is closed."""
        if self._bundle is None:
            raise InvalidInputError("this MemoryManager is closed")
        return self._bundle

    @property
    def embedder(self) -> Embedder:
        """The text embedder (built from settings on first use)."""
        if self._embedder is None:
            from hello_memory.embedders.factory import make_embedder

            self._embedder = make_embedder(self.settings)
        return self._embedder

    def _user(self, user_id: str | None) -> str:
        return self.user_id if user_id is None else check_id(user_id, "user_id")

    def close(self) -> None:
        """Release the stores (the last user of a data directory closes them); idempotent."""
        if self._bundle is not None:
            bundle, self._bundle = self._bundle, None
            release(bundle)

    def __enter__(self) -> MemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- add --------------------------------------------------------------------------------
    def add(
        self,
        content: str,
        *,
        memory_type: str | MemoryType = "working",
        importance: float = 0.5,
        user_id: str | None = None,
        session_id: str | None = None,
        created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None,
        memory_id: str | None = None,
        **fields: Any,
    ) -> MemoryItem:
        """Store one memory and return it (with its full UUID).

        ``fields`` sets type-specific fields (``event_type``, ``tags``, ``source_path``, ...).
        ``memory_id`` (a full UUID chosen by the caller) makes the call idempotent: a retry with the
        same id and content returns the stored memory and stores nothing; the same id with other
        content, type or user raises :class:`~hello_memory.errors.IdConflictError`.
        Raises ``InvalidInputError`` for bad input and ``EmbeddingError``/``StoreError`` when a
        backend fails — in every case nothing is stored.
        """
        item = _items.build_item(
            self,
            content=content,
            memory_type=memory_type,
            importance=importance,
            user_id=self._user(user_id),
            session_id=session_id,
            created_at=created_at,
            metadata=metadata,
            fields=fields,
            memory_id=memory_id,
        )
        return self._store([item])[0]

    def add_many(self, items: Iterable[dict[str, Any]]) -> list[MemoryItem]:
        """Store many memories at once (batched embedding); all are validated before any is stored.

        Each item is a dict of :meth:`add`'s arguments (at least ``content``), ``memory_id``
        included: a retried batch stores only what is not stored yet and returns every item, in
        order, as stored. The whole batch commits or none of it does.
        """
        return self._store(_items.build_items(self, items))

    def _store(self, built: list[MemoryItem]) -> list[MemoryItem]:
        """validate → embed (no lock) → lock → write; items of an earlier try come back as stored."""
        if not built:
            return []
        known = indexing.existing(self, built)
        prepared = indexing.prepare(self, [it for it in built if it.id not in known])
        with self.bundle.lock:
            stored = {it.id: it for it in indexing.insert(self, prepared)}
        return [known[it.id] if it.id in known else stored[it.id] for it in built]

    # -- read -------------------------------------------------------------------------------
    def get(self, memory_id: str, *, user_id: str | None = None, include_deleted: bool = False) -> MemoryItem:
        """One memory of the user; ``NotFoundError`` if absent or another user's."""
        uid = self._user(user_id)
        check_id(memory_id, "memory_id")
        deleted_too = check_flag(include_deleted, "include_deleted")
        stored = self.bundle.records.read(uid, [memory_id], include_deleted=deleted_too).get(memory_id)
        found = None if stored is None else stored.item
        if found is None or (found.memory_type == MemoryType.WORKING and lifecycle.expired(self, found)):
            raise NotFoundError(f"no memory {memory_id!r} for user {uid!r}", object_id=memory_id)
        return found

    def get_all(
        self,
        *,
        user_id: str | None = None,
        memory_type: str | MemoryType | None = None,
        limit: int | None = None,
        include_deleted: bool = False,
    ) -> list[MemoryItem]:
        """The user's memories, newest first."""
        uid = self._user(user_id)
        types = (check_memory_type(memory_type, self.enabled),) if memory_type is not None else self.enabled
        deleted = None if check_flag(include_deleted, "include_deleted") else False
        lifecycle.expire_working(self, uid)
        query = RecordQuery(
            types=tuple(types), deleted=deleted, limit=None if limit is None else check_limit(limit, maximum=10**9)
        )
        return self.bundle.records.scan(uid, query)

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
        """One ranked list across tiers by final score, each hit with its score breakdown.

        ``query`` is a string or the conversation so far (``[{"role": "user", "content": ...}, ...]``
        or ``(role, content)`` pairs): its human turns become the query (see :mod:`hello_memory.language.queries`).
        Times the query names ("yesterday", "three weeks ago", "上周二") are resolved against
        ``reference_time``, the moment it is asked (default: now; see :mod:`hello_memory.language.timeref`):
        memories made then are preferred by ``Settings.time_weight``, unlike ``time_range``, which
        excludes everything outside it.
        """
        with self.bundle.lock:
            return retrieval.search(
                self,
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
        """Every change of one memory, oldest first (empty after ``remove``)."""
        return self.bundle.records.history(check_id(memory_id, "memory_id"), self._user(user_id))

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
        """Change content (re-embedded), importance and/or metadata (merged into the old dict).

        All-or-nothing: when the vector index or the graph cannot take the change, the memory stays
        exactly as it was (old content searchable, no history entry) and ``StoreError`` is raised;
        the caller can simply retry. See :mod:`hello_memory.core.journal` for why an update rolls back
        rather than reporting "committed, index pending" (which only deletions do).
        """
        uid = self._user(user_id)
        prep = indexing.prepare_update(self, self.get(memory_id, user_id=uid), content, importance, metadata)
        with self.bundle.lock:
            current = self.get(memory_id, user_id=uid)
            if not prep.fits(current):  # its content changed while we embedded: prepare again
                prep = indexing.prepare_update(self, current, content, importance, metadata)
            return indexing.update(self, prep, current)

    def remove(self, memory_id: str, *, user_id: str | None = None) -> None:
        """Delete a memory from every store, history and graph edges included (not restorable).

        Raises :class:`~hello_memory.errors.IndexPendingError` when the memory is deleted but its
        vector or graph links could not be removed yet (completed on the next open).
        """
        with self.bundle.lock:
            indexing.remove(self, [self.get(memory_id, user_id=user_id, include_deleted=True)])

    def restore(self, memory_id: str, *, user_id: str | None = None) -> MemoryItem:
        """Undo a soft delete (``forget`` without ``purge``); all-or-nothing like :meth:`update`."""
        uid = self._user(user_id)
        item = self.get(memory_id, user_id=uid, include_deleted=True)
        if item.deleted_at is None:
            return item
        vectors = indexing.prepare_restore(self, item)  # embedding needs no lock
        with self.bundle.lock:
            current = self.get(memory_id, user_id=uid, include_deleted=True)
            if current.deleted_at is None:
                return current
            if current.content != item.content:
                vectors = indexing.prepare_restore(self, current)
            return indexing.restore(self, current, vectors)

    def recover(self) -> int:
        """Complete journalled index work now (it also runs on open); returns how many operations.

        After an :class:`~hello_memory.errors.IndexPendingError` (or a ``StoreError`` saying the
        index is repaired later), call this once the store works again.
        """
        return recovery.recover(self)

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
        """Forget by ``importance_based``, ``time_based``, ``capacity_based`` or ``combined`` policy."""
        with self.bundle.lock:
            return lifecycle.forget(
                self,
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
        """Promote important memories to a longer-lived tier, atomically and de-duplicated.

        Only towards longer-lived tiers: working → episodic, working → semantic, episodic →
        semantic. Any other pair (back towards working memory, or perceptual as source or target)
        raises :class:`InvalidInputError` and changes nothing.
        """
        with self.bundle.lock:
            return lifecycle.consolidate(
                self, from_type, to_type, importance_threshold, user_id=self._user(user_id)
            )

    def clear_all(self, user_id: str | None = None) -> int:
        """Delete all of one user's memories (never another user's); returns how many."""
        uid = self._user(user_id)
        with self.bundle.lock:
            found = self.bundle.records.scan(uid, RecordQuery(deleted=None))
            try:
                indexing.remove(self, found)
            except IndexPendingError as e:
                e.result = len(found)
                raise
            return len(found)

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Remove everything of ``user_id`` from every store; returns per-store counts."""
        uid = check_id(user_id, "user_id")
        with self.bundle.lock:
            return indexing.forget_user(self, uid)

    # -- reports ----------------------------------------------------------------------------
    def stats(self, *, user_id: str | None = None) -> MemoryStats:
        """Counts per tier, deleted count, graph size and the backends in use."""
        return reports.stats(self, self._user(user_id))

    def summary(self, limit: int = 10, *, user_id: str | None = None) -> str:
        """A readable summary: counts per tier, then the most important memories of each.

        The memories are rendered as quoted evidence (:func:`hello_memory.context.render_items`):
        one JSON-quoted line each inside a ``<memory_evidence>`` block, so a stored ``assistant: ...``
        line or ``<|im_start|>system`` reaches a model as data, never as chat structure.
        """
        return reports.summary(self, check_limit(limit), self._user(user_id))

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
        """Relevant memories rendered as labelled evidence within a token budget (DESIGN §7)."""
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

    def _now(self) -> datetime:
        return utcnow()

    def _ttl(self) -> timedelta:
        return timedelta(minutes=self.settings.working_ttl_minutes)
