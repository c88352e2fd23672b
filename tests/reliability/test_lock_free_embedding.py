"""A long write embeds outside the data directory's lock: readers do not wait for it (issue 17 §2).

An ``add`` of a 200,000-character memory used to embed every window while holding ``bundle.lock``,
so every other thread's search waited. The embedder below blocks on an event while it embeds the
long text; a search in another thread must complete meanwhile (no timing assertion: the write is
held until the search is done, or the test gives up after a minute).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.embedders.base import Vectors
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

LONG = "LONGTEXT " + "word " * 39_000  # ~195,000 characters


class BlockingEmbedder(DeterministicFakeEmbedder):
    """Blocks a passage embedding of the long text until :attr:`release` is set (once armed)."""

    def __init__(self) -> None:
        super().__init__(dimension=32)
        self.armed = False
        self.embedding = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str], *, kind: str = "passage") -> Vectors:
        if self.armed and kind == "passage" and any(t.startswith("LONGTEXT") for t in texts):
            self.embedding.set()
            if not self.release.wait(120):
                raise RuntimeError("never released")
        return super().embed(texts, kind=kind)


def _setup(mm: MemoryManager, op: str) -> Any:
    if op == "add":
        return lambda: mm.add(LONG, memory_type="episodic")
    if op == "add_many":
        return lambda: mm.add_many([{"content": LONG, "memory_type": "semantic"}, {"content": "short one"}])
    if op == "update":
        target = mm.add("to be rewritten", memory_type="episodic")
        return lambda: mm.update(target.id, content=LONG)
    forgotten = mm.add(LONG, memory_type="episodic", importance=0.01)
    mm.forget("importance_based", threshold=0.1)
    return lambda: mm.restore(forgotten.id)


@pytest.mark.parametrize("op", ["add", "add_many", "update", "restore"])
def test_search_completes_while_a_long_write_embeds(tmp_path: Path, op: str) -> None:
    emb = BlockingEmbedder()
    mm = MemoryManager(Settings(home=tmp_path / "data"), user_id="alice", embedder=emb)
    known = mm.add("the quick brown fox", memory_type="episodic")
    write = _setup(mm, op)
    emb.armed = True
    outcome: dict[str, Any] = {}

    def writer() -> None:
        try:
            outcome["written"] = write()
        except Exception as e:  # reported below
            outcome["error"] = e

    def reader() -> None:
        outcome["hits"] = mm.search("the quick brown fox", limit=3)
        outcome["total"] = mm.stats().total
        searched.set()

    searched = threading.Event()
    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    threads[0].start()
    try:
        assert emb.embedding.wait(60), "the write never started embedding"
        threads[1].start()
        assert searched.wait(60), "search waited for the long write's embedding (the lock was held)"
        assert outcome["hits"][0].item.id == known.id
    finally:
        emb.release.set()
        for t in threads:
            t.join(120) if t.ident else None
    try:
        assert "error" not in outcome, outcome.get("error")
        assert any(i.content == LONG for i in mm.get_all(limit=100))
        assert mm.search(LONG[:2000], limit=3)[0].item.content == LONG
    finally:
        mm.close()


def test_update_prepared_outside_the_lock_sees_a_concurrent_change(tmp_path: Path) -> None:
    """While an update embeds unlocked, another thread changes the memory: the later write wins whole."""
    emb = BlockingEmbedder()
    mm = MemoryManager(Settings(home=tmp_path / "data"), user_id="alice", embedder=emb)
    item = mm.add("v1", memory_type="episodic", metadata={"a": 1})
    emb.armed = True
    errors: list[BaseException] = []

    def slow() -> None:
        try:
            mm.update(item.id, content=LONG, metadata={"slow": True})
        except BaseException as e:  # reported below
            errors.append(e)

    t = threading.Thread(target=slow)
    t.start()
    try:
        assert emb.embedding.wait(60)
        mm.update(item.id, importance=0.9, metadata={"fast": True})  # commits while the slow one embeds
    finally:
        emb.release.set()
        t.join(120)
    assert errors == []
    got = mm.get(item.id)
    assert got.content == LONG and got.importance == 0.9  # the slow update applied on top of the fast one
    assert got.metadata == {"a": 1, "fast": True, "slow": True}
    assert [h.event for h in mm.history(item.id)] == ["add", "update", "update"]
    mm.close()
