"""Re-adding a document: a failure at any step keeps the earlier version, searchable as before."""

from __future__ import annotations

import sqlite3

import pytest

from hello_memory import Settings
from hello_memory.errors import StoreError
from hello_memory.stores.chunks.passage_index import COLLECTION, passage_id
from hello_memory.stores.vectors.base import Filter
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from rag import RAGPipeline, indexer
from rag.passages import passages

V1 = "\n\n".join(f"Version one paragraph {i} about the quartz garden and its gate." for i in range(40))
V2 = "\n\n".join(f"Version two paragraph {i} about the copper bridge and its tolls." for i in range(40))


class Killed(BaseException):
    """The process dies here (not an Exception: nothing may catch it)."""


@pytest.fixture
def settings(tmp_path):
    return Settings(home=tmp_path / "data", chunk_tokens=40, overlap_tokens=0)


@pytest.fixture
def rag(settings):
    p = RAGPipeline(settings, namespace="kb", embedder=DeterministicFakeEmbedder(dimension=32))
    yield p
    p.close()


def expected_points(p: RAGPipeline, document_id: str) -> set[str]:
    rows = p.store.get_chunks(p.namespace, document_id=document_id).values()
    return {passage_id(r.chunk_id, i) for r in rows for i in range(len(passages(r.text)))}


def stored_points(p: RAGPipeline, document_id: str) -> set[str]:
    return set(p.bundle.vectors.ids(COLLECTION, Filter(equals={"document_id": document_id})))


def assert_version_one(p: RAGPipeline) -> None:
    """V1 is the document, whole: rows, passages (no more, no less), dense and lexical search."""
    (doc,) = p.list_documents()
    assert doc.document_id == "guide"
    texts = [r.text for r in p.store.get_chunks("kb").values()]
    assert texts and all(t.startswith("Version one") for t in texts)
    assert stored_points(p, "guide") == expected_points(p, "guide")
    # The fake embedder scores an exact text 1.0: a V1 chunk asked verbatim is found densely.
    hit = p.search(texts[3], limit=1).hits[0]
    assert hit.text == texts[3] and hit.breakdown["dense"] == pytest.approx(1.0, abs=1e-5)
    assert all(h.text.startswith("Version one") for h in p.search("copper bridge tolls", limit=5).hits)
    assert p.store.unsettled() == []


def _failing_upserts(monkeypatch: pytest.MonkeyPatch, p: RAGPipeline, *, partial: bool = False) -> None:
    """The vector store's upserts fail; ``partial``: after writing half of their points."""
    real = p.bundle.vectors.upsert

    def upsert(collection, points):
        if partial:
            real(collection, points[: len(points) // 2])
        raise StoreError("vector store unavailable (injected)")

    monkeypatch.setattr(p.bundle.vectors, "upsert", upsert)


@pytest.mark.parametrize("partial", [False, True], ids=["nothing-written", "half-written"])
def test_a_readd_whose_vector_write_fails_keeps_the_earlier_version(rag, monkeypatch, partial):
    rag.add_text(V1, document_id="guide")
    before = stored_points(rag, "guide")
    _failing_upserts(monkeypatch, rag, partial=partial)
    with pytest.raises(StoreError, match="earlier version is kept"):
        rag.add_text(V2, document_id="guide")
    monkeypatch.undo()
    assert stored_points(rag, "guide") == before
    assert_version_one(rag)


def test_a_readd_whose_row_swap_fails_keeps_the_earlier_version(rag, monkeypatch):
    rag.add_text(V1, document_id="guide")

    def full(*args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(rag.store, "_insert_chunk", full)
    with pytest.raises(StoreError, match="earlier version is kept"):
        rag.add_text(V2, document_id="guide")
    monkeypatch.undo()
    assert_version_one(rag)


def test_a_readd_of_the_same_text_that_fails_keeps_it(rag, monkeypatch):
    """Same text, same ids: the failure must not delete the passages both versions share."""
    rag.add_text(V1, document_id="guide")
    _failing_upserts(monkeypatch, rag, partial=True)
    with pytest.raises(StoreError):
        rag.add_text(V1, document_id="guide")
    monkeypatch.undo()
    assert_version_one(rag)


def test_a_new_document_whose_vector_write_fails_leaves_nothing(rag, monkeypatch):
    rag.add_text(V1, document_id="guide")
    _failing_upserts(monkeypatch, rag, partial=True)
    with pytest.raises(StoreError, match="nothing of it was kept"):
        rag.add_text(V2, document_id="other")
    monkeypatch.undo()
    assert [d.document_id for d in rag.list_documents()] == ["guide"]
    assert stored_points(rag, "other") == set() and rag.store.residue("kb", "other") == {
        "documents": 0, "chunks": 0, "pending": 0, "passages": 0,
    }
    assert_version_one(rag)


@pytest.mark.parametrize("where", ["after-vectors", "after-swap"])
def test_a_readd_killed_midway_is_reconciled_on_open(settings, monkeypatch, where):
    embedder = DeterministicFakeEmbedder(dimension=32)
    p = RAGPipeline(settings, namespace="kb", embedder=embedder)
    p.add_text(V1, document_id="guide")

    def die(*args, **kwargs):
        raise Killed

    if where == "after-vectors":  # new passages written, rows not swapped
        monkeypatch.setattr(p.store, "_delete_rows", die)
    else:  # rows swapped, old passages not deleted yet
        monkeypatch.setattr(p.store, "_settle", die)
    with pytest.raises(Killed):
        p.add_text(V2, document_id="guide")
    monkeypatch.undo()
    assert p.store.unsettled() != []
    p.close()
    p = RAGPipeline(settings, namespace="kb", embedder=embedder)
    try:
        assert p.store.unsettled() == []
        assert stored_points(p, "guide") == expected_points(p, "guide")
        texts = [r.text for r in p.store.get_chunks("kb").values()]
        assert all(t.startswith("Version one" if where == "after-vectors" else "Version two") for t in texts)
        assert p.search(texts[0], limit=1).hits[0].breakdown["dense"] == pytest.approx(1.0, abs=1e-5)
    finally:
        p.close()


def test_recovery_of_a_legacy_journal_embeds_only_what_is_missing(rag):
    """A journal left by the earlier write order (rows first, vectors after) is finished, not redone."""
    rag.add_text(V1, document_id="guide")
    points = sorted(stored_points(rag, "guide"))
    rag.bundle.vectors.delete(COLLECTION, points[:3])  # killed while writing the vectors
    with rag.sqlite_store.transaction() as conn:
        conn.execute("INSERT INTO pending VALUES ('kb', 'guide', 'index')")
    embedded: list[int] = []
    real = rag.embedder.embed
    rag.embedder.embed = lambda texts, kind="passage": embedded.append(len(texts)) or real(texts, kind=kind)
    indexer.recover(rag.core)
    assert sum(embedded) == 3
    assert_version_one(rag)
