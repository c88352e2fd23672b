"""QdrantGraphStore: the graph contract on qdrant-client's local mode (in memory and on disk)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from hello_memory.errors import InvalidInputError
from hello_memory.language.extraction import entity_id
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.graph.qdrant import QdrantGraphStore
from hello_memory.testing.graph_store import ALICE, GraphStoreContract, hops, link_chain, link_names
from hello_memory.testing.residue import scan_qdrant


class TestQdrantGraphStoreInMemory(GraphStoreContract):
    @pytest.fixture
    def graph_store(self) -> Iterator[QdrantGraphStore]:
        self.qdrant = QdrantClient(":memory:", force_disable_check_same_thread=True)
        store = QdrantGraphStore(client=self.qdrant)
        yield store
        store.close()
        self.qdrant.close()

    def stored_rows(self, graph_store: GraphStore, user_id: str) -> int:
        return scan_qdrant(self.qdrant, user_id)


class TestQdrantGraphStoreOnDisk(GraphStoreContract):
    persistent = True

    @pytest.fixture
    def graph_store(self, fast_path: Path) -> Iterator[GraphStore]:
        self.path = fast_path / "qdrant"
        self.store = QdrantGraphStore(path=str(self.path))
        yield self.store
        self.store.close()

    def reopen(self, graph_store: GraphStore) -> GraphStore:
        graph_store.close()
        self.store = QdrantGraphStore(path=str(self.path))
        return self.store


@pytest.fixture
def store() -> Iterator[QdrantGraphStore]:
    s = QdrantGraphStore(":memory:")
    yield s
    s.close()


def test_init_is_lazy(tmp_path: Path) -> None:
    QdrantGraphStore(path=str(tmp_path / "never")).close()
    assert not (tmp_path / "never").exists()


def test_two_store_objects_on_one_qdrant_see_each_others_links_at_once() -> None:
    client = QdrantClient(":memory:", force_disable_check_same_thread=True)
    one, two = QdrantGraphStore(client=client), QdrantGraphStore(client=client)
    ids = link_chain(one)
    assert hops(two, ALICE, [ids["a"]]) == {ids["a"]: 0, ids["b"]: 1, ids["c"]: 2}
    two.unlink_memory(ALICE, "m-ab")
    assert hops(one, ALICE, [ids["a"]]) == {}
    client.close()


def test_concurrent_links_of_one_entity_never_lose_it(store: QdrantGraphStore) -> None:
    """Entities are not shared nodes: unlinking one memory while others link the same entity keeps it."""
    link_names(store, ALICE, "m0", ["shared"])

    def churn(n: int) -> None:
        for i in range(10):
            link_names(store, ALICE, f"m{n}-{i}", ["shared", f"own {n}"])
            store.unlink_memory(ALICE, f"m{n}-{i}")

    threads = [threading.Thread(target=churn, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [name for _, name in store.find_entities(ALICE, ["shared"])] == ["shared"]
    assert store.counts(ALICE) == {"entities": 1, "relations": 0, "mentions": 1}


def test_the_first_mentions_name_is_the_entitys_name(store: QdrantGraphStore) -> None:
    link_names(store, ALICE, "m1", ["Alice Smith"])
    link_names(store, ALICE, "m2", ["ALICE SMITH"])
    assert store.find_entities(ALICE, ["alice smith"]) == [(entity_id(ALICE, "Alice Smith"), "Alice Smith")]


def test_a_relation_to_an_entity_the_memory_does_not_link_writes_nothing(store: QdrantGraphStore) -> None:
    a, b = entity_id(ALICE, "a"), entity_id(ALICE, "b")
    with pytest.raises(InvalidInputError):
        store.link(ALICE, "m1", [(a, "a", "concept")], [(a, b, "likes")])
    assert store.counts(ALICE) == {"entities": 0, "relations": 0, "mentions": 0}


def test_bad_arguments_are_invalid_input(store: QdrantGraphStore) -> None:
    for call in (
        lambda: store.link("", "m1", [], []),
        lambda: store.link(ALICE, "", [], []),
        lambda: store.neighbours(ALICE, [], max_hops=-1),
    ):
        with pytest.raises(InvalidInputError):
            call()


def test_residue_is_zero_after_forget_user(store: QdrantGraphStore) -> None:
    link_chain(store)
    assert sum(store.residue(ALICE).values()) > 0
    store.forget_user(ALICE)
    assert store.residue(ALICE) == {"graph_mentions": 0, "graph_relations": 0}
