"""Tool boundaries: the folders a model may name, what a failure tells it, and strict booleans."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from hello_memory.core import items
from hello_memory.errors import NotFoundError, StoreError
from tools.memory_tool import MemoryTool
from tools.rag_tool import RAGTool


@pytest.fixture
def work(tmp_path, monkeypatch) -> Path:
    """The working directory (with a docs/ folder in it); a secret lives outside it."""
    folder = tmp_path / "work"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "x.txt").write_text("The quartz gate opens at dawn.", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("password=hunter2", encoding="utf-8")
    monkeypatch.chdir(folder)
    return folder


# -- RAGTool ----------------------------------------------------------------------------------------
def test_rag_tool_without_roots_reads_only_the_working_directory(work, settings, fake_embedder):
    """Before: ``allowed_roots=None`` let a model index any readable file on the machine."""
    with RAGTool(namespace="kb", settings=settings, embedder=fake_embedder) as tool:
        assert f"working directory ({work})" in tool.description and "only files inside" in tool.description
        outside = tool.execute("add_document", file_path=str(work.parent / "secret.txt"))
        assert not outside.ok and outside.code == "invalid_arguments" and "outside the allowed folders" in outside.error
        assert tool.execute("add_document", file_path="docs/x.txt").ok
        assert tool.pipeline.stats().documents == 1


@pytest.mark.parametrize("path", ["./docs/x.txt", "docs/x.txt", "x.txt", "{work}/docs/x.txt"])
def test_rag_tool_paths_are_relative_to_the_working_directory_or_the_root(work, settings, fake_embedder, path):
    """Before: ``./docs/x.txt`` became ``docs/docs/x.txt`` (relative to the first allowed root)."""
    with RAGTool(namespace="kb", settings=settings, embedder=fake_embedder, allowed_roots=["docs"]) as tool:
        r = tool.execute("add_document", file_path=path.format(work=work))
        assert r.ok, r.error
        assert r.data.report.source_path == str(work / "docs" / "x.txt")
        assert "relative to the working directory" in tool.description and str(work / "docs") in tool.description


def test_rag_tool_with_no_roots_reads_nothing(work, settings, fake_embedder):
    with RAGTool(namespace="kb", settings=settings, embedder=fake_embedder, allowed_roots=[]) as tool:
        assert "disabled" in tool.description
        assert not tool.execute("add_document", file_path="docs/x.txt").ok


# -- MemoryTool -------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["file_path", "metadata.file_path", "metadata.source_path"])
def test_memory_tool_checks_file_paths_before_touching_the_file(work, settings, fake_embedder, monkeypatch, where):
    """Before: any regular file up to 512 MB was SHA-256-hashed: an existence/hash oracle and a DoS."""
    hashed: list[Path] = []
    real_hash = items.media_hash
    monkeypatch.setattr(items, "media_hash", lambda p: hashed.append(p) or real_hash(p))
    (work / "photo.jpg").write_bytes(b"\xff\xd8\xff not really a jpeg")

    def add(path: str):
        key = where.split(".")[-1]
        extra = {"file_path": path} if where == "file_path" else {"metadata": {key: path}}
        return tool.execute("add", content="a photo of the quartz gate", memory_type="perceptual", **extra)

    with MemoryTool(user_id="u", settings=settings, embedder=fake_embedder,
                    memory_types=["perceptual"]) as tool:
        assert "working directory" in tool.description
        secret, missing = add(str(work.parent / "secret.txt")), add(str(work.parent / "missing.txt"))
        assert not secret.ok and secret.code == "invalid_arguments" and hashed == []
        assert secret.error.replace("secret", "missing") == missing.error  # no existence oracle
        inside = add("photo.jpg")
        assert inside.ok, inside.error
        assert hashed == [work / "photo.jpg"]
        assert tool.manager.get(inside.data.memory.id).media_hash is not None


# -- failures ---------------------------------------------------------------------------------------
def test_a_store_failure_tells_the_model_what_failed_but_not_the_backend_text(memory_tool, monkeypatch, caplog):
    def broken(*a, **k):
        try:
            raise sqlite3.OperationalError("database disk image is malformed at page 4711 /srv/private/x.db")
        except sqlite3.OperationalError as e:
            raise StoreError(f"SQLite query failed: {e}") from e

    monkeypatch.setattr(memory_tool.manager, "stats", broken)
    with caplog.at_level(logging.INFO, logger="tools.failures"):
        r = memory_tool.execute("stats")
    assert not r.ok and r.code == "store_error" and r.error_type == "StoreError"
    assert r.error == "SQLite query failed: (details in the server log)"
    assert "/srv/private" not in r.text() and "/srv/private" in caplog.text


def test_error_messages_are_bounded(memory_tool, monkeypatch):
    monkeypatch.setattr(memory_tool.manager, "remove",
                        lambda *a, **k: (_ for _ in ()).throw(NotFoundError("no memory " + "x" * 10_000)))
    r = memory_tool.execute("remove", memory_id="0" * 36)
    assert r.code == "not_found" and len(r.error) <= 500 and r.error.endswith("…")


# -- strict booleans --------------------------------------------------------------------------------
@pytest.mark.parametrize(("tool", "args"), [
    ("memory", {"action": "forget", "purge": "false"}),
    ("memory", {"action": "clear_all", "confirm": "true"}),
    ("memory", {"action": "clear_all", "confirm": 1}),
    ("rag", {"action": "ask", "question": "gate?", "enable_mqe": "false"}),
    ("rag", {"action": "clear", "confirm": "yes"}),
])
def test_string_booleans_are_refused_and_nothing_happens(registry, memory_tool, call, tool, args):
    """Already refused by the strict argument models (``purge`` is not even a tool argument): pinned."""
    kept = call(registry, "memory", {"action": "add", "content": "keep me", "memory_type": "semantic"})
    r = call(registry, tool, args)
    assert not r.ok and r.error_type == "invalid_arguments", r.text()
    assert memory_tool.manager.get(kept.data.memory.id).content == "keep me"


def test_the_mcp_registry_gives_both_tools_the_same_folders(work, settings):
    from tools import mcp_server

    registry = mcp_server.build_registry(settings.model_copy(update={"embedder": "tfidf"}), allowed_roots=["docs"])
    try:
        assert registry.get("memory").files.roots == registry.get("rag").files.roots == [work / "docs"]
    finally:
        registry.close()
