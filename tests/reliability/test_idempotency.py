"""Client-supplied memory ids make ``add`` / ``add_many`` retries no-ops (issue 17 §2).

A writer killed after its batch committed (but before the call returned) used to get the batch
recovered on the next open, and the natural retry stored every memory twice. With ``memory_id``
(a full UUID, the same keyword in ``add`` and in ``add_many`` items) a retry returns what is stored.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import crash_worker
import pytest
from rel_scan import memory_problems

from hello_memory import MemoryManager
from hello_memory.errors import IdConflictError, InvalidInputError

HERE = Path(__file__).resolve().parent


def _ids(n: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(n)]


def _batch(n: int, tag: str) -> list[dict[str, object]]:
    types = ("episodic", "semantic", "working")
    return [{"content": f"{tag} turn {i}: Alice met Bob in Paris", "memory_type": types[i % 3],
             "importance": 0.5, "memory_id": mid} for i, mid in enumerate(_ids(n))]


def test_add_many_retry_with_memory_ids_is_a_no_op(manager) -> None:
    specs = _batch(6, "retry")
    first = manager.add_many(specs)
    again = manager.add_many(specs)
    assert [i.id for i in first] == [i.id for i in again] == [s["memory_id"] for s in specs]
    assert [i.created_at for i in first] == [i.created_at for i in again]  # the stored items, not new ones
    assert manager.stats().total == 6
    assert manager.bundle.vectors.count("memories") == 4
    assert all([h.event for h in manager.history(i.id)] == ["add"] for i in first)


def test_add_retry_with_memory_id_returns_the_stored_memory(manager) -> None:
    mid = str(uuid.uuid4())
    a = manager.add("Alice prefers green tea", memory_type="semantic", memory_id=mid)
    b = manager.add("Alice prefers green tea", memory_type="semantic", memory_id=mid.upper())
    assert a.id == b.id == mid and b.created_at == a.created_at
    assert manager.stats().total == 1 and manager.bundle.vectors.count("memories") == 1


def test_a_retry_that_adds_to_the_batch_stores_only_the_new_items(manager) -> None:
    specs = _batch(3, "grow")
    manager.add_many(specs)
    more = specs + _batch(2, "grown")
    stored = manager.add_many(more)
    assert [i.id for i in stored] == [s["memory_id"] for s in more]
    assert manager.stats().total == 5


def test_same_id_with_different_content_is_refused(manager) -> None:
    mid = str(uuid.uuid4())
    manager.add("the original text", memory_type="episodic", memory_id=mid)
    for call in (lambda: manager.add("another text", memory_type="episodic", memory_id=mid),
                 lambda: manager.add("the original text", memory_type="semantic", memory_id=mid),
                 lambda: manager.add_many([{"content": "another text", "memory_type": "episodic",
                                            "memory_id": mid}])):
        with pytest.raises(IdConflictError, match="update"):
            call()
    assert manager.get(mid).content == "the original text" and manager.stats().total == 1


def test_another_users_id_is_refused_without_overwrite_or_leak(manager) -> None:
    mid = str(uuid.uuid4())
    manager.add("bob's secret diary entry", memory_type="episodic", user_id="bob", memory_id=mid)
    for call in (lambda: manager.add("bob's secret diary entry", memory_type="episodic", memory_id=mid),
                 lambda: manager.add("overwrite attempt", memory_type="episodic", memory_id=mid),
                 lambda: manager.add_many([{"content": "x", "memory_id": mid, "user_id": "alice"}])):
        with pytest.raises(IdConflictError) as caught:
            call()
        assert "secret" not in str(caught.value) and "bob" not in str(caught.value)
    assert manager.get(mid, user_id="bob").content == "bob's secret diary entry"
    assert manager.get_all() == []


def test_a_forgotten_memory_is_not_silently_re_added(manager) -> None:
    mid = str(uuid.uuid4())
    manager.add("forget me", memory_type="episodic", importance=0.01, memory_id=mid)
    manager.forget("importance_based", threshold=0.1)
    with pytest.raises(IdConflictError, match="restore"):
        manager.add("forget me", memory_type="episodic", importance=0.01, memory_id=mid)


@pytest.mark.parametrize("bad", ["abc", "1234", uuid.uuid4().hex, 5, "", str(uuid.uuid4()) + "x",
                                 "{" + str(uuid.uuid4()) + "}", "urn:uuid:" + str(uuid.uuid4()), True])
def test_memory_id_must_be_a_full_uuid(manager, bad) -> None:
    with pytest.raises(InvalidInputError, match="memory_id"):
        manager.add("x", memory_type="episodic", memory_id=bad)
    with pytest.raises(InvalidInputError, match="memory_id"):
        manager.add_many([{"content": "x", "memory_id": bad}])
    assert manager.get_all() == []


def test_duplicate_ids_in_one_batch_are_refused(manager) -> None:
    mid = str(uuid.uuid4())
    with pytest.raises(InvalidInputError, match="twice"):
        manager.add_many([{"content": "a", "memory_id": mid}, {"content": "a", "memory_id": mid}])
    with pytest.raises(InvalidInputError, match="memory_id"):  # "id" is not the keyword: say which is
        manager.add_many([{"content": "a", "id": mid}])
    assert manager.get_all() == []


@pytest.mark.parametrize("point", ["after-commit", "before-commit"])
def test_writer_killed_mid_batch_then_the_natural_retry_stores_nothing_twice(tmp_path: Path, point: str) -> None:
    home, specs = tmp_path / "data", _batch(9, point)
    spec_file = tmp_path / "specs.json"
    spec_file.write_text(json.dumps(specs), encoding="utf-8")
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import crash_worker; "
            f"crash_worker.add_batch_killed({str(home)!r}, {str(spec_file)!r}, {point!r})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    with MemoryManager(crash_worker.settings(home), user_id=crash_worker.USER,
                       embedder=crash_worker.embedder()) as mm:
        assert mm.bundle.records.pending() == []  # recovery ran on open
        before = len(mm.get_all(limit=10**6))
        assert before == (9 if point == "after-commit" else 0)
        stored = mm.add_many(specs)  # the natural retry: the same batch, the same ids
        assert [i.id for i in stored] == [s["memory_id"] for s in specs]
        assert len(mm.get_all(limit=10**6)) == 9
        assert mm.bundle.vectors.count("memories") == 6
        for spec in specs:
            hits = mm.search(str(spec["content"]), limit=3)
            assert hits[0].item.id == spec["memory_id"]
        assert memory_problems(home, mm.bundle.vectors) == []
