"""The chunk-store contract on the embedded rag.db (SQLiteChunkRecords)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hello_memory.stores.chunks.base import ChunkStore
from hello_memory.testing.chunk_store import ChunkStoreContract
from rag.chunk_records import SQLiteChunkRecords


class TestSQLiteChunkRecords(ChunkStoreContract):
    persistent = True

    @pytest.fixture
    def chunk_stores(self, tmp_path: Path) -> Iterator[Any]:
        opened: list[SQLiteChunkRecords] = []

        def make() -> SQLiteChunkRecords:
            opened.append(SQLiteChunkRecords(tmp_path / "rag.db"))
            return opened[-1]

        yield make
        for s in opened:
            s.close()

    def reopen(self, store: ChunkStore) -> ChunkStore:
        assert isinstance(store, SQLiteChunkRecords)
        store.close()
        return SQLiteChunkRecords(store.path)
