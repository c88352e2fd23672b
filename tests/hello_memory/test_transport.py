"""The transport's retry policy: which failures are retried, how often, and which never are.

The network is an ``httpx.MockTransport`` that fails as told and counts the attempts; the real
service and a proxy that loses replies are in ``tests/apps/service/test_service_retries.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from hello_memory.client import transport as T
from hello_memory.client.remote import RemoteMemory
from hello_memory.errors import InvalidInputError, ServiceError, ServiceTimeoutError, StoreLockedError
from hello_memory.wire import encode

URL = "http://memory.test"
OK = httpx.Response(200, content=b"{}")


def _transport(fail: Callable[[httpx.Request], httpx.Response], *, retries: int = 2) -> tuple[T.Transport, list[str]]:
    """A Transport whose network is ``fail``; the list collects ``METHOD path`` of every attempt."""
    attempts: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(f"{request.method} {request.url.path}")
        return fail(request)

    client = httpx.Client(base_url=URL, transport=httpx.MockTransport(handler))
    return T.Transport(URL, client=client, retries=retries, timeout=30), attempts


@pytest.fixture(autouse=True)
def _quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(T, "BACKOFF", 0.001)


def _raise(error: type[httpx.HTTPError]) -> Callable[[httpx.Request], httpx.Response]:
    def fail(request: httpx.Request) -> httpx.Response:
        raise error("boom", request=request)

    return fail


Answer = Callable[[httpx.Request], httpx.Response]


def _then_ok(first: Answer, times: int = 1) -> Answer:
    calls = {"n": 0}

    def answer(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        return first(request) if calls["n"] <= times else OK

    return answer


@pytest.mark.parametrize("error", [httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout])
def test_a_request_that_never_left_is_retried_whatever_it_is(error):
    http, attempts = _transport(_then_ok(_raise(error), times=2))
    assert http.request("PATCH", "/v1/memories/m", body={"content": "x"}) == b"{}"
    assert attempts == ["PATCH /v1/memories/m"] * 3


@pytest.mark.parametrize("error", [httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError])
def test_a_lost_reply_is_retried_only_when_the_request_is_idempotent(error):
    http, attempts = _transport(_then_ok(_raise(error)))
    assert http.request("GET", "/v1/memories") == b"{}"
    assert http.request("POST", "/v1/memories/search", body={}, idempotent=True) == b"{}"
    http, attempts = _transport(_then_ok(_raise(error)))
    with pytest.raises(ServiceError, match="cannot reach"):
        http.request("PATCH", "/v1/memories/m", body={"content": "x"})
    assert attempts == ["PATCH /v1/memories/m"]


@pytest.mark.parametrize("status", [502, 503, 504])
def test_gateway_statuses_are_retried_for_idempotent_requests(status):
    http, attempts = _transport(_then_ok(lambda r: httpx.Response(status, text="upstream down"), times=2))
    assert http.request("GET", "/v1/memories") == b"{}" and len(attempts) == 3
    http, attempts = _transport(_then_ok(lambda r: httpx.Response(status, text="upstream down")))
    with pytest.raises(ServiceError) as err:
        http.request("POST", "/v1/memories/forget", body={})
    assert err.value.status == status and len(attempts) == 1


def test_the_services_own_503_comes_back_as_its_error_after_the_retries():
    status, body = encode(StoreLockedError("/data", "pid 7"))
    http, attempts = _transport(lambda r: httpx.Response(status, content=body.model_dump_json().encode()))
    with pytest.raises(StoreLockedError):
        http.request("GET", "/v1/memories")
    assert len(attempts) == 3


@pytest.mark.parametrize("status", [400, 404, 409, 422, 500, 507])
def test_other_statuses_are_never_retried(status):
    http, attempts = _transport(lambda r: httpx.Response(status, text="no"))
    with pytest.raises(ServiceError):
        http.request("GET", "/v1/memories")
    assert len(attempts) == 1


def test_a_reply_that_timed_out_is_not_retried():
    http, attempts = _transport(_raise(httpx.ReadTimeout))
    with pytest.raises(ServiceTimeoutError, match="may still complete"):
        http.request("GET", "/v1/memories")
    assert len(attempts) == 1


def test_retries_zero_means_one_attempt_and_uploads_are_never_repeated():
    http, attempts = _transport(_raise(httpx.ConnectError), retries=0)
    with pytest.raises(ServiceError):
        http.request("GET", "/v1/memories")
    assert len(attempts) == 1
    http, attempts = _transport(_raise(httpx.ConnectError))
    with pytest.raises(ServiceError):
        http.request("POST", "/documents", files={"file": ("a.txt", b"text")}, data={})
    assert len(attempts) == 1


def test_retries_stop_at_the_calls_timeout(monkeypatch):
    attempts: list[str] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request.url.path)
        raise httpx.ConnectError("refused", request=request)

    client = httpx.Client(base_url=URL, transport=httpx.MockTransport(refuse))
    http = T.Transport(URL, client=client, retries=10, timeout=0.01)
    monkeypatch.setattr(T, "BACKOFF", 1.0)  # the first backoff alone is past the call's 10 ms
    with pytest.raises(ServiceError):
        http.request("GET", "/v1/memories")
    assert len(attempts) == 1


@pytest.mark.parametrize("bad", [-1, 11, 2.0, True, "2", None])
def test_retries_out_of_range_is_rejected(bad):
    with pytest.raises(InvalidInputError, match="retries"):
        T.Transport(URL, retries=bad)
    with pytest.raises(InvalidInputError, match="retries"):
        RemoteMemory(URL, retries=bad)


def test_every_add_carries_an_id_and_a_failed_call_hands_its_ids_to_the_same_call_again():
    bodies: list[bytes] = []

    def lost(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        raise httpx.RemoteProtocolError("dropped", request=request)

    client = httpx.Client(base_url=URL, transport=httpx.MockTransport(lost))
    mm = RemoteMemory(URL, client=client, retries=1, user_id="u")
    for _ in range(2):
        with pytest.raises(ServiceError):
            mm.add("tea at noon", memory_type="episodic")
    with pytest.raises(ServiceError):
        mm.add("coffee at ten", memory_type="episodic")
    ids = [httpx.Response(200, content=b).json()["memory_id"] for b in bodies]
    assert len(ids) == 6 and len(set(ids[:4])) == 1 and ids[4] == ids[5] != ids[0]
