"""Contract tests every :class:`~hello_memory.stores.chunks.base.ChunkStore` backend must pass.

Subclass :class:`ChunkStoreContract` and supply a ``chunk_stores`` fixture: a factory returning a
new store object on the same, initially empty data each time it is called (two calls = two
workers). Persistent backends set ``persistent = True`` and override :meth:`ChunkStoreContract.reopen`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

import pytest

from hello_memory.language.text import lexical_tokens
from hello_memory.stores.chunks.base import ChunkRecord, ChunkStore, DocumentRecord
from hello_memory.stores.records.base import PendingOp

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
_IDS = uuid.UUID("3c2f0a61-7e4b-4d1c-8f9a-0b5e6d7c8a91")


def chunk_uuid(namespace: str, document_id: str, index: int) -> str:
    """A deterministic chunk id (as ``rag`` derives them)."""
    return str(uuid.uuid5(_IDS, f"{namespace}/{document_id}/{index}"))


def document(
    namespace: str, document_id: str, texts: Sequence[str], *, minutes: int = 0, **meta: Any
) -> tuple[DocumentRecord, list[ChunkRecord]]:
    """A document whose chunks are ``texts`` (heading ``Guide``), added ``minutes`` after ``T0``."""
    chunks, offset = [], 0
    for i, text in enumerate(texts):
        chunks.append(
            ChunkRecord(
                chunk_uuid(namespace, document_id, i),
                namespace,
                document_id,
                i,
                text,
                offset,
                offset + len(text),
                "Guide",
                "en",
                len(text.split()),
                lexical=f"Guide\n{text}",
            )
        )
        offset += len(text) + 1
    tokens = sum(c.tokens for c in chunks)
    added = T0 + timedelta(minutes=minutes)
    doc = DocumentRecord(
        namespace,
        document_id,
        f"/docs/{document_id}.md",
        document_id.title(),
        "md",
        len(chunks),
        tokens,
        added,
        dict(meta),
    )
    return doc, chunks


class ChunkStoreContract:
    """The behaviour every chunk store shares; subclasses provide the ``chunk_stores`` fixture."""

    persistent: ClassVar[bool] = False

    def reopen(self, store: ChunkStore) -> ChunkStore:
        """Close ``store`` and open its data again (persistent backends override this)."""
        raise NotImplementedError

    @pytest.fixture
    def chunk_store(self, chunk_stores: Callable[[], ChunkStore]) -> ChunkStore:
        """One store on fresh data."""
        return chunk_stores()

    @staticmethod
    def search(store: ChunkStore, namespace: str, query: str, limit: int = 10) -> list[str]:
        found = store.lexical_search(namespace, lexical_tokens(query), limit)
        assert all(s > 0 for s in found.values())
        return sorted(found, key=lambda k: -found[k])

    def test_is_a_chunk_store(self, chunk_store: ChunkStore) -> None:
        assert isinstance(chunk_store, ChunkStore)
        assert isinstance(chunk_store.backend, str) and isinstance(chunk_store.keeps_vectors, bool)

    def test_put_and_read_back(self, chunk_store: ChunkStore) -> None:
        doc, chunks = document(
            "docs", "install", ["Install with pip.", "Configure the server.", "安装完成后重启"], owner="ops"
        )
        other, _ = document("docs", "faq", ["Frequently asked."], minutes=1)
        chunk_store.put_document(doc, chunks)
        chunk_store.put_document(other, document("docs", "faq", ["Frequently asked."], minutes=1)[1])
        assert [d.document_id for d in chunk_store.list_documents("docs")] == ["install", "faq"]
        got = chunk_store.list_documents("docs")[0]
        assert (got.title, got.chunks, got.metadata, got.source_path) == (
            "Install",
            3,
            {"owner": "ops"},
            "/docs/install.md",
        )
        assert abs((got.added_at - doc.added_at).total_seconds()) < 1e-3
        stored = chunk_store.get_chunks("docs", document_id="install")
        assert list(stored) == [c.chunk_id for c in chunks]
        for c in chunks:
            s = stored[c.chunk_id]
            assert (s.index, s.text, s.start, s.end, s.heading_path, s.language, s.tokens) == (
                c.index,
                c.text,
                c.start,
                c.end,
                c.heading_path,
                c.language,
                c.tokens,
            )
        assert list(
            chunk_store.get_chunks("docs", [chunks[2].chunk_id, chunks[0].chunk_id, str(uuid.uuid4())])
        ) == [
            chunks[0].chunk_id,
            chunks[2].chunk_id,
        ]
        assert chunk_store.get_chunks("docs", []) == {} and len(chunk_store.get_chunks("docs")) == 4
        assert chunk_store.has_document("docs", "install") and not chunk_store.has_document("docs", "nope")

    def test_re_putting_replaces_the_whole_document(self, chunk_store: ChunkStore) -> None:
        chunk_store.put_document(*document("docs", "guide", ["old one", "old two", "old three"]))
        chunk_store.put_document(*document("docs", "guide", ["new one"]))
        chunk_store.put_document(*document("docs", "guide", ["new one"]))  # idempotent
        assert [c.text for c in chunk_store.get_chunks("docs").values()] == ["new one"]
        assert [d.chunks for d in chunk_store.list_documents("docs")] == [1]
        assert self.search(chunk_store, "docs", "old") == []
        assert len(self.search(chunk_store, "docs", "new")) == 1

    def test_namespaces_are_isolated(self, chunk_store: ChunkStore) -> None:
        chunk_store.put_document(*document("a", "guide", ["shared words here"]))
        chunk_store.put_document(*document("b", "guide", ["shared words there"]))
        assert len(self.search(chunk_store, "a", "shared")) == 1
        assert [c.text for c in chunk_store.get_chunks("b").values()] == ["shared words there"]
        assert chunk_store.get_chunks("a", [chunk_uuid("b", "guide", 0)]) == {}
        chunk_store.remove_document("a", "guide")
        assert chunk_store.has_document("b", "guide") and not chunk_store.has_document("a", "guide")
        assert len(self.search(chunk_store, "b", "shared")) == 1

    def test_lexical_ranking(self, chunk_store: ChunkStore) -> None:
        texts = [
            "Install the agent with pip",
            "Rotate the API keys monthly",
            "Back up the database nightly",
            "每天夜里备份数据库",
            "定期轮换接口密钥",
            "Set the log level to debug",
        ]
        doc, chunks = document("docs", "ops", texts)
        chunk_store.put_document(doc, chunks)
        assert self.search(chunk_store, "docs", "how do I rotate keys?")[0] == chunks[1].chunk_id
        assert self.search(chunk_store, "docs", "database backup")[0] == chunks[2].chunk_id
        assert self.search(chunk_store, "docs", "备份数据库")[0] == chunks[3].chunk_id
        assert self.search(chunk_store, "docs", "Guide") != []  # the heading is indexed too
        assert len(self.search(chunk_store, "docs", "the agent keys database", limit=2)) == 2
        assert (
            chunk_store.lexical_search("docs", [], 5) == {}
            and self.search(chunk_store, "other", "keys") == []
        )

    def test_pending_markers(self, chunk_store: ChunkStore) -> None:
        chunk_store.put_document(*document("docs", "guide", ["text"]))
        assert [(p.namespace, p.document_id, p.op) for p in chunk_store.unsettled()] == [
            ("docs", "guide", PendingOp.INDEX)
        ]
        chunk_store.settle("docs", "guide")
        assert chunk_store.unsettled() == []
        chunk_store.mark("docs", "guide", PendingOp.UNINDEX)
        assert [p.op for p in chunk_store.unsettled()] == [PendingOp.UNINDEX]
        chunk_store.remove_document("docs", "guide")
        assert chunk_store.unsettled() == []

    def test_remove_leaves_zero_residue(self, chunk_store: ChunkStore) -> None:
        chunk_store.put_document(*document("docs", "gone", ["secret tulip", "more secret"]))
        chunk_store.put_document(*document("docs", "kept", ["public text"]))
        assert chunk_store.remove_document("docs", "gone") == 2
        assert all(v == 0 for v in chunk_store.residue("docs", "gone").values())
        assert self.search(chunk_store, "docs", "tulip") == []
        assert chunk_store.remove_document("docs", "gone") == 0
        chunk_store.remove_document("docs", "kept")
        assert all(v == 0 for v in chunk_store.residue("docs").values())
        chunk_store.scrub()

    def test_two_store_objects_see_each_others_writes(self, chunk_stores: Callable[[], ChunkStore]) -> None:
        one, two = chunk_stores(), chunk_stores()
        one.put_document(*document("docs", "guide", ["written by one"]))
        assert two.has_document("docs", "guide") and len(self.search(two, "docs", "written")) == 1
        two.remove_document("docs", "guide")
        assert not one.has_document("docs", "guide") and one.get_chunks("docs") == {}

    def test_data_survives_close_and_reopen(self, chunk_store: ChunkStore) -> None:
        if not self.persistent:
            pytest.skip("backend is not persistent")
        doc, chunks = document("docs", "guide", ["persisted chunk"])
        chunk_store.put_document(doc, chunks)
        reopened = self.reopen(chunk_store)
        try:
            assert reopened.has_document("docs", "guide")
            assert list(reopened.get_chunks("docs")) == [chunks[0].chunk_id]
            assert [p.document_id for p in reopened.unsettled()] == ["guide"]
            assert len(self.search(reopened, "docs", "persisted")) == 1
        finally:
            reopened.close()

    def test_close_is_idempotent(self, chunk_store: ChunkStore) -> None:
        chunk_store.close()
        chunk_store.close()
