"""The lexical read beside the query embedding (issue 25): same results as run after it, errors
surface in the search, and a busy pool never makes a search wait for a worker."""

from __future__ import annotations

import os
import select
import threading
from pathlib import Path

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.core import beside
from hello_memory.errors import StoreError
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

TEXTS = [f"note {i}: {w} with the team on {d}" for i, (w, d) in enumerate(
    [("planned the launch", "Monday"), ("tea tasting", "Friday"), ("wrote the report", "Tuesday"),
     ("fixed the printer", "Monday"), ("reviewed the budget", "Thursday")] * 8
)]  # fmt: skip
QUERIES = ["launch plan", "what did we taste on Friday", "budget review", "printer", "nothing like this"]


def test_result_and_error_of_the_call():
    assert beside.start(lambda: 41 + 1)() == 42

    def fails() -> None:
        raise StoreError("records", "the disk went away")

    result = beside.start(fails)
    with pytest.raises(StoreError, match="disk went away"):
        result()


def test_a_busy_pool_runs_the_call_inline_instead_of_waiting():
    release = threading.Event()
    blocked = [beside.start(release.wait) for _ in range(beside.WORKERS)]  # every worker taken
    ran_on: list[str] = []
    result = beside.start(lambda: ran_on.append(threading.current_thread().name) or "done")
    assert result() == "done" and ran_on == [threading.current_thread().name]
    release.set()
    assert all(b() is True for b in blocked)


def test_search_beside_and_inline_give_the_same_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    mm = MemoryManager(Settings(home=tmp_path), user_id="u", embedder=DeterministicFakeEmbedder(32))
    try:
        mm.add_many([{"content": t, "memory_type": "episodic"} for t in TEXTS])
        mm.add("Bob keeps the tea notes", memory_type="episodic", user_id="bob")

        def lists() -> list[list[tuple[str, float]]]:  # scores to 1e-4: the recency term follows the clock
            return [[(h.item.id, round(h.score, 4)) for h in mm.search(q, limit=10)] for q in QUERIES]

        overlapped = lists()
        monkeypatch.setattr(beside, "start", lambda call: call)  # run the read inline, after the embedding
        inline = lists()
        assert overlapped == inline and any(overlapped)
        assert all(h.item.user_id == "u" for h in mm.search("tea notes", limit=10))
    finally:
        mm.close()


def test_a_failing_lexical_read_fails_the_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    mm = MemoryManager(Settings(home=tmp_path), user_id="u", embedder=DeterministicFakeEmbedder(32))
    try:
        mm.add("the launch is on Monday", memory_type="episodic")

        def broken(*args: object, **kwargs: object) -> dict[str, float]:
            raise StoreError("records", "lexical index unreadable")

        monkeypatch.setattr(mm.core.records, "lexical_search", broken)
        with pytest.raises(StoreError, match="lexical index unreadable"):
            mm.search("launch", limit=5)
    finally:
        mm.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_gets_a_pool_of_its_own():
    """The parent's pool threads do not survive a fork: the child must neither hang nor lose the call."""
    assert beside.start(lambda: 1)() == 1  # the parent's pool exists (and has idle workers)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the result, or nothing if it hangs (the parent's wait times out)
        try:
            os.write(write, str(beside.start(lambda: 6 * 7)()).encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 30)
        assert ready and os.read(read, 16) == b"42"
    finally:
        os.close(read)
        os.waitpid(pid, 0)
