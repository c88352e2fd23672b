"""``AsyncRemoteMemory`` and its transport: the sync client's requests, retries and ids, on ``httpx.AsyncClient``.

The network is an ``httpx.MockTransport``. The retry cases run on both transports from one table,
the requests of both clients are compared byte for byte, and a request kept waiting by the
"service" leaves the event loop free for the others. Nothing is timed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from hello_memory import AsyncRemoteMemory, RemoteMemory
from hello_memory.client import transport as T
from hello_memory.client import transport_async
from hello_memory.client.attempts import Request
from hello_memory.client.transport_async import AsyncTransport
from hello_memory.errors import InvalidInputError, NotFoundError, ServiceError, ServiceTimeoutError
from hello_memory.models import MemoryItem
from hello_memory.wire import encode

URL = "http://memory.test"
Answer = Callable[[httpx.Request], httpx.Response]


@pytest.fixture(autouse=True)
def _no_waiting(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoffs and Retry-After recorded instead of slept, on both transports."""
    slept: list[float] = []

    async def asleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(T.time, "sleep", slept.append)
    monkeypatch.setattr(transport_async.asyncio, "sleep", asleep)
    return slept


def _send(kind: str, answer: Answer, request: Request, *, retries: int = 2) -> tuple[bytes, list[str]]:
    """Send ``request`` with the sync or the async transport over ``answer``; its body and the attempts."""
    attempts: list[str] = []

    def handler(sent: httpx.Request) -> httpx.Response:
        attempts.append(sent.method)
        return answer(sent)

    if kind == "sync":
        http = T.Transport(URL, client=httpx.Client(base_url=URL, transport=httpx.MockTransport(handler)),
                           retries=retries)
        return http.send(request).content, attempts
    client = httpx.AsyncClient(base_url=URL, transport=httpx.MockTransport(handler))
    return asyncio.run(AsyncTransport(URL, client=client, retries=retries).send(request)).content, attempts


def _fails(times: int, failure: Answer) -> Answer:
    calls = {"n": 0}

    def answer(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        return failure(request) if calls["n"] <= times else httpx.Response(200, content=b"{}")

    return answer


def _raise(error: type[httpx.HTTPError]) -> Answer:
    def answer(request: httpx.Request) -> httpx.Response:
        raise error("boom", request=request)

    return answer




def _busy(request: httpx.Request) -> httpx.Response:
    return httpx.Response(429, headers={"Retry-After": "3"}, json={"error": {
        "code": "busy", "type": "ServiceError", "message": "user 'bob' has 1 write running"}})


CASES = [  # (the failure, how often, the request, attempts made, raised)
    (_raise(httpx.ConnectError), 2, Request("PATCH", "/v1/memories/m", body={}), 3, None),
    (_raise(httpx.ReadError), 1, Request("GET", "/v1/memories"), 2, None),
    (_raise(httpx.ReadError), 1, Request("PATCH", "/v1/memories/m", body={}), 1, ServiceError),
    (lambda r: httpx.Response(503, text="down"), 2, Request("POST", "/v1/memories/search", body={},
                                                            idempotent=True), 3, None),
    (lambda r: httpx.Response(503, text="down"), 1, Request("POST", "/v1/memories/forget", body={}), 1, ServiceError),
    (_busy, 1, Request("POST", "/v1/memories/batch", body={"items": []}), 2, None),
    (_raise(httpx.ReadTimeout), 1, Request("GET", "/v1/memories"), 1, ServiceTimeoutError),
    (lambda r: httpx.Response(404, content=encode(NotFoundError("gone", object_id="m"))[1].model_dump_json().encode()),
     1, Request("GET", "/v1/memories/m"), 1, NotFoundError),
    (_raise(httpx.ConnectError), 1, Request("POST", "/documents", files={"file": ("a.txt", b"x")}), 1, ServiceError),
]


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize(("failure", "times", "request_", "attempts", "raised"), CASES)
def test_both_transports_retry_the_same_way(kind, failure, times, request_, attempts, raised, _no_waiting):
    if raised is None:
        body, made = _send(kind, _fails(times, failure), request_)
        assert body == b"{}" and len(made) == attempts
    else:
        with pytest.raises(raised):
            _send(kind, _fails(times, failure), request_)
    if failure is not None and request_.path.endswith("batch"):
        assert _no_waiting[0] >= 3.0  # the 429's Retry-After


def _item(content: str, memory_id: str | None = None) -> bytes:
    item = MemoryItem(user_id="u", memory_type="semantic", content=content)
    return (item if memory_id is None else item.model_copy(update={"id": memory_id})).model_dump_json().encode()


def _recorder(bodies: list[dict[str, Any]], answer: Answer | None = None) -> Callable[..., Any]:
    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append({"call": f"{request.method} {request.url.path}", "params": dict(request.url.params),
                       "body": json.loads(request.content) if request.content else None})
        return answer(request) if answer else httpx.Response(200, content=b"[]")

    return handler


def test_both_clients_send_the_same_requests() -> None:
    def script_sync(mm: RemoteMemory) -> None:
        for call in (lambda: mm.get_all(memory_type="episodic", limit=3), lambda: mm.history("m1"),
                     lambda: mm.search([("user", "tea?")], memory_types=["semantic"], limit=2)):
            call()

    async def script_async(mm: AsyncRemoteMemory) -> None:
        await mm.get_all(memory_type="episodic", limit=3)
        await mm.history("m1")
        await mm.search([("user", "tea?")], memory_types=["semantic"], limit=2)

    sync_sent: list[dict[str, Any]] = []
    async_sent: list[dict[str, Any]] = []
    script_sync(RemoteMemory(URL, user_id="u", client=httpx.Client(
        base_url=URL, transport=httpx.MockTransport(_recorder(sync_sent)))))
    asyncio.run(script_async(AsyncRemoteMemory(URL, user_id="u", client=httpx.AsyncClient(
        base_url=URL, transport=httpx.MockTransport(_recorder(async_sent))))))
    assert async_sent == sync_sent and len(sync_sent) == 3


def _lost(bodies: list[dict[str, Any]]) -> Callable[..., Any]:
    def answer(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("dropped", request=request)

    return _recorder(bodies, answer)


def test_a_failed_or_cancelled_add_hands_its_ids_to_the_same_call_again() -> None:
    sent: list[dict[str, Any]] = []
    mm = AsyncRemoteMemory(URL, user_id="u", retries=1,
                           client=httpx.AsyncClient(base_url=URL, transport=httpx.MockTransport(_lost(sent))))

    async def adds() -> None:
        for _ in range(2):
            with pytest.raises(ServiceError, match="reuses memory_id"):
                await mm.add("tea at noon", memory_type="episodic")
        with pytest.raises(ServiceError):
            await mm.add("coffee at ten", memory_type="episodic")

    asyncio.run(adds())
    ids = [s["body"]["memory_id"] for s in sent]
    assert len(ids) == 6 and len(set(ids[:4])) == 1 and ids[4] == ids[5] != ids[0]

    async def cancelled() -> tuple[str, str]:
        seen: list[str] = []
        started, gate = asyncio.Event(), asyncio.Event()

        async def hang(request: httpx.Request) -> httpx.Response:
            seen.append(json.loads(request.content)["memory_id"])
            started.set()
            await gate.wait()
            return httpx.Response(201, content=_item("a note", seen[-1]))

        client = AsyncRemoteMemory(URL, user_id="u", client=httpx.AsyncClient(
            base_url=URL, transport=httpx.MockTransport(hang)))
        task = asyncio.create_task(client.add("a note", memory_type="semantic"))
        await started.wait()
        task.cancel()  # the caller gave up; the service may have stored it
        with pytest.raises(asyncio.CancelledError):
            await task
        gate.set()
        await client.add("a note", memory_type="semantic")
        return seen[0], seen[1]

    first, again = asyncio.run(cancelled())
    assert first == again


def test_the_loop_runs_while_a_request_waits_for_the_service() -> None:
    async def scenario() -> list[str]:
        gate, done = asyncio.Event(), []

        async def service(request: httpx.Request) -> httpx.Response:
            if request.method == "POST":
                await gate.wait()  # a slow write
                return httpx.Response(201, content=_item("slow"))
            return httpx.Response(200, json={"summary": "nothing yet"})

        mm = AsyncRemoteMemory(URL, user_id="u", client=httpx.AsyncClient(
            base_url=URL, transport=httpx.MockTransport(service)))
        slow = asyncio.create_task(mm.add("slow", memory_type="semantic"))
        await asyncio.sleep(0)
        done.append(await mm.summary())
        done.append(str(slow.done()))
        gate.set()
        done.append((await slow).content)
        return done

    assert asyncio.run(scenario()) == ["nothing yet", "False", "slow"]


async def _async_lines(lines: list[str]) -> AsyncIterator[str]:
    for line in lines:
        yield line


def test_export_streams_lines_and_import_sends_them() -> None:
    export = b'{"kind": "hello-memory-export", "users": {}}\n{"item": 1}\n\n{"item": 2}'
    received: list[bytes] = []

    async def service(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/export":
            return httpx.Response(200, content=export)
        received.append(await request.aread())
        return httpx.Response(200, json={"memories": 2, "reembedded": 0})

    async def move() -> list[str]:
        mm = AsyncRemoteMemory(URL, user_id="u", client=httpx.AsyncClient(
            base_url=URL, transport=httpx.MockTransport(service)))
        try:
            lines = [line async for line in mm.export_lines()]
            assert (await mm.import_lines(_async_lines(lines))).memories == 2
            assert (await mm.import_lines(lines)).memories == 2
            with pytest.raises(InvalidInputError, match="line 2"):
                await mm.import_lines(["{}", "two\nlines"])
            return lines
        finally:
            await mm.aclose()

    with pytest.raises(ServiceError, match="no export header"):
        asyncio.run(_first_line(b"<html>login</html>"))
    assert asyncio.run(move()) == ['{"kind": "hello-memory-export", "users": {}}', '{"item": 1}', '{"item": 2}']
    assert received == [b'{"kind": "hello-memory-export", "users": {}}\n{"item": 1}\n{"item": 2}\n'] * 2


async def _first_line(body: bytes) -> str:
    client = httpx.AsyncClient(base_url=URL, transport=httpx.MockTransport(lambda r: httpx.Response(200, content=body)))
    mm = AsyncRemoteMemory(URL, user_id="u", client=client)
    return await anext(mm.export_lines())
