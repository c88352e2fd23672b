"""The record-store contract on a real Qdrant server: every store object has its own client (a worker)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from hello_memory.stores.records.base import RecordStore, RecordWrite
from hello_memory.stores.records.qdrant import QdrantRecordStore
from hello_memory.testing.record_store import ALICE, RecordStoreContract, memory

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("docker_engine"), pytest.mark.timeout(900)]
DIM = 8


class TestQdrantRecordStoreOnServer(RecordStoreContract):
    persistent = True

    @pytest.fixture
    def stores(self, qdrant_url: str, qdrant_prefix: str) -> Iterator[Any]:
        self.url, self.base = qdrant_url, qdrant_prefix
        self.prefix_of: dict[int, str] = {}
        opened: list[QdrantRecordStore] = []

        def make(*, context_window: int = 0, name: str = "main") -> QdrantRecordStore:
            prefix = f"{qdrant_prefix}_{name[:8]}"  # under the fixture's prefix: dropped afterwards
            store = QdrantRecordStore(
                url=qdrant_url, prefix=prefix, embedder="fake", dimension=DIM, context_window=context_window
            )
            self.prefix_of[id(store)] = prefix
            opened.append(store)
            return store

        yield make
        for s in opened:
            s.close()

    def reopen(self, store: RecordStore) -> RecordStore:
        prefix = self.prefix_of[id(store)]
        store.close()
        reopened = QdrantRecordStore(url=self.url, prefix=prefix, embedder="fake", dimension=DIM)
        self.prefix_of[id(reopened)] = prefix
        return reopened

    def stored_rows(self, store: RecordStore, user_id: str) -> int:
        from qdrant_client import QdrantClient

        client = QdrantClient(url=self.url)
        found = 0
        try:
            for coll in client.get_collections().collections:
                if not coll.name.startswith(self.prefix_of[id(store)] + "_"):
                    continue
                offset = None
                while True:
                    points, offset = client.scroll(coll.name, limit=1024, offset=offset, with_payload=True)
                    found += sum(user_id in json.dumps(p.payload, ensure_ascii=False) for p in points)
                    if offset is None:
                        break
        finally:
            client.close()
        return found


def test_server_record_collections_get_payload_indexes(qdrant_url: str, qdrant_prefix: str) -> None:
    from qdrant_client import QdrantClient

    with QdrantRecordStore(url=qdrant_url, prefix=qdrant_prefix, embedder="fake", dimension=DIM) as store:
        store.apply([RecordWrite(memory("indexed"))])
        assert store.ids(ALICE)
    client = QdrantClient(url=qdrant_url)
    try:
        schema = client.get_collection(f"{qdrant_prefix}_records").payload_schema
        for key in (
            "user_id",
            "memory_type",
            "session_id",
            "created_ts",
            "deleted_ts",
            "pending",
            "fact_keys",
        ):
            assert key in schema, key
        history = client.get_collection(f"{qdrant_prefix}_record_history").payload_schema
        assert {"user_id", "memory_id"} <= set(history)
    finally:
        client.close()
