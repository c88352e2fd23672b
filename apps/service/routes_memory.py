"""Memory endpoints: ``MemoryManager``'s methods, one route each, scoped to the API key's user.

A key acts for its own user; naming another ``user_id`` needs an admin key (403 otherwise), and an
id of another user's memory is ``not_found`` exactly as in process. Writes take a slot of their
user (429 over ``user_writes``); an add sent again while its first try runs joins it
(:mod:`apps.service.admission`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, TypeAdapter

from apps.service import users
from apps.service.core import ServiceCore
from apps.service.deps import Who, core_of
from apps.service.models import (
    AddMany,
    AddMemory,
    BatchItem,
    BuildContext,
    Consolidate,
    Forget,
    ForUser,
    SearchMemories,
    UpdateMemory,
)
from apps.service.routing import ServiceRoute
from hello_memory import __version__
from hello_memory.context import ContextBlock
from hello_memory.models import (
    ConsolidateReport,
    ForgetReport,
    HistoryEntry,
    MemoryItem,
    MemoryStats,
    MemoryType,
    ScoredMemory,
)
from hello_memory.wire import Count, Identity, Summary

router = APIRouter(prefix="/v1", route_class=ServiceRoute)
Core = Annotated[ServiceCore, Depends(core_of)]
UserParam = Annotated[str | None, Query(description="the user to act for; default the API key's user")]
_MEDIA_KEYS = ("file_path", "source_path")
T = TypeVar("T")


def json_response(value: Any, adapter: TypeAdapter[Any] | None = None, status: int = 200) -> Response:
    """``value`` serialised once by pydantic (no second validation pass by FastAPI)."""
    if adapter is None:
        assert isinstance(value, BaseModel)
        content = value.model_dump_json().encode()
    else:
        content = adapter.dump_json(value)
    return Response(content=content, status_code=status, media_type="application/json")


_ITEMS = TypeAdapter(list[MemoryItem])
_ADDED: TypeAdapter[MemoryItem | list[MemoryItem]] = TypeAdapter(MemoryItem | list[MemoryItem])
_HITS = TypeAdapter(list[ScoredMemory])
_HISTORY = TypeAdapter(list[HistoryEntry])
_STATS = TypeAdapter(list[MemoryStats])
_COUNTS = TypeAdapter(dict[str, int])


def _check_media(core: ServiceCore, spec: dict[str, Any]) -> None:
    """A perceptual memory's file is read (hashed) by the service: only under the allowed roots."""
    if spec.get("memory_type") not in (MemoryType.PERCEPTUAL, MemoryType.PERCEPTUAL.value):
        return
    meta = spec.get("metadata") or {}
    paths = [spec.get("source_path"), *(meta.get(k) for k in _MEDIA_KEYS if isinstance(meta, dict))]
    for path in paths:
        if isinstance(path, str) and path:
            core.resolve_root_path(path, "source_path")


def _spec(who: Any, body: AddMemory | BatchItem) -> dict[str, Any]:
    spec = body.fields()
    spec["user_id"] = who.user(body.user_id)
    return spec


def _media_checked(core: ServiceCore, specs: list[dict[str, Any]], add: Callable[..., T]) -> Callable[..., T]:
    """``add`` after the media paths of ``specs`` passed :func:`_check_media` (a file-system check: in
    the worker thread that runs the add, never on the event loop)."""

    def checked(*args: Any, **kwargs: Any) -> T:
        for spec in specs:
            _check_media(core, spec)
        return add(*args, **kwargs)

    return checked


@router.get("/me", response_model=Identity, tags=["service"], summary="Who the API key is")
async def me(core: Core, who: Who) -> Response:
    identity = Identity(
        user_id=who.user_id, admin=who.admin,
        namespaces=None if who.namespaces is None else sorted(who.namespaces),
        memory_types=list(core.memory.enabled), embedder=core.embedder.name, version=__version__,
        llm=core.llm.name if core.llm is not None else None,
    )
    return json_response(identity)


def writer(user_id: str) -> str:
    """The owner of a write's slot (:class:`~apps.service.admission.WriteSlots`)."""
    return f"user {user_id!r}"


def _same_call(route: str, users: set[str], body: BaseModel) -> tuple[str, ...] | None:
    """The key under which a retry of this add joins its first try (same users, same body); ``None``
    for a body too deep to serialise (the write gate refuses it)."""
    try:
        digest = hashlib.sha256(body.model_dump_json().encode()).hexdigest()
    except (ValueError, RecursionError):  # pydantic's serialisation error is a ValueError
        return None
    return (route, *sorted(users), digest)


@router.post("/memories", response_model=MemoryItem | list[MemoryItem], status_code=201, tags=["memories"],
             summary="add (a text: the memory; a conversation: its turns)")
async def add(body: AddMemory, core: Core, who: Who) -> Response:
    spec = _spec(who, body)
    user = spec["user_id"]
    named = body.memory_id is not None or isinstance(body.content, list)  # a turn's id derives from its message
    added = await core.run(_media_checked(core, [spec], core.memory.add), body.text(), writer=writer(user),
                           join=_same_call("add", {user}, body) if named else None, **spec)
    return json_response(added, _ADDED, 201)


@router.post("/memories/batch", response_model=list[MemoryItem], status_code=201, tags=["memories"],
             summary="add_many")
async def add_many(body: AddMany, core: Core, who: Who) -> Response:
    specs = [{**_spec(who, one), "content": one.content} for one in body.items]
    users = {spec["user_id"] for spec in specs} or {who.user_id}
    owner = next(iter(users)) if len(users) == 1 else who.user_id
    named = bool(body.items) and all(one.memory_id is not None for one in body.items)
    items = await core.run(_media_checked(core, specs, core.memory.add_many), specs, writer=writer(owner),
                           join=_same_call("add_many", users, body) if named else None)
    return json_response(items, _ITEMS, 201)


@router.get("/memories", response_model=list[MemoryItem], tags=["memories"], summary="get_all")
async def get_all(
    core: Core, who: Who, user_id: UserParam = None, memory_type: MemoryType | None = None,
    limit: int | None = None, include_deleted: bool = False,
) -> Response:
    items = await core.run(core.memory.get_all, user_id=who.user(user_id), memory_type=memory_type, limit=limit,
                           include_deleted=include_deleted)
    return json_response(items, _ITEMS)


@router.post("/memories/search", response_model=list[ScoredMemory], tags=["memories"], summary="search")
async def search(body: SearchMemories, core: Core, who: Who) -> Response:
    args = body.model_dump(exclude={"query", "user_id"}, exclude_unset=True)
    hits = await core.run(core.memory.search, body.query, user_id=who.user(body.user_id), **args)
    return json_response(hits, _HITS)


@router.post("/memories/forget", response_model=ForgetReport, tags=["memories"], summary="forget")
async def forget(body: Forget, core: Core, who: Who) -> Response:
    args = body.model_dump(exclude={"user_id"})
    user = who.user(body.user_id)
    return json_response(await core.run(core.memory.forget, user_id=user, writer=writer(user), **args))


@router.post("/memories/consolidate", response_model=ConsolidateReport, tags=["memories"], summary="consolidate")
async def consolidate(body: Consolidate, core: Core, who: Who) -> Response:
    user = who.user(body.user_id)
    report = await core.run(core.memory.consolidate, body.from_type, body.to_type, body.importance_threshold,
                            user_id=user, writer=writer(user))
    return json_response(report)


@router.post("/memories/clear", response_model=Count, tags=["memories"], summary="clear_all")
async def clear_all(body: ForUser, core: Core, who: Who) -> Response:
    user = who.user(body.user_id)
    return json_response(Count(count=await core.run(core.memory.clear_all, user, writer=writer(user))))


@router.post("/memories/context", response_model=ContextBlock, tags=["memories"], summary="build_context")
async def build_context(body: BuildContext, core: Core, who: Who) -> Response:
    args = body.model_dump(exclude={"query", "user_id"})
    return json_response(await core.run(core.memory.build_context, body.query, user_id=who.user(body.user_id),
                                        **args))


@router.get("/memories/stats", response_model=MemoryStats, tags=["memories"], summary="stats")
async def stats(core: Core, who: Who, user_id: UserParam = None) -> Response:
    return json_response(await core.run(core.memory.stats, user_id=who.user(user_id)))


@router.get("/memories/summary", response_model=Summary, tags=["memories"], summary="summary")
async def summary(core: Core, who: Who, limit: int = 10, user_id: UserParam = None) -> Response:
    text = await core.run(core.memory.summary, limit, user_id=who.user(user_id))
    return json_response(Summary(summary=text))


@router.get("/memories/{memory_id:path}/history", response_model=list[HistoryEntry], tags=["memories"],
            summary="history")
async def history(memory_id: str, core: Core, who: Who, user_id: UserParam = None) -> Response:
    return json_response(await core.run(core.memory.history, memory_id, user_id=who.user(user_id)), _HISTORY)


@router.post("/memories/{memory_id:path}/restore", response_model=MemoryItem, tags=["memories"], summary="restore")
async def restore(memory_id: str, body: ForUser, core: Core, who: Who) -> Response:
    user = who.user(body.user_id)
    return json_response(await core.run(core.memory.restore, memory_id, user_id=user, writer=writer(user)))


@router.get("/memories/{memory_id:path}", response_model=MemoryItem, tags=["memories"], summary="get")
async def get(memory_id: str, core: Core, who: Who, user_id: UserParam = None, include_deleted: bool = False
              ) -> Response:
    item = await core.run(core.memory.get, memory_id, user_id=who.user(user_id), include_deleted=include_deleted)
    return json_response(item)


@router.patch("/memories/{memory_id:path}", response_model=MemoryItem, tags=["memories"], summary="update")
async def update(memory_id: str, body: UpdateMemory, core: Core, who: Who) -> Response:
    user = who.user(body.user_id)
    item = await core.run(core.memory.update, memory_id, body.content, body.importance, body.metadata,
                          user_id=user, writer=writer(user))
    return json_response(item)


@router.delete("/memories/{memory_id:path}", status_code=204, tags=["memories"], summary="remove")
async def remove(memory_id: str, core: Core, who: Who, user_id: UserParam = None) -> Response:
    user = who.user(user_id)
    await core.run(core.memory.remove, memory_id, user_id=user, writer=writer(user))
    return Response(status_code=204)


@router.delete("/users/{user_id:path}", response_model=dict[str, int], tags=["users"],
               summary="forget_user: memories and the default knowledge base docs_<user>")
async def forget_user(user_id: str, core: Core, who: Who) -> Response:
    user = who.user(user_id)
    return json_response(await core.run(users.forget_user, core, user, writer=writer(user)), _COUNTS)


@router.get("/users", response_model=list[MemoryStats], tags=["users"], summary="stats of every user (admin)")
async def all_stats(core: Core, who: Who) -> Response:
    who.require_admin("the stats of every user")

    def collect() -> list[MemoryStats]:
        return [core.memory.stats(user_id=u) for u in sorted(core.memory.bundle.records.users())]

    return json_response(await core.run(collect), _STATS)
