"""hello-memory on document tasks (docs_qa) through ``rag.RAGPipeline``.

TODO(rag): ``rag.RAGPipeline`` is being written; this adapter is written against the API agreed
for it and has NOT run yet. Expected API (check the attribute names once it lands):

    p = RAGPipeline(Settings(home=tmp), namespace="docs")
    p.add_text(text, document_id="guide-name")
    results = p.search("question", limit=k)
    results[i].chunk.document_id, results[i].chunk.start, results[i].chunk.end   # [start, end) chars

Until then the import fails and the harness skips the system with a message. This is
deliberately not a fake: numbers for hello_memory on docs_qa must come from the real pipeline.
"""

from __future__ import annotations

import importlib
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.chunking import span_id
from benchmarks.datasets.base import Doc, Query
from benchmarks.systems.base import SystemContext, SystemUnavailableError


class RAGPipelineSystem:
    """Adapter over ``rag.RAGPipeline``: it chunks whole documents itself."""

    handles_documents = True

    def __init__(self, *, profile: str = "default", context: SystemContext | None = None) -> None:
        try:
            from hello_memory import Settings

            # getattr keeps type checkers quiet while the class does not exist yet.
            pipeline_cls = getattr(importlib.import_module("rag"), "RAGPipeline")  # noqa: B009
        except (ImportError, AttributeError) as e:
            raise SystemUnavailableError(
                f"rag.RAGPipeline is not importable yet ({e}); docs_qa runs bm25/dense over fixed chunks"
            ) from e
        self._profile = profile
        self._pipeline_cls: Any = pipeline_cls
        self._settings_cls: Any = Settings
        self._home = Path(tempfile.mkdtemp(prefix="hm-rag-bench-"))
        self._pipelines: dict[str, Any] = {}

    def config(self) -> dict[str, Any]:
        """Profile and API used."""
        return {"profile": self._profile, "api": "RAGPipeline"}

    def index(self, corpus_id: str, docs: Sequence[Doc]) -> None:
        """Add each whole document; the pipeline chunks it."""
        pipeline = self._pipeline_cls(self._settings_cls(home=self._home), namespace=corpus_id)
        self._pipelines[corpus_id] = pipeline
        for doc in docs:
            pipeline.add_text(doc.text, document_id=doc.doc_id)

    def search(self, corpus_id: str, query: Query, k: int) -> list[str]:
        """Span ids ``"<doc>#<start>-<end>"`` of the top ``k`` chunks."""
        results = self._pipelines[corpus_id].search(query.text, limit=k)
        # TODO(rag): confirm the result shape (``.chunk.document_id/.start/.end``).
        ids = [span_id(r.chunk.document_id, int(r.chunk.start), int(r.chunk.end)) for r in results]
        return list(dict.fromkeys(ids))[:k]

    def close(self) -> None:
        """Close pipelines and delete the temporary home."""
        for p in self._pipelines.values():
            close = getattr(p, "close", None)
            if callable(close):
                close()
        self._pipelines.clear()
        shutil.rmtree(self._home, ignore_errors=True)
