"""The dense index contract: where memory vectors live, read and written by the core in both modes.

Embedded mode keeps memory vectors in the data directory's vector index, one collection per tier
family (:class:`~hello_memory.stores.dense.index.IndexDense`); server mode keeps each vector in its
memory's point in the record store (:class:`~hello_memory.stores.dense.records.RecordDense`). The
stores are opened with one of them (:mod:`hello_memory.stores.open`), so the core has no backend
branch: it writes a memory's vector through :attr:`RecordWrite.vector` *and* :meth:`DenseIndex.write`,
and whichever does not hold vectors does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from hello_memory.models import MemoryItem, MemoryType

Window = tuple[float | None, float | None] | None
Tiers = Mapping[str, tuple[MemoryType, str | None]]
"""memory id -> (tier, modality): where a memory's vector is."""
VECTOR_TIERS = (MemoryType.EPISODIC, MemoryType.SEMANTIC, MemoryType.PERCEPTUAL)


@dataclass
class DenseState:
    """What the index held for some memories before a write: enough to put it back without embedding.

    ``vectors`` maps the id of every vector-tier item that had a point to its vector; ``readable``
    is False when the index could not be read (putting it back is then left to recovery).
    """

    items: list[MemoryItem]
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    readable: bool = True


class DenseIndex(Protocol):
    """Nearest memories by cosine, exact cosine for given memories, and the vectors' upkeep.

    Every write is idempotent (upsert by memory id, deleting what is absent is a no-op), so
    recovery may repeat any of them. The two backends subclass this protocol: :meth:`search` and
    :meth:`similarities` are written once here, over each one's ``_nearest`` and :meth:`vectors`.
    """

    def search(
        self,
        user_id: str,
        qvec: np.ndarray,
        types: Sequence[MemoryType],
        *,
        limit: int,
        session_id: str | None,
        window: Window,
    ) -> dict[str, float]:
        """memory id -> cosine of the user's live memories of ``types`` nearest to ``qvec``."""
        return self._nearest(user_id, qvec, types, limit, session_id, window)

    def _nearest(
        self, user: str, qvec: np.ndarray, types: Sequence[MemoryType], limit: int, session: str | None, window: Window
    ) -> dict[str, float]:
        """What :meth:`search` does, positionally (each backend's own)."""
        raise NotImplementedError

    def similarities(self, user_id: str, qvec: np.ndarray, ids: Tiers) -> dict[str, float]:
        """memory id -> ``qvec``'s dot product with the stored unit vector of each of ``ids`` that has
        one: its cosine when ``qvec`` is a unit vector (a query's; a null's mean need not be)."""
        return {mid: float(np.dot(vec, qvec)) for mid, vec in self.vectors(user_id, ids).items()}

    def vectors(self, user_id: str, ids: Tiers) -> dict[str, np.ndarray]:
        """memory id -> its stored (unit) vector, for ``ids`` that have one."""
        ...

    def _scored(
        self, user_id: str, qvec: np.ndarray, ids: Tiers, cosines: Callable[[np.ndarray], dict[str, float]]
    ) -> dict[str, float]:
        """:meth:`similarities` from an engine's ``cosines`` (it normalises the query vector): times
        ``|qvec|``; a zero or non-finite ``qvec`` has no direction and takes the read-out path."""
        norm = float(np.linalg.norm(qvec))
        if not np.isfinite(norm) or norm == 0.0:
            return DenseIndex.similarities(self, user_id, qvec, ids)
        return {k: v * norm for k, v in cosines(qvec).items()}

    def write(self, items: Sequence[MemoryItem], vectors: Mapping[str, np.ndarray], embedder: str) -> None:
        """Upsert the vectors of ``items`` found in ``vectors`` (made by the embedder named ``embedder``)."""
        ...

    def remove(self, items: Sequence[MemoryItem]) -> None:
        """Remove the vectors of ``items`` (forgotten or deleted memories)."""
        ...

    def remove_ids(self, ids: Sequence[str]) -> None:
        """Remove the vectors of memories whose records are gone (their tier is unknown)."""
        ...

    def capture(self, items: Sequence[MemoryItem]) -> DenseState:
        """The vectors ``items`` have now (before a write that may have to be undone)."""
        ...

    def put_back(self, state: DenseState, added: Sequence[MemoryItem] = ()) -> None:
        """Undo a write: drop the vectors of ``added``, give ``state``'s live items their vectors back."""
        ...

    def restore(
        self, items: Sequence[MemoryItem], embed: Callable[[Sequence[MemoryItem]], dict[str, np.ndarray]], embedder: str
    ) -> None:
        """Recovery: give live ``items`` their vectors again (``embed`` computes them, if needed)."""
        ...

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete every vector of the user; returns counts per collection (``{}`` when the records hold them)."""
        ...

    @property
    def backend(self) -> str:
        """Where the vectors are, for reports (e.g. ``"qdrant-edge"``)."""
        ...
