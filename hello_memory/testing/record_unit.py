"""Contract of the write unit (:meth:`~hello_memory.stores.records.base.RecordStore.write`).

Part of :class:`hello_memory.testing.record_store.RecordStoreContract`. What every backend keeps:
``then`` runs after the records are applied and may write to the same store; a marker is visible
to another worker while ``then`` runs; a failed ``then`` is reported as
:class:`~hello_memory.stores.records.base.FollowUpFailed` whose ``rolled_back`` tells the truth about
the records, and the markers stay for recovery; a failed apply stores nothing and leaves no marker.
"""

from __future__ import annotations

import pytest

from hello_memory.errors import IdConflictError
from hello_memory.stores.records.base import FollowUpFailed, PendingOp, RecordStore, RecordWrite, StoredRecord
from hello_memory.testing.record_data import ALICE, BOB, Factory, memory


class RecordUnitContract:
    """Write-unit cases; the host class provides the ``store`` and ``stores`` fixtures."""

    def test_then_sees_the_stored_records_and_may_write_again(self, store: RecordStore) -> None:
        first, second = memory("first"), memory("second")
        seen: list[StoredRecord] = []

        def then(stored: list[StoredRecord]) -> None:
            seen.extend(stored)
            store.apply([RecordWrite(second)])  # e.g. supersession: a write of its own, inside the unit

        out = store.write([RecordWrite(first, pending=PendingOp.INDEX)], then)
        assert [s.item.id for s in out] == [s.item.id for s in seen] == [first.id]
        assert set(store.read(ALICE, [first.id, second.id])) == {first.id, second.id}
        assert [(p.memory_id, p.op) for p in store.unsettled()] == [(first.id, PendingOp.INDEX)]

    @pytest.mark.parametrize("hold", [True, False])
    def test_a_marker_is_visible_to_another_worker_while_then_runs(self, stores: Factory, hold: bool) -> None:
        mine, other = stores(), stores()
        item = memory("indexed later")
        marked: list[set[str]] = []

        def then(stored: list[StoredRecord]) -> None:
            marked.append({p.memory_id for p in other.unsettled()})

        mine.write([RecordWrite(item, pending=PendingOp.INDEX)], then, hold=hold)
        assert marked == [{item.id}]

    def test_hold_false_commits_before_then(self, stores: Factory) -> None:
        mine, other = stores(), stores()
        item = memory("forgotten first")
        visible: list[bool] = []
        mine.write([RecordWrite(item)], lambda _: visible.append(item.id in other.read(ALICE, [item.id])), hold=False)
        assert visible == [True]

    @pytest.mark.parametrize("hold", [True, False])
    def test_a_failed_follow_up_says_whether_the_records_stayed(self, store: RecordStore, hold: bool) -> None:
        item = memory("its vector could not be written")

        def then(stored: list[StoredRecord]) -> None:
            raise RuntimeError("the vector index is down")

        with pytest.raises(FollowUpFailed) as caught:
            store.write([RecordWrite(item, pending=PendingOp.INDEX)], then, hold=hold)
        assert isinstance(caught.value.cause, RuntimeError)
        assert [s.item.id for s in caught.value.stored] == [item.id]
        stored = store.read(ALICE, [item.id])
        if caught.value.rolled_back:
            assert hold and stored == {}  # revoked with the follow-up: nothing of it is stored
        else:
            assert set(stored) == {item.id}  # committed: the follow-up is pending
        assert [p.memory_id for p in store.unsettled()] == [item.id]  # recovery finds it either way

    def test_a_failed_apply_stores_nothing_and_leaves_no_marker(self, store: RecordStore) -> None:
        taken = memory("bob's", user=BOB)
        store.apply([RecordWrite(taken)])
        fresh = memory("fresh")
        clash = memory("alice's").model_copy(update={"id": taken.id})
        with pytest.raises(IdConflictError):
            store.write([RecordWrite(fresh, pending=PendingOp.INDEX), RecordWrite(clash, pending=PendingOp.INDEX)])
        assert store.read(ALICE, [fresh.id, clash.id]) == {}
        assert store.unsettled() == []

    def test_batch_markers_name_their_batch_until_it_is_published(self, store: RecordStore) -> None:
        a, b, c = memory("step one"), memory("step two"), memory("another batch")
        store.write([RecordWrite(a, pending=PendingOp.BATCH, batch="b1")])
        store.write([RecordWrite(b, pending=PendingOp.BATCH, batch="b1")])
        store.write([RecordWrite(c, pending=PendingOp.BATCH, batch="b2")])
        found = {p.memory_id: (p.op, p.batch) for p in store.unsettled()}
        assert found == {a.id: (PendingOp.BATCH, "b1"), b.id: (PendingOp.BATCH, "b1"),
                         c.id: (PendingOp.BATCH, "b2")}
        assert all(p.at > 0 for p in store.unsettled())
        store.publish(BOB, "b1")  # another user's publish changes nothing of alice's
        assert {p.memory_id: p.op for p in store.unsettled()}[a.id] == PendingOp.BATCH
        store.publish(ALICE, "b1")
        after = {p.memory_id: (p.op, p.batch) for p in store.unsettled()}
        assert after == {a.id: (PendingOp.INDEX, None), b.id: (PendingOp.INDEX, None),
                         c.id: (PendingOp.BATCH, "b2")}
        store.settle(ALICE, [a.id, b.id])
        store.mark(ALICE, [c.id], PendingOp.PURGE)  # a marker set over a batch's forgets the batch
        assert [(p.op, p.batch) for p in store.unsettled()] == [(PendingOp.PURGE, None)]
        assert isinstance(store.exclusive, bool)
