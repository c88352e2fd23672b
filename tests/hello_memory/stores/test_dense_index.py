"""The embedded dense index scores given memories in the vector engine: the same numbers as reading
their vectors out and taking dot products (what DenseIndex.similarities promises), ~20x cheaper."""

from __future__ import annotations

import numpy as np
import pytest

from hello_memory.models import MemoryItem, MemoryType
from hello_memory.stores.dense.base import DenseIndex
from hello_memory.stores.dense.index import IndexDense
from hello_memory.stores.vectors.edge import QdrantEdgeVectorStore
from hello_memory.stores.vectors.memory import InMemoryVectorStore

DIM = 16


@pytest.fixture(params=["edge", "memory"])
def dense(request, tmp_path):
    store = QdrantEdgeVectorStore(tmp_path / "vectors") if request.param == "edge" else InMemoryVectorStore()
    yield IndexDense(store)
    store.close()


def _items() -> list[MemoryItem]:
    items = [MemoryItem(user_id="ann", memory_type=MemoryType.EPISODIC, content=f"note {n}") for n in range(6)]
    items += [MemoryItem(user_id="ann", memory_type=MemoryType.SEMANTIC, content=f"fact {n}") for n in range(3)]
    items += [MemoryItem(user_id="ann", memory_type=MemoryType.PERCEPTUAL, content=f"photo {n}", modality="image")
              for n in range(3)]
    return items


def _tiers(items: list[MemoryItem]) -> dict[str, tuple[MemoryType, str | None]]:
    return {it.id: (it.memory_type, it.modality.value if it.modality else None) for it in items}  # as rows hold it


@pytest.mark.parametrize("scale", [1.0, 0.37, 5.0])  # a query's unit vector; a null's shorter mean; any norm
def test_similarities_are_the_dot_products_of_the_stored_vectors(dense: IndexDense, scale: float) -> None:
    rng = np.random.default_rng(3)
    items = _items()
    dense.write(items, {it.id: rng.normal(size=DIM).astype(np.float32) for it in items}, embedder="test")
    q = rng.normal(size=DIM).astype(np.float32)
    q = q / np.linalg.norm(q) * scale
    tiers = _tiers(items) | {"6b1c1f5e-0000-4000-8000-000000000000": (MemoryType.EPISODIC, None)}  # no vector
    got = dense.similarities("ann", q, tiers)
    read_out = DenseIndex.similarities(dense, "ann", q, tiers)  # the protocol's own: vectors read out
    assert set(got) == {it.id for it in items} == set(read_out)
    for mid, value in read_out.items():
        assert got[mid] == pytest.approx(value, abs=1e-5)


def test_a_zero_query_vector_scores_zero_and_nothing_scores_nothing(dense: IndexDense) -> None:
    items = _items()[:2]
    dense.write(items, {it.id: np.ones(DIM, dtype=np.float32) for it in items}, embedder="test")
    assert dense.similarities("ann", np.zeros(DIM, dtype=np.float32), _tiers(items)) == {it.id: 0.0 for it in items}
    assert dense.similarities("ann", np.ones(DIM, dtype=np.float32), {}) == {}
