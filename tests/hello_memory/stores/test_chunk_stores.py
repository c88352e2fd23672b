"""The chunk-store contract on qdrant-client's local mode, and what the Qdrant chunk store adds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient

from hello_memory.errors import DimensionMismatchError, EmbedderMismatchError, InvalidInputError, StoreError
from hello_memory.stores.chunks.base import ChunkStore
from hello_memory.stores.chunks.qdrant import QdrantChunkStore
from hello_memory.testing.chunk_store import DIM, ChunkStoreContract, Killed, document


class QdrantWrites:
    """How the contract breaks and kills a Qdrant chunk store's writes."""

    def break_writes(self, store: ChunkStore, monkeypatch: pytest.MonkeyPatch) -> None:
        assert isinstance(store, QdrantChunkStore)
        _crash_on(store, monkeypatch, "write chunks")

    def kill_writes(self, store: ChunkStore, monkeypatch: pytest.MonkeyPatch) -> None:
        def die(*args: Any) -> None:  # the new generation written, not published
            raise Killed

        monkeypatch.setattr(store, "_commit", die)


class TestQdrantChunkStoreInMemory(QdrantWrites, ChunkStoreContract):
    @pytest.fixture
    def chunk_stores(self) -> Iterator[Any]:
        client = QdrantClient(":memory:")
        opened: list[QdrantChunkStore] = []

        def make() -> QdrantChunkStore:
            opened.append(QdrantChunkStore(client=client, embedder="fake", dimension=DIM))
            return opened[-1]

        yield make
        for s in opened:
            s.close()
        client.close()


class TestQdrantChunkStoreOnDisk(QdrantWrites, ChunkStoreContract):
    persistent = True

    @pytest.fixture
    def chunk_stores(self, fast_path: Path) -> Iterator[Any]:
        self.path = str(fast_path / "qdrant")
        self.client = QdrantClient(path=self.path)
        opened: list[QdrantChunkStore] = []

        def make() -> QdrantChunkStore:
            opened.append(QdrantChunkStore(client=self.client, embedder="fake", dimension=DIM))
            return opened[-1]

        yield make
        for s in opened:
            s.close()
        self.client.close()

    def reopen(self, store: ChunkStore) -> ChunkStore:
        store.close()
        self.client.close()
        self.client = QdrantClient(path=self.path)
        return QdrantChunkStore(client=self.client, embedder="fake", dimension=DIM)


@pytest.fixture
def store() -> Iterator[QdrantChunkStore]:
    s = QdrantChunkStore(":memory:", embedder="fake", dimension=DIM)
    yield s
    s.close()


def with_passages(chunks: list[Any], vectors: list[list[list[float]]]) -> list[Any]:
    from dataclasses import replace

    return [
        replace(c, passages=np.asarray(v, dtype=np.float32)) for c, v in zip(chunks, vectors, strict=True)
    ]


def test_a_chunks_dense_score_is_its_best_passage(store: QdrantChunkStore) -> None:
    doc, chunks = document("docs", "guide", ["two topics", "one topic"])
    chunks = with_passages(chunks, [[[1, 0, 0, 0], [0, 1, 0, 0]], [[0.6, 0.8, 0, 0]]])
    store.put_document(doc, chunks)
    scores = store.dense_search("docs", [0, 1, 0, 0], limit=5)
    assert scores[chunks[0].chunk_id] == pytest.approx(1.0, abs=1e-5)  # its second passage
    assert scores[chunks[1].chunk_id] == pytest.approx(0.8, abs=1e-5)
    assert store.dense_search("other", [0, 1, 0, 0], limit=5) == {}
    assert list(store.dense_search("docs", [1, 0, 0, 0], limit=1)) == [chunks[0].chunk_id]


def test_bad_passages_are_refused_before_anything_is_written(store: QdrantChunkStore) -> None:
    doc, chunks = document("docs", "guide", ["a", "b"])
    for bad, error in (
        ([[1, 0, 0]], DimensionMismatchError),
        ([[0, 0, 0, 0]], InvalidInputError),
        ([], InvalidInputError),
    ):
        with pytest.raises(error):
            store.put_document(doc, with_passages(chunks, [[[1, 0, 0, 0]], bad]))
    assert not store.has_document("docs", "guide") and store.get_chunks("docs") == {}
    assert store.unsettled() == []
    with pytest.raises(InvalidInputError):
        store.put_document(doc, document("docs", "other", ["x"])[1])


def test_another_embedder_is_refused() -> None:
    client = QdrantClient(":memory:")
    QdrantChunkStore(client=client, embedder="fake", dimension=DIM).get_chunks("docs")
    with pytest.raises(EmbedderMismatchError):
        QdrantChunkStore(client=client, embedder="other", dimension=DIM).get_chunks("docs")
    with pytest.raises(DimensionMismatchError):
        QdrantChunkStore(client=client, embedder="fake", dimension=8).get_chunks("docs")


def _crash_on(store: QdrantChunkStore, monkeypatch: pytest.MonkeyPatch, action: str) -> None:
    real = store._conn.call

    def call(act: str, method: str, *args: Any, **kwargs: Any) -> Any:
        if act == action:
            raise StoreError(f"qdrant failed to {act}: killed")
        return real(act, method, *args, **kwargs)

    monkeypatch.setattr(store._conn, "call", call)


@pytest.mark.parametrize(("crash", "outcome"), [("write chunks", "undone"), ("publish chunks", "finished")])
def test_an_interrupted_re_add_keeps_the_old_version_until_repaired(
    store: QdrantChunkStore, monkeypatch: pytest.MonkeyPatch, crash: str, outcome: str
) -> None:
    store.put_document(*document("docs", "guide", ["old text one", "old text two"]))
    store.settle("docs", "guide")
    _crash_on(store, monkeypatch, crash)
    with pytest.raises(StoreError):
        store.put_document(*document("docs", "guide", ["new text"]))
    monkeypatch.undo()
    # readers still see the old version, whole, and never a chunk of the failed write
    assert [c.text for c in store.get_chunks("docs").values()] == ["old text one", "old text two"]
    assert [d.chunks for d in store.list_documents("docs")] == [2]
    assert [(p.document_id, p.op.value) for p in store.unsettled()] == [("guide", "index")]
    assert store.repair("docs", "guide") == outcome
    expected = ["new text"] if outcome == "finished" else ["old text one", "old text two"]
    assert [c.text for c in store.get_chunks("docs").values()] == expected
    assert store.residue("docs", "guide")["chunks"] == len(expected)
    assert store.repair("docs", "guide") == "none"


def test_an_interrupted_first_add_leaves_no_document(
    store: QdrantChunkStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _crash_on(store, monkeypatch, "write chunks")
    with pytest.raises(StoreError):
        store.put_document(*document("docs", "guide", ["never whole"]))
    monkeypatch.undo()
    assert not store.has_document("docs", "guide") and store.list_documents("docs") == []
    assert store.repair("docs", "guide") == "undone"
    assert all(v == 0 for v in store.residue("docs").values())
