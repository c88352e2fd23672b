"""Contract tests every :class:`~hello_memory.stores.graph.base.GraphStore` backend must pass.

Subclass :class:`GraphStoreContract` in a test module and supply a ``graph_store`` fixture yielding
a fresh, empty store. Persistent backends set ``persistent = True`` and override
:meth:`GraphStoreContract.reopen`; backends that can be scanned directly override
:meth:`GraphStoreContract.stored_rows` so that ``forget_user`` is checked against the storage itself::

    class TestMyGraphStore(GraphStoreContract):
        @pytest.fixture
        def graph_store(self, tmp_path):
            s = MyGraphStore(tmp_path / "graph.db")
            yield s
            s.close()
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Sequence
from typing import ClassVar

import pytest

from hello_memory.language.extraction import entity_id
from hello_memory.stores.graph.base import GraphStore

ALICE, BOB = "user-alice", "user-bob"
CHAIN = ("a", "b", "c", "d")


def link_names(
    store: GraphStore,
    user_id: str,
    memory_id: str,
    names: Sequence[str],
    edges: Sequence[tuple[str, str, str]] = (),
) -> dict[str, str]:
    """Link ``names`` (type "concept") and ``edges`` (source, target, type) by name; returns name -> id."""
    ids = {n: entity_id(user_id, n) for n in names}
    store.link(
        user_id,
        memory_id,
        [(ids[n], n, "concept") for n in names],
        [(ids[s], ids[t], r) for s, t, r in edges],
    )
    return ids


def link_chain(store: GraphStore, user_id: str = ALICE) -> dict[str, str]:
    """a -> b -> c -> d, one memory per edge (m-ab, m-bc, m-cd)."""
    ids: dict[str, str] = {}
    for s, t in itertools.pairwise(CHAIN):
        ids |= link_names(store, user_id, f"m-{s}{t}", [s, t], [(s, t, "related_to")])
    return ids


def hops(store: GraphStore, user_id: str, start: Sequence[str], max_hops: int = 2) -> dict[str, int]:
    """neighbours() as entity id -> hops, asserting that no entity is reported twice."""
    found = store.neighbours(user_id, list(start), max_hops=max_hops)
    assert len({n.entity_id for n in found}) == len(found), "an entity is reported more than once"
    return {n.entity_id: n.hops for n in found}


class GraphStoreContract:
    """The behaviour every graph store shares; subclasses provide the ``graph_store`` fixture."""

    persistent: ClassVar[bool] = False

    def reopen(self, graph_store: GraphStore) -> GraphStore:
        """Close ``graph_store`` and open its data again (persistent backends override this)."""
        raise NotImplementedError

    def stored_rows(self, graph_store: GraphStore, user_id: str) -> int:
        """Rows (nodes, edges, ...) the backend holds for ``user_id``, found by scanning the storage."""
        return sum(graph_store.counts(user_id).values())

    # -- basics ------------------------------------------------------------------------------

    def test_is_a_graph_store(self, graph_store: GraphStore) -> None:
        assert isinstance(graph_store, GraphStore)
        assert isinstance(graph_store.backend, str) and graph_store.backend

    def test_entity_ids_are_stable_per_user_and_normalised_name(self) -> None:
        first = entity_id(ALICE, "Alice Smith")
        assert uuid.UUID(first)
        assert first == entity_id(ALICE, "  alice   SMITH ") == entity_id(ALICE, "Ａｌｉｃｅ Ｓｍｉｔｈ")
        assert first != entity_id(BOB, "Alice Smith")
        assert entity_id(ALICE, "北京") == entity_id(ALICE, " 北京 ") != entity_id(ALICE, "南京")

    def test_link_records_entities_mentions_and_relations(self, graph_store: GraphStore) -> None:
        link_names(graph_store, ALICE, "m1", ["a", "b", "c"], [("a", "b", "likes"), ("b", "c", "is")])
        assert graph_store.counts(ALICE) == {"entities": 3, "relations": 2, "mentions": 3}

    def test_one_name_from_two_memories_is_one_entity(self, graph_store: GraphStore) -> None:
        first = link_names(graph_store, ALICE, "m1", ["Alice"])
        second = link_names(graph_store, ALICE, "m2", ["ALICE"])
        assert first["Alice"] == second["ALICE"]
        assert graph_store.counts(ALICE) == {"entities": 1, "relations": 0, "mentions": 2}
        assert [eid for eid, _ in graph_store.find_entities(ALICE, ["alice"])] == [first["Alice"]]

    def test_relink_replaces_the_previous_links(self, graph_store: GraphStore) -> None:
        ids = link_names(graph_store, ALICE, "m1", ["a", "b"], [("a", "b", "likes")])
        ids |= link_names(graph_store, ALICE, "m1", ["a", "c"], [("a", "c", "likes")])
        assert graph_store.counts(ALICE) == {"entities": 2, "relations": 1, "mentions": 2}
        assert hops(graph_store, ALICE, [ids["a"]]) == {ids["a"]: 0, ids["c"]: 1}
        assert graph_store.find_entities(ALICE, ["b"]) == []

    def test_relink_with_the_same_links_is_idempotent(self, graph_store: GraphStore) -> None:
        for _ in range(2):
            link_names(graph_store, ALICE, "m1", ["a", "b"], [("a", "b", "likes")])
        assert graph_store.counts(ALICE) == {"entities": 2, "relations": 1, "mentions": 2}

    # -- unlink ------------------------------------------------------------------------------

    def test_unlink_removes_mentions_relations_and_orphan_entities(self, graph_store: GraphStore) -> None:
        ids = link_names(graph_store, ALICE, "m1", ["a", "b"], [("a", "b", "likes")])
        graph_store.unlink_memory(ALICE, "m1")
        assert graph_store.counts(ALICE) == {"entities": 0, "relations": 0, "mentions": 0}
        assert graph_store.neighbours(ALICE, list(ids.values())) == []
        assert graph_store.memories_mentioning(ALICE, list(ids.values())) == {}

    def test_unlink_keeps_entities_another_memory_mentions(self, graph_store: GraphStore) -> None:
        ids = link_names(graph_store, ALICE, "m1", ["a", "b"], [("a", "b", "likes")])
        ids |= link_names(graph_store, ALICE, "m2", ["b", "c"], [("b", "c", "is")])
        graph_store.unlink_memory(ALICE, "m1")
        assert graph_store.counts(ALICE) == {"entities": 2, "relations": 1, "mentions": 2}
        assert graph_store.memories_mentioning(ALICE, [ids["a"], ids["b"]]) == {"m2": [ids["b"]]}
        assert hops(graph_store, ALICE, [ids["b"]]) == {ids["b"]: 0, ids["c"]: 1}

    def test_a_relation_two_memories_assert_survives_one_unlink(self, graph_store: GraphStore) -> None:
        ids = link_names(graph_store, ALICE, "m1", ["a", "b"], [("a", "b", "likes")])
        link_names(graph_store, ALICE, "m2", ["a", "b"], [("a", "b", "likes")])
        graph_store.unlink_memory(ALICE, "m1")
        assert hops(graph_store, ALICE, [ids["a"]]) == {ids["a"]: 0, ids["b"]: 1}

    def test_unlink_of_an_unknown_memory_is_a_no_op(self, graph_store: GraphStore) -> None:
        link_names(graph_store, ALICE, "m1", ["a"])
        graph_store.unlink_memory(ALICE, "never-linked")
        assert graph_store.counts(ALICE)["entities"] == 1

    # -- traversal ---------------------------------------------------------------------------

    def test_neighbours_stop_at_max_hops(self, graph_store: GraphStore) -> None:
        ids = link_chain(graph_store)
        a, b, c, d = (ids[n] for n in CHAIN)
        assert hops(graph_store, ALICE, [a], max_hops=2) == {a: 0, b: 1, c: 2}
        assert hops(graph_store, ALICE, [a], max_hops=3) == {a: 0, b: 1, c: 2, d: 3}
        assert hops(graph_store, ALICE, [a], max_hops=0) == {a: 0}

    def test_neighbours_carry_names_and_come_nearest_first(self, graph_store: GraphStore) -> None:
        ids = link_chain(graph_store)
        found = graph_store.neighbours(ALICE, [ids["a"]], max_hops=3)
        assert [(n.name, n.hops) for n in found] == [("a", 0), ("b", 1), ("c", 2), ("d", 3)]

    def test_neighbours_follow_edges_in_both_directions(self, graph_store: GraphStore) -> None:
        ids = link_chain(graph_store)
        assert hops(graph_store, ALICE, [ids["d"]], max_hops=2) == {ids["d"]: 0, ids["c"]: 1, ids["b"]: 2}

    def test_neighbours_of_several_starts_report_the_nearest(self, graph_store: GraphStore) -> None:
        ids = link_chain(graph_store)
        a, b, c, d = (ids[n] for n in CHAIN)
        assert hops(graph_store, ALICE, [a, d, a], max_hops=1) == {a: 0, b: 1, c: 1, d: 0}

    def test_neighbours_of_unknown_or_no_starts_are_empty(self, graph_store: GraphStore) -> None:
        link_chain(graph_store)
        assert graph_store.neighbours(ALICE, [entity_id(ALICE, "zzz")]) == []
        assert graph_store.neighbours(ALICE, []) == []

    def test_neighbours_see_every_write(self, graph_store: GraphStore) -> None:
        ids = link_chain(graph_store)
        assert ids["c"] in hops(graph_store, ALICE, [ids["a"]])
        ids |= link_names(graph_store, ALICE, "m-ae", ["a", "e"], [("e", "a", "likes")])
        assert hops(graph_store, ALICE, [ids["a"]], max_hops=1)[ids["e"]] == 1
        graph_store.unlink_memory(ALICE, "m-ab")
        assert hops(graph_store, ALICE, [ids["a"]]) == {ids["a"]: 0, ids["e"]: 1}

    # -- lookups -----------------------------------------------------------------------------

    def test_memories_mentioning_maps_memories_to_the_given_entities(self, graph_store: GraphStore) -> None:
        ids = link_chain(graph_store)
        found = graph_store.memories_mentioning(ALICE, [ids["c"], ids["b"]])
        assert {m: sorted(e) for m, e in found.items()} == {
            "m-ab": [ids["b"]],
            "m-bc": sorted([ids["b"], ids["c"]]),
            "m-cd": [ids["c"]],
        }
        assert graph_store.memories_mentioning(ALICE, []) == {}

    def test_find_entities_matches_normalised_names(self, graph_store: GraphStore) -> None:
        ids = link_names(graph_store, ALICE, "m1", ["Alice Smith", "北京", "ＡＢＣ"])
        found = graph_store.find_entities(ALICE, ["alice  SMITH", "abc", "北京", "nobody"])
        assert sorted(found) == sorted(
            [(ids["Alice Smith"], "Alice Smith"), (ids["ＡＢＣ"], "ＡＢＣ"), (ids["北京"], "北京")]
        )
        assert graph_store.find_entities(ALICE, []) == []

    # -- users -------------------------------------------------------------------------------

    def test_users_with_the_same_names_get_different_entities(self, graph_store: GraphStore) -> None:
        a_ids = link_chain(graph_store, ALICE)
        b_ids = link_names(graph_store, BOB, "m-ab", ["a", "b"], [("a", "b", "related_to")])
        assert set(a_ids.values()).isdisjoint(b_ids.values())
        assert sorted(graph_store.find_entities(BOB, ["a", "b", "c"])) == sorted(
            [(b_ids["a"], "a"), (b_ids["b"], "b")]
        )
        assert graph_store.counts(BOB) == {"entities": 2, "relations": 1, "mentions": 2}

    def test_a_user_never_reaches_another_users_graph(self, graph_store: GraphStore) -> None:
        a_ids = link_chain(graph_store, ALICE)
        b_ids = link_names(graph_store, BOB, "m-bob", ["a", "x"], [("a", "x", "likes")])
        assert graph_store.neighbours(BOB, list(a_ids.values())) == []
        assert graph_store.memories_mentioning(BOB, list(a_ids.values())) == {}
        assert hops(graph_store, BOB, [b_ids["a"]], max_hops=5) == {b_ids["a"]: 0, b_ids["x"]: 1}
        assert graph_store.neighbours(ALICE, list(b_ids.values())) == []

    def test_writes_of_one_user_leave_the_other_untouched(self, graph_store: GraphStore) -> None:
        link_names(graph_store, ALICE, "m1", ["a", "b"], [("a", "b", "likes")])
        link_names(graph_store, BOB, "m1", ["a", "b"], [("a", "b", "likes")])  # same memory id
        before = graph_store.counts(ALICE)
        graph_store.unlink_memory(BOB, "m1")
        link_names(graph_store, BOB, "m2", ["z"])
        assert graph_store.counts(ALICE) == before

    def test_forget_user_deletes_everything_of_that_user_only(self, graph_store: GraphStore) -> None:
        link_chain(graph_store, ALICE)
        link_names(graph_store, BOB, "m-ab", ["a", "b"], [("a", "b", "likes")])
        expected = graph_store.counts(ALICE)
        assert graph_store.forget_user(ALICE) == expected == {"entities": 4, "relations": 3, "mentions": 6}
        assert graph_store.counts(ALICE) == {"entities": 0, "relations": 0, "mentions": 0}
        assert self.stored_rows(graph_store, ALICE) == 0
        assert graph_store.counts(BOB) == {"entities": 2, "relations": 1, "mentions": 2}
        assert graph_store.forget_user(ALICE) == {"entities": 0, "relations": 0, "mentions": 0}

    # -- lifecycle ---------------------------------------------------------------------------

    def test_links_survive_close_and_reopen(self, graph_store: GraphStore) -> None:
        if not self.persistent:
            pytest.skip("backend is not persistent")
        ids = link_chain(graph_store)
        link_names(graph_store, BOB, "m1", ["a"])
        before = (hops(graph_store, ALICE, [ids["a"]], 3), graph_store.counts(ALICE), graph_store.counts(BOB))
        reopened = self.reopen(graph_store)
        try:
            after = (hops(reopened, ALICE, [ids["a"]], 3), reopened.counts(ALICE), reopened.counts(BOB))
            assert after == before
            assert reopened.find_entities(ALICE, ["A"]) == [(ids["a"], "a")]
            assert set(reopened.memories_mentioning(ALICE, [ids["b"]])) == {"m-ab", "m-bc"}
        finally:
            reopened.close()

    def test_close_is_idempotent(self, graph_store: GraphStore) -> None:
        graph_store.close()
        graph_store.close()
