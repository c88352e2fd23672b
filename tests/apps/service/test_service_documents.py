"""``RemoteRAG`` against a real service gives what ``RAGPipeline`` gives in process: ids, sources, answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hello_memory import Settings
from hello_memory.client.remote import RemoteMemory
from hello_memory.errors import ConversionError, InvalidInputError, NotFoundError
from rag import RAGPipeline
from rag.api import RAGAPI
from rag.remote import RemoteRAG
from tools import MemoryTool, RAGTool

GUIDE = """# Guide

## Install

Run pip install hello-memory to install the package.

## Reset

To reset your password, open Settings and choose Reset.
"""


@pytest.fixture
def guide(docs_dir: Path) -> Path:
    path = docs_dir / "guide.md"
    path.write_text(GUIDE, encoding="utf-8")
    return path


@pytest.fixture(params=["local", "remote"])
def kb(request, tmp_path, service, fresh_user) -> Iterator[RAGAPI]:
    if request.param == "local":
        with RAGPipeline(Settings(home=tmp_path / "local", embedder="tfidf"), namespace=fresh_user) as p:
            yield p
    else:
        with RemoteRAG(service.url, namespace=fresh_user) as r:
            yield r


def test_document_lifecycle(kb, guide):
    assert isinstance(kb, RAGAPI)
    report = kb.add_document(guide, metadata={"lang": "en"})
    assert report.source_path == str(guide.resolve()) and report.format == "markdown" and report.chunks >= 1
    assert kb.add_document(guide).replaced
    docs = kb.list_documents()
    assert [(d.document_id, d.source_path, d.title) for d in docs] == [(report.document_id, str(guide.resolve()),
                                                                         "Guide")]
    hits = kb.search("how do I reset my password", limit=3).hits
    assert hits and "Reset" in hits[0].heading_path and hits[0].source_path == str(guide.resolve())
    answer = kb.ask("How do I reset my password?")
    assert answer.mode == "extractive" and answer.grounded and answer.citations[0].document_id == report.document_id
    text = kb.add_text("# Notes\n\nQdrant Edge runs in process.", document_id="notes", source="notes.md")
    stats = kb.stats()
    assert (stats.namespace, stats.documents) == (kb.namespace, 2) and stats.chunks >= 2
    assert kb.delete_document("notes") == text.chunks
    with pytest.raises(NotFoundError):
        kb.delete_document("notes")
    assert kb.clear() == report.chunks and kb.list_documents() == []


def test_the_same_ids_and_reports_in_process_and_through_the_service(tmp_path, service, fresh_user, guide):
    with RAGPipeline(Settings(home=tmp_path / "local", embedder="tfidf"), namespace=fresh_user) as local, \
            RemoteRAG(service.url, namespace=fresh_user) as remote:
        assert remote.add_document(guide) == local.add_document(guide)
        assert remote.add_text("same text", chunk_tokens=64) == local.add_text("same text", chunk_tokens=64)
        strip = [d.model_dump(exclude={"added_at"}) for d in local.list_documents()]
        assert [d.model_dump(exclude={"added_at"}) for d in remote.list_documents()] == strip
        question = "How do I install it?"
        assert remote.ask(question).model_dump() == local.ask(question).model_dump()


@pytest.mark.parametrize("name", ["missing.md", "empty.md", "folder", "image.xyz"])
def test_bad_files_fail_like_in_process(kb, docs_dir, name):
    (docs_dir / "empty.md").write_bytes(b"")
    (docs_dir / "folder").mkdir(exist_ok=True)
    (docs_dir / "image.xyz").write_bytes(b"\x00\x01")
    with pytest.raises(ConversionError) as err:
        kb.add_document(docs_dir / name)
    assert str(docs_dir / name) in str(err.value)
    assert kb.list_documents() == []


def test_bad_arguments_fail_like_in_process(kb, guide):
    for call in (lambda: kb.add_text(""), lambda: kb.search("x", limit=0), lambda: kb.ask("x", budget_tokens=0),
                 lambda: kb.add_document(guide, chunk_tokens=1)):
        with pytest.raises(InvalidInputError):
            call()
    assert kb.list_documents() == []


def test_the_agent_tools_run_on_the_service(service, fresh_user, guide, docs_dir):
    with RemoteMemory(service.url, user_id=fresh_user) as memory, \
            RemoteRAG(service.url, namespace=fresh_user) as kb:
        mtool = MemoryTool(manager=memory)
        rtool = RAGTool(pipeline=kb, allowed_roots=[docs_dir])
        assert mtool.user_id == fresh_user and rtool.namespace == fresh_user
        assert mtool.execute("add", content="I am learning Rust", memory_type="semantic").ok
        found = mtool.execute("search", query="what am I learning")
        assert found.ok and "Rust" in found.text()
        assert rtool.execute("add_document", file_path="guide.md").ok
        asked = rtool.execute("ask", question="How do I reset my password?")
        assert asked.ok and "guide.md" in asked.text()
        outside = rtool.execute("add_document", file_path="/etc/hostname")
        assert not outside.ok and "outside" in outside.text()
        assert mtool.context_block("Rust").hits


@pytest.mark.parametrize("progress", [5, "print", lambda: None])
def test_a_progress_that_cannot_be_called_is_refused_before_anything_is_indexed(kb, guide, progress):
    with pytest.raises(InvalidInputError, match="progress"):
        kb.add_document(guide, progress=progress)
    assert kb.list_documents() == []


def test_a_document_can_be_recorded_under_another_source(kb, guide):
    """The app's uploads are Gradio's temporary copies: they are recorded under the file's own name,
    in process and through the service alike (before, ``RemoteRAG`` always sent the copy's path)."""
    report = kb.add_document(guide, source_path="guide.md")
    assert report.source_path == "guide.md"
    assert [d.source_path for d in kb.list_documents()] == ["guide.md"]
    answer = kb.ask("How do I reset my password?")
    assert answer.citations and {c.source_path for c in answer.citations} == {"guide.md"}
