"""Contract tests every :class:`~hello_memory.stores.chunks.base.ChunkStore` backend must pass.

Subclass :class:`ChunkStoreContract` and supply a ``chunk_stores`` fixture: a factory returning a
new store object on the same, initially empty data each time it is called (two calls = two
workers), whose passages are :class:`FakePassages` (``dimension=DIM``). Persistent backends set
``persistent = True`` and override :meth:`ChunkStoreContract.reopen`; backends override
:meth:`ChunkStoreContract.break_writes` and :meth:`ChunkStoreContract.kill_writes` to prove the
write unit's guarantees (a failed re-add keeps the earlier version; a killed one is recovered).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pytest

from hello_memory.errors import StoreError
from hello_memory.language.text import lexical_tokens
from hello_memory.stores.chunks.base import ChunkRecord, ChunkStore, DocumentRecord, PassageEncoder
from hello_memory.testing.fake_embedder import fake_vector

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
DIM = 4
_IDS = uuid.UUID("3c2f0a61-7e4b-4d1c-8f9a-0b5e6d7c8a91")


class Killed(BaseException):
    """The process dies here (not an Exception: nothing may catch it)."""


@dataclass
class FakePassages:
    """A :class:`~hello_memory.stores.chunks.base.PassageEncoder`: one passage per chunk, its text's
    :func:`~hello_memory.testing.fake_embedder.fake_vector` (what :func:`document` writes)."""

    name: str = "fake"
    dimension: int = DIM
    embedded: list[str] = field(default_factory=list)  # every text embedded, in order

    def texts(self, chunk: ChunkRecord) -> list[str]:
        """The chunk's text, as one passage."""
        return [chunk.text]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Fake vectors of ``texts`` (recorded in :attr:`embedded`)."""
        self.embedded += texts
        return np.vstack([fake_vector(t, self.dimension) for t in texts])


def chunk_uuid(namespace: str, document_id: str, index: int, text: str) -> str:
    """A deterministic chunk id that names the chunk's content, as ``rag`` derives them.

    Stores may rely on it: a chunk id of the new version that the old version has too holds the
    same text and passages (the embedded store writes the new passages beside the old ones).
    """
    return str(uuid.uuid5(_IDS, f"{namespace}/{document_id}/{index}/{text}"))


def document(
    namespace: str, document_id: str, texts: Sequence[str], *, minutes: int = 0, **meta: Any
) -> tuple[DocumentRecord, list[ChunkRecord]]:
    """A document whose chunks are ``texts`` (heading ``Guide``, one passage each: the text's fake
    vector), added ``minutes`` after ``T0``."""
    chunks, offset = [], 0
    for i, text in enumerate(texts):
        chunks.append(
            ChunkRecord(
                chunk_uuid(namespace, document_id, i, text),
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
                passages=fake_vector(text, DIM)[None, :],
            )
        )
        offset += len(text) + 1
    tokens = sum(c.tokens for c in chunks)
    added = T0 + timedelta(minutes=minutes)
    path = f"/docs/{document_id}.md"
    doc = DocumentRecord(
        namespace, document_id, path, document_id.title(), "md", len(chunks), tokens, added, dict(meta)
    )
    return doc, chunks


class ChunkStoreContract:
    """The behaviour every chunk store shares; subclasses provide the ``chunk_stores`` fixture."""

    persistent: ClassVar[bool] = False

    def reopen(self, store: ChunkStore) -> ChunkStore:
        """Close ``store`` and open its data again (persistent backends override this)."""
        raise NotImplementedError

    def break_writes(self, store: ChunkStore, monkeypatch: pytest.MonkeyPatch) -> None:
        """Make ``store``'s next document write fail midway with an error (after writing something)."""
        pytest.skip("the backend gives no way to break a write midway")

    def kill_writes(self, store: ChunkStore, monkeypatch: pytest.MonkeyPatch) -> None:
        """Make ``store``'s next document write die midway (raise :class:`Killed`)."""
        pytest.skip("the backend gives no way to kill a write midway")

    @pytest.fixture
    def chunk_store(self, chunk_stores: Callable[[], ChunkStore]) -> ChunkStore:
        """One store on fresh data."""
        return chunk_stores()

    @staticmethod
    def search(store: ChunkStore, namespace: str, query: str, limit: int = 10) -> list[str]:
        found = store.lexical_search(namespace, lexical_tokens(query), limit)
        assert all(s > 0 for s in found.values())
        return sorted(found, key=lambda k: -found[k])

    @staticmethod
    def assert_whole(store: ChunkStore, namespace: str, document_id: str, texts: Sequence[str]) -> None:
        """The document is there with exactly these chunks, each found densely by its own passage."""
        assert [c.text for c in store.get_chunks(namespace, document_id=document_id).values()] == list(texts)
        assert [d.chunks for d in store.list_documents(namespace) if d.document_id == document_id] == [
            len(texts)
        ]
        for c in document(namespace, document_id, texts)[1]:
            assert store.dense_scores(namespace, fake_vector(c.text, DIM), [c.chunk_id]) == pytest.approx(
                {c.chunk_id: 1.0}, abs=1e-5
            )

    def test_is_a_chunk_store(self, chunk_store: ChunkStore) -> None:
        assert isinstance(chunk_store, ChunkStore) and isinstance(chunk_store.backend, str)
        assert isinstance(FakePassages(), PassageEncoder)

    def test_put_and_read_back(self, chunk_store: ChunkStore) -> None:
        doc, chunks = document(
            "docs", "install", ["Install with pip.", "Configure the server.", "安装完成后重启"], owner="ops"
        )
        chunk_store.put_document(doc, chunks)
        chunk_store.put_document(*document("docs", "faq", ["Frequently asked."], minutes=1))
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
            fields = (s.index, s.text, s.start, s.end, s.heading_path, s.language, s.tokens)
            assert fields == (c.index, c.text, c.start, c.end, c.heading_path, c.language, c.tokens)
        some = [chunks[2].chunk_id, chunks[0].chunk_id, str(uuid.uuid4())]
        assert list(chunk_store.get_chunks("docs", some)) == [chunks[0].chunk_id, chunks[2].chunk_id]
        assert chunk_store.get_chunks("docs", []) == {} and len(chunk_store.get_chunks("docs")) == 4
        assert chunk_store.has_document("docs", "install") and not chunk_store.has_document("docs", "nope")

    def test_a_write_settles_and_recovery_then_finds_nothing(self, chunk_store: ChunkStore) -> None:
        chunk_store.put_document(*document("docs", "guide", ["text"]))
        assert chunk_store.unsettled() == [] and chunk_store.recover() == 0
        self.assert_whole(chunk_store, "docs", "guide", ["text"])

    def test_re_putting_replaces_the_whole_document(self, chunk_store: ChunkStore) -> None:
        chunk_store.put_document(*document("docs", "guide", ["old one", "old two", "old three"]))
        chunk_store.put_document(*document("docs", "guide", ["new one"]))
        chunk_store.put_document(*document("docs", "guide", ["new one"]))  # idempotent
        self.assert_whole(chunk_store, "docs", "guide", ["new one"])
        assert self.search(chunk_store, "docs", "old") == []
        assert len(self.search(chunk_store, "docs", "new")) == 1
        assert list(chunk_store.dense_search("docs", fake_vector("old two", DIM), 5)) == [
            chunk_uuid("docs", "guide", 0, "new one")
        ]

    def test_namespaces_are_isolated(self, chunk_store: ChunkStore) -> None:
        chunk_store.put_document(*document("a", "guide", ["shared words here"]))
        chunk_store.put_document(*document("b", "guide", ["shared words there"]))
        assert len(self.search(chunk_store, "a", "shared")) == 1
        assert [c.text for c in chunk_store.get_chunks("b").values()] == ["shared words there"]
        assert chunk_store.get_chunks("a", [chunk_uuid("b", "guide", 0, "shared words there")]) == {}
        assert list(chunk_store.dense_search("a", fake_vector("shared words there", DIM), 5)) == [
            chunk_uuid("a", "guide", 0, "shared words here")
        ]
        assert (
            chunk_store.dense_scores(
                "a", fake_vector("x", DIM), [chunk_uuid("b", "guide", 0, "shared words there")]
            )
            == {}
        )
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
        assert chunk_store.lexical_search("docs", [], 5) == {}
        assert self.search(chunk_store, "other", "keys") == []

    def test_a_chunks_dense_score_is_its_best_passage(self, chunk_store: ChunkStore) -> None:
        doc, chunks = document("docs", "guide", ["two topics", "one topic"])
        vectors = [[[1, 0, 0, 0], [0, 1, 0, 0]], [[0.6, 0.8, 0, 0]]]
        chunks = [
            replace(c, passages=np.asarray(v, np.float32)) for c, v in zip(chunks, vectors, strict=True)
        ]
        chunk_store.put_document(doc, chunks)
        scores = chunk_store.dense_search("docs", [0, 1, 0, 0], limit=5)
        assert scores == pytest.approx({chunks[0].chunk_id: 1.0, chunks[1].chunk_id: 0.8}, abs=1e-5)
        assert chunk_store.dense_search("other", [0, 1, 0, 0], limit=5) == {}
        nearest = chunk_store.dense_search("docs", [1, 0, 0, 0], limit=1)  # about 1: at least the best
        assert max(nearest, key=nearest.__getitem__) == chunks[0].chunk_id
        assert chunk_store.dense_scores("docs", [0, 1, 0, 0], [chunks[1].chunk_id]) == pytest.approx(
            {chunks[1].chunk_id: 0.8}, abs=1e-5
        )
        assert chunk_store.dense_scores("docs", [0, 1, 0, 0], []) == {}

    def test_remove_leaves_zero_residue(self, chunk_store: ChunkStore) -> None:
        chunk_store.put_document(*document("docs", "gone", ["secret tulip", "more secret"]))
        chunk_store.put_document(*document("docs", "kept", ["public text"]))
        assert chunk_store.remove_document("docs", "gone") == 2
        assert all(v == 0 for v in chunk_store.residue("docs", "gone").values())
        assert self.search(chunk_store, "docs", "tulip") == [] and chunk_store.unsettled() == []
        assert (
            chunk_store.dense_scores(
                "docs", fake_vector("secret tulip", DIM), [chunk_uuid("docs", "gone", 0, "secret tulip")]
            )
            == {}
        )
        assert chunk_store.remove_document("docs", "gone") == 0
        chunk_store.remove_document("docs", "kept")
        assert all(v == 0 for v in chunk_store.residue("docs").values())
        chunk_store.scrub()

    def test_a_failed_re_add_keeps_the_earlier_version(
        self, chunk_store: ChunkStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        old = ["old text one", "old text two"]
        chunk_store.put_document(*document("docs", "guide", old))
        self.break_writes(chunk_store, monkeypatch)
        with pytest.raises(StoreError, match="earlier version is kept"):
            chunk_store.put_document(*document("docs", "guide", ["new text", "more new text", "and more"]))
        with pytest.raises(StoreError, match="nothing of it was kept"):
            chunk_store.put_document(*document("docs", "other", ["never written"]))
        monkeypatch.undo()
        for _ in range(2):  # what readers see, then after recovery (a marker may be left for it)
            self.assert_whole(chunk_store, "docs", "guide", old)
            assert not chunk_store.has_document("docs", "other")
            assert chunk_store.get_chunks("docs", document_id="other") == {}
            assert self.search(chunk_store, "docs", "new never") == []
            chunk_store.recover()
        assert chunk_store.unsettled() == []

    def test_a_killed_write_is_finished_or_undone_by_recovery(
        self, chunk_stores: Callable[[], ChunkStore], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        one = chunk_stores()
        old, new = ["old text one", "old text two"], ["new text"]
        one.put_document(*document("docs", "guide", old))
        self.kill_writes(one, monkeypatch)
        with pytest.raises(Killed):
            one.put_document(*document("docs", "guide", new))
        monkeypatch.undo()
        assert one.unsettled() != []
        two = chunk_stores()  # the next worker, or the next open
        assert two.recover() >= 1 and two.unsettled() == []
        texts = [c.text for c in two.get_chunks("docs").values()]
        self.assert_whole(two, "docs", "guide", texts)
        assert texts in (old, new)

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
            assert reopened.has_document("docs", "guide") and reopened.unsettled() == []
            self.assert_whole(reopened, "docs", "guide", ["persisted chunk"])
            assert len(self.search(reopened, "docs", "persisted")) == 1
        finally:
            reopened.close()

    def test_close_is_idempotent(self, chunk_store: ChunkStore) -> None:
        chunk_store.close()
        chunk_store.close()
