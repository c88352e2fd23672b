"""Contract tests every :class:`~hello_memory.stores.vectors.base.VectorStore` backend must pass.

Subclass :class:`VectorStoreContract` in a test module and supply a ``store`` fixture yielding a
fresh, empty store; persistent backends also set ``persistent = True`` and override
:meth:`VectorStoreContract.reopen`::

    class TestMyVectorStore(VectorStoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            s = MyVectorStore(tmp_path)
            yield s
            s.close()
"""

from __future__ import annotations

import math
import uuid
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pytest

from hello_memory.errors import (
    DimensionMismatchError,
    EmbedderMismatchError,
    InvalidInputError,
    NotFoundError,
)
from hello_memory.stores.vectors.base import Filter, Range, VectorPoint, VectorStore
from hello_memory.testing.services import REQUIRE_SERVICES, http_unreachable, service_unavailable

__all__ = [
    "COLL", "DIM", "REQUIRE_SERVICES", "VectorStoreContract", "http_unreachable", "make_point", "random_points",
    "service_unavailable", "unit",
]

DIM = 8
COLL = "contract"
def unit(vector: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """L2-normalised float32 copy of ``vector``."""
    arr = np.asarray(vector, dtype=np.float64)
    return (arr / np.linalg.norm(arr)).astype(np.float32)


def make_point(vector: npt.ArrayLike, **payload: Any) -> VectorPoint:
    """A point with a fresh UUID id."""
    return VectorPoint(str(uuid.uuid4()), np.asarray(vector, dtype=np.float32), payload)


def random_points(n: int, rng: np.random.Generator, dim: int = DIM) -> list[VectorPoint]:
    """``n`` random points whose payload ``i`` is their position."""
    return [make_point(rng.standard_normal(dim), i=i) for i in range(n)]


# Payloads of the filter fixture: name -> payload (the name is also stored as "name").
FILTER_PAYLOADS: dict[str, dict[str, Any]] = {
    "a1": {"user_id": "alice", "memory_type": "episodic", "created_ts": 100.0, "n": 1, "flag": True},
    "a2": {"user_id": "alice", "memory_type": "semantic", "created_ts": 200.0, "n": 2, "flag": False},
    "a3": {"user_id": "alice", "memory_type": "episodic", "created_ts": 300.5, "n": 3, "tags": ["x", "y"]},
    "b1": {"user_id": "bob", "memory_type": "episodic", "created_ts": 150.0, "n": 1, "flag": None},
    "b2": {"user_id": "bob", "memory_type": "working", "created_ts": 250.0, "n": 3.0, "tags": ["y"]},
    "c1": {"user_id": "carol", "created_ts": 400.0, "n": 2, "tags": []},
}

FILTER_CASES: list[tuple[Filter, set[str]]] = [
    (Filter(equals={"user_id": "alice"}), {"a1", "a2", "a3"}),
    (Filter(equals={"user_id": ["alice", "carol"]}), {"a1", "a2", "a3", "c1"}),
    (Filter(equals={"user_id": ("bob",)}), {"b1", "b2"}),
    (Filter(equals={"user_id": "nobody"}), set()),
    (Filter(equals={"user_id": []}), set()),
    (Filter(equals={"user_id": "alice", "memory_type": "episodic"}), {"a1", "a3"}),
    (Filter(equals={"n": 3}), {"a3"}),  # an int matches ints only, not the float 3.0
    (Filter(equals={"n": 3.0}), {"a3", "b2"}),  # a float compares numerically
    (Filter(equals={"n": [1, 2]}), {"a1", "a2", "b1", "c1"}),
    (Filter(equals={"flag": True}), {"a1"}),  # True is not the integer 1
    (Filter(equals={"flag": False}), {"a2"}),
    (Filter(equals={"flag": None}), {"a3", "b1", "b2", "c1"}),  # missing or null
    (Filter(equals={"tags": "y"}), {"a3", "b2"}),  # an array field matches any element
    (Filter(equals={"tags": None}), {"a1", "a2", "b1", "c1"}),  # missing, null or []
    (Filter(ranges={"created_ts": Range(gte=150.0, lte=250.0)}), {"a2", "b1", "b2"}),
    (Filter(ranges={"created_ts": Range(gte=300.5)}), {"a3", "c1"}),
    (Filter(ranges={"created_ts": Range(lte=100.0)}), {"a1"}),
    (Filter(ranges={"n": Range(gte=2, lte=3)}), {"a2", "a3", "b2", "c1"}),
    (Filter(exclude={"user_id": "alice"}), {"b1", "b2", "c1"}),
    (Filter(exclude={"user_id": ["alice", "bob"]}), {"c1"}),
    (Filter(exclude={"memory_type": "episodic"}), {"a2", "b2", "c1"}),  # a missing field is kept
    (Filter(exclude={"tags": None}), {"a3", "b2"}),
    (
        Filter(
            equals={"memory_type": ["episodic", "working"]},
            ranges={"created_ts": Range(gte=120.0)},
            exclude={"user_id": "bob"},
        ),
        {"a3"},
    ),
]


class VectorStoreContract:
    """The behaviour every vector store shares; subclasses provide the ``store`` fixture."""

    persistent: ClassVar[bool] = False

    def reopen(self, store: VectorStore) -> VectorStore:
        """Close ``store`` and open its data again (persistent backends override this)."""
        raise NotImplementedError

    @pytest.fixture
    def coll(self, store: VectorStore) -> str:
        """An empty collection of ``DIM``-dimensional vectors."""
        store.ensure_collection(COLL, DIM, embedder="fake-embedder")
        return COLL

    @pytest.fixture
    def named(self, store: VectorStore, coll: str) -> dict[str, str]:
        """The filter fixture, loaded: name -> point id."""
        rng = np.random.default_rng(7)
        points = {
            name: make_point(rng.standard_normal(DIM), name=name, **p) for name, p in FILTER_PAYLOADS.items()
        }
        store.upsert(coll, list(points.values()))
        return {name: p.id for name, p in points.items()}

    # -- collections ----------------------------------------------------------------------------
    def test_is_a_vector_store(self, store: VectorStore) -> None:
        assert isinstance(store, VectorStore)
        assert isinstance(store.backend, str) and store.backend

    def test_ensure_collection_creates_an_empty_collection(self, store: VectorStore, coll: str) -> None:
        assert coll in store.collections()
        assert store.count(coll) == 0
        assert store.ids(coll) == []

    def test_ensure_collection_again_with_same_settings_is_a_no_op(
        self, store: VectorStore, coll: str
    ) -> None:
        store.upsert(coll, [make_point(np.ones(DIM))])
        store.ensure_collection(coll, DIM, embedder="fake-embedder")
        assert store.count(coll) == 1

    def test_ensure_collection_with_other_dimension_names_both_numbers(
        self, store: VectorStore, coll: str
    ) -> None:
        with pytest.raises(DimensionMismatchError) as info:
            store.ensure_collection(coll, DIM * 2, embedder="fake-embedder")
        assert (info.value.expected, info.value.got) == (DIM, DIM * 2)
        assert str(DIM) in str(info.value) and str(DIM * 2) in str(info.value)

    def test_ensure_collection_with_other_embedder_fails(self, store: VectorStore, coll: str) -> None:
        with pytest.raises(EmbedderMismatchError) as info:
            store.ensure_collection(coll, DIM, embedder="other-embedder")
        assert (info.value.stored, info.value.requested) == ("fake-embedder", "other-embedder")

    def test_invalid_collection_arguments_are_rejected(self, store: VectorStore) -> None:
        for name in ("", "../escape", "a/b", ".hidden", "x" * 65):
            with pytest.raises(InvalidInputError):
                store.ensure_collection(name, DIM, embedder="e")
        with pytest.raises(InvalidInputError):
            store.ensure_collection("ok", 0, embedder="e")
        with pytest.raises(InvalidInputError):
            store.ensure_collection("ok", DIM, embedder="")

    def test_drop_collection(self, store: VectorStore, coll: str) -> None:
        store.upsert(coll, [make_point(np.ones(DIM))])
        store.drop_collection(coll)
        assert coll not in store.collections()
        store.drop_collection(coll)  # absent: no error
        store.ensure_collection(coll, DIM + 1, embedder="new")  # recreated from scratch
        assert store.count(coll) == 0

    def test_missing_collection_raises_not_found(self, store: VectorStore) -> None:
        with pytest.raises(NotFoundError):
            store.count("absent")
        with pytest.raises(NotFoundError):
            store.upsert("absent", [make_point(np.ones(DIM))])
        with pytest.raises(NotFoundError):
            store.search("absent", np.ones(DIM, np.float32), limit=3)

    # -- writes ---------------------------------------------------------------------------------
    def test_upsert_replaces_points_with_the_same_id(self, store: VectorStore, coll: str) -> None:
        first = make_point(np.eye(DIM)[0], v=1)
        store.upsert(coll, [first])
        store.upsert(coll, [VectorPoint(first.id, np.eye(DIM)[1].astype(np.float32), {"v": 2})])
        assert store.count(coll) == 1
        (got,) = store.get(coll, [first.id], with_vectors=True)
        assert got.payload == {"v": 2}
        np.testing.assert_allclose(got.vector, np.eye(DIM)[1], atol=1e-6)

    @pytest.mark.parametrize(
        "bad",
        [
            np.zeros(DIM),
            np.full(DIM, np.nan),
            np.r_[np.ones(DIM - 1), np.inf],
            np.ones(DIM + 1),
            np.ones(DIM - 1),
        ],
        ids=["zero", "nan", "inf", "too-long", "too-short"],
    )
    def test_upsert_rejects_bad_vectors_and_writes_nothing(
        self, store: VectorStore, coll: str, bad: npt.NDArray[np.float64]
    ) -> None:
        store.upsert(coll, [make_point(np.ones(DIM))])
        good = make_point(np.arange(1, DIM + 1))
        expected = DimensionMismatchError if len(bad) != DIM else InvalidInputError
        with pytest.raises(expected):
            store.upsert(coll, [good, make_point(bad)])
        assert store.count(coll) == 1
        assert store.get(coll, [good.id]) == []

    @pytest.mark.parametrize("bad_id", ["not-a-uuid", str(uuid.uuid4()).upper(), uuid.uuid4().hex, ""])
    def test_upsert_rejects_non_uuid_ids(self, store: VectorStore, coll: str, bad_id: str) -> None:
        with pytest.raises(InvalidInputError):
            store.upsert(coll, [make_point(np.ones(DIM)), VectorPoint(bad_id, np.ones(DIM, np.float32), {})])
        assert store.count(coll) == 0

    def test_upsert_rejects_non_json_payloads(self, store: VectorStore, coll: str) -> None:
        for payload in ({"x": math.nan}, {"x": object()}, {"x": np.float32(1.0)}, {"x": [2**64]}):
            with pytest.raises(InvalidInputError):
                store.upsert(coll, [VectorPoint(str(uuid.uuid4()), np.ones(DIM, np.float32), payload)])
        assert store.count(coll) == 0

    def test_upsert_of_nothing_is_a_no_op(self, store: VectorStore, coll: str) -> None:
        store.upsert(coll, [])
        assert store.count(coll) == 0

    def test_delete_by_id_ignores_absent_ids(self, store: VectorStore, coll: str) -> None:
        points = random_points(5, np.random.default_rng(1))
        store.upsert(coll, points)
        store.delete(coll, [points[0].id, points[1].id, str(uuid.uuid4()), "not-a-uuid"])
        assert set(store.ids(coll)) == {p.id for p in points[2:]}
        store.delete(coll, [])
        assert store.count(coll) == 3

    def test_delete_where_returns_the_number_deleted(
        self, store: VectorStore, coll: str, named: dict[str, str]
    ) -> None:
        assert store.delete_where(coll, Filter(equals={"user_id": "alice"})) == 3
        assert set(store.ids(coll)) == {named[n] for n in ("b1", "b2", "c1")}
        assert store.delete_where(coll, Filter(equals={"user_id": "alice"})) == 0

    def test_delete_where_refuses_an_empty_filter(
        self, store: VectorStore, coll: str, named: dict[str, str]
    ) -> None:
        with pytest.raises(InvalidInputError):
            store.delete_where(coll, Filter())
        assert store.count(coll) == len(named)

    # -- search ---------------------------------------------------------------------------------
    def test_search_returns_top_k_by_cosine(self, store: VectorStore, coll: str) -> None:
        rng = np.random.default_rng(3)
        points = random_points(60, rng)
        store.upsert(coll, points)
        matrix = np.stack([unit(p.vector) for p in points])
        for _ in range(5):
            query = rng.standard_normal(DIM).astype(np.float32)
            hits = store.search(coll, query, limit=7)
            cosine = matrix @ unit(query)
            expected = np.sort(cosine)[::-1][:7]
            assert len(hits) == 7
            np.testing.assert_allclose([h.score for h in hits], expected, atol=1e-5)
            by_id = {p.id: c for p, c in zip(points, cosine, strict=True)}
            for hit in hits:
                assert hit.score == pytest.approx(by_id[hit.id], abs=1e-5)
                assert hit.payload == {"i": points[[p.id for p in points].index(hit.id)].payload["i"]}

    def test_score_is_cosine_whatever_the_norms(self, store: VectorStore, coll: str) -> None:
        base = np.arange(1, DIM + 1, dtype=np.float64)
        tiny, huge = make_point(base * 1e-6, s="tiny"), make_point(base[::-1] * 1e4, s="huge")
        store.upsert(coll, [tiny, huge])
        hits = {h.id: h.score for h in store.search(coll, (base * 3).astype(np.float32), limit=2)}
        assert hits[tiny.id] == pytest.approx(1.0, abs=1e-5)
        assert hits[huge.id] == pytest.approx(float(unit(base) @ unit(base[::-1])), abs=1e-5)

    def test_search_limit(self, store: VectorStore, coll: str) -> None:
        store.upsert(coll, random_points(4, np.random.default_rng(4)))
        query = np.ones(DIM, np.float32)
        assert len(store.search(coll, query, limit=10)) == 4
        assert store.search(coll, query, limit=0) == []
        with pytest.raises(InvalidInputError):
            store.search(coll, query, limit=-1)

    def test_search_on_an_empty_collection(self, store: VectorStore, coll: str) -> None:
        assert store.search(coll, np.ones(DIM, np.float32), limit=5) == []

    def test_search_rejects_bad_query_vectors(self, store: VectorStore, coll: str) -> None:
        with pytest.raises(InvalidInputError):
            store.search(coll, np.zeros(DIM, np.float32), limit=3)
        with pytest.raises(InvalidInputError):
            store.search(coll, np.full(DIM, np.nan, np.float32), limit=3)
        with pytest.raises(DimensionMismatchError):
            store.search(coll, np.ones(DIM + 1, np.float32), limit=3)

    @pytest.mark.parametrize(("where", "expected"), FILTER_CASES)
    def test_filters(
        self, store: VectorStore, coll: str, named: dict[str, str], where: Filter, expected: set[str]
    ) -> None:
        want = {named[n] for n in expected}
        hits = store.search(coll, np.ones(DIM, np.float32), limit=100, where=where)
        assert {h.id for h in hits} == want
        assert set(store.ids(coll, where)) == want
        assert store.count(coll, where) == len(want)

    def test_filtered_search_keeps_order_and_limit(
        self, store: VectorStore, coll: str, named: dict[str, str]
    ) -> None:
        hits = store.search(
            coll, np.ones(DIM, np.float32), limit=2, where=Filter(equals={"user_id": "alice"})
        )
        assert len(hits) == 2 and hits[0].score >= hits[1].score
        assert {h.payload["user_id"] for h in hits} == {"alice"}

    def test_search_without_payloads_finds_the_same_hits(
        self, store: VectorStore, coll: str, named: dict[str, str]
    ) -> None:
        query, alice = np.ones(DIM, np.float32), Filter(equals={"user_id": "alice"})
        full = store.search(coll, query, limit=5, where=alice)
        bare = store.search(coll, query, limit=5, where=alice, with_payload=False)
        assert [(h.id, round(h.score, 5)) for h in bare] == [(h.id, round(h.score, 5)) for h in full]
        assert full and all(h.payload for h in full) and all(h.payload == {} for h in bare)

    def test_filters_reject_bad_keys_and_values(self, store: VectorStore, coll: str) -> None:
        for where in (
            Filter(equals={"a.b": 1}),
            Filter(equals={"x": {"nested": 1}}),  # type: ignore[dict-item]
            Filter(equals={"x": math.nan}),
            Filter(ranges={"x": Range(gte=math.inf)}),
            Filter(equals={"n": 2**70}),
        ):
            with pytest.raises(InvalidInputError):
                store.count(coll, where)

    # -- reads ----------------------------------------------------------------------------------
    def test_get_with_and_without_vectors(self, store: VectorStore, coll: str) -> None:
        points = random_points(3, np.random.default_rng(5))
        store.upsert(coll, points)
        wanted = [points[0].id, points[2].id, str(uuid.uuid4()), "not-a-uuid"]
        with_vectors = {p.id: p for p in store.get(coll, wanted, with_vectors=True)}
        assert set(with_vectors) == {points[0].id, points[2].id}
        for p in (points[0], points[2]):
            np.testing.assert_allclose(with_vectors[p.id].vector, unit(p.vector), atol=1e-6)
            assert with_vectors[p.id].vector.dtype == np.float32
            assert with_vectors[p.id].payload == p.payload
        for got in store.get(coll, wanted):
            assert got.vector.size == 0
        assert store.get(coll, []) == []

    def test_scores_are_the_cosines_a_search_gives_of_the_points_asked(self, store: VectorStore, coll: str) -> None:
        points = random_points(12, np.random.default_rng(9))
        store.upsert(coll, points)
        query = np.random.default_rng(10).normal(size=DIM).astype(np.float32) * 3.0  # any norm
        searched = {h.id: h.score for h in store.search(coll, query, limit=12)}
        asked = [points[1].id, points[7].id, points[7].id, str(uuid.uuid4()), "not-a-uuid", points[11].id]
        got = store.scores(coll, query, asked)
        assert set(got) == {points[1].id, points[7].id, points[11].id}  # absent and malformed ids skipped
        for pid, score in got.items():
            assert isinstance(score, float)
            assert score == pytest.approx(searched[pid], abs=1e-6)
            stored = unit(points[[p.id for p in points].index(pid)].vector)
            assert score == pytest.approx(float(np.dot(stored, unit(query))), abs=1e-5)
        assert store.scores(coll, query, []) == {}
        with pytest.raises(InvalidInputError):
            store.scores(coll, np.zeros(DIM, dtype=np.float32), [points[0].id])
        with pytest.raises(NotFoundError):
            store.scores("no_such_collection", query, [points[0].id])

    def test_payload_round_trip(self, store: VectorStore, coll: str) -> None:
        payload = {
            "s": "text",
            "empty": "",
            "i": 42,
            "big": 2**53 + 1,
            "neg": -7,
            "f": 1.5,
            "whole_float": 2.0,
            "t": True,
            "false": False,
            "none": None,
            "tags": ["a", "b", "中文"],
            "zh": "用户喜欢在周末去爬山，也喜欢喝龙井茶。",
        }
        point = make_point(np.ones(DIM), **payload)
        store.upsert(coll, [point])
        (got,) = store.get(coll, [point.id])
        assert got.payload == payload
        assert {k: type(v) for k, v in got.payload.items()} == {k: type(v) for k, v in payload.items()}
        (hit,) = store.search(coll, np.ones(DIM, np.float32), limit=1)
        assert hit.payload == payload

    def test_uuid_ids_come_back_whole(self, store: VectorStore, coll: str) -> None:
        points = random_points(3, np.random.default_rng(6))
        store.upsert(coll, points)
        ids = {p.id for p in points}
        assert all(len(i) == 36 for i in ids)
        assert set(store.ids(coll)) == ids
        assert {p.id for p in store.get(coll, list(ids))} == ids
        assert {h.id for h in store.search(coll, np.ones(DIM, np.float32), limit=3)} == ids

    def test_count_and_ids(self, store: VectorStore, coll: str, named: dict[str, str]) -> None:
        assert store.count(coll) == len(named)
        assert sorted(store.ids(coll)) == sorted(named.values())
        assert store.count(coll, Filter()) == len(named)

    # -- lifecycle ------------------------------------------------------------------------------
    def test_close_is_idempotent(self, store: VectorStore) -> None:
        store.close()
        store.close()

    def test_data_survives_close_and_reopen(self, store: VectorStore, coll: str) -> None:
        if not self.persistent:
            pytest.skip("backend is not persistent")
        points = random_points(20, np.random.default_rng(8))
        store.upsert(coll, points)
        store.delete(coll, [points[0].id])
        reopened = self.reopen(store)
        try:
            assert reopened.collections() == [coll]
            assert set(reopened.ids(coll)) == {p.id for p in points[1:]}
            (got,) = reopened.get(coll, [points[5].id])
            assert got.payload == points[5].payload
            assert reopened.search(coll, points[5].vector, limit=1)[0].id == points[5].id
            with pytest.raises(DimensionMismatchError):
                reopened.ensure_collection(coll, DIM + 1, embedder="fake-embedder")
            with pytest.raises(EmbedderMismatchError):
                reopened.ensure_collection(coll, DIM, embedder="other")
        finally:
            reopened.close()
