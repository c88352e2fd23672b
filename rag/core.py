"""The RAG core: what every RAG function below the façade works with, built once per pipeline.

:class:`~rag.pipeline.RAGPipeline` validates, then calls :mod:`rag.indexer` and
:mod:`rag.retrieval` with its :class:`RAGCore`; none of them sees the pipeline, and none knows the
mode: the chunk store (:func:`~hello_memory.stores.chunks.open.open_chunk_store`) is the one place
that differs between a data directory and servers.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from hello_memory.embedders.base import Embedder
from hello_memory.llm.base import LLMClient
from hello_memory.settings import Settings
from hello_memory.stores.chunks.base import ChunkStore
from hello_memory.stores.chunks.open import open_chunk_store
from hello_memory.stores.open import StoreBundle
from rag.models import DocumentInfo
from rag.passages import PassageEmbedder


@dataclass(frozen=True, slots=True)
class RAGCore:
    """One knowledge base's stores and components.

    Attributes:
        store: the chunk store (documents, chunks, passages, lexical index) of every namespace.
        passages: the passage embedder (over :attr:`embedder`).
        settings: chunking, batching, retrieval and fusion settings.
        namespace: the knowledge base; every read and write is scoped to it.
        lock: serialises writes of the pipelines sharing the stores.
        llm: answers and expands queries; ``None`` means extractive answers and offline expansion.
    """

    store: ChunkStore
    passages: PassageEmbedder
    settings: Settings
    namespace: str
    lock: AbstractContextManager[Any]
    llm: LLMClient | None

    @property
    def embedder(self) -> Embedder:
        """The text embedder (queries and passages)."""
        return self.passages.embedder

    def documents(self) -> list[DocumentInfo]:
        """The namespace's documents, oldest first."""
        return [
            DocumentInfo.model_validate(d, from_attributes=True)
            for d in self.store.list_documents(self.namespace)
        ]


def open_core(
    bundle: StoreBundle, settings: Settings, namespace: str, embedder: Embedder, llm: LLMClient | None
) -> RAGCore:
    """The core of ``namespace`` on the open stores ``bundle`` (its chunk store shared in-process)."""
    passages = PassageEmbedder(embedder, batch_size=settings.embed_batch_size)
    store = open_chunk_store(bundle, passages, prefix=settings.collection_prefix)
    return RAGCore(store, passages, settings, namespace, bundle.lock, llm)
