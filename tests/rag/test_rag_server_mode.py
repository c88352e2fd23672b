"""RAGPipeline in server mode (QDRANT_URL set): documents and chunks in Qdrant, no data directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from hello_memory import MemoryManager, Settings
from hello_memory.errors import NotFoundError
from rag import RAGPipeline

GUIDE = (Path(__file__).resolve().parents[1] / "data" / "guide_en.md").read_text(encoding="utf-8")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        home=tmp_path / "never", qdrant_url=":memory:", embedder="tfidf", chunk_tokens=60, overlap_tokens=10
    )


def test_rag_pipeline_runs_with_no_data_directory(settings: Settings, tmp_path: Path) -> None:
    with RAGPipeline(settings, namespace="kb") as rag:
        report = rag.add_text(GUIDE, document_id="guide")
        assert report.chunks > 1 and rag.bundle.home is None
        hits = rag.search("password reset email").hits
        assert hits and hits[0].document_id == "guide" and "password reset" in hits[0].text
        answer = rag.ask("How is the password reset link sent?")
        assert answer.grounded and "email within five minutes" in answer.answer
        stats = rag.stats()
        assert (stats.documents, stats.chunks) == (1, report.chunks)
        assert rag.add_text(GUIDE, document_id="guide").replaced  # re-adding replaces, nothing doubles
        assert rag.stats().chunks == report.chunks
        assert rag.delete_document("guide") == report.chunks
        assert rag.list_documents() == [] and rag.search("password reset").hits == []
        with pytest.raises(NotFoundError):
            rag.delete_document("guide")
    assert not (tmp_path / "never").exists()


def test_namespaces_and_the_memory_manager_share_one_qdrant(settings: Settings) -> None:
    with (
        MemoryManager(settings, user_id="alice") as mm,
        RAGPipeline(settings, namespace="kb") as kb,
        RAGPipeline(settings, namespace="other") as other,
    ):
        assert kb.bundle is mm.bundle is other.bundle  # one set of server connections
        kb.add_text(GUIDE, document_id="guide")
        other.add_text("Lyon is a city in France.", document_id="lyon")
        mm.add("Alice lives in Paris", memory_type="semantic")
        assert [d.document_id for d in kb.list_documents()] == ["guide"]
        assert {h.document_id for h in other.search("password reset").hits} <= {"lyon"}
        assert kb.clear() > 0 and [d.document_id for d in other.list_documents()] == ["lyon"]
        assert [m.content for m in mm.get_all()] == ["Alice lives in Paris"]


def test_a_write_killed_before_publishing_is_finished_by_the_next_pipeline(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def killed(*args: object, **kwargs: object) -> None:
        raise SystemExit("killed after writing the chunks, before publishing them")

    with RAGPipeline(settings, namespace="kb") as rag:
        rag.add_text("First version of the guide.", document_id="guide")
        chunks = rag.store
        with monkeypatch.context() as patch:
            patch.setattr(chunks, "_commit", killed)
            with pytest.raises(SystemExit):
                rag.add_text(GUIDE, document_id="guide")
        assert [c.text for c in rag.store.get_chunks("kb").values()] == ["First version of the guide."]
        rag.bundle.extras.clear()  # a fresh worker on the same Qdrant: recovery runs when it opens
        with RAGPipeline(settings, namespace="kb") as again:
            (doc,) = again.list_documents()
            texts = [c.text for c in again.store.get_chunks("kb").values()]
            assert doc.chunks == len(texts) > 1 and "First version of the guide." not in texts
            assert again.store.unsettled() == []
