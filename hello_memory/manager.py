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

from hello_memory import indexing, lifecycle, retrieval
from hello_memory.embedders.base import Embedder
from hello_memory.errors import InvalidInputError, NotFoundError
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
from hello_memory.runtime import StoreBundle, acquire, release, resolve_home
from hello_memory.settings import Settings
from hello_memory.stores.base import GraphStore, VectorStore
from hello_memory.validation import check_flag, check_id, check_limit, check_memory_type

logger = logging.getLogger(__name__)
SUMMARY_CHARS = 200  # characters of each memory shown by summary()


_PROTOCOLS: dict[str, type] = {
    "embedder": Embedder,
    "vector_store": VectorStore,
    "graph_store": GraphStore,
    "llm": LLMClient,
}


def _check_injected(**given: object) -> None:
    """Injected components must implement their protocol (checked now, not at first use)."""
    for name, value in given.items():
        protocol = _PROTOCOLS[name]
        if value is not None and not isinstance(value, protocol):
            raise InvalidInputError(
                f"{name} must implement {protocol.__name__}, got {type(value).__name__}", field=name
            )


class MemoryManager:
    """Coordinates working, episodic, semantic and perceptual memory for one or many users.

    Args:
        settings: configuration; ``Settings()`` (environment) when omitted.
        home: data directory, overriding ``settings.home``.
        user_id: the default user of every call that takes ``user_id=None``.
        enable_working / enable_episodic / enable_semantic / enable_perceptual: tiers to enable.
        embedder: text embedder; built from settings when omitted (offline e5 by default).
        vector_store / graph_store: injected stores (a private bundle, not shared in-process).
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
        _check_injected(embedder=embedder, vector_store=vector_store, graph_store=graph_store, llm=llm)
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
        self._bundle: StoreBundle | None = acquire(settings, vectors=vector_store, graph=graph_store)
        try:
            indexing.recover(self)
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
        **fields: Any,
    ) -> MemoryItem:
        """Store one memory and return it (with its full UUID).

        ``fields`` sets type-specific fields (``event_type``, ``tags``, ``source_path``, ...).
        Raises ``InvalidInputError`` for bad input and ``EmbeddingError``/``StoreError`` when a
        backend fails — in every case nothing is stored.
        """
        item = indexing.build_item(
            self,
            content=content,
            memory_type=memory_type,
            importance=importance,
            user_id=self._user(user_id),
            session_id=session_id,
            created_at=created_at,
            metadata=metadata,
            fields=fields,
        )
        with self.bundle.lock:
            return indexing.insert(self, [item])[0]

    def add_many(self, items: Iterable[dict[str, Any]]) -> list[MemoryItem]:
        """Store many memories at once (batched embedding); all are validated before any is stored."""
        if isinstance(items, str | bytes | dict) or not isinstance(items, Iterable):
            raise InvalidInputError("items must be an iterable of dicts, each with at least 'content'")
        built = []
        for n, spec in enumerate(items):
            if not isinstance(spec, dict):
                raise InvalidInputError(f"item {n} must be a dict with at least 'content'")
            spec = dict(spec)
            if "content" not in spec:
                raise InvalidInputError(f"item {n} has no 'content'", field="content")
            spec["user_id"] = self._user(spec.get("user_id"))
            known = {
                "content",
                "memory_type",
                "importance",
                "user_id",
                "session_id",
                "created_at",
                "metadata",
            }
            extra = {k: spec.pop(k) for k in list(spec) if k not in known}
            spec.setdefault("memory_type", "working")
            spec.setdefault("importance", 0.5)
            built.append(
                indexing.build_item(
                    self,
                    content=spec["content"],
                    memory_type=spec["memory_type"],
                    importance=spec["importance"],
                    user_id=spec["user_id"],
                    session_id=spec.get("session_id"),
                    created_at=spec.get("created_at"),
                    metadata=spec.get("metadata"),
                    fields=extra,
                )
            )
        if not built:
            return []
        with self.bundle.lock:
            return indexing.insert(self, built)

    # -- read -------------------------------------------------------------------------------
    def get(self, memory_id: str, *, user_id: str | None = None, include_deleted: bool = False) -> MemoryItem:
        """One memory of the user; ``NotFoundError`` if absent or another user's."""
        uid = self._user(user_id)
        check_id(memory_id, "memory_id")
        deleted_too = check_flag(include_deleted, "include_deleted")
        found = self.bundle.records.fetch([memory_id], uid, include_deleted=deleted_too).get(memory_id)
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
        types = (
            [check_memory_type(memory_type, self.enabled).value]
            if memory_type is not None
            else [t.value for t in self.enabled]
        )
        deleted = None if check_flag(include_deleted, "include_deleted") else False
        lifecycle.expire_working(self, uid)
        return self.bundle.records.list_items(
            uid,
            types=types,
            deleted=deleted,
            limit=None if limit is None else check_limit(limit, maximum=10**9),
        )

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
        or ``(role, content)`` pairs): its human turns become the query (see :mod:`hello_memory.queries`).
        Times the query names ("yesterday", "three weeks ago", "上周二") are resolved against
        ``reference_time``, the moment it is asked (default: now; see :mod:`hello_memory.timeref`):
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
        """Change content (re-embedded), importance and/or metadata (merged into the old dict)."""
        with self.bundle.lock:
            return indexing.update(self, self.get(memory_id, user_id=user_id), content, importance, metadata)

    def remove(self, memory_id: str, *, user_id: str | None = None) -> None:
        """Delete a memory from every store, history and graph edges included (not restorable)."""
        with self.bundle.lock:
            item = self.get(memory_id, user_id=user_id, include_deleted=True)
            indexing.purge(self, [item])
            indexing.scrub(self)

    def restore(self, memory_id: str, *, user_id: str | None = None) -> MemoryItem:
        """Undo a soft delete (``forget`` without ``purge``)."""
        with self.bundle.lock:
            item = self.get(memory_id, user_id=user_id, include_deleted=True)
            if item.deleted_at is None:
                return item
            return indexing.restore(self, item)

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
            items = self.bundle.records.list_items(uid, deleted=None)
            indexing.purge(self, items)
            indexing.scrub(self)
            return len(items)

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Remove everything of ``user_id`` from every store; returns per-store counts."""
        uid = check_id(user_id, "user_id")
        with self.bundle.lock:
            return indexing.forget_user(self, uid)

    # -- reports ----------------------------------------------------------------------------
    def stats(self, *, user_id: str | None = None) -> MemoryStats:
        """Counts per tier, deleted count, graph size and the backends in use."""
        uid = self._user(user_id)
        lifecycle.expire_working(self, uid)
        records = self.bundle.records
        by_type = {t.value: 0 for t in self.enabled}
        by_type.update(records.count_by_type(uid))
        graph = self.bundle.graph.counts(uid)
        return MemoryStats(
            user_id=uid,
            total=sum(by_type.values()),
            by_type=by_type,
            deleted=sum(records.count_by_type(uid, deleted=True).values()),
            entities=graph.get("entities", 0),
            relations=graph.get("relations", 0),
            avg_importance=round(records.avg_importance(uid), 4),
            embedder=self._embedder.name if self._embedder else self.settings.resolved_embedder(),
            vector_backend=self.bundle.vectors.backend,
        )

    def summary(self, limit: int = 10, *, user_id: str | None = None) -> str:
        """A readable summary: counts per tier, then the most important memories of each.

        The memories are rendered as quoted evidence (see :func:`hello_memory.context.render_items`):
        one JSON-quoted line each inside a ``<memory_evidence>`` block, so a stored ``assistant: ...``
        line or ``<|im_start|>system`` reaches a model as data, never as chat structure.
        """
        from hello_memory.context import render_items

        uid = self._user(user_id)
        check_limit(limit)
        st = self.stats(user_id=uid)
        head = f"Memory summary for {uid}: {st.total} memories " + ", ".join(
            f"{k} {v}" for k, v in st.by_type.items()
        )
        top: list[MemoryItem] = []
        for t in self.enabled:
            top += self.bundle.records.list_items(
                uid, types=[t.value], order="importance DESC, created_at DESC", limit=limit
            )
        return head + ("\n" + render_items(top, max_chars=SUMMARY_CHARS) if top else "")

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
            self,
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
