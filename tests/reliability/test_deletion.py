"""Provable deletion: after forget_user / remove / clear_all / delete_document / clear, scan the RAW stores.

Every SQLite file is opened directly with ``sqlite3`` (all tables, FTS5 shadow tables included),
every vector point is listed (by filter and by a full payload scan), and every file of the data
directory is searched byte by byte for a marker that only the deleted content contained.

What is asserted, byte for byte on disk (after close, and for SQLite also while open):
- deleted *text* (content, metadata, typed fields, headings, file names): in no file at all;
- deleted *identifiers* (user id, session id, document id, namespace): in no SQLite file. After
  ``forget_user`` (which vacuums) that includes b-tree interior pages; after the other deletions an
  id may survive as a b-tree divider key, so those tests check the rows, not the bytes, for ids.

Known and documented (RELIABILITY.md): Qdrant Edge keeps a deleted point's vector and its filter
payload (identifiers and timestamps, never text) in segment and write-ahead-log files until the
WAL segment rotates or the segment is vacuumed, so identifiers are not byte-checked in ``vectors/``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest
from rel_scan import (
    files_containing,
    memory_problems,
    namespace_residue,
    payloads_mentioning,
    rag_problems,
    rows_containing,
    user_residue,
)

from hello_memory import MemoryManager, Settings
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from rag import RAGPipeline

DBS = ("records.db", "graph.db", "rag.db")


@dataclass
class World:
    home: Path
    mm: MemoryManager
    rag: RAGPipeline
    marker: str  # only in deleted *text*
    victim: str  # the deleted user's id
    ident: str  # only in deleted *identifiers* (session, document id, namespace)


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data directory for the module (creating a Qdrant Edge collection costs ~1.7 s here)."""
    home = tmp_path_factory.mktemp("deletion") / "data"
    with _open(home) as (mm, rag):
        for i in range(30):  # other people's data must survive every deletion
            kind = ("episodic", "semantic", "perceptual")[i % 3]
            mm.add(f"bystander memory number {i} about Bob in Berlin", memory_type=kind,
                   source_path="/photos/bob.jpg" if kind == "perceptual" else None)
        rag.add_text("# Bystander guide\n\nKeep this document.", document_id="keep")
    return home


@contextmanager
def _open(home: Path) -> Iterator[tuple[MemoryManager, RAGPipeline]]:
    settings = Settings(home=home, chunk_tokens=30, overlap_tokens=5)
    emb = DeterministicFakeEmbedder(dimension=16)
    mm = MemoryManager(settings, user_id="bystander", enable_perceptual=True, embedder=emb)
    rag = RAGPipeline(settings, namespace="kb", embedder=emb, llm=None)
    try:
        yield mm, rag
    finally:
        rag.close()
        mm.close()


@pytest.fixture
def world(shared_home: Path) -> Iterator[World]:
    with _open(shared_home) as (mm, rag):
        token = uuid.uuid4().hex[:16]
        yield World(shared_home, mm, rag, f"zqx{token}", f"victim-{token}", f"idq{token}")


def _fill_victim(w: World) -> list[str]:
    """Memories of every tier, with history, a supersession, a forgotten one and rich metadata."""
    m, u = w.marker, w.victim
    ids = [
        w.mm.add(f"{m} Alice lives in Paris", memory_type="semantic", user_id=u, metadata={"note": m}).id,
        w.mm.add(f"{m} Alice lives in Lyon", memory_type="semantic", user_id=u).id,  # supersedes Paris
        w.mm.add(f"met {m} at the station", memory_type="episodic", user_id=u, session_id=f"s-{w.ident}",
                 tags=[m], participants=[f"{m}-friend"], context=m).id,
        w.mm.add(f"scratch note {m}", memory_type="working", user_id=u, importance=0.9).id,
        w.mm.add(f"photo of {m}", memory_type="perceptual", user_id=u, source_path=f"/photos/{m}.jpg").id,
        w.mm.add(f"low importance {m}", memory_type="episodic", user_id=u, importance=0.05).id,
    ]
    w.mm.update(ids[2], content=f"updated {m} text", importance=0.8, user_id=u)
    w.mm.forget("importance_based", threshold=0.1, user_id=u)  # soft delete: restorable until purged
    w.mm.consolidate("working", "episodic", 0.5, user_id=u)
    w.mm.search(f"{m} Alice", user_id=u)
    return ids


def _assert_no_trace(w: World, *, needles: list[str], user: str | None) -> None:
    """Zero rows, zero points, zero bytes: the raw-store scan every deletion test ends with."""
    needles = [*needles, w.ident]
    for db in DBS:
        for needle in needles:
            assert rows_containing(w.home / db, needle) == [], f"{needle!r} left in a row of {db}"
    vectors = w.mm.bundle.vectors
    assert payloads_mentioning(vectors, needles) == []
    if user is not None:
        assert set(user_residue(w.home, vectors, user).values()) == {0}
    assert memory_problems(w.home, vectors) == [] and rag_problems(w.home, vectors) == []
    w.rag.close()
    w.mm.close()  # closing checkpoints the WAL: the files are then all there is
    idents = [w.ident] + ([user] if user else [])
    found = files_containing(w.home, [w.marker.encode(), *(i.encode() for i in idents)])
    assert found[w.marker.encode()] == [], "deleted text still on disk"
    for ident in idents:  # identifiers: in no SQLite file; see the module docstring for vectors/
        left = [f for f in found[ident.encode()] if not f.startswith("vectors/")]
        assert left == [], f"deleted identifier {ident!r} still in a SQLite file"


def test_forget_user_leaves_zero_residue(world: World) -> None:
    _fill_victim(world)
    assert user_residue(world.home, world.mm.bundle.vectors, world.victim)["sqlite:memories"] > 0
    world.mm.forget_user(world.victim)
    assert world.mm.stats(user_id="bystander").total == 30
    _assert_no_trace(world, needles=[world.marker, world.victim], user=world.victim)


def test_forget_user_leaves_zero_residue_while_still_open(world: World) -> None:
    _fill_victim(world)
    world.mm.forget_user(world.victim)
    files = [f for f in files_containing(world.home, [world.marker.encode()])[world.marker.encode()]
             if not f.startswith("vectors/")]
    assert files == [], "deleted text in a SQLite file or its WAL while the store is open"


def test_remove_leaves_zero_residue(world: World) -> None:
    ids = _fill_victim(world)
    for mid in [*ids, *(i.id for i in world.mm.get_all(user_id=world.victim, include_deleted=True))]:
        if mid in {i.id for i in world.mm.get_all(user_id=world.victim, include_deleted=True)}:
            world.mm.remove(mid, user_id=world.victim)
    assert world.mm.get_all(user_id=world.victim, include_deleted=True) == []
    assert set(user_residue(world.home, world.mm.bundle.vectors, world.victim).values()) == {0}
    _assert_no_trace(world, needles=[world.marker], user=None)  # ids may stay as b-tree dividers


def test_clear_all_leaves_zero_residue(world: World) -> None:
    _fill_victim(world)
    world.mm.clear_all(world.victim)
    assert set(user_residue(world.home, world.mm.bundle.vectors, world.victim).values()) == {0}
    _assert_no_trace(world, needles=[world.marker], user=None)  # ids may stay as b-tree dividers


def test_forget_with_purge_leaves_zero_residue(world: World) -> None:
    _fill_victim(world)
    world.mm.forget("importance_based", threshold=1.0, user_id=world.victim, purge=True)
    left = world.mm.get_all(user_id=world.victim, include_deleted=True)
    for item in left:  # importance 1.0 items survive the threshold: remove them too
        world.mm.remove(item.id, user_id=world.victim)
    assert set(user_residue(world.home, world.mm.bundle.vectors, world.victim).values()) == {0}
    _assert_no_trace(world, needles=[world.marker], user=None)


def _victim_documents(w: World, tmp_path: Path) -> list[str]:
    m = w.marker
    path = tmp_path / f"notes-{m}.md"
    path.write_text(f"# Diary of {m}\n\n## Secrets {m}\n\n" + f"private text {m}. " * 40, encoding="utf-8")
    a = w.rag.add_document(path, metadata={"owner": m}).document_id
    b = w.rag.add_text(f"# {m} heading\n\n" + f"more {m} words. " * 40, document_id=f"doc-{w.ident}",
                       source=f"/src/{m}.txt").document_id
    w.rag.add_text(f"# {m} v1\n\nfirst version", document_id="replaced")
    w.rag.add_text(f"# {m} v2\n\nsecond version", document_id="replaced")  # re-add replaces v1
    return [a, b, "replaced"]


def test_delete_document_leaves_zero_residue(world: World, tmp_path: Path) -> None:
    for doc in _victim_documents(world, tmp_path):
        world.rag.delete_document(doc)
        assert set(namespace_residue(world.home, world.rag.bundle.vectors, "kb", doc).values()) == {0}
    assert [d.document_id for d in world.rag.list_documents()] == ["keep"]
    _assert_no_trace(world, needles=[world.marker], user=None)


def test_clear_leaves_zero_residue(world: World, tmp_path: Path) -> None:
    other = RAGPipeline(world.rag.settings, namespace=f"ns-{world.ident}", embedder=world.rag.embedder, llm=None)
    other.add_text(f"# {world.marker}\n\nnamespace text {world.marker}", document_id="x")
    other.clear()
    assert set(namespace_residue(world.home, other.bundle.vectors, other.namespace).values()) == {0}
    other.close()
    _victim_documents(world, tmp_path)
    world.rag.clear()
    assert world.rag.list_documents() == []
    _assert_no_trace(world, needles=[world.marker], user=None)


def test_restorable_forget_is_not_deletion(world: World) -> None:
    """A soft forget keeps the text (restorable by design); only purge/remove/forget_user erase it."""
    item = world.mm.add(f"keep me {world.marker}", memory_type="episodic", importance=0.01)
    world.mm.forget("importance_based", threshold=0.05)
    assert world.mm.restore(item.id).content == f"keep me {world.marker}"


def test_scrub_survives_thousands_of_deletions() -> None:
    """Regression: scrub used FTS5 'optimize', which on SQLite < 3.41 adds one index level per
    insert+optimize; after ~1,000 removes interleaved with adds the lexical index hit the 2000-level
    limit and was corrupt for good ("database disk image is malformed"; found by the slow
    concurrency run at ~10,000 operations)."""
    from hello_memory.models import MemoryItem
    from hello_memory.stores.chunks.base import ChunkRecord, DocumentRecord
    from hello_memory.stores.chunks.sqlite import SQLiteChunkStore
    from hello_memory.stores.records.sqlite import SQLiteRecordStore

    records = SQLiteRecordStore(":memory:")
    chunks = SQLiteChunkStore(":memory:")
    try:
        for n in range(2_100):
            item = MemoryItem(user_id="u", memory_type="episodic", content=f"word{n} shared")
            with records.transaction() as conn:
                records.insert_many(conn, [(item, [f"word{n}", "shared"])])
            doc = DocumentRecord("ns", f"d{n}", None, None, "text", 1, 2, datetime.now(timezone.utc))
            chunks.put_document(doc, [ChunkRecord(str(uuid.uuid4()), "ns", f"d{n}", 0, f"text {n}", 0, 6, "", "en", 2,
                                                  lexical=f"text{n}")])
            if n % 2:
                with records.transaction() as conn:
                    records.delete_rows(conn, [item.id])
                chunks.remove_document("ns", f"d{n}")
            records.scrub()
            chunks.scrub()
        records.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')")
        chunks.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')")
        assert len(records.lexical_search("u", ["shared"], types=None, limit=5000)) == 1_050
    finally:
        records.close()
        chunks.close()
