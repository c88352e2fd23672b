"""Fixtures for the tool tests: a MemoryTool and a RAGTool on one fresh data directory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hello_memory import Settings
from tools.base import ToolResult
from tools.memory_tool import MemoryTool
from tools.rag_tool import RAGTool
from tools.registry import ToolRegistry


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "data")


@pytest.fixture
def docs_dir(tmp_path: Path) -> Path:
    """The only folder the RAG tool may read."""
    d = tmp_path / "docs"
    d.mkdir()
    return d


@pytest.fixture
def memory_tool(settings, fake_embedder) -> Iterator[MemoryTool]:
    tool = MemoryTool(user_id="alice", settings=settings, embedder=fake_embedder)
    yield tool
    tool.close()


@pytest.fixture
def rag_tool(settings, fake_embedder, docs_dir) -> Iterator[RAGTool]:
    tool = RAGTool(namespace="alice_docs", settings=settings, embedder=fake_embedder,
                   allowed_roots=[docs_dir])
    yield tool
    tool.close()


@pytest.fixture
def registry(memory_tool, rag_tool) -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(memory_tool)
    reg.register(rag_tool)
    return reg


def model_call(registry: ToolRegistry, name: str, args: dict[str, Any] | str) -> ToolResult:
    """Execute exactly as a model would: a JSON string in, and the text must render."""
    raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    result = registry.execute(name, raw)
    assert isinstance(result, ToolResult)
    assert result.text()
    json.dumps(result.model_dump(mode="json"), ensure_ascii=False)  # structured data is JSON-safe
    if not result.ok:
        assert result.error and result.text().startswith("Error (")
    return result


@pytest.fixture
def call():
    """``call(registry, name, args)``: see :func:`model_call`."""
    return model_call
