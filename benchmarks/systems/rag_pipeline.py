"""hello-memory on document tasks (docs_qa) through ``rag.RAGPipeline``.

Each corpus is one knowledge-base namespace in a temporary home; every whole document is added
with ``add_text(text, document_id=...)`` and the pipeline chunks it. A search maps each
``ChunkHit`` (``document_id``, ``start``, ``end``: offsets into the added text) to the span id
``"<doc>#<start>-<end>"`` that the harness judges by overlap with the gold spans.
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
from benchmarks.systems.hello_memory import PROFILES


class RAGPipelineSystem:
    """Adapter over ``rag.RAGPipeline`` (public API only): it chunks whole documents itself.

    Example:
        >>> s = RAGPipelineSystem()                                      # doctest: +SKIP
        >>> s.index("docs", [Doc("guide", text)]); s.search("docs", q, 5)  # doctest: +SKIP
        ['guide#0-1843', ...]
    """

    handles_documents = True

    def __init__(self, *, profile: str = "default", context: SystemContext | None = None) -> None:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
        try:
            from hello_memory import Settings

            pipeline_cls = importlib.import_module("rag").RAGPipeline
        except (ImportError, AttributeError) as e:
            raise SystemUnavailableError(
                f"rag.RAGPipeline is not importable ({e}); docs_qa runs bm25/dense over fixed chunks"
            ) from e
        self._profile = profile
        self._pipeline_cls: Any = pipeline_cls
        self._settings_cls: Any = Settings
        self._home: Path | None = None
        self._pipelines: dict[str, Any] = {}

    def config(self) -> dict[str, Any]:
        """Profile, its settings overrides and the API used."""
        return {"profile": self._profile, "settings": PROFILES[self._profile], "api": "RAGPipeline"}

    def index(self, corpus_id: str, docs: Sequence[Doc]) -> None:
        """Add each whole document; the pipeline chunks it."""
        if self._home is None:
            self._home = Path(tempfile.mkdtemp(prefix="hm-rag-bench-"))
        settings = self._settings_cls(home=self._home, **PROFILES[self._profile])
        pipeline = self._pipeline_cls(settings, namespace=corpus_id)
        self._pipelines[corpus_id] = pipeline
        for doc in docs:
            pipeline.add_text(doc.text, document_id=doc.doc_id)

    def search(self, corpus_id: str, query: Query, k: int) -> list[str]:
        """Span ids ``"<doc>#<start>-<end>"`` of the top ``k`` chunks."""
        result = self._pipelines[corpus_id].search(query.text, limit=k)
        ids = [span_id(h.document_id, int(h.start), int(h.end)) for h in result.hits]
        return list(dict.fromkeys(ids))[:k]

    def close(self) -> None:
        """Close pipelines and delete the temporary home."""
        for p in self._pipelines.values():
            p.close()
        self._pipelines.clear()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
