"""DashScopeEmbedder against httpx.MockTransport (no network)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable

import httpx
import numpy as np
import pytest

from hello_memory.embedders import dashscope as ds
from hello_memory.embedders.base import Embedder
from hello_memory.embedders.dashscope import DashScopeEmbedder
from hello_memory.errors import EmbeddingError, MissingDependencyError
from hello_memory.testing.fake_embedder import fake_vector

DIM = 8
Handler = Callable[[httpx.Request], httpx.Response]


def ok_response(request: httpx.Request, *, reverse: bool = True) -> httpx.Response:
    """A valid reply: one vector per input (scaled, not unit), listed in reverse order."""
    body = json.loads(request.content)
    data = [
        {"object": "embedding", "index": i, "embedding": (3.0 * fake_vector(t, body["dimensions"])).tolist()}
        for i, t in enumerate(body["input"])
    ]
    return httpx.Response(
        200, json={"object": "list", "data": data[::-1] if reverse else data, "model": body["model"]}
    )


class Recorder:
    def __init__(self, handler: Handler = ok_response) -> None:
        self.handler = handler
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.handler(request)

    @property
    def bodies(self) -> list[dict]:
        return [json.loads(r.content) for r in self.requests]


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(ds.time, "sleep", slept.append)
    return slept


def make(rec: Recorder, **kw) -> DashScopeEmbedder:
    client = httpx.Client(transport=httpx.MockTransport(rec))
    return DashScopeEmbedder("sk-test", dimension=DIM, client=client, **kw)


def expected(texts: list[str]) -> np.ndarray:
    return np.stack([fake_vector(t, DIM) for t in texts])


def test_name_protocol_and_lazy_client():
    e = DashScopeEmbedder("sk-test")
    assert isinstance(e, Embedder)
    assert e.name == "dashscope/text-embedding-v3:1024" and e.dimension == 1024
    assert e._client is None


def test_batches_of_ten_in_order_and_request_fields(sleeps):
    rec = Recorder()
    texts = [f"text {i} 文本" for i in range(25)]
    v = make(rec).embed(texts)
    assert [len(b["input"]) for b in rec.bodies] == [10, 10, 5]
    assert rec.bodies[0] == {
        "model": "text-embedding-v3",
        "input": texts[:10],
        "dimensions": DIM,
        "encoding_format": "float",
    }
    assert rec.requests[0].url == "https://dashscope.aliyuncs.com/compatible-mode/v1/embeddings"
    assert rec.requests[0].headers["authorization"] == "Bearer sk-test"
    assert v.shape == (25, DIM) and v.dtype == np.float32
    assert np.allclose(v, expected(texts), atol=1e-6)  # placed by index, re-normalised
    assert sleeps == []


def test_retries_429_with_backoff_then_succeeds(sleeps):
    state = {"n": 0}

    def flaky(request: httpx.Request) -> httpx.Response:
        state["n"] += 1
        if state["n"] <= 2:
            return httpx.Response(429, json={"error": {"message": "Throttling.RateQuota"}})
        return ok_response(request)

    rec = Recorder(flaky)
    v = make(rec, retry_backoff=0.5).embed(["a", "b"])
    assert len(rec.requests) == 3 and v.shape == (2, DIM)
    assert sleeps == [0.5, 1.0]


def test_retry_after_header_and_timeouts_are_retried(sleeps):
    state = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        state["n"] += 1
        if state["n"] == 1:
            return httpx.Response(503, headers={"Retry-After": "2"}, text="busy")
        if state["n"] == 2:
            raise httpx.ReadTimeout("slow", request=request)
        return ok_response(request)

    v = make(Recorder(handler), retry_backoff=0.25).embed(["x"])
    assert v.shape == (1, DIM)
    assert sleeps == [2.0, 0.5]


def test_permanent_failure_raises_for_the_whole_call(sleeps):
    state = {"n": 0}

    def second_batch_fails(request: httpx.Request) -> httpx.Response:
        state["n"] += 1
        if state["n"] == 1:
            return ok_response(request)
        return httpx.Response(500, json={"error": {"message": "InternalError"}})

    rec = Recorder(second_batch_fails)
    result = None
    with pytest.raises(EmbeddingError, match=r"after 3 attempts.*InternalError"):
        result = make(rec, max_retries=2).embed([f"t{i}" for i in range(15)])
    assert result is None
    assert len(rec.requests) == 1 + 3 and len(sleeps) == 2


def test_client_errors_are_not_retried_and_carry_the_provider_message(sleeps):
    rec = Recorder(lambda r: httpx.Response(401, json={"error": {"message": "Incorrect API key provided."}}))
    with pytest.raises(EmbeddingError, match="HTTP 401: Incorrect API key provided"):
        make(rec).embed(["x"])
    assert len(rec.requests) == 1 and sleeps == []


def test_connection_errors_exhaust_retries(sleeps):
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(EmbeddingError, match="ConnectError"):
        make(Recorder(down), max_retries=1).embed(["x"])
    assert sleeps == [0.5]


def _mutated(mutate: Callable[[list[dict]], None]) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(ok_response(request, reverse=False).content)
        mutate(body["data"])
        return httpx.Response(
            200, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
        )

    return handler


def _set(i: int, key: str, value: object) -> Callable[[list[dict]], None]:
    return lambda data: data[i].__setitem__(key, value)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda data: data.pop(1), "returned 2 vectors for 3 texts"),
        (_set(1, "index", 0), "repeated index"),
        (_set(2, "index", 7), "invalid or repeated index"),
        (_set(0, "embedding", [0.1] * (DIM - 1)), "vector of 7"),
        (_set(0, "embedding", [0.0] * DIM), "all-zero"),
        (_set(0, "embedding", [math.nan] * DIM), "non-finite"),
        (_set(0, "embedding", ["a"] * DIM), "non-numeric"),
        (lambda data: data.clear(), "returned 0 vectors"),
    ],
    ids=["missing-index", "duplicate-index", "out-of-range", "wrong-dim", "zero", "nan", "strings", "empty"],
)
def test_invalid_responses_raise(mutate, message, sleeps):
    with pytest.raises(EmbeddingError, match=message):
        make(Recorder(_mutated(mutate))).embed(["a", "b", "c"])


def test_non_json_and_missing_data(sleeps):
    with pytest.raises(EmbeddingError, match="not JSON"):
        make(Recorder(lambda r: httpx.Response(200, text="<html>"))).embed(["a"])
    with pytest.raises(EmbeddingError, match="no 'data'"):
        make(Recorder(lambda r: httpx.Response(200, json={"output": {}}))).embed(["a"])


def test_empty_text_is_rejected_before_any_request():
    rec = Recorder()
    with pytest.raises(EmbeddingError, match="empty"):
        make(rec).embed(["fine", "  "])
    assert rec.requests == []
    assert make(rec).embed([]).shape == (0, DIM) and rec.requests == []


def test_close_only_closes_an_owned_client():
    passed = httpx.Client(transport=httpx.MockTransport(ok_response))
    with DashScopeEmbedder("k", client=passed) as e:
        pass
    assert not passed.is_closed and e._client is passed
    own = DashScopeEmbedder("k")
    client = own._http()
    own.close()
    assert client.is_closed and own._client is None


def test_missing_httpx_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(MissingDependencyError, match=r"hello-memory\[dashscope\]"):
        DashScopeEmbedder("k").embed(["x"])
