"""One user's long write must not stall the others (issue 27 §1): per-user write slots answered 429
with Retry-After, the client honouring it, and a retried add joining the write still in flight.

The service runs in process (uvicorn in a thread) over an embedder whose passage work waits at a
gate for texts that contain ``SLOW``: the tests decide when a long write ends. Nothing is timed.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from service_inprocess import WAIT, serving

from apps.service.app import create_app
from apps.service.core import ServiceCore
from apps.service.settings import ServiceSettings
from hello_memory import Settings
from hello_memory.client import transport as transport_module
from hello_memory.client.transport import Transport
from hello_memory.errors import ServiceError
from hello_memory.testing.fake_embedder import GatedEmbedder


@dataclass
class Served:
    url: str
    core: ServiceCore
    embedder: GatedEmbedder


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    embedder = GatedEmbedder()
    service = ServiceSettings(user_writes=1, busy_retry_after=1, request_timeout=WAIT, drain_timeout=5)
    core = ServiceCore(Settings(home=tmp_path / "data"), service, embedder=embedder)
    with serving(create_app(core)) as url:
        try:
            yield Served(url, core, embedder)
        finally:
            embedder.gate.set()  # before the server stops: it waits for running operations


def _post_in_thread(url: str, path: str, body: dict, out: dict, timeout: float = WAIT) -> threading.Thread:
    def run() -> None:
        with httpx.Client(base_url=url, timeout=timeout) as client:
            out["response"] = client.post(path, json=body)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _wait_for_gate(embedder: GatedEmbedder) -> None:
    assert embedder.waiting.acquire(timeout=WAIT), "the slow write never reached the embedder"


def test_a_user_over_the_write_limit_gets_429_with_retry_after_and_others_are_not_affected(served):
    slow: dict = {}
    first = _post_in_thread(served.url, "/v1/memories", {
        "content": "SLOW bob's long memory", "memory_type": "episodic", "user_id": "bob",
        "memory_id": str(uuid.uuid4())}, slow)
    _wait_for_gate(served.embedder)
    with httpx.Client(base_url=served.url, timeout=10) as client:
        again = client.post("/v1/memories", json={"content": "bob's second memory", "memory_type": "episodic",
                                                  "user_id": "bob"})
        assert again.status_code == 429, again.text
        assert again.headers["retry-after"] == "1"
        error = again.json()["error"]
        assert error["type"] == "ServiceError" and "bob" in error["message"] and "USER_WRITES" in error["message"]
        # alice writes and searches while bob's write is still running
        added = client.post("/v1/memories", json={"content": "alice's tea at noon", "memory_type": "episodic",
                                                  "user_id": "alice"})
        assert added.status_code == 201, added.text
        hits = client.post("/v1/memories/search", json={"query": "alice's tea at noon", "user_id": "alice"})
        assert hits.status_code == 200 and hits.json()[0]["item"]["content"] == "alice's tea at noon"
        assert client.post("/v1/memories/search", json={"query": "x", "user_id": "bob"}).status_code == 200
    served.embedder.gate.set()
    first.join(WAIT)
    assert slow["response"].status_code in (201, 504)
    for _ in range(int(WAIT * 100)):  # the slot is free once the write has ended
        if served.core.running == 0:
            break
        time.sleep(0.01)
    with httpx.Client(base_url=served.url, timeout=10) as client:
        again = client.post("/v1/memories", json={"content": "bob's second memory", "memory_type": "episodic",
                                                  "user_id": "bob"})
        assert again.status_code == 201, again.text


def test_the_slot_is_held_until_the_write_ends_not_until_its_request_times_out(served):
    served.core.service.request_timeout = 0.5
    out: dict = {}
    first = _post_in_thread(served.url, "/v1/memories", {
        "content": "SLOW carol's memory", "memory_type": "episodic", "user_id": "carol"}, out)
    _wait_for_gate(served.embedder)
    first.join(WAIT)
    assert out["response"].status_code == 504  # request_timeout 0.5 s; the write goes on
    served.core.service.request_timeout = WAIT
    with httpx.Client(base_url=served.url, timeout=10) as client:
        busy = client.post("/v1/memories", json={"content": "carol again", "memory_type": "episodic",
                                                 "user_id": "carol"})
    assert busy.status_code == 429, busy.text


def test_a_retried_add_joins_the_write_in_flight_stores_once_and_embeds_once(served):
    body = {"content": "SLOW dave's one long memory", "memory_type": "episodic", "user_id": "dave",
            "memory_id": str(uuid.uuid4())}
    served.core.service.request_timeout = 0.5
    first: dict = {}
    t1 = _post_in_thread(served.url, "/v1/memories", body, first)
    _wait_for_gate(served.embedder)
    t1.join(WAIT)
    assert first["response"].status_code == 504  # the request's timeout; the write goes on
    served.core.service.request_timeout = WAIT
    retry: dict = {}
    t2 = _post_in_thread(served.url, "/v1/memories", body, retry)  # the same add, retried
    assert not served.embedder.waiting.acquire(timeout=0.5), "the retry started a second embedding"
    assert t2.is_alive()  # it waits for the first write
    served.embedder.gate.set()
    t2.join(WAIT)
    assert retry["response"].status_code == 201, retry["response"].text
    assert retry["response"].json()["id"] == body["memory_id"]
    assert served.embedder.passages_of("dave's one long memory") == 1
    with httpx.Client(base_url=served.url, timeout=10) as client:
        stored = client.get("/v1/memories", params={"user_id": "dave"}).json()
    assert [m["id"] for m in stored] == [body["memory_id"]]


def test_a_joined_retry_returns_the_first_writes_result(served):
    body = {"content": "SLOW erin's memory", "memory_type": "episodic", "user_id": "erin",
            "memory_id": str(uuid.uuid4())}
    first: dict = {}
    retry: dict = {}
    t1 = _post_in_thread(served.url, "/v1/memories", body, first)
    _wait_for_gate(served.embedder)
    t2 = _post_in_thread(served.url, "/v1/memories", body, retry)
    time.sleep(0.2)
    served.embedder.gate.set()
    t1.join(WAIT)
    t2.join(WAIT)
    assert first["response"].status_code == retry["response"].status_code == 201, retry["response"].text
    assert first["response"].json() == retry["response"].json()
    assert served.embedder.passages_of("erin's memory") == 1


def test_the_client_waits_retry_after_then_retries_a_429(monkeypatch):
    answers = [httpx.Response(429, headers={"Retry-After": "2"}, json={"error": {
        "code": "busy", "type": "ServiceError", "message": "user 'bob' has 1 write running"}}),
        httpx.Response(200, json={"ok": True})]
    sent: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return answers.pop(0)

    slept: list[float] = []
    monkeypatch.setattr(transport_module.time, "sleep", slept.append)
    client = httpx.Client(base_url="http://svc", transport=httpx.MockTransport(handler))
    http = Transport("http://svc", client=client, timeout=30)
    assert http.request("POST", "/v1/memories/batch", body={"items": []}) == b'{"ok":true}'
    assert len(sent) == 2 and slept and slept[0] >= 2.0  # not idempotent, but a 429 did nothing


def test_the_client_gives_up_on_429_when_retry_after_passes_its_deadline(monkeypatch):
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, headers={"Retry-After": "30"}, json={"error": {
            "code": "busy", "type": "ServiceError", "message": "user 'bob' has 1 write running"}})

    monkeypatch.setattr(transport_module.time, "sleep", lambda s: None)
    client = httpx.Client(base_url="http://svc", transport=httpx.MockTransport(handler))
    http = Transport("http://svc", client=client, timeout=5)
    with pytest.raises(ServiceError) as caught:
        http.request("POST", "/v1/memories", body={"content": "x"})
    assert caught.value.status == 429 and "bob" in str(caught.value)


WRITES = [  # every write route of a user's memory, as (method, path, body)
    ("POST", "/v1/memories", {"content": "x", "memory_type": "episodic", "user_id": "dave"}),
    ("POST", "/v1/memories/batch", {"items": [{"content": "x", "memory_type": "episodic", "user_id": "dave"}]}),
    ("POST", "/v1/memories/forget", {"strategy": "importance_based", "threshold": 0.1, "user_id": "dave"}),
    ("POST", "/v1/memories/consolidate", {"from_type": "working", "to_type": "episodic", "user_id": "dave"}),
    ("POST", "/v1/memories/clear", {"user_id": "dave"}),
    ("PATCH", "/v1/memories/{mid}", {"importance": 0.9, "user_id": "dave"}),
    ("POST", "/v1/memories/{mid}/restore", {"user_id": "dave"}),
    ("DELETE", "/v1/memories/{mid}?user_id=dave", None),
    ("DELETE", "/v1/users/dave", None),
]


@pytest.mark.parametrize(("method", "path", "body"), WRITES, ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_every_write_passes_the_users_admission(served, method: str, path: str, body: dict | None) -> None:
    with httpx.Client(base_url=served.url, timeout=10) as client:
        made = client.post("/v1/memories", json={"content": "dave's memory", "memory_type": "episodic",
                                                 "user_id": "dave"})
        assert made.status_code == 201, made.text
        release = served.core.slots.take("user 'dave'")  # dave's one write slot is taken
        try:
            answer = client.request(method, path.format(mid=made.json()["id"]), json=body)
            assert answer.status_code == 429, (path, answer.text)
        finally:
            release()
        assert client.request(method, path.format(mid=made.json()["id"]), json=body).status_code < 400
