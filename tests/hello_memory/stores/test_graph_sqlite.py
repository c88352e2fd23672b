"""SQLiteGraphStore: the graph contract, plus corruption, schema, validation and threads."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from hello_memory.errors import CorruptStoreError, InvalidInputError, StoreError
from hello_memory.language.extraction import entity_id
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.graph.sqlite import SCHEMA_VERSION, SQLiteGraphStore
from hello_memory.testing.graph_store import ALICE, GraphStoreContract, hops, link_chain, link_names


class TestSQLiteGraphStore(GraphStoreContract):
    persistent = True

    @pytest.fixture
    def graph_store(self, tmp_path):
        s = SQLiteGraphStore(tmp_path / "graph" / "graph.db")
        yield s
        s.close()

    def reopen(self, graph_store: GraphStore) -> GraphStore:
        assert isinstance(graph_store, SQLiteGraphStore)
        graph_store.close()
        return SQLiteGraphStore(graph_store.path)

    def stored_rows(self, graph_store: GraphStore, user_id: str) -> int:
        assert isinstance(graph_store, SQLiteGraphStore)
        with sqlite3.connect(graph_store.path) as conn:  # a second connection: what is on disk
            return sum(
                conn.execute(f"SELECT COUNT(*) FROM {t} WHERE user_id = ?", (user_id,)).fetchone()[0]
                for t in ("entities", "relations", "mentions")
            )


class TestSQLiteGraphStoreInMemory(GraphStoreContract):
    @pytest.fixture
    def graph_store(self):
        s = SQLiteGraphStore(":memory:")
        yield s
        s.close()


@pytest.fixture
def store(tmp_path):
    s = SQLiteGraphStore(tmp_path / "graph.db")
    yield s
    s.close()


def test_init_is_lazy(tmp_path):
    path = tmp_path / "sub" / "graph.db"
    s = SQLiteGraphStore(path)
    assert not path.exists()
    assert s.counts(ALICE) == {"entities": 0, "relations": 0, "mentions": 0}
    assert path.exists()
    s.close()


def test_a_file_that_is_not_a_database_is_a_corrupt_store(tmp_path):
    path = tmp_path / "graph.db"
    path.write_bytes(b"this is not sqlite at all " * 200)
    s = SQLiteGraphStore(path)
    with pytest.raises(CorruptStoreError) as info:
        s.counts(ALICE)
    assert info.value.path == str(path)
    assert isinstance(info.value, StoreError)
    s.close()


def test_a_foreign_database_with_other_tables_is_a_corrupt_store(tmp_path):
    path = tmp_path / "graph.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE entities (x)")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    with pytest.raises(CorruptStoreError, match="entities"):
        SQLiteGraphStore(path).counts(ALICE)


def test_schema_settings_are_recorded(store):
    store.counts(ALICE)
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "graph.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        SQLiteGraphStore(path).counts(ALICE)


def test_a_relation_to_an_entity_the_memory_does_not_link_writes_nothing(store):
    a, b = entity_id(ALICE, "a"), entity_id(ALICE, "b")
    with pytest.raises(InvalidInputError) as info:
        store.link(ALICE, "m1", [(a, "a", "concept")], [(a, b, "likes")])
    assert info.value.field == "relations"
    assert store.counts(ALICE) == {"entities": 0, "relations": 0, "mentions": 0}


@pytest.mark.parametrize(
    ("user_id", "memory_id", "entities"),
    [
        ("", "m1", []),
        (ALICE, "", []),
        (ALICE, "m1", [("", "a", "concept")]),
        (ALICE, "m1", [("id", "  ", "x")]),
    ],
)
def test_empty_ids_and_names_are_rejected(store, user_id, memory_id, entities):
    with pytest.raises(InvalidInputError):
        store.link(user_id, memory_id, entities, [])


def test_negative_max_hops_is_rejected(store):
    with pytest.raises(InvalidInputError):
        store.neighbours(ALICE, ["x"], max_hops=-1)


def test_a_specific_type_replaces_concept(store):
    eid = entity_id(ALICE, "Paris")
    store.link(ALICE, "m1", [(eid, "Paris", "concept")], [])
    store.link(ALICE, "m2", [(eid, "paris", "place")], [])
    store.link(ALICE, "m3", [(eid, "PARIS", "concept")], [])
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("SELECT name, type FROM entities").fetchall() == [("Paris", "place")]


def test_a_failed_write_rolls_back(store, monkeypatch):
    link_names(store, ALICE, "m1", ["a", "b"], [("a", "b", "likes")])
    before = store.counts(ALICE)
    monkeypatch.setattr("hello_memory.stores.graph.sqlite._DELETE_ORPHANS", "DELETE FROM nowhere WHERE ?=?")
    with pytest.raises(StoreError):
        link_names(store, ALICE, "m1", ["c"])
    assert store.counts(ALICE) == before


def test_use_after_close_raises(store):
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.counts(ALICE)


def test_context_manager_closes(tmp_path):
    with SQLiteGraphStore(tmp_path / "g.db") as s:
        link_names(s, ALICE, "m1", ["a"])
    with pytest.raises(StoreError):
        s.counts(ALICE)


def test_a_second_instance_reads_what_the_first_wrote(tmp_path):
    path = tmp_path / "g.db"
    with SQLiteGraphStore(path) as first, SQLiteGraphStore(path) as second:
        ids = link_chain(first)
        assert hops(second, ALICE, [ids["a"]]) == {ids["a"]: 0, ids["b"]: 1, ids["c"]: 2}


def test_concurrent_links_and_reads_are_consistent(store):
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(20):
                link_names(store, ALICE, f"m{k}-{i}", ["hub", f"n{k}-{i}"], [("hub", f"n{k}-{i}", "has")])
                store.neighbours(ALICE, [entity_id(ALICE, "hub")], max_hops=1)
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.counts(ALICE) == {"entities": 81, "relations": 80, "mentions": 160}
    assert len(store.neighbours(ALICE, [entity_id(ALICE, "hub")], max_hops=1)) == 81
