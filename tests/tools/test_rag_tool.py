"""RAGTool driven through the registry as a model would, plus path and namespace safety."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.rag_tool import RAGTool

GUIDE = """# Hello Memory Guide

## Install

Run pip install hello-memory to install the package.

## 记忆类型

工作记忆保存当前会话的上下文，情景记忆保存事件，语义记忆保存事实。
"""


def chunks(tool: RAGTool) -> int:
    return tool.pipeline.stats().chunks


def test_add_document_search_ask_list_delete(registry, rag_tool, docs_dir, call):
    (docs_dir / "guide.md").write_text(GUIDE, encoding="utf-8")
    r = call(registry, "rag", {"action": "add_document", "file_path": str(docs_dir / "guide.md"),
                               "chunk_size": 64, "chunk_overlap": 8})
    assert r.ok and r.data.report.chunks >= 2 and r.data.report.format == "markdown"
    doc_id = r.data.report.document_id
    assert len(doc_id) == 36 and f'"{doc_id}"' in r.text() and '"alice_docs"' in r.text()  # quoted

    s = call(registry, "rag", '{"action": "search", "query": "how to install", "limit": 3}')
    assert s.ok and s.data.result.hits
    top = s.data.result.hits[0]
    assert "pip install hello-memory" in top.text and top.heading_path.endswith("Install")
    assert len(top.chunk_id) == 36 and top.chunk_id in s.text() and "[1] score" in s.text()

    a = call(registry, "rag", {"action": "ask", "question": "情景记忆保存什么？", "limit": 3})
    assert a.ok and a.data.answer.mode == "extractive" and a.data.answer.citations
    assert "Sources:" in a.text() and "[1]" in a.text() and "记忆类型" in a.text()

    docs = call(registry, "rag", {"action": "list_documents"})
    assert [d.document_id for d in docs.data.documents] == [doc_id]
    assert "Hello Memory Guide" in docs.text()

    st = call(registry, "rag", {"action": "stats"})
    assert st.data.stats.documents == 1 and st.data.stats.namespace == "alice_docs"

    d = call(registry, "rag", {"action": "delete_document", "document_id": doc_id})
    assert d.ok and d.data.chunks == r.data.report.chunks and chunks(rag_tool) == 0
    missing = call(registry, "rag", {"action": "delete_document", "document_id": doc_id})
    assert not missing.ok and missing.error_type == "NotFoundError"


def test_add_text_with_aliases_and_relative_path(registry, rag_tool, docs_dir, call):
    r = call(registry, "rag", {"action": "add_text", "text": "Qdrant stores vectors. Neo4j stores graphs.",
                               "document_id": "note-1", "source": "notes", "chunk_tokens": 32,
                               "overlap_tokens": 4})
    assert r.ok and r.data.report.document_id == "note-1" and not r.data.report.replaced
    again = call(registry, "rag", {"action": "add_text", "text": "Qdrant stores vectors.", "document_id": "note-1"})
    assert again.data.report.replaced and "replaced" in again.text()
    (docs_dir / "sub").mkdir()
    (docs_dir / "sub" / "a.txt").write_text("relative paths resolve inside the first root", encoding="utf-8")
    rel = call(registry, "rag", {"action": "add_document", "file_path": "sub/a.txt"})
    assert rel.ok and rel.data.report.source_path == str((docs_dir / "sub" / "a.txt").resolve())


def test_ask_without_relevant_documents_is_not_grounded(registry, call):
    a = call(registry, "rag", {"action": "ask", "question": "What is the capital of Mars?"})
    assert a.ok and not a.data.answer.grounded and "nothing relevant" in a.text()


def test_paths_outside_allowed_roots_are_refused(registry, rag_tool, docs_dir, tmp_path, call):
    secret = tmp_path / "secret.md"
    secret.write_text("# secret\n\npassword=hunter2\n", encoding="utf-8")
    os.symlink(secret, docs_dir / "link.md")
    (docs_dir / "escape").symlink_to(tmp_path, target_is_directory=True)
    for path in (str(secret), "../secret.md", str(docs_dir / "link.md"), "escape/secret.md", "/etc/passwd",
                 "~/.bashrc", "bad\u0000path.md"):
        r = call(registry, "rag", {"action": "add_document", "file_path": path})
        assert not r.ok, path
        assert "outside the allowed folders" in r.error or "not a usable path" in r.error, r.error
    assert chunks(rag_tool) == 0 and rag_tool.pipeline.list_documents() == []


def test_bad_rag_arguments_are_error_results(registry, rag_tool, docs_dir, call):
    call(registry, "rag", {"action": "add_text", "text": "existing knowledge", "document_id": "keep"})
    before = rag_tool.pipeline.stats()
    (docs_dir / "data.bin").write_bytes(b"\x00\x01\x02")
    (docs_dir / "empty.md").write_text("", encoding="utf-8")
    cases = [
        ('{"action": "search", "query": "x", "limit": 1000}', "less than or equal to 50"),
        ('{"action": "search", "query": "x", "limit": "3"}', "parameter 'limit'"),
        ('{"action": "ask", "question": "x", "enable_mqe": "yes"}', "parameter 'enable_mqe'"),
        ('{"action": "add_document", "file_path": "missing.md"}', "cannot convert"),
        ('{"action": "add_document", "file_path": "data.bin"}', "unsupported file extension"),
        ('{"action": "add_document", "file_path": "empty.md"}', "cannot convert"),
        ('{"action": "add_document", "file_path": "x.md", "chunk_size": 1}', "parameter 'chunk_size'"),
        ('{"action": "add_text", "text": "x", "chunk_size": 64, "chunk_overlap": 64}', "overlap"),
        ('{"action": "add_text"}', "missing required parameter 'text'"),
        ('{"action": "clear"}', "confirm=true"),
        ('{"action": "clear", "confirm": 1}', "parameter 'confirm'"),
        ('{"action": "delete_document", "document_id": "nope"}', "no document"),
        ('{"action": "explode"}', "unknown action"),
        ("{'action': 'stats'}", "not valid JSON"),
    ]
    for raw, needle in cases:
        r = call(registry, "rag", raw)
        assert not r.ok and needle in r.error, (raw, r.error)
    assert rag_tool.pipeline.stats() == before


def test_clear_needs_confirm_and_only_touches_its_namespace(registry, rag_tool, settings, fake_embedder, call):
    other = RAGTool(namespace="bob_docs", settings=settings, embedder=fake_embedder)
    try:
        other.execute("add_text", text="bob's knowledge about jazz", document_id="bob")
        call(registry, "rag", {"action": "add_text", "text": "alice's knowledge about tea"})
        r = call(registry, "rag", {"action": "clear", "confirm": True})
        assert r.ok and r.data.chunks == 1 and chunks(rag_tool) == 0
        assert chunks(other) == 1
        hits = call(registry, "rag", {"action": "search", "query": "jazz"})
        assert hits.data.result.hits == []
    finally:
        other.close()


def test_injected_pipeline_and_namespace_mismatch(rag_tool):
    from hello_memory.errors import InvalidInputError

    shared = RAGTool(pipeline=rag_tool.pipeline)
    assert shared.namespace == "alice_docs" and shared.allowed_roots == [Path.cwd().resolve()]  # default
    shared.close()  # does not close the injected pipeline
    assert rag_tool.execute("stats").ok
    with pytest.raises(InvalidInputError):
        RAGTool(namespace="other", pipeline=rag_tool.pipeline)


def test_rag_expanded_functions(rag_tool, call):
    from tools.registry import ToolRegistry

    reg = ToolRegistry(expand_actions=True)
    reg.register(rag_tool)
    functions = {t["function"]["name"]: t["function"] for t in reg.to_openai_tools()}
    assert set(functions) == {f"rag_{a}" for a in ("add_text", "add_document", "search", "ask", "stats",
                                                   "list_documents", "delete_document", "clear")}
    props = functions["rag_add_document"]["parameters"]["properties"]
    assert {"file_path", "chunk_size", "chunk_overlap"} <= set(props)
    assert functions["rag_add_document"]["parameters"]["required"] == ["file_path"]
    assert call(reg, "rag_add_text", {"text": "hello world"}).ok
    assert call(reg, "rag_stats", "").data.stats.documents == 1
