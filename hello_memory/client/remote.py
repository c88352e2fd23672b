"""``RemoteMemory``: the :class:`~hello_memory.MemoryManager` API over HTTP, against ``hello-memory serve``.

Same method names, arguments, return types and errors as ``MemoryManager`` (both satisfy
:class:`hello_memory.api.MemoryAPI`, and ``MemoryAdminAPI`` through :mod:`hello_memory.client.admin`), so
switching is one line. The service validates as the library does and decides what a key reaches (its user).

Adds are safe to retry: every memory is sent with a ``memory_id`` (the caller's, else a fresh ``uuid4``;
a conversation's turns have ids derived from it), and the service stores an id once. Reads, searches and
adds are retried after a lost reply or a 502/503/504, every call when the service could not be reached
(:mod:`hello_memory.client.transport`); when an add still fails, the same call made again reuses its ids
(:mod:`hello_memory.client.write_ids`), so a retry after a :class:`~hello_memory.errors.ServiceTimeoutError`
stores nothing twice either.

Example:
    >>> from hello_memory.client.remote import RemoteMemory
    >>> mm = RemoteMemory("http://127.0.0.1:8765", api_key="...", user_id="alice")  # doctest: +SKIP
    >>> mm.add("Alice prefers green tea", memory_type="semantic").id                # doctest: +SKIP
    '0b9e…'
    >>> mm.search("what does Alice drink?")[0].item.content                         # doctest: +SKIP
    'Alice prefers green tea'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar, overload
from urllib.parse import quote

from pydantic import SecretStr, TypeAdapter

from hello_memory.api import Messages, Query, TimeRange
from hello_memory.client.admin import RemoteAdmin
from hello_memory.client.transport import DEFAULT_RETRIES, DEFAULT_TIMEOUT, Transport, jsonable
from hello_memory.client.write_ids import PendingIds, fingerprint, name_ids
from hello_memory.context import ContextBlock
from hello_memory.errors import HelloMemoryError, InvalidInputError, ServiceError
from hello_memory.models import (
    ConsolidateReport,
    ForgetReport,
    HistoryEntry,
    MemoryItem,
    MemoryStats,
    MemoryType,
    ScoredMemory,
)
from hello_memory.validation import check_id
from hello_memory.wire import Count, Identity, Summary

T = TypeVar("T")
_ITEM = TypeAdapter(MemoryItem)
_ITEMS = TypeAdapter(list[MemoryItem])
_HITS = TypeAdapter(list[ScoredMemory])
_HISTORY = TypeAdapter(list[HistoryEntry])
_STAT = TypeAdapter(MemoryStats)
_STATS = TypeAdapter(list[MemoryStats])
_COUNTS = TypeAdapter(dict[str, int])
_FORGET = TypeAdapter(ForgetReport)
_CONSOLIDATE = TypeAdapter(ConsolidateReport)
_CONTEXT = TypeAdapter(ContextBlock)
_COUNT = TypeAdapter(Count)
_SUMMARY = TypeAdapter(Summary)
_IDENTITY = TypeAdapter(Identity)
_TIMES = ("created_at", "valid_from")


def _typed(spec: Mapping[str, Any]) -> dict[str, Any]:
    """An add specification as JSON: date-times and enums of the typed arguments (and messages) converted."""
    out = {k: jsonable(v) if k in _TIMES or k in ("memory_type", "modality") else v for k, v in spec.items()}
    if isinstance(out.get("content"), list | tuple):  # a conversation: its messages' times as ISO text
        out["content"] = [{k: jsonable(v) for k, v in m.items()} if isinstance(m, Mapping) else m
                          for m in out["content"]]
    return out


class RemoteMemory(RemoteAdmin):
    """A memory served by a hello-memory service (``hello-memory serve``).

    Args:
        url: the service's base URL, e.g. ``http://127.0.0.1:8765``.
        api_key: the key the service maps to a user; none for a loopback service without keys.
        user_id: the default user of every call; default the key's user (``default_user`` without keys).
        timeout: seconds per call, retries included.
        client: a pre-built ``httpx.Client`` (tests, custom TLS).
        retries: further attempts of a request that failed on the way (see :mod:`hello_memory.client.transport`).

    Nothing connects until the first call; :meth:`close` releases the connection pool.
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | SecretStr | None = None,
        user_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        client: Any = None,
        retries: int = DEFAULT_RETRIES,
    ) -> None:
        self._http = Transport(url, api_key=api_key, timeout=timeout, client=client, retries=retries)
        self.url = self._http.url
        self._user_id = user_id
        self._identity: Identity | None = None
        self._pending = PendingIds()

    # -- plumbing ---------------------------------------------------------------------------
    def identity(self) -> Identity:
        """Who the API key is and what the service serves (fetched once)."""
        if self._identity is None:
            self._identity = self._http.call("GET", "/v1/me", _IDENTITY)
        return self._identity

    @property
    def user_id(self) -> str:
        """The default user of every call."""
        return self._user_id if self._user_id is not None else self.identity().user_id

    @property
    def enabled(self) -> tuple[MemoryType, ...]:
        """The memory tiers the service serves."""
        return tuple(self.identity().memory_types)

    def _user(self, user_id: str | None) -> str | None:
        return self._user_id if user_id is None else user_id

    def _call(
        self,
        method: str,
        path: str,
        adapter: TypeAdapter[T],
        *,
        body: Mapping[str, Any] | None = None,
        idempotent: bool | None = None,
        **params: Any,
    ) -> T:
        """One request; the response validated as ``adapter``'s type (the library's models)."""
        return self._http.call(method, path, adapter, body=body, params=params, idempotent=idempotent)

    def _add(
        self, path: str, adapter: TypeAdapter[T], body: dict[str, Any], specs: list[dict[str, Any]]
    ) -> T:
        """POST an add with every memory in ``specs`` named by an id, so that repeating it is a no-op.

        Memories without a ``memory_id`` get the ids a failed identical call used, else fresh ones;
        if this call fails too, its ids are kept for the next identical call.
        """
        unnamed = [spec for spec in specs if spec.get("memory_id") is None]
        key = fingerprint(path, body)
        ids = self._pending.take(key, len(unnamed))
        for spec, memory_id in zip(unnamed, ids, strict=True):
            spec["memory_id"] = memory_id
        try:
            return self._call("POST", path, adapter, body=body, idempotent=True)
        except HelloMemoryError as e:
            if ids:
                self._pending.keep(key, ids)
                if isinstance(e, ServiceError):
                    name_ids(e, ids)
            raise

    def close(self) -> None:
        """Release the connection pool; idempotent."""
        self._http.close()

    def __enter__(self) -> RemoteMemory:
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
        self, content: str | Messages, *, memory_type: str | MemoryType | None = None, importance: float = 0.5,
        user_id: str | None = None, session_id: str | None = None, created_at: datetime | str | None = None,
        metadata: dict[str, Any] | None = None, memory_id: str | None = None, **fields: Any,
    ) -> MemoryItem | list[MemoryItem]:
        """Store one memory, or a conversation's turns (see :meth:`hello_memory.api.MemoryAPI.add`)."""
        body = _typed({**fields, "content": content, "memory_type": memory_type, "importance": importance,
                       "user_id": self._user(user_id), "session_id": session_id, "created_at": created_at,
                       "metadata": metadata, "memory_id": memory_id})
        if isinstance(content, list | tuple):  # the service derives the turns' ids: a retry names them too
            return self._add("/v1/memories", _ITEMS, body, [])
        return self._add("/v1/memories", _ITEM, body, [body])

    def add_many(self, items: Iterable[dict[str, Any]]) -> list[MemoryItem]:
        """Store many memories at once; all are validated before any is stored."""
        if isinstance(items, str | bytes | dict) or not isinstance(items, Iterable):
            raise InvalidInputError("items must be an iterable of dicts, each with at least 'content'")
        specs = []
        for n, spec in enumerate(items):
            if not isinstance(spec, dict):
                raise InvalidInputError(f"item {n} must be a dict with at least 'content'")
            if "content" not in spec:
                raise InvalidInputError(f"item {n} has no 'content'", field="content")
            spec = _typed(spec)
            if spec.get("user_id") is None and self._user_id is not None:
                spec["user_id"] = self._user_id
            specs.append(spec)
        if not specs:
            return []
        return self._add("/v1/memories/batch", _ITEMS, {"items": specs}, specs)

    # -- read -------------------------------------------------------------------------------
    def get(self, memory_id: str, *, user_id: str | None = None, include_deleted: bool = False) -> MemoryItem:
        """One memory of the user; ``NotFoundError`` if absent or another user's."""
        return self._call(
            "GET",
            _memory_path(memory_id),
            _ITEM,
            user_id=self._user(user_id),
            include_deleted=include_deleted,
        )

    def get_all(
        self,
        *,
        user_id: str | None = None,
        memory_type: str | MemoryType | None = None,
        limit: int | None = None,
        include_deleted: bool = False,
    ) -> list[MemoryItem]:
        """The user's memories, newest first."""
        return self._call(
            "GET",
            "/v1/memories",
            _ITEMS,
            user_id=self._user(user_id),
            memory_type=memory_type,
            limit=limit,
            include_deleted=include_deleted,
        )

    def search(
        self,
        query: Query,
        *,
        user_id: str | None = None,
        memory_types: Sequence[str | MemoryType] | None = None,
        limit: int = 10,
        min_importance: float = 0.0,
        min_score: float | None = None,
        time_range: TimeRange | None = None,
        session_id: str | None = None,
        reference_time: datetime | str | None = None,
    ) -> list[ScoredMemory]:
        """One ranked list across tiers by final score (see :meth:`hello_memory.MemoryManager.search`)."""
        body = {
            "query": _conversation(query),
            "user_id": self._user(user_id),
            "memory_types": jsonable(memory_types) if memory_types is not None else None,
            "limit": limit,
            "min_importance": min_importance,
            "min_score": min_score,
            "time_range": jsonable(time_range) if time_range is not None else None,
            "session_id": session_id,
            "reference_time": jsonable(reference_time),
        }
        return self._call("POST", "/v1/memories/search", _HITS, body=body, idempotent=True)

    def history(self, memory_id: str, *, user_id: str | None = None) -> list[HistoryEntry]:
        """Every change of one memory, oldest first; ``NotFoundError`` as ``get`` (also after ``remove``)."""
        return self._call("GET", _memory_path(memory_id, "history"), _HISTORY, user_id=self._user(user_id))

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
        body = {
            "content": content,
            "importance": importance,
            "metadata": metadata,
            "user_id": self._user(user_id),
        }
        return self._call("PATCH", _memory_path(memory_id), _ITEM, body=body)

    def remove(self, memory_id: str, *, user_id: str | None = None) -> None:
        """Delete a memory from every store, history and graph edges included (not restorable)."""
        self._http.request("DELETE", _memory_path(memory_id), params={"user_id": self._user(user_id)})

    def restore(self, memory_id: str, *, user_id: str | None = None) -> MemoryItem:
        """Undo a soft delete (``forget`` without ``purge``)."""
        return self._call(
            "POST", _memory_path(memory_id, "restore"), _ITEM, body={"user_id": self._user(user_id)}
        )

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
        body = {
            "strategy": strategy,
            "threshold": threshold,
            "max_age_days": max_age_days,
            "capacity": capacity,
            "memory_types": jsonable(memory_types) if memory_types is not None else None,
            "user_id": self._user(user_id),
            "purge": purge,
        }
        return self._call("POST", "/v1/memories/forget", _FORGET, body=body)

    def consolidate(
        self,
        from_type: str | MemoryType = "working",
        to_type: str | MemoryType = "episodic",
        importance_threshold: float = 0.7,
        *,
        user_id: str | None = None,
    ) -> ConsolidateReport:
        """Promote important memories to a longer-lived tier, atomically and de-duplicated."""
        body = {
            "from_type": jsonable(from_type),
            "to_type": jsonable(to_type),
            "importance_threshold": importance_threshold,
            "user_id": self._user(user_id),
        }
        return self._call("POST", "/v1/memories/consolidate", _CONSOLIDATE, body=body)

    def clear_all(self, user_id: str | None = None) -> int:
        """Delete all of one user's memories (never another user's); returns how many."""
        return self._call("POST", "/v1/memories/clear", _COUNT, body={"user_id": self._user(user_id)}).count

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Remove every memory of ``user_id`` and their default knowledge base ``docs_<user>``; counts."""
        return self._call("DELETE", f"/v1/users/{quote(check_id(user_id, 'user_id'), safe='')}", _COUNTS)

    # -- reports ----------------------------------------------------------------------------
    def stats(self, *, user_id: str | None = None) -> MemoryStats:
        """Counts per tier, deleted count, graph size and the backends in use."""
        return self._call("GET", "/v1/memories/stats", _STAT, user_id=self._user(user_id))

    def all_stats(self) -> list[MemoryStats]:
        """Stats of every user (admin key, or a loopback service without keys)."""
        return self._call("GET", "/v1/users", _STATS)

    def summary(self, limit: int = 10, *, user_id: str | None = None) -> str:
        """A readable summary: counts per tier and the most important memories of each."""
        return self._call(
            "GET", "/v1/memories/summary", _SUMMARY, limit=limit, user_id=self._user(user_id)
        ).summary

    def build_context(
        self,
        query: str,
        *,
        budget_tokens: int = 800,
        floor: float | None = None,
        position: str = "user",
        user_id: str | None = None,
        limit: int = 20,
    ) -> ContextBlock:
        """Relevant memories rendered as labelled evidence within a token budget (DESIGN §7)."""
        body = {
            "query": query,
            "budget_tokens": budget_tokens,
            "floor": floor,
            "position": position,
            "user_id": self._user(user_id),
            "limit": limit,
        }
        return self._call("POST", "/v1/memories/context", _CONTEXT, body=body, idempotent=True)


def _memory_path(memory_id: str, action: str | None = None) -> str:
    """``/v1/memories/<id>[/<action>]`` with the id percent-encoded (validated by the service)."""
    path = f"/v1/memories/{quote(check_id(memory_id, 'memory_id'), safe='')}"
    return f"{path}/{action}" if action else path


def _conversation(query: Any) -> Any:
    """A query as JSON: text as is, a conversation's ``(role, content)`` pairs as lists."""
    if isinstance(query, list | tuple):
        return [jsonable(m) if isinstance(m, tuple) else m for m in query]
    return query
