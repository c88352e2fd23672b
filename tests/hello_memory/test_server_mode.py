"""Server mode (issue 19): MemoryManager on Qdrant with no data directory; workers share one memory.

Hermetic: qdrant-client's local mode. Two "workers" are two MemoryManagers with private bundles
on one ``QdrantClient(":memory:")`` — they share the Qdrant engine and nothing else (no process
state, no file), as two replicas of the memory service share a Qdrant server.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from hello_memory import MemoryManager, Settings
from hello_memory.errors import (
    IdConflictError,
    IndexPendingError,
    NotFoundError,
    StoreError,
    WriteConflictError,
)
from hello_memory.models import MemoryType
from hello_memory.stores.graph.qdrant import QdrantGraphStore
from hello_memory.stores.records.qdrant import QdrantRecordStore
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from hello_memory.testing.memory_api import MemoryAPIContract
from hello_memory.testing.residue import scan_qdrant

EMBEDDER = DeterministicFakeEmbedder()


@pytest.fixture
def qdrant() -> Iterator[QdrantClient]:
    client = QdrantClient(":memory:", force_disable_check_same_thread=True)
    yield client
    client.close()


@pytest.fixture
def worker(qdrant: QdrantClient, tmp_path: Path) -> Iterator[Callable[..., MemoryManager]]:
    """Builds workers on the shared Qdrant; their ``home`` points at a directory that must never appear."""
    opened: list[MemoryManager] = []

    def make(**kw: Any) -> MemoryManager:
        mm = MemoryManager(
            Settings(home=tmp_path / "never"),
            user_id=kw.pop("user_id", "alice"),
            embedder=EMBEDDER,
            record_store=QdrantRecordStore(client=qdrant),
            graph_store=kw.pop("graph_store", None) or QdrantGraphStore(client=qdrant),
            **kw,
        )
        opened.append(mm)
        return mm

    yield make
    for mm in opened:
        mm.close()
    assert not (tmp_path / "never").exists()


class TestMemoryAPIInServerMode(MemoryAPIContract):
    """The whole MemoryAPI contract with QDRANT_URL set (here: local mode in memory)."""

    @pytest.fixture
    def memory(self, tmp_path: Path) -> Iterator[MemoryManager]:
        settings = Settings(home=tmp_path / "never", embedder="tfidf", qdrant_url=":memory:")
        with MemoryManager(settings, enable_perceptual=True) as mm:
            assert mm.bundle.records.keeps_vectors and mm.bundle.home is None
            yield mm
        assert not (tmp_path / "never").exists()


def test_qdrant_url_selects_server_mode_with_no_data_directory(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", qdrant_url=str(tmp_path / "qdrant"), embedder="tfidf")
    with MemoryManager(settings, user_id="alice") as mm:
        fact = mm.add("Alice lives in Paris", memory_type="semantic")
        mm.add("Met Carol in Berlin", memory_type="episodic")
        assert [h.item.id for h in mm.search("where does Alice live", limit=1)] == [fact.id]
        assert (mm.bundle.records.backend, mm.bundle.graph.backend) == ("qdrant", "qdrant")
        assert mm.stats().entities > 0
    assert not (tmp_path / "home").exists()  # no LOCK, no records.db, no graph.db, no vectors/
    with MemoryManager(settings, user_id="alice") as mm:  # the memory is in Qdrant (on disk here)
        assert mm.get(fact.id).content == "Alice lives in Paris"


def test_embedded_mode_is_unchanged_without_qdrant_url(tmp_path: Path) -> None:
    with MemoryManager(Settings(home=tmp_path, embedder="tfidf"), user_id="alice") as mm:
        mm.add("Alice lives in Paris", memory_type="semantic")
        assert not mm.bundle.records.keeps_vectors and mm.bundle.records.backend == "sqlite"
    assert (tmp_path / "records.db").exists() and (tmp_path / "LOCK").exists()


def test_workers_see_each_others_adds_updates_and_deletes_at_once(
    worker: Callable[..., MemoryManager],
) -> None:
    a, b = worker(), worker()
    fact = a.add("Alice lives in Paris", memory_type="semantic", importance=0.6)
    turn = a.add("Met Carol at the Berlin conference", memory_type="episodic", importance=0.9)
    assert b.get(fact.id).content == "Alice lives in Paris"
    assert {h.item.id for h in b.search("Where does Alice live?")} >= {fact.id, turn.id}
    assert b.stats().entities == a.stats().entities > 0  # the graph is shared too

    b.update(fact.id, content="Alice lives in Rome")
    assert a.get(fact.id).content == "Alice lives in Rome"
    assert [h.item.content for h in a.search("Rome", memory_types=["semantic"], limit=1)] == [
        "Alice lives in Rome"
    ]
    assert [e.event for e in a.history(fact.id)] == ["add", "update"]

    a.forget(strategy="importance_based", threshold=0.7, memory_types=["semantic"])
    assert fact.id not in {m.id for m in b.get_all()}
    assert fact.id not in {h.item.id for h in b.search("Rome")}
    assert b.restore(fact.id).deleted_at is None
    assert fact.id in {h.item.id for h in a.search("Rome")}

    b.remove(turn.id)
    assert [m.id for m in a.get_all()] == [fact.id]
    with pytest.raises(NotFoundError):  # remove deletes the history with the memory
        a.history(turn.id)


def test_forget_user_from_one_worker_leaves_nothing_for_the_other(
    worker: Callable[..., MemoryManager], qdrant: QdrantClient
) -> None:
    a, b = worker(), worker()
    for text in ("Alice lives in Paris", "Alice works at Acme", "Alice likes green tea"):
        a.add(text, memory_type="semantic")
    a.add("alice met Carol", memory_type="episodic", session_id="s1")
    a.add("note to alice", memory_type="working")
    bob = b.add("Bob lives in Lyon", memory_type="semantic", user_id="bob")
    assert scan_qdrant(qdrant, "alice") > 0

    counts = b.forget_user("alice")
    assert counts["records:memories"] == 5 and counts["graph:mentions"] > 0
    assert scan_qdrant(qdrant, "alice") == 0  # every payload of every collection, read back
    assert a.get_all() == [] and a.search("Paris") == [] and a.stats().entities == 0
    assert a.bundle.records.residue("alice") == {"records": 0, "history": 0, "tombstones": 0}
    assert a.get(bob.id, user_id="bob").content == "Bob lives in Lyon"


def test_retries_of_the_same_add_never_duplicate(worker: Callable[..., MemoryManager]) -> None:
    a, b = worker(), worker()
    mid = str(uuid.uuid4())
    first = a.add("Alice lives in Paris", memory_type="semantic", memory_id=mid)
    assert (
        b.add("Alice lives in Paris", memory_type="semantic", memory_id=mid) == first
    )  # the other worker retries
    batch = [
        {"content": f"turn {i}", "memory_type": "episodic", "memory_id": str(uuid.uuid4())} for i in range(3)
    ]
    assert a.add_many(batch) == b.add_many(batch)
    assert len(a.get_all()) == 4 and [e.event for e in a.history(mid)] == ["add"]
    with pytest.raises(IdConflictError):
        b.add("Alice lives in Rome", memory_type="semantic", memory_id=mid)
    with pytest.raises(IdConflictError):  # another user's id
        b.add("Alice lives in Paris", memory_type="semantic", memory_id=mid, user_id="bob")
    assert len(a.get_all()) == 4 and b.get_all(user_id="bob") == []


def test_concurrent_adds_of_one_id_on_two_workers_store_it_once(worker: Callable[..., MemoryManager]) -> None:
    workers, mid, errors = [worker(), worker()], str(uuid.uuid4()), []

    def add(mm: MemoryManager) -> None:
        try:
            for _ in range(5):
                mm.add("Alice lives in Paris", memory_type="semantic", memory_id=mid)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=add, args=(mm,)) for mm in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [m.id for m in workers[0].get_all()] == [mid] and [e.event for e in workers[1].history(mid)] == [
        "add"
    ]


def test_concurrent_updates_of_one_memory_resolve_by_version(worker: Callable[..., MemoryManager]) -> None:
    """Every update either lands (and is in the history) or raises WriteConflictError; none is lost silently."""
    workers = [worker(), worker()]
    mid = workers[0].add("counter 0", memory_type="episodic").id
    landed: list[str] = []
    conflicts: list[WriteConflictError] = []

    def bump(mm: MemoryManager, n: int) -> None:
        for i in range(8):
            text = f"worker {n} write {i}"
            try:
                mm.update(mid, content=text)
                landed.append(text)
            except WriteConflictError as e:
                conflicts.append(e)

    threads = [threading.Thread(target=bump, args=(mm, n)) for n, mm in enumerate(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    applied = [e.new["content"] for e in workers[1].history(mid)[1:]]
    assert sorted(applied) == sorted(landed)  # the history is exactly the writes that landed
    for n in range(2):  # each worker's own writes in the order it made them
        mine = [int(text.rsplit(" ", 1)[1]) for text in applied if text.startswith(f"worker {n} ")]
        assert mine == sorted(mine)
    assert workers[0].get(mid).content == applied[-1]  # the last write applied is the state
    assert len(landed) + len(conflicts) == 16


class _FailingGraph(QdrantGraphStore):
    """A graph store whose link fails (a worker that dies, or a graph server that is down)."""

    def link(self, *args: Any, **kwargs: Any) -> None:
        raise StoreError("graph down")


def test_a_failed_graph_write_is_committed_pending_and_recovered_by_the_next_worker(
    worker: Callable[..., MemoryManager], qdrant: QdrantClient
) -> None:
    broken = worker(graph_store=_FailingGraph(client=qdrant))
    with pytest.raises(IndexPendingError) as err:
        broken.add("Alice lives in Paris", memory_type="semantic")
    (item,) = err.value.result  # type: ignore[misc]
    assert broken.get(item.id).content == "Alice lives in Paris"  # the record (and its vectors) committed
    assert [h.item.id for h in broken.search("Paris")] == [item.id]
    assert broken.stats().entities == 0 and len(broken.bundle.records.unsettled()) == 1
    healthy = worker()  # a worker starting finds the marker and completes the graph work
    assert healthy.stats().entities > 0 and healthy.bundle.records.unsettled() == []


def test_supersession_reaches_across_workers(worker: Callable[..., MemoryManager]) -> None:
    a, b = worker(), worker()
    old = a.add("Alice lives in Paris", memory_type="semantic")
    new = b.add("Alice lives in Rome", memory_type="semantic")
    stored = a.get(old.id)
    assert stored.valid_to == new.created_at and stored.superseded_by == new.id
    assert [e.event for e in a.history(old.id)] == ["add", "supersede"]
    assert a.get(new.id).valid_to is None


def test_consolidation_in_server_mode(worker: Callable[..., MemoryManager]) -> None:
    a, b = worker(), worker()
    a.add("Alice prefers green tea", memory_type="working", importance=0.9)
    a.add("unimportant chatter", memory_type="working", importance=0.1)
    report = a.consolidate("working", "semantic", 0.7)
    assert len(report.promoted) == 1 and report.merged == []
    assert [m.id for m in b.get_all(memory_type=MemoryType.SEMANTIC)] == report.promoted
    assert [m.content for m in b.get_all(memory_type="working")] == ["unimportant chatter"]
    a.add("Alice prefers green tea", memory_type="working", importance=0.95)
    again = b.consolidate("working", "semantic", 0.7)  # the other worker merges into the promoted twin
    assert again.promoted == [] and len(again.merged) == 1
    assert b.get(report.promoted[0]).importance == 0.95 and len(b.get_all(memory_type="semantic")) == 1


class _DiesMidBatch(QdrantRecordStore):
    """A record store whose server fails on the third memory of a batch."""

    calls = 0

    def _apply_one(self, *args: Any, **kwargs: Any) -> Any:
        type(self).calls += 1
        if type(self).calls == 3:
            raise StoreError("qdrant failed to write: connection reset")
        return super()._apply_one(*args, **kwargs)


def test_a_batch_that_fails_midway_stores_nothing(qdrant: QdrantClient, tmp_path: Path) -> None:
    records = _DiesMidBatch(client=qdrant)
    with MemoryManager(Settings(home=tmp_path / "never"), embedder=EMBEDDER, record_store=records) as mm:
        batch = [
            {"content": f"turn {i}", "memory_type": "episodic", "memory_id": str(uuid.uuid4())}
            for i in range(5)
        ]
        with pytest.raises(StoreError, match="nothing was stored"):
            mm.add_many(batch)
        assert mm.get_all() == [] and records.residue(mm.user_id) == {"records": 0, "history": 0, "tombstones": 0}
        assert len(mm.add_many(batch)) == 5 and len(mm.get_all()) == 5  # the retry stores the whole batch


def test_an_embedded_record_store_cannot_be_injected(tmp_path: Path) -> None:
    from hello_memory.errors import InvalidInputError
    from hello_memory.stores.records.sqlite import SQLiteRecordStore

    store = SQLiteRecordStore(tmp_path / "other.db")
    with pytest.raises(InvalidInputError, match="record_store"):
        MemoryManager(Settings(home=tmp_path), record_store=store)
    store.close()


def test_forgetting_a_memory_another_worker_just_removed_is_a_no_op(
    worker: Callable[..., MemoryManager],
) -> None:
    from hello_memory.core.deletes import soft_delete

    a, b = worker(), worker()
    item = a.add("Alice lives in Paris", memory_type="semantic")
    stale = b.get(item.id)  # b selected it for forgetting ...
    a.remove(item.id)  # ... and a removed it first
    with b.core.lock:
        soft_delete(b.core, [stale], ["importance below 0.1"])
    assert b.get_all(include_deleted=True) == [] and b.core.records.history(item.id, item.user_id) == []


def test_the_relevance_floor_works_in_server_mode(qdrant: QdrantClient, tmp_path: Path) -> None:
    """The floor's lexical evidence comes from the Qdrant record store (it raised AttributeError)."""
    from tests.hello_memory.test_relevance_floor import LIFE, OFF_TOPIC

    mm = MemoryManager(
        Settings(home=tmp_path / "never", floor_cosine=0.99),  # the fake embedder: identical texts only
        user_id="u",
        embedder=EMBEDDER,
        record_store=QdrantRecordStore(client=qdrant),
        graph_store=QdrantGraphStore(client=qdrant),
    )
    try:
        ids = [m.id for m in mm.add_many([{"content": t, "memory_type": "episodic"} for t in LIFE])]
        for query in OFF_TOPIC:
            assert mm.search(query, memory_types=["episodic"]) == []
        hits = mm.search("when is my dentist appointment?", memory_types=["episodic"])
        survivors = [h.item.id for h in hits if not h.breakdown["below_floor"]]  # the others follow them
        assert survivors == [ids[1]] and hits[0].breakdown["lexical_evidence"] > 0.35
    finally:
        mm.close()
    assert not (tmp_path / "never").exists()


def test_server_scores_given_memories_as_their_read_out_vectors_would(worker) -> None:
    """Server mode's exact cosines (fill and the floor's null means) come from the server, which
    scores the memories' points in place: the same dot products as reading the vectors back, for
    unit and non-unit query vectors; other users' and deleted memories are not scored."""
    import numpy as np

    from hello_memory.stores.dense.base import DenseIndex
    from hello_memory.stores.dense.records import RecordDense

    mm = worker()
    ids = [h.id for h in mm.add_many([{"content": f"note {n} about the harbour", "memory_type": "episodic"}
                                      for n in range(8)])]
    bob_id = worker(user_id="bob").add("bob's own note about the harbour", memory_type="episodic").id
    mm.remove(ids[0])
    dense = mm.core.dense
    assert isinstance(dense, RecordDense)
    tiers = {i: (MemoryType.EPISODIC, None) for i in [*ids, bob_id]}
    q = np.asarray(EMBEDDER.embed(["harbour"], kind="query")[0], dtype=np.float32)
    for scale in (1.0, 0.4):
        got = dense.similarities("alice", q * scale, tiers)
        read_out = DenseIndex.similarities(dense, "alice", q * scale, tiers)
        assert set(got) == set(read_out) == set(ids[1:])
        for k, v in read_out.items():
            assert got[k] == pytest.approx(v, abs=1e-5)
    assert dense.similarities("alice", np.zeros_like(q), tiers) == {i: 0.0 for i in ids[1:]}
