"""Large inserts in bounded write steps: other writes go on between steps, and a batch stays all or nothing."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.core import recovery, state, writes
from hello_memory.core.prepare import prepare
from hello_memory.errors import StoreError
from hello_memory.stores.records.base import Pending, PendingOp
from hello_memory.stores.vectors.memory import InMemoryVectorStore
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

HANG = 30


class Vectors(InMemoryVectorStore):
    """Counts upserts; can hold one (``hold_at``) until released, or fail one (``fail_at``)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.hold_at: int | None = None
        self.fail_at: int | None = None
        self.inside = threading.Event()
        self.release = threading.Event()

    def upsert(self, collection: str, points: Any) -> None:
        self.calls += 1
        if self.calls == self.hold_at:
            self.inside.set()
            assert self.release.wait(HANG)
        if self.calls == self.fail_at:
            raise RuntimeError("vector index down")
        super().upsert(collection, points)


@pytest.fixture
def small_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "STEP", 4)


def _manager(home: Path, vectors: Vectors | None = None) -> MemoryManager:
    return MemoryManager(Settings(home=home), user_id="bob", embedder=DeterministicFakeEmbedder(16),
                         vector_store=vectors)


def _items(n: int, kind: str = "episodic") -> list[dict[str, Any]]:
    return [{"content": f"bob's memory number {k}", "memory_type": kind} for k in range(n)]


class CountingLock:
    """An RLock that records how long each outermost hold lasted, in items written meanwhile."""

    def __init__(self, vectors: Vectors) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._vectors = vectors
        self.holds: list[int] = []  # upsert calls made during each outermost hold

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self._depth += 1
            if self._depth == 1:
                self._start = self._vectors.calls
        return got

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.holds.append(self._vectors.calls - self._start)
        self._lock.release()

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()


def test_a_batch_holds_the_write_lock_one_step_at_a_time(tmp_path: Path, small_steps: None) -> None:
    vectors = Vectors()
    with _manager(tmp_path, vectors) as mm:
        lock = CountingLock(vectors)
        object.__setattr__(mm.core, "lock", lock)
        mm.add_many(_items(10))
        # 3 steps of ≤ 4 memories (one vector write each), the publish step, the settle step(s)
        assert sum(lock.holds) == 3 and max(lock.holds) == 1 and len(lock.holds) >= 5
        assert len(mm.get_all()) == 10 and mm.bundle.records.pending() == []


def test_another_users_write_finishes_while_a_batch_is_held_mid_step(tmp_path: Path, small_steps: None) -> None:
    vectors = Vectors()
    with _manager(tmp_path, vectors) as mm:
        vectors.hold_at = 2  # the batch's second step is held inside the lock
        batch = threading.Thread(target=lambda: mm.add_many(_items(10)))
        batch.start()
        assert vectors.inside.wait(HANG)
        carol: list[Any] = []
        adder = threading.Thread(
            target=lambda: carol.append(mm.add("carol's note", user_id="carol", memory_type="episodic")))
        adder.start()
        time.sleep(0.2)  # carol waits for the held step (only that step)
        vectors.release.set()
        adder.join(HANG)
        batch.join(HANG)
        assert carol and not batch.is_alive() and not adder.is_alive()
        assert len(mm.get_all()) == 10 and len(mm.get_all(user_id="carol")) == 1
        assert mm.bundle.records.pending() == []


def test_a_failing_step_takes_back_the_steps_before_it(tmp_path: Path, small_steps: None) -> None:
    vectors = Vectors()
    with _manager(tmp_path, vectors) as mm:
        vectors.fail_at = 3  # steps 1 and 2 are committed, step 3 fails
        with pytest.raises(StoreError, match="nothing was changed"):
            mm.add_many(_items(10, kind="semantic"))
        assert mm.get_all() == [] and mm.stats().entities == 0
        assert mm.bundle.records.pending() == []
        assert all(not mm.bundle.vectors.count(c) for c in mm.bundle.vectors.collections())
        vectors.fail_at = None
        assert len(mm.add_many(_items(10, kind="semantic"))) == 10  # and the same batch stores afterwards


def test_a_batch_killed_before_it_was_published_is_rolled_back_on_open(tmp_path: Path) -> None:
    with _manager(tmp_path) as mm:
        core = mm.core
        built = [mm.add(f"kept {k}", memory_type="episodic") for k in range(2)]
        from hello_memory.core import items as _items_mod

        todo = _items_mod.build_items(_items(6), enabled=mm.enabled, now=core.now(), user=lambda u: "bob")
        with core.lock:  # one step of a batch that never reaches its publish step (a kill)
            writes.insert(core, prepare(core, todo), batch=uuid.uuid4().hex)
        assert len(mm.get_all()) == 8  # visible meanwhile: atomic, not isolated
    with _manager(tmp_path) as mm:  # recovery on open: the batch is rolled back, the rest kept
        assert sorted(it.content for it in mm.get_all()) == sorted(it.content for it in built)
        assert mm.bundle.records.pending() == []


def test_a_published_batch_killed_while_settling_is_completed(tmp_path: Path) -> None:
    with _manager(tmp_path) as mm:
        core = mm.core
        from hello_memory.core import items as _items_mod

        todo = _items_mod.build_items(_items(6), enabled=mm.enabled, now=core.now(), user=lambda u: "bob")
        batch = uuid.uuid4().hex
        with core.lock:
            writes.insert(core, prepare(core, todo), batch=batch)
            core.records.publish("bob", batch)
        assert {p[2] for p in mm.bundle.records.pending()} == {"index"}
    with _manager(tmp_path) as mm:
        assert len(mm.get_all()) == 6 and mm.bundle.records.pending() == []
        assert len(mm.search("bob's memory number 3", limit=3)) >= 1


def test_recovery_leaves_a_batch_that_is_still_running_alone(tmp_path: Path) -> None:
    with _manager(tmp_path) as mm:
        core = mm.core
        from hello_memory.core import items as _items_mod

        todo = _items_mod.build_items(_items(3), enabled=mm.enabled, now=core.now(), user=lambda u: "bob")
        batch = uuid.uuid4().hex
        with core.batches.running(batch):
            with core.lock:
                writes.insert(core, prepare(core, todo), batch=batch)
            assert mm.recover() == 0 and len(mm.get_all()) == 3  # running here: not rolled back
        assert mm.recover() == 3 and mm.get_all() == []  # no longer running: rolled back


def test_a_shared_store_leaves_other_workers_recent_batches_alone(tmp_path: Path) -> None:
    with _manager(tmp_path) as mm:
        core = mm.core
        now = time.time()
        fresh = Pending("m1", "bob", PendingOp.BATCH, "b1", now)
        stale = Pending("m2", "bob", PendingOp.BATCH, "b2", now - recovery.BATCH_LEASE_S - 1)

        object.__setattr__(core, "records", _Proxy(core.records, exclusive=False))
        due = recovery._due(core, [fresh, stale, Pending("m3", "bob", PendingOp.INDEX)])
        assert [(p.memory_id, p.op) for p in due] == [("m2", PendingOp.PURGE), ("m3", PendingOp.INDEX)]
        object.__setattr__(core, "records", _Proxy(core.records, exclusive=True))
        assert [p.memory_id for p in recovery._due(core, [fresh])] == ["m1"]  # exclusive: nobody else runs it


class _Proxy:
    def __init__(self, inner: Any, *, exclusive: bool) -> None:
        self._inner = getattr(inner, "_inner", inner)
        self.exclusive = exclusive

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class RowsPerHold:
    """An RLock that records, per outermost hold, how many memories the records store deleted or wrote."""

    def __init__(self, mm: MemoryManager) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self.holds: list[int] = []
        self._count = 0
        records = mm.core.records
        real_delete, real_apply = records.delete, records.apply

        def delete(user_id: str, ids: Any, **kw: Any) -> int:
            self._count += len(ids)
            return real_delete(user_id, ids, **kw)

        def apply(writes_: Any) -> Any:
            self._count += len(writes_)
            return real_apply(writes_)

        records.delete, records.apply = delete, apply  # type: ignore[method-assign]

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self._depth += 1
            if self._depth == 1:
                self._start = self._count
        return got

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.holds.append(self._count - self._start)
        self._lock.release()


@pytest.mark.parametrize("operation", ["clear_all", "forget_purge", "forget_soft", "consolidate"])
def test_whole_store_operations_hold_the_lock_one_step_at_a_time(
    tmp_path: Path, small_steps: None, operation: str
) -> None:
    with _manager(tmp_path) as mm:
        kind = "working" if operation == "consolidate" else "episodic"
        mm.add_many([{**it, "importance": 0.05 if operation.startswith("forget") else 0.9}
                     for it in _items(10, kind=kind)])
        counter = RowsPerHold(mm)
        object.__setattr__(mm.core, "lock", counter)
        if operation == "clear_all":
            assert mm.clear_all() == 10
        elif operation == "forget_purge":
            assert len(mm.forget("importance_based", 0.1, purge=True).forgotten) == 10
        elif operation == "forget_soft":
            assert len(mm.forget("importance_based", 0.1).forgotten) == 10
        else:
            assert len(mm.consolidate("working", "episodic", 0.5).promoted) == 10
        assert sum(counter.holds) >= 10 and max(counter.holds) <= 2 * 4  # ≤ one step (records + their twins)
        assert len(counter.holds) >= 3
        left = mm.get_all(memory_type="working" if operation == "consolidate" else None)
        assert left == [] and mm.bundle.records.pending() == []
