"""Record-store contract: soft delete, history, hard delete, pending markers, facts, access counts.

Part of :class:`~hello_memory.testing.record_store.RecordStoreContract` (needs its fixtures).
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from hello_memory.stores.records.base import Fact, PendingOp, RecordQuery, RecordStore, RecordWrite
from hello_memory.testing.record_data import ALICE, BOB, T0, Factory, entry, memory


class RecordChangesContract:
    """How changes other than inserts and plain updates behave."""

    # -- soft delete, history, delete ------------------------------------------------------------
    def test_soft_delete_and_restore(self, store: RecordStore) -> None:
        item = memory("the blue umbrella")
        store.apply([RecordWrite(item)])
        gone = item.model_copy(update={"deleted_at": T0 + timedelta(hours=1)})
        store.apply([RecordWrite(gone, expected_version=1, pending=PendingOp.UNINDEX)])
        assert store.read(ALICE, [item.id]) == {}
        assert store.read(ALICE, [item.id], include_deleted=True)[item.id].version == 2
        assert store.lexical_search(ALICE, ["umbrella"], types=None, limit=5) == {}
        assert store.contents([item.id], ALICE) == {} and store.score_rows([item.id], ALICE) == {}
        assert [i.id for i in store.scan(ALICE, RecordQuery(deleted=True))] == [item.id]
        assert store.scan(ALICE, RecordQuery()) == []
        store.apply([RecordWrite(item, expected_version=2, pending=PendingOp.INDEX)])
        assert set(store.lexical_search(ALICE, ["umbrella"], types=None, limit=5)) == {item.id}

    def test_history_comes_back_in_the_order_applied(self, store: RecordStore) -> None:
        item = memory("v1")
        store.apply([RecordWrite(item, history=(entry(item, "add", 50),))])
        events = ["add"]
        for n, event in enumerate(("update", "update", "forget", "restore", "merge"), start=1):
            # clock runs backwards on purpose: the order is the order applied, never the times
            store.apply(
                [
                    RecordWrite(
                        item.model_copy(update={"content": f"v{n + 1}"}),
                        expected_version=n,
                        history=(entry(item, event, 50 - n),),
                    )
                ]
            )
            events.append(event)
        two = (entry(item, "supersede", 1), entry(item, "merge", 0))
        store.apply([RecordWrite(item.model_copy(update={"content": "v7"}), expected_version=6, history=two)])
        events += ["supersede", "merge"]
        assert [h.event for h in store.history(item.id, ALICE)] == events
        assert store.history(item.id, ALICE)[0].new == {"n": 50}

    def test_delete_removes_everything_of_the_memory(self, store: RecordStore) -> None:
        item, keep, theirs = memory("delete me"), memory("keep me"), memory("bob's", user=BOB)
        store.apply(
            [
                RecordWrite(
                    item,
                    history=(entry(item, "add"),),
                    facts=(Fact("s", "lives_in", "o"),),
                    pending=PendingOp.INDEX,
                )
            ]
        )
        store.apply([RecordWrite(keep), RecordWrite(theirs)])
        store.mark(ALICE, [item.id], PendingOp.PURGE)
        assert store.delete(ALICE, [item.id, theirs.id, str(uuid.uuid4())]) == 1
        assert store.read(ALICE, [item.id], include_deleted=True) == {}
        assert store.history(item.id, ALICE) == []
        assert store.conflicting_facts(ALICE, "s", "lives_in", "x") == []
        assert [p.memory_id for p in store.unsettled()] == []
        assert store.lexical_search(ALICE, ["delet"], types=None, limit=5) == {}
        assert set(store.ids(ALICE)) == {keep.id} and store.ids(BOB) == [theirs.id]
        assert store.delete(ALICE, []) == 0

    # -- pending work, facts, access -------------------------------------------------------------
    def test_pending_markers(self, store: RecordStore) -> None:
        a, b, theirs = memory("a"), memory("b"), memory("c", user=BOB)
        store.apply([RecordWrite(a, pending=PendingOp.INDEX), RecordWrite(b), RecordWrite(theirs)])
        assert {(p.memory_id, p.user_id, p.op) for p in store.unsettled()} == {(a.id, ALICE, PendingOp.INDEX)}
        store.mark(ALICE, [b.id, theirs.id], PendingOp.PURGE)  # another user's id is ignored
        assert {(p.memory_id, p.op) for p in store.unsettled()} == {
            (a.id, PendingOp.INDEX),
            (b.id, PendingOp.PURGE),
        }
        store.settle(BOB, [a.id])  # not Bob's: nothing happens
        assert len(store.unsettled()) == 2
        store.settle(ALICE, [a.id, b.id])
        assert store.unsettled() == []
        store.apply(
            [
                RecordWrite(
                    a.model_copy(update={"content": "a2"}), expected_version=1, pending=PendingOp.UNINDEX
                )
            ]
        )
        store.apply(
            [RecordWrite(a.model_copy(update={"content": "a3"}), expected_version=2)]
        )  # keeps the marker
        assert [(p.memory_id, p.op) for p in store.unsettled()] == [(a.id, PendingOp.UNINDEX)]

    def test_settling_at_a_version_keeps_a_newer_writes_marker(self, stores: Factory) -> None:
        one, two = stores(), stores()
        item = memory("shared")
        (first,) = one.apply([RecordWrite(item, pending=PendingOp.INDEX)])
        (second,) = two.apply(
            [
                RecordWrite(
                    item.model_copy(update={"content": "newer"}), expected_version=1, pending=PendingOp.INDEX
                )
            ]
        )
        one.settle(ALICE, [item.id], versions={item.id: first.version})  # worker one finished its own write
        assert [p.memory_id for p in two.unsettled()] == [item.id]  # worker two's work is still pending
        one.settle(BOB, [item.id], versions={item.id: second.version})  # not Bob's
        two.settle(ALICE, [item.id, str(uuid.uuid4())], versions={item.id: second.version})
        assert one.unsettled() == []

    def test_facts_and_conflicts(self, store: RecordStore) -> None:
        old = memory("Alice lives in Paris", kind="semantic")
        other = memory("Bob lives in Rome", kind="semantic", user=BOB)
        store.apply(
            [
                RecordWrite(old, facts=(Fact("alice", "lives_in", "paris"),)),
                RecordWrite(other, facts=(Fact("alice", "lives_in", "rome"),)),
            ]
        )
        assert store.conflicting_facts(ALICE, "alice", "lives_in", "berlin") == [old.id]
        assert store.conflicting_facts(ALICE, "alice", "lives_in", "paris") == []
        assert store.conflicting_facts(ALICE, "alice", "works_at", "berlin") == []
        store.apply(
            [RecordWrite(old.model_copy(update={"importance": 0.9}), expected_version=1)]
        )  # facts kept
        assert store.conflicting_facts(ALICE, "alice", "lives_in", "berlin") == [old.id]
        superseded = old.model_copy(update={"valid_to": T0 + timedelta(days=1)})
        store.apply([RecordWrite(superseded, expected_version=2)])
        assert store.conflicting_facts(ALICE, "alice", "lives_in", "berlin") == []
        assert store.conflicting_facts(BOB, "alice", "lives_in", "berlin") == [other.id]
        store.apply([RecordWrite(other, expected_version=1, facts=())])
        assert store.conflicting_facts(BOB, "alice", "lives_in", "berlin") == []

    def test_record_access_counts_without_a_version_bump(self, store: RecordStore) -> None:
        item, theirs = memory("x"), memory("y", user=BOB)
        store.apply([RecordWrite(item), RecordWrite(theirs)])
        at = T0 + timedelta(days=2)
        store.record_access(ALICE, [item.id, theirs.id], at)
        store.record_access(ALICE, [item.id], at)
        got = store.read(ALICE, [item.id])[item.id]
        assert (got.version, got.item.access_count) == (1, 2)
        assert (
            got.item.last_accessed_at is not None
            and abs((got.item.last_accessed_at - at).total_seconds()) < 1e-3
        )
        assert store.read(BOB, [theirs.id])[theirs.id].item.access_count == 0
