"""The concurrent core: searches run side by side, and reads never wait for a writer.

These tests assert what happens together, never how long it takes: a barrier that only opens when
every search is inside its query embedding at once, and reads that must finish while a writer is
held mid-write. Timeouts only turn a hang into a failure.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.stores.vectors.memory import InMemoryVectorStore
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

HANG = 30  # seconds after which a wait that should not happen is a failure


class QueryBarrier(DeterministicFakeEmbedder):
    """Query embeddings meet at a barrier of ``parties``: it opens only if they all embed at once."""

    def __init__(self, parties: int) -> None:
        super().__init__(dimension=16)
        self.barrier = threading.Barrier(parties, timeout=HANG)

    def _embed_batch(self, batch: list[str], kind: str) -> np.ndarray:
        if kind == "query":
            self.barrier.wait()
        return super()._embed_batch(batch, kind)


class HeldVectors(InMemoryVectorStore):
    """A vector index whose writes stop, once armed, until released: a writer held mid-write."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.inside = threading.Event()
        self.release = threading.Event()

    def upsert(self, collection: str, points: Any) -> None:
        if self.armed:
            self.inside.set()
            assert self.release.wait(HANG), "the held writer was never released"
        super().upsert(collection, points)


def test_four_searches_embed_their_queries_at_the_same_time(tmp_path: Path) -> None:
    embedder = QueryBarrier(parties=4)
    with MemoryManager(Settings(home=tmp_path), user_id="alice", embedder=embedder) as mm:
        for user in ("alice", "bob", "carol", "dave"):
            mm.add(f"{user} likes green tea", memory_type="episodic", user_id=user)
        results: dict[str, Any] = {}

        def search(user: str) -> None:
            try:
                results[user] = mm.search("green tea", user_id=user)
            except Exception as e:  # a broken barrier: the searches ran one after another
                results[user] = e

        threads = [threading.Thread(target=search, args=(u,)) for u in ("alice", "bob", "carol", "dave")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(HANG * 2)
    for user, found in results.items():
        assert not isinstance(found, Exception), f"{user}'s search waited for another: {found!r}"
        assert [h.item.content for h in found] == [f"{user} likes green tea"]


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[MemoryManager, HeldVectors]]:
    vectors = HeldVectors()
    mm = MemoryManager(Settings(home=tmp_path), user_id="alice", embedder=DeterministicFakeEmbedder(16),
                       vector_store=vectors)
    yield mm, vectors
    vectors.release.set()
    mm.close()


def test_reads_finish_while_another_users_write_is_held_mid_write(
    held: tuple[MemoryManager, HeldVectors],
) -> None:
    mm, vectors = held
    mine = mm.add("alice waters the tomatoes every morning", memory_type="episodic")
    mm.update(mine.id, importance=0.6)
    vectors.armed = True
    writer = threading.Thread(target=lambda: mm.add("bob's new memory", user_id="bob", memory_type="episodic"))
    writer.start()
    assert vectors.inside.wait(HANG)
    # bob's add holds the write lock and an open records transaction; alice reads meanwhile
    outcome: dict[str, Any] = {}

    def reads() -> None:
        outcome["search"] = mm.search("tomatoes")
        outcome["get"] = mm.get(mine.id)
        outcome["get_all"] = mm.get_all()
        outcome["history"] = mm.history(mine.id)
        outcome["stats"] = mm.stats()
        outcome["context"] = mm.build_context("tomatoes")
        outcome["bob"] = mm.get_all(user_id="bob")  # his uncommitted memory is not seen

    reader = threading.Thread(target=reads)
    reader.start()
    reader.join(HANG)
    finished = not reader.is_alive()
    vectors.release.set()
    writer.join(HANG)
    assert finished, "a read waited for the writer"
    assert [h.item.id for h in outcome["search"]] == [mine.id]
    assert outcome["get"].importance == 0.6 and [e.event for e in outcome["history"]] == ["add", "update"]
    assert outcome["stats"].total == 1 and outcome["bob"] == []
    assert "tomatoes" in outcome["context"].text
    assert [it.content for it in mm.get_all(user_id="bob")] == ["bob's new memory"]  # committed after


def test_a_read_during_a_write_that_fails_never_sees_it(held: tuple[MemoryManager, HeldVectors]) -> None:
    mm, vectors = held
    vectors.armed = True
    failing: dict[str, BaseException] = {}

    def add() -> None:
        try:
            mm.add("rolled back", user_id="bob", memory_type="episodic")
        except BaseException as e:
            failing["error"] = e

    original = vectors.upsert

    def upsert_then_fail(*args: Any, **kwargs: Any) -> None:
        original(*args, **kwargs)
        raise RuntimeError("index down")

    vectors.upsert = upsert_then_fail  # type: ignore[method-assign]
    writer = threading.Thread(target=add)
    writer.start()
    assert vectors.inside.wait(HANG)
    seen_during = mm.get_all(user_id="bob")
    vectors.release.set()
    writer.join(HANG)
    assert seen_during == [] and mm.get_all(user_id="bob") == []
    assert "error" in failing


def _in_forked_child(mm: MemoryManager, results: Any) -> None:
    """Runs in a child made by fork: every use of the parent's manager answers (a typed error)."""
    from hello_memory.errors import ForkedProcessError, StoreLockedError

    outcome = []
    for call in (lambda: mm.search("tea"), lambda: mm.add("from the child"), lambda: mm.stats()):
        try:
            call()
            outcome.append("worked")
        except ForkedProcessError as e:
            outcome.append(f"ForkedProcessError: {e.opened_by}")
    mm.close()  # closing the inherited copy leaves the parent's stores alone
    try:  # a manager of its own on the parent's data directory: the parent holds it
        MemoryManager(mm.settings).close()
        outcome.append("opened")
    except StoreLockedError:
        outcome.append("StoreLockedError")
    results.put(outcome)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="fork only")
def test_a_forked_child_using_its_parents_manager_gets_a_typed_error_never_a_hang(tmp_path: Path) -> None:
    import multiprocessing
    import os

    with MemoryManager(Settings(home=tmp_path, embedder="e5"), user_id="alice") as mm:
        mm.add("alice likes green tea", memory_type="episodic")
        assert mm.search("green tea")  # the embedder's threads and the stores are live in the parent
        ctx = multiprocessing.get_context("fork")
        results = ctx.Queue()
        child = ctx.Process(target=_in_forked_child, args=(mm, results))
        child.start()
        child.join(60)
        hung = child.is_alive()
        if hung:
            child.kill()
        assert not hung, "the forked child hung"
        assert results.get(timeout=5) == [f"ForkedProcessError: {os.getpid()}"] * 3 + ["StoreLockedError"]
        # the parent goes on as before
        assert [h.item.content for h in mm.search("green tea")] == ["alice likes green tea"]
        mm.add("after the fork", memory_type="episodic")


def test_the_library_changes_nothing_process_wide(tmp_path: Path) -> None:
    """No environment variable, no thread priority, no BLAS thread count is changed by using it."""
    import os

    env = dict(os.environ)
    priority = os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else None
    with MemoryManager(Settings(home=tmp_path, embedder="e5"), user_id="alice") as mm:
        mm.add_many([{"content": f"memory {k}: " + "the garden and the tomatoes " * 40, "memory_type": "episodic"}
                     for k in range(6)])
        mm.search("tomatoes")
    assert dict(os.environ) == env
    if priority is not None:
        assert os.getpriority(os.PRIO_PROCESS, 0) == priority
