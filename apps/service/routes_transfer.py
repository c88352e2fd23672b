"""Whole-store endpoints: export, import and graph reindex (``MemoryAdminAPI`` over HTTP).

An API key reaches only its own user: its export holds that user alone (naming another is 403),
an import line of another user is refused with 403 before anything is stored (:mod:`apps.service.spool`),
and its reindex rebuilds its own user's graph. The admin key, and a loopback service without keys,
reach every user. Exports stream (JSON Lines, produced in batches in worker threads), imports are
uploads under the upload body limit, and all three run under ``transfer_timeout``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import StreamingResponse

from apps.service.auth import Principal
from apps.service.core import ServiceCore
from apps.service.deps import Who, core_of
from apps.service.models import Export, ForUser
from apps.service.routes_memory import json_response, writer
from apps.service.routing import ServiceRoute
from apps.service.spool import ImportSpool
from hello_memory.models import ImportReport, ReindexReport

router = APIRouter(prefix="/v1", tags=["whole store"], route_class=ServiceRoute)
Core = Annotated[ServiceCore, Depends(core_of)]
JSON_LINES = "application/x-ndjson"
BATCH_CHARS = 1 << 20
"""About how much of an export one worker-thread call produces (one chunk of the response)."""


def _export_users(who: Principal, users: list[str] | None) -> list[str] | None:
    """The users an export may hold: any for the admin (``None`` = all), else the key's own."""
    if who.admin:
        return users
    return [who.user_id] if users is None else [who.user(u) for u in users]


def _batches(lines: Iterator[str]) -> Callable[[], bytes]:
    """A function returning the next lines of ``lines`` as one chunk of bytes (empty at the end)."""

    def take() -> bytes:
        out: list[str] = []
        size = 0
        for line in lines:
            out.append(line + "\n")
            size += len(line)
            if size >= BATCH_CHARS:
                break
        return "".join(out).encode("utf-8")

    return take


@router.post(
    "/export",
    summary="export_lines (JSON Lines, streamed)",
    response_class=StreamingResponse,
    responses={200: {"content": {JSON_LINES: {}}, "description": "a header line, then one line per memory"}},
)
async def export(body: Export, core: Core, who: Who) -> StreamingResponse:
    users = _export_users(who, body.users)
    lines = await core.run(core.memory.export_lines, vectors=body.vectors, users=users)
    take = _batches(lines)
    first = await core.run(take, timeout=core.service.transfer_timeout)  # errors before 200 keep their status

    async def stream() -> AsyncIterator[bytes]:
        # An error after this point aborts the response: the client sees a reply that broke off,
        # never a shorter export that looks complete.
        chunk = first
        while chunk:
            yield chunk
            chunk = await core.run(take, timeout=core.service.transfer_timeout)

    return StreamingResponse(stream(), media_type=JSON_LINES)


@router.post("/import", response_model=ImportReport, summary="import_lines (upload of an export)")
async def import_lines(
    request: Request,
    core: Core,
    who: Who,
    reembed: Annotated[bool, Query(description="embed again when the export's embedder differs")] = False,
) -> Response:
    spool = ImportSpool(who.user)
    try:
        async for chunk in request.stream():
            if chunk:
                await anyio.to_thread.run_sync(spool.feed, chunk, limiter=core.limiter)
        # raises the first refusal, once the whole body was read; writes the last line: in a worker thread
        lines = await anyio.to_thread.run_sync(spool.finish, limiter=core.limiter)
    except BaseException:
        spool.close()
        raise
    report = await core.run(core.memory.import_lines, lines, reembed=reembed, timeout=core.service.transfer_timeout,
                            writer=writer(who.user_id))
    return json_response(report)


@router.post("/graph/reindex", response_model=ReindexReport, summary="reindex_graph")
async def reindex_graph(body: ForUser, core: Core, who: Who) -> Response:
    user = None if who.admin and body.user_id is None else who.user(body.user_id)
    report = await core.run(core.memory.reindex_graph, user, timeout=core.service.transfer_timeout,
                            writer=writer(user or who.user_id))
    return json_response(report)
