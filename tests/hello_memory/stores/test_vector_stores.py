"""Vector stores: the contract on every backend, congruence between them, and backend specifics."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from pydantic import SecretStr
from qdrant_client import models as m
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from hello_memory.errors import CorruptStoreError, MissingDependencyError, StoreError, StoreLockedError
from hello_memory.settings import Settings
from hello_memory.stores.vectors.base import Filter, Range, VectorHit, VectorPoint, VectorStore
from hello_memory.stores.vectors.edge import META_FILE, SHARD_DIR, QdrantEdgeVectorStore
from hello_memory.stores.vectors.factory import open_vector_store
from hello_memory.stores.vectors.memory import InMemoryVectorStore
from hello_memory.stores.vectors.qdrant import QdrantVectorStore, to_qdrant_filter
from hello_memory.stores.vectors.rules import FLOAT_INDEX_KEYS, KEYWORD_INDEX_KEYS
from hello_memory.testing.services import http_unreachable, service_unavailable
from hello_memory.testing.vector_store import DIM, VectorStoreContract, make_point

# -- the contract on every backend -------------------------------------------------------------


class TestInMemoryVectorStore(VectorStoreContract):
    @pytest.fixture
    def store(self):
        s = InMemoryVectorStore()
        yield s
        s.close()


class TestQdrantEdgeVectorStore(VectorStoreContract):
    persistent = True

    @pytest.fixture
    def store(self, fast_path):
        s = QdrantEdgeVectorStore(fast_path / "vectors")
        yield s
        s.close()

    def reopen(self, store: VectorStore) -> VectorStore:
        assert isinstance(store, QdrantEdgeVectorStore)
        store.close()
        return QdrantEdgeVectorStore(store.path)


class TestQdrantVectorStoreInMemory(VectorStoreContract):
    @pytest.fixture
    def store(self):
        s = QdrantVectorStore(":memory:")
        yield s
        s.close()


class TestQdrantVectorStoreLocalPath(VectorStoreContract):
    persistent = True

    @pytest.fixture
    def store(self, tmp_path):
        s = QdrantVectorStore(path=str(tmp_path / "qdrant"))
        yield s
        s.close()

    def reopen(self, store: VectorStore) -> VectorStore:
        assert isinstance(store, QdrantVectorStore)
        store.close()
        return QdrantVectorStore(path=store._conn._options["path"])


@pytest.fixture(scope="module")
def qdrant_server_url() -> str:
    """The test server (``QDRANT_URL``): module-scoped, so read before ``_clean_env`` clears it.

    Probed over plain HTTP, never through the adapter: a ``StoreError`` of a broken adapter on a
    reachable server is a failure, not a skip. Skips (or fails under ``HELLO_MEMORY_REQUIRE_SERVICES=1``)
    only when no server is configured or reachable.
    """
    url = os.environ.get("HELLO_MEMORY_QDRANT_URL") or os.environ.get("QDRANT_URL")
    if not url:
        service_unavailable("QDRANT_URL is not set: the Qdrant server contract did not run")
    problem = http_unreachable(url.rstrip("/") + "/readyz")
    if problem is not None:
        service_unavailable(f"no Qdrant server reachable at {url} ({problem}): the server contract did not run")
    return url


@pytest.mark.integration
class TestQdrantVectorStoreServer(VectorStoreContract):
    @pytest.fixture
    def store(self, qdrant_server_url):
        s = QdrantVectorStore(url=qdrant_server_url, prefix=f"t{uuid.uuid4().hex[:12]}")
        yield s
        for name in s.collections():
            s.drop_collection(name)
        s.close()


# -- congruence: same random workload, same top-k on every backend -----------------------------

USERS = ["u0", "u1", "u2", "u3", "u4"]
TYPES = ["episodic", "semantic", "working"]


def _random_payload(rng: np.random.Generator) -> dict:
    payload = {
        "user_id": USERS[rng.integers(len(USERS))],
        "memory_type": TYPES[rng.integers(len(TYPES))],
        "created_ts": float(rng.uniform(0, 1000)),
        "importance": int(rng.integers(0, 5)),
        "tags": [t for t in ("a", "b", "c") if rng.random() < 0.4],
    }
    if rng.random() < 0.5:
        payload["flag"] = bool(rng.random() < 0.5)
    return payload


def _random_filter(rng: np.random.Generator) -> Filter | None:
    choice = rng.integers(6)
    lo = float(rng.uniform(0, 800))
    return [
        None,
        Filter(equals={"user_id": USERS[rng.integers(len(USERS))]}),
        Filter(equals={"user_id": ["u1", "u3"], "memory_type": "episodic"}),
        Filter(ranges={"created_ts": Range(gte=lo, lte=lo + 200)}, exclude={"user_id": "u0"}),
        Filter(equals={"flag": True, "tags": ["a", "c"]}),
        Filter(equals={"importance": [3, 4]}, exclude={"tags": None}),
    ][choice]


def _assert_same_top_k(reference: list[VectorHit], got: list[VectorHit], tol: float = 1e-5) -> None:
    """Same ranking up to ties: equal scores rank by rank, and differing ids only at a tied boundary."""
    assert len(got) == len(reference)
    np.testing.assert_allclose([h.score for h in got], [h.score for h in reference], atol=tol)
    if not reference:
        return
    ref_ids, got_ids = {h.id for h in reference}, {h.id for h in got}
    boundary = reference[-1].score
    for hit in got:
        assert hit.id in ref_ids or abs(hit.score - boundary) <= tol
    for hit in reference:
        assert hit.id in got_ids or abs(hit.score - boundary) <= tol


def test_backends_agree_on_random_workload(fast_path):
    rng = np.random.default_rng(2024)
    dim = 32
    points = [
        VectorPoint(str(uuid.uuid4()), rng.standard_normal(dim).astype(np.float32), _random_payload(rng))
        for _ in range(2000)
    ]
    stores: list[VectorStore] = [
        InMemoryVectorStore(),
        QdrantEdgeVectorStore(fast_path / "edge"),
        QdrantVectorStore(":memory:"),
    ]
    try:
        for store in stores:
            store.ensure_collection("congruence", dim, embedder="random")
            for start in range(0, len(points), 500):
                store.upsert("congruence", points[start : start + 500])
        reference, *others = stores
        for _ in range(50):
            query = rng.standard_normal(dim).astype(np.float32)
            where = _random_filter(rng)
            expected = reference.search("congruence", query, limit=10, where=where)
            for store in others:
                _assert_same_top_k(expected, store.search("congruence", query, limit=10, where=where))
                assert store.count("congruence", where) == reference.count("congruence", where)
    finally:
        for store in stores:
            store.close()


# -- filter conversion for qdrant-client (no server needed) ------------------------------------


def _field(key: str, **kwargs: Any) -> m.FieldCondition:
    return m.FieldCondition(key=key, **kwargs)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (None, None),
        (Filter(), None),
        (
            Filter(equals={"user_id": "u1"}),
            m.Filter(must=[_field("user_id", match=m.MatchValue(value="u1"))]),
        ),
        (
            Filter(equals={"user_id": ["u1", "u2"]}),
            m.Filter(must=[_field("user_id", match=m.MatchAny(any=["u1", "u2"]))]),
        ),
        (Filter(equals={"n": 3}), m.Filter(must=[_field("n", match=m.MatchValue(value=3))])),
        (Filter(equals={"flag": True}), m.Filter(must=[_field("flag", match=m.MatchValue(value=True))])),
        (Filter(equals={"x": 2.5}), m.Filter(must=[_field("x", range=m.Range(gte=2.5, lte=2.5))])),
        (Filter(equals={"x": None}), m.Filter(must=[m.IsEmptyCondition(is_empty=m.PayloadField(key="x"))])),
        (Filter(equals={"x": []}), m.Filter(must=[m.HasIdCondition(has_id=[])])),
        (
            Filter(equals={"x": ["a", 1]}),
            m.Filter(
                must=[
                    m.Filter(
                        should=[
                            _field("x", match=m.MatchValue(value="a")),
                            _field("x", match=m.MatchValue(value=1)),
                        ]
                    )
                ]
            ),
        ),
        (
            Filter(ranges={"created_ts": Range(gte=1.0)}),
            m.Filter(must=[_field("created_ts", range=m.Range(gte=1.0, lte=None))]),
        ),
        (
            Filter(exclude={"user_id": ["u1", "u2"]}),
            m.Filter(must_not=[_field("user_id", match=m.MatchAny(any=["u1", "u2"]))]),
        ),
        (
            Filter(equals={"user_id": "u1"}, ranges={"t": Range(lte=5)}, exclude={"memory_type": "working"}),
            m.Filter(
                must=[_field("user_id", match=m.MatchValue(value="u1")), _field("t", range=m.Range(lte=5))],
                must_not=[_field("memory_type", match=m.MatchValue(value="working"))],
            ),
        ),
    ],
)
def test_to_qdrant_filter(where, expected):
    assert to_qdrant_filter(where) == expected


# -- qdrant-client adapter: laziness and retries ------------------------------------------------


def test_qdrant_store_is_lazy_and_validates_its_arguments():
    store = QdrantVectorStore(url="http://127.0.0.1:9")  # nothing listens there; nothing is contacted
    assert store._conn._client is None
    store.close()
    with pytest.raises(ValueError):
        QdrantVectorStore(":memory:", url="http://localhost:6333")
    with pytest.raises(ValueError):
        QdrantVectorStore(":memory:", prefix="bad prefix")


def test_qdrant_store_without_the_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    store = QdrantVectorStore(":memory:")  # construction needs nothing
    with pytest.raises(MissingDependencyError, match=r"hello-memory\[qdrant\]"):
        store.collections()


class _FlakyClient:
    """Fails ``failures`` times with ``error`` before answering ``get_collections``."""

    def __init__(self, error: Exception, failures: int) -> None:
        self.error, self.failures, self.calls = error, failures, 0

    def get_collections(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return m.CollectionsResponse(collections=[m.CollectionDescription(name="hm_a")])

    def close(self):
        raise AssertionError("an injected client is not closed by the store")


def _unexpected(status: int) -> UnexpectedResponse:
    return UnexpectedResponse(status_code=status, reason_phrase="", content=b"", headers=None)  # type: ignore[arg-type]


@pytest.fixture
def no_sleep(monkeypatch):
    monkeypatch.setattr("hello_memory.stores.qdrant_connection.time.sleep", lambda _: None)


@pytest.mark.parametrize(
    "error",
    [
        ResponseHandlingException(ConnectionRefusedError()),
        ResponseHandlingException(httpx.ConnectTimeout("slow")),
        httpx.ReadError("reset"),
        _unexpected(503),
        TimeoutError(),
    ],
)
def test_transient_errors_are_retried(no_sleep, error):
    client = _FlakyClient(error, failures=2)
    store = QdrantVectorStore(client=client, retries=3)
    assert store.collections() == ["a"]
    assert client.calls == 3
    store.close()


def test_permanent_errors_and_exhausted_retries_raise_store_error(no_sleep):
    client = _FlakyClient(_unexpected(400), failures=1)
    with pytest.raises(StoreError) as info:
        QdrantVectorStore(client=client).collections()
    assert client.calls == 1 and isinstance(info.value.__cause__, UnexpectedResponse)
    client = _FlakyClient(TimeoutError(), failures=10)
    with pytest.raises(StoreError):
        QdrantVectorStore(client=client, retries=2).collections()
    assert client.calls == 3


# -- qdrant-edge adapter specifics ---------------------------------------------------------------


def test_edge_store_is_lazy(tmp_path):
    store = QdrantEdgeVectorStore(tmp_path / "v")
    assert (tmp_path / "v").is_dir() and not any((tmp_path / "v").iterdir())
    store.close()


def test_edge_creates_the_payload_indexes(fast_path):
    with QdrantEdgeVectorStore(fast_path) as store:
        store.ensure_collection("c", DIM, embedder="e")
        shard, _ = store._open("c")
        assert set(shard.info().payload_schema) == {*KEYWORD_INDEX_KEYS, *FLOAT_INDEX_KEYS}


def test_edge_second_opener_gets_store_locked_error(fast_path):
    with QdrantEdgeVectorStore(fast_path) as first:
        first.ensure_collection("c", DIM, embedder="e")
        with pytest.raises(StoreLockedError), QdrantEdgeVectorStore(fast_path) as second:
            second.count("c")
    with QdrantEdgeVectorStore(fast_path) as again:  # released on close
        assert again.count("c") == 0


def test_edge_lock_is_per_process(fast_path):
    with QdrantEdgeVectorStore(fast_path) as store:
        store.ensure_collection("c", DIM, embedder="e")
        code = "import sys; from hello_memory.stores.vectors.edge import QdrantEdgeVectorStore as S; "
        code += "S(sys.argv[1]).count('c')"
        child = subprocess.run(
            [sys.executable, "-c", code, str(fast_path)], capture_output=True, text=True, timeout=60
        )
        assert child.returncode != 0 and "StoreLockedError" in child.stderr


def test_edge_corrupt_metadata_is_reported(fast_path):
    with QdrantEdgeVectorStore(fast_path) as store:
        store.ensure_collection("c", DIM, embedder="e")
    (fast_path / "c" / META_FILE).write_text("{not json", encoding="utf-8")
    with QdrantEdgeVectorStore(fast_path) as store, pytest.raises(CorruptStoreError):
        store.count("c")


def test_edge_recovers_from_an_interrupted_create(fast_path):
    with QdrantEdgeVectorStore(fast_path) as store:
        store.ensure_collection("c", DIM, embedder="e")
        store.upsert("c", [make_point(np.ones(DIM))])
    (fast_path / "c" / META_FILE).unlink()  # as if the process died before committing the metadata
    with QdrantEdgeVectorStore(fast_path) as store:
        assert store.collections() == []
        store.ensure_collection("c", DIM * 2, embedder="other")
        assert store.count("c") == 0
    assert (fast_path / "c" / SHARD_DIR).is_dir()


def test_edge_store_is_usable_from_threads(fast_path):
    errors: list[BaseException] = []
    with QdrantEdgeVectorStore(fast_path, flush_interval=0.05) as store:
        store.ensure_collection("c", DIM, embedder="e")

        def work(seed: int) -> None:
            rng = np.random.default_rng(seed)
            try:
                for _ in range(50):
                    store.upsert("c", [make_point(rng.standard_normal(DIM), user_id=f"u{seed}")])
                    store.search("c", rng.standard_normal(DIM).astype(np.float32), limit=3)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert store.count("c") == 200
        assert store.count("c", Filter(equals={"user_id": "u2"})) == 50


_CRASH_CHILD = textwrap.dedent(
    """
    import sys, uuid
    import numpy as np
    from hello_memory.stores.vectors.base import VectorPoint
    from hello_memory.stores.vectors.edge import QdrantEdgeVectorStore

    store = QdrantEdgeVectorStore(sys.argv[1], flush_interval=3600)
    store.ensure_collection("crash", 16, embedder="e")
    rng = np.random.default_rng()
    print("ready", flush=True)
    while True:
        pid = str(uuid.uuid4())
        store.upsert("crash", [VectorPoint(pid, rng.standard_normal(16).astype(np.float32), {"k": pid})])
        print(pid, flush=True)
    """
)


@pytest.mark.parametrize("trial", range(3))
def test_edge_upserts_survive_sigkill(tmp_path, trial):
    """Every id the child saw returned from upsert is there after SIGKILL (no flush: the WAL)."""
    out_path = tmp_path / "out.txt"
    with open(out_path, "w") as out:
        child = subprocess.Popen([sys.executable, "-c", _CRASH_CHILD, str(tmp_path / "v")], stdout=out)
        try:
            deadline = time.monotonic() + 60
            while "ready" not in out_path.read_text() and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(random.uniform(0.05, 0.6))
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
    lines = Path(out_path).read_text().split("\n")
    printed = [line for line in lines[:-1] if len(line) == 36]  # the last line may be cut short
    assert printed, "the child wrote nothing before being killed"
    with QdrantEdgeVectorStore(tmp_path / "v") as store:
        found = {p.id for p in store.get("crash", printed)}
        assert found == set(printed)
        assert store.count("crash") in (len(printed), len(printed) + 1)


# -- factory -----------------------------------------------------------------------------------


def test_factory_picks_edge_by_default_and_qdrant_for_a_url(tmp_path):
    edge = open_vector_store(Settings(home=tmp_path, qdrant_url=None))
    assert isinstance(edge, QdrantEdgeVectorStore) and edge.path == tmp_path / "vectors"
    edge.close()
    server = open_vector_store(
        Settings(home=tmp_path, qdrant_url="http://127.0.0.1:9", qdrant_api_key=SecretStr("k"))
    )
    assert isinstance(server, QdrantVectorStore) and server.backend == "qdrant"
    assert server._conn._options["api_key"] == "k"
    server.close()
