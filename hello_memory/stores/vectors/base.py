"""The vector index contract (:class:`VectorStore`) and its value types.

Every backend passes the contract suites in :mod:`hello_memory.testing`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

PayloadValue = str | int | float | bool | None
Payload = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Range:
    """Inclusive numeric range on a payload field (``None`` = unbounded)."""

    gte: float | None = None
    lte: float | None = None


@dataclass(frozen=True, slots=True)
class Filter:
    """Conjunctive payload filter.

    ``equals``: field == value, or field in the list when the value is a list/tuple.
    ``ranges``: numeric ranges (timestamps are stored as float epoch seconds).
    ``exclude``: field != value (or not in the list).
    """

    equals: Mapping[str, PayloadValue | Sequence[str | int]] = field(default_factory=dict)
    ranges: Mapping[str, Range] = field(default_factory=dict)
    exclude: Mapping[str, PayloadValue | Sequence[str | int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VectorPoint:
    """A vector with a UUID-string id and a flat JSON payload."""

    id: str
    vector: npt.NDArray[np.float32]
    payload: Payload


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A search result; ``score`` is cosine similarity, higher is better."""

    id: str
    score: float
    payload: Payload


@runtime_checkable
class VectorStore(Protocol):
    """A set of named collections of cosine-similarity vectors.

    Semantics:
    - ``ensure_collection`` creates a collection or checks an existing one: a different dimension
      raises ``DimensionMismatchError`` naming both numbers, a different embedder name raises
      ``EmbedderMismatchError``.
    - ``upsert`` replaces points with the same id; it validates every vector first (dimension,
      finite, non-zero) and writes nothing if one is bad. It is durable when it returns.
    - ``search`` returns at most ``limit`` hits sorted by descending cosine similarity.
    - Backend exceptions are wrapped in ``StoreError``.
    """

    @property
    def backend(self) -> str:
        """Short backend name, e.g. ``"qdrant-edge"``."""
        ...

    def ensure_collection(self, name: str, dimension: int, *, embedder: str) -> None:
        """Create ``name`` or verify that it matches ``dimension`` and ``embedder``."""
        ...

    def collections(self) -> list[str]:
        """Names of existing collections."""
        ...

    def drop_collection(self, name: str) -> None:
        """Delete a collection and all its points (no error if absent)."""
        ...

    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points."""
        ...

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id (absent ids are ignored)."""
        ...

    def delete_where(self, collection: str, where: Filter) -> int:
        """Delete every point matching ``where``; returns how many were deleted."""
        ...

    def search(
        self,
        collection: str,
        vector: npt.NDArray[np.float32],
        *,
        limit: int,
        where: Filter | None = None,
        with_payload: bool = True,
    ) -> list[VectorHit]:
        """Nearest neighbours by cosine similarity; ``with_payload=False``: hits with empty payloads
        (the engine does not read them: on a cold 1M-point store, most of a search's time)."""
        ...

    def get(self, collection: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[VectorPoint]:
        """Points by id, in no particular order (absent ids are skipped)."""
        ...

    def scores(self, collection: str, vector: npt.NDArray[np.float32], ids: Sequence[str]) -> dict[str, float]:
        """id -> cosine of ``vector`` with each point among ``ids`` (absent ids are skipped): what
        :meth:`search` would score them, without reading their vectors out."""
        ...

    def count(self, collection: str, where: Filter | None = None) -> int:
        """Number of points (matching ``where``)."""
        ...

    def ids(self, collection: str, where: Filter | None = None) -> list[str]:
        """Every point id (matching ``where``); used by consistency checks and deletion scans."""
        ...

    def close(self) -> None:
        """Flush and release resources; idempotent."""
        ...


def as_float32(vector: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Convert to a 1-D float32 array (no copy when already so)."""
    return np.asarray(vector, dtype=np.float32).reshape(-1)
