"""A store failing mid-write: content writes roll back, deletions commit and say "index pending".

Issue 17 §2: ``update()`` raised when the vector write failed after the SQLite commit, yet the new
content was committed and came back on the next open. Now:

* add / update / restore / consolidate are all-or-nothing: on a failed index write the caller gets a
  ``StoreError`` and the old state, search included; if even putting the index back fails, recovery
  re-embeds the old row (next open, or ``MemoryManager.recover()``).
* forget / remove are committed first (no read returns the memory any more); a failed index clean-up
  raises ``IndexPendingError``, which recovery completes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rel_scan import memory_problems

from hello_memory import MemoryManager, Settings
from hello_memory.errors import IndexPendingError, NotFoundError, StoreError
from hello_memory.stores.graph.sqlite import SQLiteGraphStore
from hello_memory.stores.vectors.edge import QdrantEdgeVectorStore
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

EMB = DeterministicFakeEmbedder(dimension=32)


class Flaky:
    """A real store whose methods named in ``fail`` raise ``StoreError`` (``fail[name]`` times)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.fail: dict[str, float] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if self.fail.get(name, 0) <= 0:
            return attr

        def failing(*args: object, **kwargs: object) -> Any:
            self.fail[name] -= 1
            raise StoreError(f"injected {name} failure")

        return failing


class Env:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.vec = Flaky(QdrantEdgeVectorStore(home / "vectors"))
        self.graph = Flaky(SQLiteGraphStore(home / "graph.db"))
        self.mm = MemoryManager(Settings(home=home), user_id="alice", embedder=EMB, vector_store=self.vec,
                                graph_store=self.graph)

    def reopen(self) -> Env:
        self.mm.close()
        return Env(self.home)

    def dense_top(self, text: str) -> tuple[str, float]:
        """Top hit of a search for ``text`` and its dense similarity (1.0 = this exact text's vector)."""
        hit = self.mm.search(text, limit=1)[0]
        return hit.item.id, hit.breakdown["dense"]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    holder = [Env(tmp_path / "data")]
    yield holder[0]
    holder[0].mm.close()


def _reopened(env: Env) -> Env:
    new = env.reopen()
    env.__dict__.update(new.__dict__)
    return env


def test_update_whose_vector_write_fails_changes_nothing(env: Env) -> None:
    item = env.mm.add("Alice plays the violin", memory_type="episodic")
    env.vec.fail["upsert"] = 1
    with pytest.raises(StoreError, match="nothing was changed") as caught:
        env.mm.update(item.id, content="Alice plays the drums", importance=0.9)
    assert not isinstance(caught.value, IndexPendingError)
    got = env.mm.get(item.id)
    assert (got.content, got.importance) == ("Alice plays the violin", 0.5)
    assert [h.event for h in env.mm.history(item.id)] == ["add"]
    assert env.mm.bundle.records.pending() == []
    assert env.dense_top("Alice plays the violin") == (item.id, pytest.approx(1.0, abs=1e-5))
    _reopened(env)
    assert env.mm.get(item.id).content == "Alice plays the violin"  # (was: the new content came back)
    assert memory_problems(env.home, env.vec.inner) == []


def test_update_whose_graph_write_fails_restores_vector_facts_and_supersession(env: Env) -> None:
    beijing = env.mm.add("张三住在北京", memory_type="semantic")
    rome = env.mm.add("Bob lives in Rome", memory_type="semantic")
    env.graph.fail["link"] = 1  # the new vector is written, then the graph link fails
    with pytest.raises(StoreError, match="nothing was changed"):
        env.mm.update(rome.id, content="张三住在上海")  # would supersede the Beijing fact
    assert env.mm.get(beijing.id).valid_to is None and env.mm.get(beijing.id).superseded_by is None
    assert env.mm.get(rome.id).content == "Bob lives in Rome"
    assert env.dense_top("Bob lives in Rome") == (rome.id, pytest.approx(1.0, abs=1e-5))  # old vector back
    assert env.mm.search("张三住在哪里", memory_types=["semantic"])[0].item.id == beijing.id
    assert [h.event for h in env.mm.history(beijing.id)] == ["add"]
    assert env.mm.bundle.graph.counts("alice")["mentions"] > 0  # the old links are back


def test_update_that_cannot_put_the_index_back_is_repaired_by_recovery(env: Env) -> None:
    item = env.mm.add("Carol drinks oolong tea", memory_type="episodic")
    env.vec.fail["upsert"] = math.inf  # the update's write and the undo both fail
    with pytest.raises(StoreError, match="recover"):
        env.mm.update(item.id, content="Carol drinks espresso")
    assert env.mm.get(item.id).content == "Carol drinks oolong tea"  # the records never changed
    assert [p[0] for p in env.mm.bundle.records.pending()] == [item.id]
    env.vec.fail.clear()
    assert env.mm.recover() == 1
    assert env.mm.bundle.records.pending() == []
    assert env.dense_top("Carol drinks oolong tea") == (item.id, pytest.approx(1.0, abs=1e-5))
    assert memory_problems(env.home, env.vec.inner) == []


def test_restore_whose_vector_write_fails_leaves_the_memory_forgotten(env: Env) -> None:
    item = env.mm.add("a note to forget", memory_type="episodic", importance=0.01)
    env.mm.forget("importance_based", threshold=0.1)
    env.vec.fail["upsert"] = 1
    with pytest.raises(StoreError, match="nothing was changed"):
        env.mm.restore(item.id)
    assert env.mm.get(item.id, include_deleted=True).deleted_at is not None  # (was: restored in SQLite)
    assert [h.event for h in env.mm.history(item.id)] == ["add", "forget"]
    assert env.mm.get_all() == []
    _reopened(env)
    assert env.mm.get(item.id, include_deleted=True).deleted_at is not None
    assert env.mm.restore(item.id).deleted_at is None
    assert env.dense_top("a note to forget") == (item.id, pytest.approx(1.0, abs=1e-5))


def test_forget_whose_index_clean_up_fails_is_committed_and_says_index_pending(env: Env) -> None:
    low = env.mm.add("unimportant detail", memory_type="episodic", importance=0.01)
    keep = env.mm.add("important fact", memory_type="episodic", importance=0.9)
    env.vec.fail["delete"] = math.inf
    with pytest.raises(IndexPendingError) as caught:
        env.mm.forget("importance_based", threshold=0.1)
    assert caught.value.memory_ids == [low.id]
    assert [f.id for f in caught.value.result.forgotten] == [low.id]
    assert [i.id for i in env.mm.get_all()] == [keep.id]  # committed: no read returns it
    assert low.id not in {h.item.id for h in env.mm.search("unimportant detail")}
    env.vec.fail.clear()
    assert env.mm.recover() == 1 and env.mm.bundle.records.pending() == []
    assert env.vec.inner.count("memories") == 1
    assert env.mm.restore(low.id).deleted_at is None  # still restorable


def test_remove_whose_index_clean_up_fails_is_committed_and_completed_on_open(env: Env) -> None:
    item = env.mm.add("Alice lives in Paris", memory_type="semantic")
    env.vec.fail["delete"] = math.inf
    with pytest.raises(IndexPendingError, match="next open"):
        env.mm.remove(item.id)
    with pytest.raises(NotFoundError):  # (was: still there, removed only on the next open)
        env.mm.get(item.id, include_deleted=True)
    with pytest.raises(NotFoundError):  # its history is gone with it
        env.mm.history(item.id)
    _reopened(env)
    assert env.vec.inner.count("memories") == 0 and env.mm.bundle.records.pending() == []
    assert env.mm.bundle.graph.counts("alice")["entities"] == 0
    assert memory_problems(env.home, env.vec.inner) == []


def test_consolidate_whose_source_clean_up_fails_changes_nothing(env: Env) -> None:
    src = env.mm.add("Alice moved to Berlin", memory_type="episodic", importance=0.9)
    env.vec.fail["delete"] = 1  # the promoted copy is indexed, then removing the source's vector fails
    with pytest.raises(StoreError, match="nothing was changed"):
        env.mm.consolidate("episodic", "semantic", 0.5)
    assert env.mm.get_all(memory_type="semantic") == []  # (was: promoted, and the source purged on open)
    assert env.mm.get(src.id).content == "Alice moved to Berlin"
    assert env.dense_top("Alice moved to Berlin") == (src.id, pytest.approx(1.0, abs=1e-5))
    assert env.mm.bundle.graph.counts("alice")["mentions"] == 0
    _reopened(env)
    assert [i.id for i in env.mm.get_all()] == [src.id]
    assert memory_problems(env.home, env.vec.inner) == []
    report = env.mm.consolidate("episodic", "semantic", 0.5)
    assert len(report.promoted) == 1 and env.mm.get_all(memory_type="episodic") == []


def test_consolidate_whose_promoted_copy_cannot_be_linked_changes_nothing(env: Env) -> None:
    src = env.mm.add("Bob works at Acme", memory_type="working", importance=0.9)
    env.graph.fail["link"] = 1
    with pytest.raises(StoreError, match="nothing was changed"):
        env.mm.consolidate("working", "semantic", 0.5)
    assert [i.id for i in env.mm.get_all()] == [src.id]
    assert env.vec.inner.collections() == [] or env.vec.inner.count("memories") == 0
