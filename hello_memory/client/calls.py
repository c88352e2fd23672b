"""The memory API as HTTP calls: one function per operation, giving the request and how to read its reply.

Both remote clients — :class:`~hello_memory.client.remote.RemoteMemory` and
:class:`~hello_memory.client.remote_async.AsyncRemoteMemory` — build their requests here and only
send them (one with ``httpx.Client``, the other with ``httpx.AsyncClient``): the paths, bodies,
query strings, which calls are safe to repeat and which memories get a client-side id are written
once. Nothing here does I/O. ``user`` is the user a call names (``None``: the API key's user).

Example:
    >>> call = get("0b9e2c4e-1f7a-4e0c-9a53-6b1f4c3d2e10", user="alice", include_deleted=False)
    >>> call.request.call, dict(call.request.params or {})
    ('GET /v1/memories/0b9e2c4e-1f7a-4e0c-9a53-6b1f4c3d2e10', {'user_id': 'alice', 'include_deleted': False})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import TypeAdapter

from hello_memory import models
from hello_memory.client import replies
from hello_memory.client.attempts import Request
from hello_memory.client.encoding import jsonable
from hello_memory.context import ContextBlock
from hello_memory.errors import InvalidInputError
from hello_memory.validation import check_flag, check_id
from hello_memory.wire import Count, Identity, Summary

T = TypeVar("T")
Types = Sequence[str | models.MemoryType] | None
JSON_LINES = "application/x-ndjson"
TRANSFER_TIMEOUT = 900.0
"""Seconds an export may wait for its next lines, and an import or a reindex for its reply."""
Added = models.MemoryItem | list[models.MemoryItem]
_ADDED: TypeAdapter[Added] = TypeAdapter(Added)
_TIMES = ("created_at", "valid_from")


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One operation: its request, the type of its reply (``None``: no body) and, for an add, the
    memory specifications that are sent with a ``memory_id`` (:mod:`hello_memory.client.write_ids`)."""

    request: Request
    adapter: TypeAdapter[T] | None
    named: list[dict[str, Any]] | None = None

    def read(self, reply: replies.Reply, url: str) -> T:
        """The reply as the call's type (a :class:`~hello_memory.errors.ServiceError` when it is not one)."""
        if self.adapter is None:
            return None  # type: ignore[return-value]  # Call[None]: a 204
        return replies.value(self.adapter, reply, url=url, call=self.request.call)


def _call(method: str, path: str, kind: Any, **request: Any) -> Call[Any]:
    return Call(Request(method, path, **request), _adapter(kind))


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    """One ``TypeAdapter`` per reply type (building one costs far more than a call's encoding)."""
    return TypeAdapter(kind)


# -- add ----------------------------------------------------------------------------------------
def add(content: Any, user: str | None, arguments: Mapping[str, Any]) -> Call[Added]:
    """``add(content, **arguments)``: a text is sent with a ``memory_id`` (a conversation's turns get
    theirs from the service, which derives them, so a retry names them too)."""
    body = _typed({**arguments, "content": content, "user_id": user})
    named: list[dict[str, Any]] = [] if isinstance(content, list | tuple) else [body]
    return Call(Request("POST", "/v1/memories", body=body, idempotent=True), _ADDED, named)


def add_many(items: Iterable[dict[str, Any]], user: str | None) -> Call[list[models.MemoryItem]] | None:
    """Every item checked to be an add's arguments (``None``: no item, nothing to send)."""
    if isinstance(items, str | bytes | dict) or not isinstance(items, Iterable):
        raise InvalidInputError("items must be an iterable of dicts, each with at least 'content'")
    specs = []
    for n, spec in enumerate(items):
        if not isinstance(spec, dict):
            raise InvalidInputError(f"item {n} must be a dict with at least 'content'")
        if "content" not in spec:
            raise InvalidInputError(f"item {n} has no 'content'", field="content")
        spec = _typed(spec)
        if spec.get("user_id") is None and user is not None:
            spec["user_id"] = user
        specs.append(spec)
    if not specs:
        return None
    request = Request("POST", "/v1/memories/batch", body={"items": specs}, idempotent=True)
    return Call(request, _adapter(list[models.MemoryItem]), specs)


def _typed(spec: Mapping[str, Any]) -> dict[str, Any]:
    """An add specification as JSON: date-times and enums of the typed arguments (and messages) converted."""
    out = {k: jsonable(v) if k in _TIMES or k in ("memory_type", "modality") else v for k, v in spec.items()}
    if isinstance(out.get("content"), list | tuple):  # a conversation: its messages' times as ISO text
        out["content"] = [{k: jsonable(v) for k, v in m.items()} if isinstance(m, Mapping) else m
                          for m in out["content"]]
    return out


# -- read ---------------------------------------------------------------------------------------
def identity() -> Call[Identity]:
    """``GET /v1/me``: who the API key is and what the service serves."""
    return _call("GET", "/v1/me", Identity)


def get(memory_id: str, *, user: str | None, include_deleted: bool) -> Call[models.MemoryItem]:
    """One memory."""
    params = {"user_id": user, "include_deleted": include_deleted}
    return _call("GET", _memory_path(memory_id), models.MemoryItem, params=params)


def get_all(*, user: str | None, memory_type: str | models.MemoryType | None, limit: int | None,
            include_deleted: bool) -> Call[list[models.MemoryItem]]:
    """The user's memories."""
    params = {"user_id": user, "memory_type": memory_type, "limit": limit, "include_deleted": include_deleted}
    return _call("GET", "/v1/memories", list[models.MemoryItem], params=params)


def search(query: Any, *, user: str | None, memory_types: Types, limit: int, min_importance: float,
           min_score: float | None, time_range: Any, session_id: str | None,
           reference_time: datetime | str | None) -> Call[list[models.ScoredMemory]]:
    """A search (a ``POST``, safe to repeat)."""
    body = {
        "query": _conversation(query), "user_id": user, "memory_types": _types(memory_types), "limit": limit,
        "min_importance": min_importance, "min_score": min_score,
        "time_range": jsonable(time_range) if time_range is not None else None, "session_id": session_id,
        "reference_time": jsonable(reference_time),
    }
    return _call("POST", "/v1/memories/search", list[models.ScoredMemory], body=body, idempotent=True)


def history(memory_id: str, *, user: str | None) -> Call[list[models.HistoryEntry]]:
    """A memory's history."""
    return _call("GET", _memory_path(memory_id, "history"), list[models.HistoryEntry], params={"user_id": user})


# -- change -------------------------------------------------------------------------------------
def update(memory_id: str, content: str | None, importance: float | None, metadata: dict[str, Any] | None, *,
           user: str | None) -> Call[models.MemoryItem]:
    """A change of content, importance and/or metadata."""
    body = {"content": content, "importance": importance, "metadata": metadata, "user_id": user}
    return _call("PATCH", _memory_path(memory_id), models.MemoryItem, body=body)


def remove(memory_id: str, *, user: str | None) -> Call[None]:
    """A deletion (204, no body)."""
    return Call(Request("DELETE", _memory_path(memory_id), params={"user_id": user}), None)


def restore(memory_id: str, *, user: str | None) -> Call[models.MemoryItem]:
    """Undo a soft delete."""
    return _call("POST", _memory_path(memory_id, "restore"), models.MemoryItem, body={"user_id": user})


def forget(strategy: str, threshold: float, max_age_days: float, *, capacity: int | None, memory_types: Types,
           user: str | None, purge: bool) -> Call[models.ForgetReport]:
    """Forgetting by a policy."""
    body = {"strategy": strategy, "threshold": threshold, "max_age_days": max_age_days, "capacity": capacity,
            "memory_types": _types(memory_types), "user_id": user, "purge": purge}
    return _call("POST", "/v1/memories/forget", models.ForgetReport, body=body)


def consolidate(from_type: str | models.MemoryType, to_type: str | models.MemoryType, importance_threshold: float, *,
                user: str | None) -> Call[models.ConsolidateReport]:
    """A promotion to a longer-lived tier."""
    body = {"from_type": jsonable(from_type), "to_type": jsonable(to_type),
            "importance_threshold": importance_threshold, "user_id": user}
    return _call("POST", "/v1/memories/consolidate", models.ConsolidateReport, body=body)


def clear_all(user: str | None) -> Call[Count]:
    """All of one user's memories deleted."""
    return _call("POST", "/v1/memories/clear", Count, body={"user_id": user})


def forget_user(user_id: str) -> Call[dict[str, int]]:
    """A user removed from every store (and their default knowledge base)."""
    return _call("DELETE", f"/v1/users/{quote(check_id(user_id, 'user_id'), safe='')}", dict[str, int])


# -- reports ------------------------------------------------------------------------------------
def stats(*, user: str | None) -> Call[models.MemoryStats]:
    """Counts of one user."""
    return _call("GET", "/v1/memories/stats", models.MemoryStats, params={"user_id": user})


def all_stats() -> Call[list[models.MemoryStats]]:
    """Counts of every user (admin)."""
    return _call("GET", "/v1/users", list[models.MemoryStats])


def summary(limit: int, *, user: str | None) -> Call[Summary]:
    """A readable summary."""
    return _call("GET", "/v1/memories/summary", Summary, params={"limit": limit, "user_id": user})


def build_context(query: str, *, budget_tokens: int, floor: float | None, position: str, user: str | None,
                  limit: int) -> Call[ContextBlock]:
    """Relevant memories as a context block (a ``POST``, safe to repeat)."""
    body = {"query": query, "budget_tokens": budget_tokens, "floor": floor, "position": position,
            "user_id": user, "limit": limit}
    return _call("POST", "/v1/memories/context", ContextBlock, body=body, idempotent=True)


# -- whole store --------------------------------------------------------------------------------
def export(*, vectors: bool, users: Sequence[str] | None) -> Request:
    """The streamed export (JSON Lines)."""
    body = {"vectors": check_flag(vectors, "vectors"),
            "users": None if users is None else [check_id(u, "users") for u in users]}
    return Request("POST", "/v1/export", body=body, timeout=TRANSFER_TIMEOUT, idempotent=True)


def import_lines(content: Any, *, reembed: bool) -> Call[models.ImportReport]:
    """An import: ``content`` is the export's lines as a streamed body (:mod:`hello_memory.client.admin`)."""
    return _call("POST", "/v1/import", models.ImportReport, params={"reembed": check_flag(reembed, "reembed")},
                 content=content, content_type=JSON_LINES, timeout=TRANSFER_TIMEOUT)


def reindex_graph(user_id: str | None) -> Call[models.ReindexReport]:
    """A rebuild of the knowledge graph from the records."""
    body = {"user_id": None if user_id is None else check_id(user_id, "user_id")}
    return _call("POST", "/v1/graph/reindex", models.ReindexReport, body=body, timeout=TRANSFER_TIMEOUT,
                 idempotent=True)


def _memory_path(memory_id: str, action: str | None = None) -> str:
    """``/v1/memories/<id>[/<action>]`` with the id percent-encoded (validated by the service)."""
    path = f"/v1/memories/{quote(check_id(memory_id, 'memory_id'), safe='')}"
    return f"{path}/{action}" if action else path


def _types(memory_types: Types) -> Any:
    return jsonable(memory_types) if memory_types is not None else None


def _conversation(query: Any) -> Any:
    """A query as JSON: text as is, a conversation's ``(role, content)`` pairs as lists."""
    if isinstance(query, list | tuple):
        return [jsonable(m) if isinstance(m, tuple) else m for m in query]
    return query
