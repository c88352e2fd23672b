"""Fixtures for RAG pipeline tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hello_memory import Settings
from hello_memory.embedders.hashing import HashingTfidfEmbedder


@pytest.fixture
def rag_settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "data", chunk_tokens=60, overlap_tokens=10)


@pytest.fixture
def embedder() -> HashingTfidfEmbedder:
    """A real (lexical) embedder that is fast and deterministic, so rankings are meaningful."""
    return HashingTfidfEmbedder(dimension=512)


@pytest.fixture
def pipeline(rag_settings: Settings, embedder: HashingTfidfEmbedder) -> Iterator:
    from rag import RAGPipeline

    p = RAGPipeline(rag_settings, namespace="kb", embedder=embedder)
    yield p
    p.close()
