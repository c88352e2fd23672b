"""The contract every benchmarked retrieval system follows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from benchmarks.datasets.base import Doc, Query


class SystemUnavailableError(RuntimeError):
    """The system cannot run here (a missing optional package, an unwritten API).

    The harness reports the message and skips the system instead of failing the whole run.
    """


@dataclass(frozen=True, slots=True)
class SystemContext:
    """Harness-wide resources handed to every system.

    Attributes:
        embed_cache: directory for an on-disk embedding cache (``None`` = no cache). Cached
            embeddings make index times meaningless, so reports record it in the config.
    """

    embed_cache: Path | None = None


@runtime_checkable
class RetrievalSystem(Protocol):
    """Indexes isolated corpora and ranks their documents for a query.

    Semantics every implementation keeps:
    - ``index(corpus_id, docs)`` is called once per corpus before any search in it; corpora
      never see each other's documents.
    - ``search`` returns at most ``k`` doc ids of that corpus, best first, without duplicates.
      For document tasks (``handles_documents``) the ids are chunk span ids
      ``"<doc>#<start>-<end>"`` (see :mod:`benchmarks.chunking`).
    - ``close()`` releases every resource (temporary directories, connections); idempotent.
    """

    @property
    def handles_documents(self) -> bool:
        """True when the system chunks whole documents itself; otherwise the harness feeds it
        fixed-size chunks of document tasks."""
        ...

    def config(self) -> dict[str, Any]:
        """JSON-serialisable settings recorded next to the results."""
        ...

    def index(self, corpus_id: str, docs: Sequence[Doc]) -> None:
        """Add every doc of one corpus."""
        ...

    def search(self, corpus_id: str, query: Query, k: int) -> list[str]:
        """Top ``k`` doc ids of ``corpus_id`` for ``query`` (its text, and its date if known)."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...
