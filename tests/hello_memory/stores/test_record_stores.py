"""The record-store contract on SQLite and on qdrant-client's local mode (in memory and on disk)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from hello_memory.stores.records.base import RecordStore
from hello_memory.stores.records.qdrant import QdrantRecordStore
from hello_memory.stores.records.sqlite import SQLiteRecordStore
from hello_memory.stores.records.sqlite_lexical import scope_token
from hello_memory.testing.record_store import RecordStoreContract
from hello_memory.testing.residue import scan_qdrant

DIM = 8


class TestSQLiteRecordStore(RecordStoreContract):
    persistent = True

    @pytest.fixture
    def stores(self, tmp_path: Path) -> Iterator[Any]:
        opened: list[SQLiteRecordStore] = []

        def make(*, context_window: int = 0, name: str = "main") -> SQLiteRecordStore:
            opened.append(SQLiteRecordStore(tmp_path / f"{name}.db", context_window=context_window))
            return opened[-1]

        yield make
        for s in opened:
            s.close()

    def reopen(self, store: RecordStore) -> RecordStore:
        assert isinstance(store, SQLiteRecordStore)
        store.close()
        return SQLiteRecordStore(store.path, context_window=store.context_window)

    def stored_rows(self, store: RecordStore, user_id: str) -> int:
        assert isinstance(store, SQLiteRecordStore)
        needles = (user_id, scope_token(user_id))
        tables = [r[0] for r in store.query("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = 0
        for table in tables:
            for row in store.query(f'SELECT * FROM "{table}"'):
                rows += any(isinstance(v, str) and any(n in v for n in needles) for v in row)
        return rows


class QdrantLocalContract(RecordStoreContract):
    """The contract on qdrant-client's local mode; subclasses say where the data lives."""

    def client(self, name: str) -> QdrantClient:
        raise NotImplementedError

    @pytest.fixture
    def stores(self) -> Iterator[Any]:
        self.clients: dict[str, QdrantClient] = {}
        opened: list[QdrantRecordStore] = []

        def make(*, context_window: int = 0, name: str = "main") -> QdrantRecordStore:
            if name not in self.clients:
                self.clients[name] = self.client(name)
            store = QdrantRecordStore(
                client=self.clients[name], embedder="fake", dimension=DIM, context_window=context_window
            )
            opened.append(store)
            self.names = getattr(self, "names", {})
            self.names[id(store)] = name
            return store

        yield make
        for s in opened:
            s.close()
        for c in self.clients.values():
            c.close()

    def stored_rows(self, store: RecordStore, user_id: str) -> int:
        return scan_qdrant(self.clients[self.names[id(store)]], user_id)


class TestQdrantRecordStoreInMemory(QdrantLocalContract):
    def client(self, name: str) -> QdrantClient:
        return QdrantClient(":memory:", force_disable_check_same_thread=True)


class TestQdrantRecordStoreOnDisk(QdrantLocalContract):
    persistent = True

    @pytest.fixture(autouse=True)
    def _root(self, fast_path: Path) -> None:
        self.root = fast_path

    def client(self, name: str) -> QdrantClient:
        return QdrantClient(path=str(self.root / name), force_disable_check_same_thread=True)

    def reopen(self, store: RecordStore) -> RecordStore:
        name = self.names[id(store)]
        store.close()
        self.clients.pop(name).close()
        self.clients[name] = self.client(name)
        reopened = QdrantRecordStore(client=self.clients[name], embedder="fake", dimension=DIM)
        self.names[id(reopened)] = name
        return reopened
