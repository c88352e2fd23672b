"""hello-memory through its public API only: ``hello_memory`` (default profile) and ``paper``.

Each corpus is one user of a :class:`hello_memory.MemoryManager` living in a temporary home;
docs are added as episodic memories carrying ``metadata["doc_id"]`` (and a named speaker as their
participant), and a search maps hits back to those ids. The ``paper`` profile is the seed's
formulas with dense-only similarity (``Settings(fusion="dense", participant_weight=0)``).
``mode=server`` runs the same manager in server mode (``QDRANT_URL`` = a local-mode path: records,
vectors and the lexical index in Qdrant) for the parity benchmark of issue 19.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.datasets.base import Doc, Query
from benchmarks.systems.base import SystemContext, SystemUnavailableError
from benchmarks.systems.views import ASSISTANT_SPEAKERS

PROFILES: dict[str, dict[str, Any]] = {
    "default": {},
    "paper": {"fusion": "dense", "participant_weight": 0.0, "time_weight": 0.0, "adjacency_weight": 0.0},
}
ROLE_SPEAKERS = ASSISTANT_SPEAKERS | {"user", "human"}
ADD_BATCH = 256


def memory_payload(doc: Doc) -> dict[str, Any]:
    """The ``add_many`` item for one doc."""
    item: dict[str, Any] = {
        "content": doc.text,
        "memory_type": "episodic",
        "metadata": {"doc_id": doc.doc_id, "speaker": doc.speaker},
    }
    if doc.created_at is not None:
        item["created_at"] = doc.created_at
    if doc.session_id is not None:
        item["session_id"] = doc.session_id
    if doc.speaker and doc.speaker.lower() not in ROLE_SPEAKERS:
        item["participants"] = [doc.speaker]  # a chat turn's participant is its speaker
    return item


def query_input(query: Query) -> str | list[dict[str, str]]:
    """What a user would pass: the question, or a dialogue query as chat messages."""
    if not query.turns:
        return query.text
    return [
        {"role": "assistant" if speaker.lower() in ASSISTANT_SPEAKERS else "user", "content": text}
        for speaker, text in query.turns
    ]


class HelloMemorySystem:
    """Adapter over ``MemoryManager`` (imported lazily: the API may not exist yet).

    Example:
        >>> s = HelloMemorySystem(profile="paper")             # doctest: +SKIP
        >>> s.index("conv-26", docs); s.search("conv-26", query, k=10)  # doctest: +SKIP
    """

    handles_documents = False

    def __init__(
        self, *, profile: str = "default", mode: str = "embedded", context: SystemContext | None = None
    ) -> None:
        if profile not in PROFILES:
            raise ValueError(f"unknown hello_memory profile {profile!r}; choose one of {sorted(PROFILES)}")
        if mode not in ("embedded", "server"):
            raise ValueError(f"unknown hello_memory mode {mode!r}; choose embedded or server")
        self._profile, self._mode = profile, mode
        self._home: Path | None = None
        self._managers: dict[str, Any] = {}
        try:
            from hello_memory import MemoryManager, Settings
        except ImportError as e:
            raise SystemUnavailableError(
                f"hello_memory.MemoryManager is not importable yet ({e}); run bm25/dense meanwhile"
            ) from e
        self._manager_cls: Any = MemoryManager
        self._settings_cls: Any = Settings

    def config(self) -> dict[str, Any]:
        """Profile and the settings overrides it applies."""
        mode = "server (qdrant-client local mode on disk)" if self._mode == "server" else "embedded"
        return {"profile": self._profile, "settings": PROFILES[self._profile], "api": "MemoryManager", "mode": mode}

    def _manager(self, corpus_id: str) -> Any:
        if corpus_id not in self._managers:
            if self._home is None:
                self._home = Path(tempfile.mkdtemp(prefix="hm-bench-"))
            server = {"qdrant_url": str(self._home / "qdrant")} if self._mode == "server" else {}
            settings = self._settings_cls(home=self._home / "home", **PROFILES[self._profile], **server)
            self._managers[corpus_id] = self._manager_cls(settings, user_id=corpus_id)
        return self._managers[corpus_id]

    def index(self, corpus_id: str, docs: Sequence[Doc]) -> None:
        """Add every doc as an episodic memory of user ``corpus_id``."""
        mm = self._manager(corpus_id)
        for start in range(0, len(docs), ADD_BATCH):
            mm.add_many([memory_payload(d) for d in docs[start : start + ADD_BATCH]])

    def search(self, corpus_id: str, query: Query, k: int) -> list[str]:
        """Doc ids of the top ``k`` episodic hits, asked at the query's own time when it has one."""
        hits = self._manager(corpus_id).search(
            query_input(query), limit=k, memory_types=["episodic"], reference_time=query.created_at
        )
        out: list[str] = []
        for hit in hits:
            doc_id = hit.item.metadata.get("doc_id")
            if doc_id is not None and doc_id not in out:
                out.append(str(doc_id))
        return out[:k]

    def close(self) -> None:
        """Close every manager and delete the temporary home."""
        for mm in self._managers.values():
            close = getattr(mm, "close", None)
            if callable(close):
                close()
        self._managers.clear()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
