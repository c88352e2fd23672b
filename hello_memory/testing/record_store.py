"""Contract tests every :class:`~hello_memory.stores.records.RecordStore` backend must pass.

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
:mod:`hello_memory.testing.record_lexical`.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

import pytest

from hello_memory.errors import InvalidInputError, NotFoundError, WriteConflictError
from hello_memory.models import Entity, HistoryEntry, MemoryItem, MemoryType, Relation
from hello_memory.stores.records import (
    Fact,
    PendingOp,
    RecordOrder,
    RecordQuery,
    RecordStore,
    RecordWrite,
)
from hello_memory.testing.record_lexical import RecordLexicalContract

ALICE, BOB = "user-alice", "user-bob"
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
Factory = Callable[..., RecordStore]


def memory(
    content: str, *, user: str = ALICE, kind: str = "episodic", minutes: float = 0, **fields: Any
) -> MemoryItem:
    """A memory created ``minutes`` after ``T0``."""
    at = T0 + timedelta(minutes=minutes)
    return MemoryItem(
        user_id=user, memory_type=MemoryType(kind), content=content, created_at=at, updated_at=at, **fields
    )


def entry(item: MemoryItem, event: str, n: int = 0) -> HistoryEntry:
    """A history entry of ``item`` (``n`` seconds after its creation)."""
    return HistoryEntry(
        memory_id=item.id, event=event, new={"n": n}, at=item.created_at + timedelta(seconds=n)
    )


def same(a: MemoryItem, b: MemoryItem) -> None:
    """Assert two memories are equal (times to the millisecond: backends store epoch floats)."""
    da, db = a.model_dump(), b.model_dump()
    for key, value in da.items():
        if isinstance(value, datetime):
            assert abs((value - db[key]).total_seconds()) < 1e-3, key
        else:
            assert value == db[key], key


class RecordStoreContract(RecordLexicalContract):
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
            with pytest.raises(WriteConflictError) as info:
                store.apply([RecordWrite(other)])
            assert "tulip" not in str(info.value) and ALICE not in str(info.value)
            assert info.value.memory_id == secret.id and info.value.stored_version is None
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
