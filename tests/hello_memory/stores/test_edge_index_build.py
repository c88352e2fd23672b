"""The Edge store builds its HNSW graph in the background: the collection serves throughout, nothing
written meanwhile is lost, and a crash at any step leaves one complete shard."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from hello_memory.stores.vectors import edge_build
from hello_memory.stores.vectors.base import Filter, VectorPoint
from hello_memory.stores.vectors.edge import QdrantEdgeVectorStore
from hello_memory.stores.vectors.edge_engine import SHARD_DIR

DIM = 16


def _points(rng: np.random.Generator, n: int, user: str = "u") -> list[VectorPoint]:
    return [
        VectorPoint(str(uuid.uuid4()), rng.standard_normal(DIM).astype(np.float32), {"user_id": user})
        for _ in range(n)
    ]


def _indexed(store: QdrantEdgeVectorStore, name: str) -> int:
    shard, _ = store._open(name)
    return int(shard.info().indexed_vectors_count or 0)


def _building(tmp_path, monkeypatch, seed: int, n: int = 1000, delay: float = 1.0):
    """A store whose first ``n`` points start a build; the child waits ``delay`` s before building, so
    what the test does next happens while it runs."""
    monkeypatch.setattr(edge_build, "_CHILD", f"import time; time.sleep({delay})\n" + edge_build._CHILD)
    rng = np.random.default_rng(seed)
    store = QdrantEdgeVectorStore(tmp_path / "v", index_threshold=1000)
    store.ensure_collection("m", DIM, embedder="fake")
    pts = _points(rng, n)
    store.upsert("m", pts)
    return store, rng, pts


def test_the_graph_is_built_in_the_background_and_writes_made_meanwhile_survive(tmp_path, monkeypatch):
    store, rng, first = _building(tmp_path, monkeypatch, seed=1)  # crosses the threshold: the build starts
    assert "m" in store._builds
    # while the child builds: searches, new points, deletions, an update (new payload), a filtered delete
    later = _points(rng, 300)
    store.upsert("m", later)
    store.delete("m", [p.id for p in first[:50]])
    moved = VectorPoint(first[60].id, first[60].vector, {"user_id": "w"})
    store.upsert("m", [moved])
    doomed = _points(rng, 20, user="gone")
    store.upsert("m", doomed)
    assert store.delete_where("m", Filter(equals={"user_id": "gone"})) == 20
    hits = store.search("m", later[0].vector, limit=1)
    assert hits[0].id == later[0].id
    assert "m" in store._builds  # all of the above happened during the build
    assert store.wait_for_index("m", timeout=120)
    assert "m" not in store._builds
    assert _indexed(store, "m") >= 1000  # the swapped-in shard has its graph
    expected = {p.id for p in first[50:]} | {p.id for p in later}
    assert set(store.ids("m")) == expected
    assert store.get("m", [moved.id])[0].payload["user_id"] == "w"
    for p in later[:20] + first[100:120]:  # every point is found by its own vector
        assert store.search("m", p.vector, limit=1)[0].id == p.id
    store.close()
    assert not (tmp_path / "v" / "m" / edge_build.BUILDING).exists()
    reopened = QdrantEdgeVectorStore(tmp_path / "v", index_threshold=None)
    assert set(reopened.ids("m")) == expected and _indexed(reopened, "m") >= 1000
    reopened.close()


def test_closing_during_a_build_abandons_it_and_keeps_every_point(tmp_path):
    rng = np.random.default_rng(2)
    store = QdrantEdgeVectorStore(tmp_path / "v", index_threshold=1000)
    store.ensure_collection("m", DIM, embedder="fake")
    pts = _points(rng, 1500)
    store.upsert("m", pts)
    build = store._builds.get("m")
    assert build is not None
    store.close()
    assert build.done.wait(60)
    assert not (tmp_path / "v" / "m" / edge_build.BUILDING).exists()
    reopened = QdrantEdgeVectorStore(tmp_path / "v", index_threshold=None)
    assert set(reopened.ids("m")) == {p.id for p in pts}
    reopened.close()


def test_a_failed_child_leaves_the_collection_as_it_was(tmp_path, monkeypatch):
    monkeypatch.setattr(edge_build, "_CHILD", "import sys; sys.exit(3)")
    rng = np.random.default_rng(3)
    store = QdrantEdgeVectorStore(tmp_path / "v", index_threshold=1000)
    store.ensure_collection("m", DIM, embedder="fake")
    pts = _points(rng, 1000)
    store.upsert("m", pts)
    assert store.wait_for_index("m", timeout=60)
    assert _indexed(store, "m") == 0 and set(store.ids("m")) == {p.id for p in pts}
    store.upsert("m", _points(rng, 1000))  # not tried again by this store
    assert "m" not in store._builds
    assert not (tmp_path / "v" / "m" / edge_build.BUILDING).exists()
    store.close()


@pytest.mark.parametrize("crash_after", ["copy", "first rename"])
def test_a_crash_mid_swap_is_repaired_on_the_next_load(tmp_path, crash_after):
    rng = np.random.default_rng(4)
    store = QdrantEdgeVectorStore(tmp_path / "v", index_threshold=None)
    store.ensure_collection("m", DIM, embedder="fake")
    pts = _points(rng, 200)
    store.upsert("m", pts)
    store.close()
    cdir = tmp_path / "v" / "m"
    import shutil

    shutil.copytree(cdir / SHARD_DIR, cdir / edge_build.BUILDING)  # a copy the crash left behind
    if crash_after == "first rename":
        (cdir / SHARD_DIR).rename(cdir / edge_build.OLD)  # the live shard moved aside, the copy not yet in
    reopened = QdrantEdgeVectorStore(tmp_path / "v", index_threshold=None)
    assert set(reopened.ids("m")) == {p.id for p in pts}
    assert not (cdir / edge_build.BUILDING).exists() and not (cdir / edge_build.OLD).exists()
    reopened.close()


def test_no_build_below_the_threshold_or_when_switched_off(tmp_path):
    rng = np.random.default_rng(5)
    for threshold in (None, 5000):
        store = QdrantEdgeVectorStore(tmp_path / f"v{threshold}", index_threshold=threshold)
        store.ensure_collection("m", DIM, embedder="fake")
        store.upsert("m", _points(rng, 2000))
        assert "m" not in store._builds and _indexed(store, "m") == 0
        store.close()


def test_searches_running_through_the_swap_never_fail(tmp_path, monkeypatch):
    import threading

    store, _, pts = _building(tmp_path, monkeypatch, seed=6, delay=0.5)
    build = store._builds["m"]
    errors: list[BaseException] = []
    found = [0]

    def search() -> None:
        while not build.done.is_set():
            try:
                p = pts[found[0] % len(pts)]
                assert store.search("m", p.vector, limit=1)[0].id == p.id
                assert store.count("m") == len(pts)
                found[0] += 1
            except BaseException as e:
                errors.append(e)
                return

    threads = [threading.Thread(target=search) for _ in range(2)]
    for t in threads:
        t.start()
    assert store.wait_for_index("m", timeout=120)
    for t in threads:
        t.join()
    assert errors == [] and found[0] > 0 and _indexed(store, "m") >= 1000
    store.close()


def test_a_collection_left_unindexed_is_built_when_it_is_next_opened(tmp_path):
    rng = np.random.default_rng(7)
    store = QdrantEdgeVectorStore(tmp_path / "v", index_threshold=None)
    store.ensure_collection("m", DIM, embedder="fake")
    pts = _points(rng, 1500)
    store.upsert("m", pts)
    store.close()
    reopened = QdrantEdgeVectorStore(tmp_path / "v", index_threshold=1000)
    assert reopened.count("m") == 1500  # the first use loads the shard and starts the build
    assert reopened.wait_for_index("m", timeout=120) and _indexed(reopened, "m") >= 1500
    assert set(reopened.ids("m")) == {p.id for p in pts}
    reopened.close()


def test_a_rebuild_waits_for_a_tenth_of_the_collection():
    class Info:
        def __init__(self, total: int, indexed: int) -> None:
            self.points_count, self.indexed_vectors_count = total, indexed

    class Shard:
        def __init__(self, total: int, indexed: int) -> None:
            self._info = Info(total, indexed)

        def info(self) -> Info:
            return self._info

    assert edge_build.due(Shard(20_000, 0), 20_000)
    assert not edge_build.due(Shard(19_999, 0), 20_000)
    assert not edge_build.due(Shard(1_000_000, 900_001), 20_000)  # 99,999 outside: under a tenth
    assert edge_build.due(Shard(1_000_000, 900_000), 20_000)


def test_a_replay_that_fails_leaves_the_live_collection_whole_and_usable(tmp_path, monkeypatch):
    store, rng, pts = _building(tmp_path, monkeypatch, seed=8, delay=0.5)
    more = _points(rng, 10)
    store.upsert("m", more)  # written during the build: the replay would carry them

    def broken(live, built, ids):
        raise RuntimeError("disk error during the replay")

    monkeypatch.setattr(edge_build, "_replay", broken)
    assert store.wait_for_index("m", timeout=120)
    assert set(store.ids("m")) == {p.id for p in pts + more}  # reloaded from the untouched live shard
    store.upsert("m", _points(rng, 5))  # and still writable: the old shard's WAL lock was released
    assert store.count("m") == 1015 and _indexed(store, "m") == 0
    # the failed build is not retried by this store (it would fail again at once): nothing left over
    assert "m" not in store._builds
    assert not (tmp_path / "v" / "m" / edge_build.BUILDING).exists()
    store.close()


def test_user_id_is_the_tenant_key_before_and_after_a_build(tmp_path, monkeypatch):
    """As on a Qdrant server: the user's points are kept together by the engine (is_tenant), and the
    built shard keeps that index; each user's filtered search sees only their own points."""
    store, rng, _ = _building(tmp_path, monkeypatch, seed=5, delay=0.0)
    others = _points(rng, 200, user="other")
    store.upsert("m", others)

    def tenant_index() -> bool:
        shard, _ = store._open("m")
        return bool(shard.info().payload_schema["user_id"].params.is_tenant)

    assert tenant_index()
    assert store.wait_for_index("m", timeout=120) and tenant_index()
    hits = store.search("m", others[0].vector, limit=50, where=Filter(equals={"user_id": "other"}))
    assert hits[0].id == others[0].id and {h.payload["user_id"] for h in hits} == {"other"}
    store.close()


def test_a_compact_collection_keeps_its_layout_through_a_build_and_a_reopen(tmp_path, monkeypatch):
    """compact: the build makes int8 copies of the indexed vectors (the child builds the collection's
    own layout, not the default one); searches re-score with the float32 vectors, so a point is
    found by its own vector with its exact score; a store opened without the option keeps it."""
    monkeypatch.setattr(edge_build, "_CHILD", edge_build._CHILD)
    rng = np.random.default_rng(9)
    store = QdrantEdgeVectorStore(tmp_path / "v", index_threshold=1000, compact=True)
    store.ensure_collection("m", DIM, embedder="fake")
    pts = _points(rng, 1200)
    store.upsert("m", pts)
    assert store.wait_for_index("m", timeout=120) and _indexed(store, "m") >= 1000
    segments = tmp_path / "v" / "m" / SHARD_DIR / "segments"
    assert list(segments.glob("*/vector_storage/quantized.data"))  # the int8 copies exist
    for p in pts[:30]:
        hit = store.search("m", p.vector, limit=1)[0]
        assert hit.id == p.id and abs(hit.score - 1.0) < 1e-5  # re-scored: the exact cosine
    store.close()
    reopened = QdrantEdgeVectorStore(tmp_path / "v")  # default layout for new collections only
    assert reopened._meta("m").compact and reopened.search("m", pts[5].vector, limit=1)[0].id == pts[5].id
    reopened.ensure_collection("other", DIM, embedder="fake")
    assert not reopened._meta("other").compact
    reopened.close()


def test_switching_vector_memory_warns_at_open_and_reindex_vectors_applies_it(tmp_path, monkeypatch, caplog):
    """Issue 34: HELLO_MEMORY_VECTOR_MEMORY=compact on an existing store left its collections mapped, and
    nothing said so. Opening one now names it and the command; the command rebuilds it (and back)."""
    from typer.testing import CliRunner

    from hello_memory import MemoryManager, Settings
    from hello_memory.cli import app

    monkeypatch.setattr(edge_build, "_CHILD", edge_build._CHILD)
    home = tmp_path / "d"
    with MemoryManager(Settings(home=home, embedder="tfidf"), user_id="u") as mm:
        item = mm.add("a note about tea", memory_type="semantic")
    monkeypatch.setenv("HELLO_MEMORY_EMBEDDER", "tfidf")
    monkeypatch.setenv("HELLO_MEMORY_VECTOR_MEMORY", "compact")
    with caplog.at_level("WARNING", logger="hello_memory.stores.vectors.edge"), \
            MemoryManager(Settings(home=home), user_id="u") as mm:
        assert mm.search("tea", limit=1)[0].item.id == item.id
        collections = mm.bundle.vectors.layouts()
    assert set(collections.values()) == {"mapped"}
    warned = [r.getMessage() for r in caplog.records if "keeps its mapped layout" in r.getMessage()]
    assert warned and "hello-memory reindex --vectors --home" in warned[0]

    out = CliRunner().invoke(app, ["reindex", "--vectors", "--home", str(home)])
    assert out.exit_code == 0, out.output
    assert f"rebuilt: {', '.join(sorted(collections))}" in out.output
    with MemoryManager(Settings(home=home), user_id="u") as mm:
        assert set(mm.bundle.vectors.layouts().values()) == {"compact"}
        assert mm.relayout_vectors() == []  # already in it
        hit = mm.search("tea", limit=1)[0]
        assert hit.item.id == item.id
    monkeypatch.setenv("HELLO_MEMORY_VECTOR_MEMORY", "mapped")
    out = CliRunner().invoke(app, ["reindex", "--vectors", "--home", str(home)])
    assert out.exit_code == 0 and "mapped layout" in out.output
    with MemoryManager(Settings(home=home), user_id="u") as mm:
        assert set(mm.bundle.vectors.layouts().values()) == {"mapped"}


def test_reindex_vectors_on_a_qdrant_server_says_it_has_no_layout(tmp_path, monkeypatch):
    from hello_memory import MemoryManager, Settings
    from hello_memory.errors import InvalidInputError

    settings = Settings(home=tmp_path / "never", embedder="tfidf", qdrant_url=":memory:")
    with MemoryManager(settings) as mm, pytest.raises(InvalidInputError, match="configured on the server"):
        mm.relayout_vectors()
