"""The chunk-store contract on the embedded store (rag.db + passages in the Qdrant Edge vector index)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hello_memory.errors import InvalidInputError, StoreError
from hello_memory.stores.chunks.base import ChunkStore
from hello_memory.stores.chunks.passage_index import COLLECTION
from hello_memory.stores.chunks.sqlite import SQLiteChunkStore
from hello_memory.stores.vectors.edge import QdrantEdgeVectorStore
from hello_memory.stores.vectors.memory import InMemoryVectorStore
from hello_memory.testing.chunk_store import ChunkStoreContract, FakePassages, Killed, document


class TestSQLiteChunkStore(ChunkStoreContract):
    persistent = True

    @pytest.fixture
    def chunk_stores(self, fast_path: Path) -> Iterator[Any]:
        self.path = fast_path / "rag.db"
        self.vectors = QdrantEdgeVectorStore(fast_path / "vectors")
        opened: list[SQLiteChunkStore] = []

        def make() -> SQLiteChunkStore:
            opened.append(SQLiteChunkStore(self.path, vectors=self.vectors, passages=FakePassages()))
            return opened[-1]

        yield make
        for s in opened:
            s.close()
        self.vectors.close()

    def reopen(self, store: ChunkStore) -> ChunkStore:
        store.close()
        self.vectors.close()
        self.vectors = QdrantEdgeVectorStore(self.path.parent / "vectors")
        return SQLiteChunkStore(self.path, vectors=self.vectors, passages=FakePassages())

    def break_writes(self, store: ChunkStore, monkeypatch: pytest.MonkeyPatch) -> None:
        assert isinstance(store, SQLiteChunkStore)
        real = store._write_passages

        def half(points: Any) -> None:  # half of the passages land, then the vector store fails
            real(points[: len(points) // 2])
            raise StoreError("vector store unavailable (injected)")

        monkeypatch.setattr(store, "_write_passages", half)

    def kill_writes(self, store: ChunkStore, monkeypatch: pytest.MonkeyPatch) -> None:
        def die(*args: Any) -> None:  # rows swapped, the old version's passages not deleted yet
            raise Killed

        monkeypatch.setattr(store, "_settle", die)


def test_recovery_embeds_only_the_passages_a_killed_write_lost(tmp_path: Path) -> None:
    vectors, passages = InMemoryVectorStore(), FakePassages()
    store = SQLiteChunkStore(tmp_path / "rag.db", vectors=vectors, passages=passages)
    doc, chunks = document("docs", "guide", ["one", "two", "three"])
    store.put_document(doc, chunks)
    lost = sorted(vectors.ids(COLLECTION))[:2]
    vectors.delete(COLLECTION, lost)  # an earlier write order: rows first, killed writing the vectors
    with store.transaction() as conn:
        conn.execute("INSERT INTO pending VALUES ('docs', 'guide', 'index')")
    assert store.recover() == 1 and store.unsettled() == []
    assert len(passages.embedded) == 2 and set(lost) <= set(vectors.ids(COLLECTION))
    assert len(vectors.ids(COLLECTION)) == 3
    ChunkStoreContract.assert_whole(store, "docs", "guide", ["one", "two", "three"])


def test_a_store_without_a_vector_index_keeps_no_passages(tmp_path: Path) -> None:
    store = SQLiteChunkStore(":memory:")
    doc, chunks = document("docs", "guide", ["text"])
    with pytest.raises(InvalidInputError):
        store.put_document(doc, chunks)
    with pytest.raises(InvalidInputError):
        SQLiteChunkStore(":memory:", vectors=InMemoryVectorStore())
    assert store.residue("docs") == {"documents": 0, "chunks": 0, "pending": 0, "lexical": 0, "passages": 0}
