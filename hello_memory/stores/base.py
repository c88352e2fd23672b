"""Store contracts: vector index and knowledge graph.

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
    ) -> list[VectorHit]:
        """Nearest neighbours by cosine similarity."""
        ...

    def get(self, collection: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[VectorPoint]:
        """Points by id, in no particular order (absent ids are skipped)."""
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


@dataclass(frozen=True, slots=True)
class GraphNeighbour:
    """An entity reached from a start entity, with its hop distance."""

    entity_id: str
    name: str
    hops: int


@runtime_checkable
class GraphStore(Protocol):
    """Entities and relations per user; every call is scoped by ``user_id``.

    Semantics:
    - entity ids are stable: the same (user, normalised name) always maps to the same id;
    - ``link`` records that a memory mentions entities and asserts relations; re-linking a
      memory replaces its previous links;
    - ``unlink_memory`` removes the memory's mentions and the relations it asserted, and
      entities no memory mentions any more;
    - ``forget_user`` removes everything of the user and returns per-table counts.
    """

    @property
    def backend(self) -> str:
        """Short backend name, e.g. ``"sqlite+networkx"``."""
        ...

    def link(
        self,
        user_id: str,
        memory_id: str,
        entities: Sequence[tuple[str, str, str]],
        relations: Sequence[tuple[str, str, str]],
    ) -> None:
        """Record ``entities`` as (id, name, type) and ``relations`` as (source_id, target_id, type)."""
        ...

    def unlink_memory(self, user_id: str, memory_id: str) -> None:
        """Remove a memory's mentions, its relations and entities left without mentions."""
        ...

    def neighbours(
        self, user_id: str, entity_ids: Sequence[str], *, max_hops: int = 2
    ) -> list[GraphNeighbour]:
        """Entities within ``max_hops`` of any start entity (starts included with hops=0)."""
        ...

    def memories_mentioning(self, user_id: str, entity_ids: Sequence[str]) -> dict[str, list[str]]:
        """memory id -> the given entity ids it mentions."""
        ...

    def find_entities(self, user_id: str, names: Sequence[str]) -> list[tuple[str, str]]:
        """(id, name) of the user's entities whose normalised name is in ``names``."""
        ...

    def counts(self, user_id: str) -> dict[str, int]:
        """``{"entities": n, "relations": m, "mentions": k}`` for the user."""
        ...

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete everything of the user; returns deleted counts per table."""
        ...

    def close(self) -> None:
        """Release resources; idempotent."""
        ...


def as_float32(vector: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Convert to a 1-D float32 array (no copy when already so)."""
    return np.asarray(vector, dtype=np.float32).reshape(-1)
