"""``hello-memory reindex --graph``: a worker killed between the record write and the graph write.

The worker is a real process on qdrant-client's local mode on disk (``QDRANT_URL=<path>``), killed
with ``os._exit`` at the moment it would write the graph; the repair is the real command line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hello_memory import MemoryManager, Settings
from hello_memory.language.extraction import entity_id
from hello_memory.stores.graph.qdrant import QdrantGraphStore
from hello_memory.stores.records.qdrant import QdrantRecordStore

KILLED_WORKER = """
import os
from hello_memory import MemoryManager, Settings
from hello_memory.stores.graph.qdrant import QdrantGraphStore

with MemoryManager(Settings(), user_id="alice") as mm:
    mm.add("Alice works at Acme", memory_type="semantic")
    QdrantGraphStore.link = lambda *a, **k: os._exit(9)  # killed after the record, before the graph
    mm.add("Alice lives in Paris", memory_type="semantic")
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        QDRANT_URL=str(tmp_path / "qdrant"),
        HELLO_MEMORY_EMBEDDER="tfidf",
        HELLO_MEMORY_HOME=str(tmp_path / "never"),
        PYTHONPATH=os.pathsep.join([str(Path.cwd()), env.get("PYTHONPATH", "")]),
    )
    return env


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=_env(tmp_path), capture_output=True, text=True, timeout=240, check=False
    )


def _graph_state(tmp_path: Path) -> tuple[dict[str, int], int, list[str]]:
    with QdrantRecordStore(path=str(tmp_path / "qdrant")) as records:
        graph = QdrantGraphStore(client=records.client())
        paris = [eid for eid, _ in graph.find_entities("alice", ["Paris"])]
        return graph.counts("alice"), len(records.unsettled()), paris


def test_reindex_graph_repairs_a_worker_killed_between_record_and_graph(tmp_path: Path) -> None:
    killed = _run(tmp_path, "-c", KILLED_WORKER)
    assert killed.returncode == 9, killed.stderr
    counts, unsettled, paris = _graph_state(tmp_path)
    assert (
        unsettled == 1 and paris == [] and counts["mentions"] > 0
    )  # record + marker stored, Paris not linked

    done = _run(tmp_path, "-m", "hello_memory.cli", "reindex", "--graph")
    assert done.returncode == 0, done.stderr
    assert "2 semantic memories of 1 users" in done.stdout
    after, unsettled, paris = _graph_state(tmp_path)
    assert (
        unsettled == 0 and paris == [entity_id("alice", "Paris")] and after["mentions"] > counts["mentions"]
    )
    assert not (tmp_path / "never").exists()


def test_reindex_graph_rebuilds_a_lost_or_stale_graph(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "never", qdrant_url=str(tmp_path / "qdrant"), embedder="tfidf")
    with MemoryManager(settings, user_id="alice") as mm:
        fact = mm.add("Alice lives in Paris", memory_type="semantic")
        mm.add("Bob works at Acme", memory_type="semantic", user_id="bob")
        expected = {u: mm.bundle.graph.counts(u) for u in ("alice", "bob")}
        mm.bundle.graph.forget_user("alice")  # a lost graph ...
        ghost = entity_id("bob", "Ghost")
        mm.bundle.graph.link("bob", "0" * 8 + "-0000-4000-8000-" + "0" * 12, [(ghost, "Ghost", "person")], [])
        assert mm.bundle.graph.counts("alice")["mentions"] == 0  # ... and a link with no record
    done = _run(tmp_path, "-m", "hello_memory.cli", "reindex", "--graph")
    assert done.returncode == 0, done.stderr
    with MemoryManager(settings, user_id="alice") as mm:
        assert {u: mm.bundle.graph.counts(u) for u in ("alice", "bob")} == expected
        assert mm.bundle.graph.find_entities("bob", ["Ghost"]) == []
        assert fact.id in {h.item.id for h in mm.search("Paris", memory_types=["semantic"])}
