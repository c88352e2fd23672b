"""RAG pipeline: MarkItDown conversion → heading-aware chunks → embeddings → Qdrant, MQE/HyDE, answers."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "RAGPipeline": "rag.pipeline",
    "AsyncRAGPipeline": "rag.pipeline_async",
    "Answer": "rag.models",
    "ChunkHit": "rag.models",
    "Citation": "rag.models",
    "DocumentInfo": "rag.models",
    "Expansion": "rag.models",
    "IngestReport": "rag.models",
    "RAGStats": "rag.models",
    "SearchResult": "rag.models",
    "record_qa": "rag.writeback",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from rag.models import (
        Answer,
        ChunkHit,
        Citation,
        DocumentInfo,
        Expansion,
        IngestReport,
        RAGStats,
        SearchResult,
    )
    from rag.pipeline import RAGPipeline
    from rag.pipeline_async import AsyncRAGPipeline
    from rag.writeback import record_qa


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rag' has no attribute {name!r}")
    return getattr(import_module(module), name)
