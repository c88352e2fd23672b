"""Memory vectors in the record store's own points (server mode: one point per memory).

The vector travels with the record (:attr:`~hello_memory.stores.records.base.RecordWrite.vector`),
in the same atomic write, so every write method here has nothing left to do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from hello_memory.models import MemoryItem, MemoryType
from hello_memory.stores.dense.base import DenseIndex, DenseState, Tiers, Window


class RecordDense(DenseIndex):
    """The :class:`~hello_memory.stores.dense.base.DenseIndex` of a record store that keeps vectors."""

    def __init__(self, records: Any) -> None:
        self._records = records  # a QdrantRecordStore (dense_search, dense_vectors)

    @property
    def backend(self) -> str:
        """The record store's backend name."""
        name: str = self._records.backend
        return name

    def _nearest(
        self, user: str, qvec: np.ndarray, types: Sequence[MemoryType], limit: int, session: str | None, window: Window
    ) -> dict[str, float]:
        """One filtered search of the user's points (every tier lives in one collection)."""
        found: dict[str, float] = self._records.dense_search(
            user, qvec, limit=limit, types=[t.value for t in types], session_id=session, time_range=window
        )
        return found

    def similarities(self, user_id: str, qvec: np.ndarray, ids: Tiers) -> dict[str, float]:
        """Exact cosines scored by the server in the memories' points (their vectors stay there)."""
        if not ids:
            return {}
        got = self._scored(user_id, qvec, ids, lambda q: self._records.dense_scores(user_id, q, list(ids)))
        rest = {k: t for k, t in ids.items() if k not in got}  # deleted, another user's (or left out): read out
        return got | (DenseIndex.similarities(self, user_id, qvec, rest) if rest else {})

    def vectors(self, user_id: str, ids: Tiers) -> dict[str, np.ndarray]:
        """The vectors kept in the memories' points."""
        if not ids:
            return {}
        found: dict[str, np.ndarray] = self._records.dense_vectors(user_id, list(ids))
        return found

    def write(self, items: Sequence[MemoryItem], vectors: Mapping[str, np.ndarray], embedder: str) -> None:
        """Nothing: the vectors were written with the records."""

    def remove(self, items: Sequence[MemoryItem]) -> None:
        """Nothing: a forgotten record keeps no vector, a deleted one is gone."""

    def remove_ids(self, ids: Sequence[str]) -> None:
        """Nothing: the vectors went with their records."""

    def capture(self, items: Sequence[MemoryItem]) -> DenseState:
        """Nothing to capture: a record store that keeps vectors never rolls a write back."""
        return DenseState(list(items))

    def put_back(self, state: DenseState, added: Sequence[MemoryItem] = ()) -> None:
        """Nothing: see :meth:`capture`."""

    def restore(
        self, items: Sequence[MemoryItem], embed: Callable[[Sequence[MemoryItem]], dict[str, np.ndarray]], embedder: str
    ) -> None:
        """Nothing: the records hold their vectors (no embedding needed)."""

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Nothing beyond the records (their store deletes the vectors with them)."""
        return {}
