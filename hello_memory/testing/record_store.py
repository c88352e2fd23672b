"""Contract tests every :class:`~hello_memory.stores.records.base.RecordStore` backend must pass.

Subclass :class:`RecordStoreContract` and supply a ``stores`` fixture: a factory
``stores(*, context_window=0, name="main")`` that returns a new store object each time it is called,
on data of its own per ``name`` that starts empty (``stores()`` twice = two workers on one backend),
with ``context_window`` session neighbours in its lexical documents::

    class TestMyRecordStore(RecordStoreContract):
        @pytest.fixture
        def stores(self, tmp_path):
            opened = []
            def make(*, context_window=0, name="main"):
                opened.append(MyRecordStore(tmp_path / name, context_window=context_window))
                return opened[-1]
            yield make
            for s in opened:
                s.close()

Persistent backends set ``persistent = True`` and override :meth:`RecordStoreContract.reopen`;
backends that can be scanned directly override :meth:`RecordStoreContract.stored_rows` so that
``forget_user`` is checked against the storage itself. The lexical ranking cases live in
:mod:`hello_memory.testing.record_lexical`, the changes (soft delete, history, markers, facts)
in :mod:`hello_memory.testing.record_changes`, the write unit in :mod:`hello_memory.testing.record_unit`
and the conversation ledger in :mod:`hello_memory.testing.turn_ledger`; all are part of this class.
"""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta
from typing import Any, ClassVar

import pytest

from hello_memory.errors import IdConflictError, InvalidInputError, NotFoundError, WriteConflictError
from hello_memory.models import Entity, MemoryItem, MemoryType, Relation
from hello_memory.stores.records.base import (
    Fact,
    PendingOp,
    RecordOrder,
    RecordQuery,
    RecordStore,
    RecordWrite,
)
from hello_memory.testing.record_changes import RecordChangesContract
from hello_memory.testing.record_data import ALICE, BOB, T0, Factory, entry, memory
from hello_memory.testing.record_lexical import RecordLexicalContract
from hello_memory.testing.record_unit import RecordUnitContract
from hello_memory.testing.turn_ledger import TurnLedgerContract

__all__ = ["ALICE", "BOB", "T0", "Factory", "RecordStoreContract", "entry", "memory", "same"]


def same(a: MemoryItem, b: MemoryItem) -> None:
    """Assert two memories are equal (times to the millisecond: backends store epoch floats)."""
    da, db = a.model_dump(), b.model_dump()
    for key, value in da.items():
        if isinstance(value, datetime):
            assert abs((value - db[key]).total_seconds()) < 1e-3, key
        else:
            assert value == db[key], key


class RecordStoreContract(RecordChangesContract, RecordLexicalContract, RecordUnitContract, TurnLedgerContract):
    """The behaviour every record store shares; subclasses provide the ``stores`` fixture."""

    persistent: ClassVar[bool] = False

    def reopen(self, store: RecordStore) -> RecordStore:
        """Close ``store`` and open its data again (persistent backends override this)."""
        raise NotImplementedError

    def stored_rows(self, store: RecordStore, user_id: str) -> int:
        """Rows or points the backend holds for ``user_id``, found by scanning the storage."""
        return sum(store.residue(user_id).values())

    @pytest.fixture
    def store(self, stores: Factory) -> RecordStore:
        """One store on fresh data."""
        return stores()

    # -- basics ---------------------------------------------------------------------------------
    def test_is_a_record_store(self, store: RecordStore) -> None:
        assert isinstance(store, RecordStore)
        assert isinstance(store.backend, str) and store.backend
        assert isinstance(store.keeps_vectors, bool)

    def test_insert_and_read_round_trip(self, store: RecordStore) -> None:
        items = [
            memory(
                "用户喜欢在周末去爬山",
                session_id="s1",
                tags=["爬山"],
                participants=["小明"],
                event_type="chat",
            ),
            memory(
                "Alice works at Acme",
                kind="semantic",
                entities=[Entity(id="e1", name="Alice"), Entity(id="e2", name="Acme", type="org")],
                relations=[Relation(source_id="e1", target_id="e2", type="works_at")],
                valid_to=T0 + timedelta(days=3),
                metadata={"source": "note", "nested": {"k": [1, 2.5, None, True]}, "zh": "中文"},
            ),
            memory("a photo of a cat", kind="perceptual", modality="image", source_path="/x/cat.jpg"),
            memory("buy milk", kind="working", importance=0.9, agent_id="agent-1"),
        ]
        stored = store.apply([RecordWrite(it) for it in items])
        assert [s.version for s in stored] == [1, 1, 1, 1]
        got = store.read(ALICE, [it.id for it in items])
        assert set(got) == {it.id for it in items}
        for it in items:
            same(got[it.id].item, it)
            assert got[it.id].version == 1

    def test_reads_are_scoped_to_the_user(self, store: RecordStore) -> None:
        mine, theirs = memory("mine"), memory("theirs", user=BOB)
        store.apply([RecordWrite(mine), RecordWrite(theirs)])
        assert set(store.read(ALICE, [mine.id, theirs.id, str(uuid.uuid4()), "not-a-uuid"])) == {mine.id}
        assert store.read(BOB, [mine.id]) == {}
        assert store.contents([mine.id, theirs.id], ALICE) == {mine.id: "mine"}
        assert set(store.score_rows([mine.id, theirs.id], BOB)) == {theirs.id}
        assert store.ids(ALICE) == [mine.id]
        assert store.history(mine.id, BOB) == []

    def test_invalid_writes_are_refused_and_write_nothing(self, store: RecordStore) -> None:
        good = memory("good")
        bad = [
            RecordWrite(memory("x").model_copy(update={"id": "not-a-uuid"})),
            RecordWrite(memory("x").model_copy(update={"id": str(uuid.uuid4()).upper()})),
            RecordWrite(memory("x"), expected_version=0),
            RecordWrite(memory("x"), expected_version=True),
        ]
        for w in bad:
            with pytest.raises(InvalidInputError):
                store.apply([RecordWrite(good), w])
        with pytest.raises(InvalidInputError):
            store.apply(RecordWrite(good))  # type: ignore[arg-type]
        assert store.read(ALICE, [good.id]) == {}

    # -- idempotency and conflicts --------------------------------------------------------------
    def test_retrying_the_same_insert_stores_it_once(self, store: RecordStore) -> None:
        item = memory("Alice likes green tea")
        write = RecordWrite(item, history=(entry(item, "add"),), pending=PendingOp.INDEX)
        first = store.apply([write])
        again = store.apply([write])
        assert [s.version for s in first] == [s.version for s in again] == [1]
        same(again[0].item, item)
        assert store.ids(ALICE) == [item.id]
        assert [h.event for h in store.history(item.id, ALICE)] == ["add"]
        assert len(store.lexical_search(ALICE, ["green"], types=None, limit=10)) == 1

    def test_retrying_a_partly_applied_batch_completes_it(self, store: RecordStore) -> None:
        items = [memory(f"note number {i}", minutes=i) for i in range(6)]
        writes = [RecordWrite(it, history=(entry(it, "add"),)) for it in items]
        store.apply(writes[:3])  # a worker died after the third
        store.apply(writes)
        assert sorted(store.ids(ALICE)) == sorted(it.id for it in items)
        assert all(len(store.history(it.id, ALICE)) == 1 for it in items)

    def test_inserting_a_taken_id_conflicts_without_revealing_it(self, store: RecordStore) -> None:
        secret = memory("Alice's password hint is tulip", user=ALICE)
        store.apply([RecordWrite(secret)])
        for other in (
            secret.model_copy(update={"content": "something else"}),
            secret.model_copy(update={"user_id": BOB}),
            secret.model_copy(update={"memory_type": MemoryType.SEMANTIC}),
        ):
            with pytest.raises(IdConflictError) as info:
                store.apply([RecordWrite(other)])
            assert "tulip" not in str(info.value) and ALICE not in str(info.value)
            assert info.value.memory_id == secret.id and info.value.field == "memory_id"
        assert store.read(ALICE, [secret.id])[secret.id].item.content == secret.content
        assert store.read(BOB, [secret.id]) == {}

    def test_update_with_the_read_version(self, store: RecordStore) -> None:
        item = memory("Alice drinks green tea")
        store.apply([RecordWrite(item)])
        new = item.model_copy(update={"content": "Alice drinks black coffee", "importance": 0.8})
        (done,) = store.apply([RecordWrite(new, expected_version=1, history=(entry(item, "update"),))])
        assert done.version == 2
        got = store.read(ALICE, [item.id])[item.id]
        assert (got.version, got.item.content, got.item.importance) == (2, "Alice drinks black coffee", 0.8)
        assert set(store.lexical_search(ALICE, ["coffe"], types=None, limit=5)) == {item.id}
        assert store.lexical_search(ALICE, ["tea"], types=None, limit=5) == {}

    def test_a_stale_update_conflicts_and_changes_nothing(self, store: RecordStore) -> None:
        item = memory("version one")
        store.apply([RecordWrite(item)])
        store.apply([RecordWrite(item.model_copy(update={"content": "version two"}), expected_version=1)])
        late = RecordWrite(item.model_copy(update={"content": "version three"}), expected_version=1)
        with pytest.raises(WriteConflictError) as info:
            store.apply([late])
        assert (info.value.expected_version, info.value.stored_version) == (1, 2)
        got = store.read(ALICE, [item.id])[item.id]
        assert (got.version, got.item.content) == (2, "version two")

    def test_retrying_an_applied_update_conflicts_and_applies_once(self, store: RecordStore) -> None:
        item = memory("before")
        store.apply([RecordWrite(item)])
        write = RecordWrite(
            item.model_copy(update={"content": "after"}), expected_version=1, history=(entry(item, "update"),)
        )
        store.apply([write])
        with pytest.raises(WriteConflictError):
            store.apply([write])  # the retry after a timeout: re-read to see it landed
        assert [h.event for h in store.history(item.id, ALICE)] == ["update"]
        assert store.read(ALICE, [item.id])[item.id].version == 2

    def test_updating_an_absent_or_foreign_memory_is_not_found(self, store: RecordStore) -> None:
        theirs = memory("theirs", user=BOB)
        store.apply([RecordWrite(theirs)])
        with pytest.raises(NotFoundError):
            store.apply([RecordWrite(memory("never stored"), expected_version=1)])
        with pytest.raises(NotFoundError):
            store.apply([RecordWrite(theirs.model_copy(update={"user_id": ALICE}), expected_version=1)])
        assert store.read(BOB, [theirs.id])[theirs.id].item.content == "theirs"

    def test_concurrent_updates_of_one_memory_first_writer_wins(self, stores: Factory) -> None:
        workers = [stores(), stores()]
        item = memory("counter 0")
        workers[0].apply([RecordWrite(item)])
        wins, losses, errors = [], [], []

        def run(n: int) -> None:
            worker = workers[n % 2]
            for i in range(10):
                stored = worker.read(ALICE, [item.id])[item.id]
                new = stored.item.model_copy(update={"content": f"worker {n} step {i}"})
                try:
                    worker.apply(
                        [
                            RecordWrite(
                                new, expected_version=stored.version, history=(entry(item, f"{n}.{i}"),)
                            )
                        ]
                    )
                    wins.append(1)
                except WriteConflictError:
                    losses.append(1)
                except Exception as e:  # pragma: no cover - reported below
                    errors.append(e)

        threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert len(wins) + len(losses) == 40 and wins
        final = workers[1].read(ALICE, [item.id])[item.id]
        assert final.version == 1 + len(wins)
        assert len(workers[0].history(item.id, ALICE)) == len(wins)

    # -- scans and counts ------------------------------------------------------------------------
    def test_scan_filters_orders_and_limits(self, store: RecordStore) -> None:
        a = memory("a", minutes=1, importance=0.2, session_id="s1")
        b = memory("b", minutes=2, importance=0.9, kind="semantic")
        c = memory("c", minutes=3, importance=0.5, session_id="s1")
        w = memory("w", minutes=4, importance=0.1, kind="working")
        gone = memory("gone", minutes=5).model_copy(update={"deleted_at": T0})
        store.apply([RecordWrite(x) for x in (a, b, c, w, gone)] + [RecordWrite(memory("bob", user=BOB))])

        def ids(**kw: Any) -> list[str]:
            return [i.content for i in store.scan(ALICE, RecordQuery(**kw))]

        assert ids() == ["w", "c", "b", "a"]
        assert ids(order=RecordOrder.OLDEST) == ["a", "b", "c", "w"]
        assert ids(order=RecordOrder.IMPORTANT) == ["b", "c", "a", "w"]
        assert ids(limit=2) == ["w", "c"] and ids(limit=0) == []
        assert ids(types=(MemoryType.EPISODIC,)) == ["c", "a"] and ids(types=()) == []
        assert ids(types=(MemoryType.SEMANTIC, MemoryType.WORKING)) == ["w", "b"]
        assert ids(session_id="s1") == ["c", "a"]
        start, end = (T0 + timedelta(minutes=2)).timestamp(), (T0 + timedelta(minutes=3)).timestamp()
        assert ids(time_range=(start, end)) == ["c", "b"]
        assert ids(time_range=(None, end)) == ["c", "b", "a"]
        assert ids(deleted=True) == ["gone"] and len(ids(deleted=None)) == 5

    def test_stats(self, store: RecordStore) -> None:
        items = [
            memory("a", importance=0.2),
            memory("b", importance=0.6, kind="semantic"),
            memory("c", importance=1.0),
        ]
        gone = memory("d", importance=0.0).model_copy(update={"deleted_at": T0})
        store.apply([RecordWrite(x) for x in (*items, gone)] + [RecordWrite(memory("bob", user=BOB))])
        stats = store.stats(ALICE)
        assert stats.live == {"episodic": 2, "semantic": 1} and stats.deleted == {"episodic": 1}
        assert stats.avg_importance == pytest.approx(0.6)
        assert store.stats("nobody").live == {} and store.stats("nobody").avg_importance == 0.0
        assert sorted(store.users()) == [ALICE, BOB]

    def test_score_rows_and_previous_in_session(self, store: RecordStore) -> None:
        first = memory("hi", minutes=1, session_id="s", participants=["Ann"])
        tie_a = memory("same minute a", minutes=2, session_id="s")
        tie_b = memory("same minute b", minutes=2, session_id="s")
        other = memory("elsewhere", minutes=1.5, session_id="t")
        fact = memory(
            "a fact", kind="semantic", minutes=1.7, session_id="s", entities=[Entity(id="e9", name="X")]
        )
        store.apply([RecordWrite(x) for x in (first, tie_a, tie_b, other, fact)])
        ids = [first.id, tie_a.id, tie_b.id, other.id, fact.id]
        assert store.previous_in_session(ids, ALICE) == {tie_a.id: first.id, tie_b.id: tie_a.id}
        rows = store.score_rows(ids, ALICE)
        assert rows[first.id].participants == ("Ann",) and rows[fact.id].entity_ids == ("e9",)
        assert rows[fact.id].memory_type == MemoryType.SEMANTIC and rows[first.id].session_id == "s"
        assert rows[first.id].created_ts == pytest.approx(first.created_at.timestamp())

    # -- forget_user, workers, persistence ---------------------------------------------------------
    def test_forget_user_leaves_zero_residue(self, store: RecordStore) -> None:
        victim = [memory(f"victim {i}", session_id="s", minutes=i) for i in range(5)]
        store.apply(
            [
                RecordWrite(
                    x, history=(entry(x, "add"),), facts=(Fact("a", "r", str(i)),), pending=PendingOp.INDEX
                )
                for i, x in enumerate(victim)
            ]
        )
        store.apply(
            [
                RecordWrite(
                    victim[0].model_copy(update={"deleted_at": T0}),
                    expected_version=1,
                    history=(entry(victim[0], "forget"),),
                )
            ]
        )
        survivor = memory("survivor", user=BOB)
        store.apply([RecordWrite(survivor, history=(entry(survivor, "add"),))])
        counts = store.forget_user(ALICE)
        assert counts["memories"] == 5 and counts["history"] == 6  # the same keys on every backend
        assert sum(counts.values()) >= 5 + 6
        assert all(v == 0 for v in store.residue(ALICE).values())
        assert self.stored_rows(store, ALICE) == 0
        assert store.ids(ALICE) == [] and store.unsettled() == []
        assert store.ids(BOB) == [survivor.id] and len(store.history(survivor.id, BOB)) == 1

    def test_two_store_objects_see_each_others_writes_at_once(self, stores: Factory) -> None:
        one, two = stores(), stores()
        item = memory("the red kite")
        one.apply([RecordWrite(item)])
        assert set(two.lexical_search(ALICE, ["kite"], types=None, limit=5)) == {item.id}
        assert two.read(ALICE, [item.id])[item.id].version == 1
        two.apply([RecordWrite(item.model_copy(update={"content": "the green kite"}), expected_version=1)])
        assert one.read(ALICE, [item.id])[item.id].item.content == "the green kite"
        with pytest.raises(WriteConflictError):
            one.apply([RecordWrite(item.model_copy(update={"content": "stale"}), expected_version=1)])
        two.delete(ALICE, [item.id])
        assert one.read(ALICE, [item.id], include_deleted=True) == {}
        assert one.lexical_search(ALICE, ["kite"], types=None, limit=5) == {}

    def test_data_survives_close_and_reopen(self, store: RecordStore) -> None:
        if not self.persistent:
            pytest.skip("backend is not persistent")
        item = memory("persisted memory", session_id="s")
        store.apply([RecordWrite(item, history=(entry(item, "add"),), pending=PendingOp.INDEX)])
        store.apply([RecordWrite(item.model_copy(update={"content": "persisted again"}), expected_version=1)])
        reopened = self.reopen(store)
        try:
            got = reopened.read(ALICE, [item.id])[item.id]
            assert (got.version, got.item.content) == (2, "persisted again")
            assert [h.event for h in reopened.history(item.id, ALICE)] == ["add"]
            assert [p.memory_id for p in reopened.unsettled()] == [item.id]
            assert set(reopened.lexical_search(ALICE, ["persist"], types=None, limit=3)) == {item.id}
        finally:
            reopened.close()

    def test_close_is_idempotent(self, store: RecordStore) -> None:
        store.close()
        store.close()
