"""What every vector index backend shares: the contract's public methods, written once over a few primitives.

:class:`VectorStoreAdapter` checks every input with :mod:`~hello_memory.stores.vectors.rules` and
:mod:`~hello_memory.stores.vectors.filters` in one order on every backend — the filter, then the
collection, then the vectors, ids and limit — so a bad call fails the same way whichever backend runs
it. A backend implements the private primitives, which receive checked input only.
"""

from __future__ import annotations

import contextlib
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.errors import NotFoundError
from hello_memory.stores.adapter import StoreAdapter
from hello_memory.stores.vectors.base import Filter, VectorHit, VectorPoint
from hello_memory.stores.vectors.filters import CompiledFilter, compile_delete_filter, compile_filter
from hello_memory.stores.vectors.rules import (
    CollectionMeta,
    check_collection_args,
    check_limit,
    existing_id_candidates,
    prepare_points,
    unit_vector,
)


def missing_collection(name: str) -> NotFoundError:
    """The error for a collection that does not exist."""
    return NotFoundError(f"collection {name!r} does not exist; call ensure_collection first", object_id=name)


def fetched_point(point_id: str, vector: Any | None, payload: dict[str, Any] | None) -> VectorPoint:
    """A point as ``get`` returns it: a float32 copy of its vector, or an empty one when not asked for."""
    array = np.empty(0, dtype=np.float32) if vector is None else np.array(vector, dtype=np.float32)
    return VectorPoint(point_id, array, payload or {})


class VectorStoreAdapter(StoreAdapter):
    """Base of the :class:`~hello_memory.stores.vectors.base.VectorStore` backends.

    Subclasses set :attr:`BACKEND` and implement the primitives (``_meta``, ``_ensure``, ``_write``,
    ``_remove``, ``_remove_where``, ``_nearest``, ``_fetch``, ``_count``, ``_ids``) and
    ``collections``, ``drop_collection`` and ``close``. An embedded backend returns its lock from
    :meth:`_guard`, so that a write's checks and the write happen in one step.
    """

    # -- the contract -----------------------------------------------------------------------------
    def ensure_collection(self, name: str, dimension: int, *, embedder: str) -> None:
        """Create ``name`` or verify that it matches ``dimension`` and ``embedder``.

        Raises:
            DimensionMismatchError: the collection holds vectors of another length.
            EmbedderMismatchError: another embedder filled the collection.
        """
        check_collection_args(name, dimension, embedder)
        self._ensure(name, CollectionMeta(dimension, embedder))

    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points; nothing is written if any point is invalid."""
        with self._guard():
            ids, matrix, payloads = prepare_points(collection, points, self._meta(collection).dimension)
            if ids:
                self._write(collection, ids, matrix, payloads)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id (absent ids are ignored)."""
        candidates = existing_id_candidates(ids)
        with self._guard():
            self._meta(collection)
            if candidates:
                self._remove(collection, candidates)

    def delete_where(self, collection: str, where: Filter) -> int:
        """Delete every point matching ``where`` (which must have a condition); returns the count."""
        compiled = compile_delete_filter(where)
        with self._guard():
            self._meta(collection)
            return self._remove_where(collection, compiled)

    def search(
        self,
        collection: str,
        vector: npt.NDArray[np.float32],
        *,
        limit: int,
        where: Filter | None = None,
        with_payload: bool = True,
    ) -> list[VectorHit]:
        """Nearest neighbours by cosine similarity, at most ``limit``, best first (payloads empty
        unless ``with_payload``)."""
        compiled = compile_filter(where)
        query = unit_vector(collection, vector, self._meta(collection).dimension)
        if check_limit(limit) == 0:
            return []
        return self._nearest(collection, query, limit, compiled, with_payload)

    def get(self, collection: str, ids: Sequence[str], *, with_vectors: bool = False) -> list[VectorPoint]:
        """Points by id, in no particular order (absent ids are skipped); vectors come back L2-normalised."""
        self._meta(collection)
        candidates = existing_id_candidates(ids)
        return self._fetch(collection, candidates, with_vectors) if candidates else []

    def scores(self, collection: str, vector: npt.NDArray[np.float32], ids: Sequence[str]) -> dict[str, float]:
        """id -> cosine of ``vector`` with each point among ``ids`` (absent ids are skipped)."""
        query = unit_vector(collection, vector, self._meta(collection).dimension)
        candidates = existing_id_candidates(ids)
        return self._scores(collection, query, candidates) if candidates else {}

    def count(self, collection: str, where: Filter | None = None) -> int:
        """Number of points (matching ``where``)."""
        compiled = compile_filter(where)
        self._meta(collection)
        return self._count(collection, compiled)

    def ids(self, collection: str, where: Filter | None = None) -> list[str]:
        """Every point id (matching ``where``)."""
        compiled = compile_filter(where)
        self._meta(collection)
        return self._ids(collection, compiled)

    @abstractmethod
    def collections(self) -> list[str]:
        """Names of existing collections."""

    @abstractmethod
    def drop_collection(self, name: str) -> None:
        """Delete a collection and all its points (no error if absent)."""

    @abstractmethod
    def close(self) -> None:
        """Flush and release resources; idempotent."""

    # -- primitives ---------------------------------------------------------------------------------
    def _guard(self) -> contextlib.AbstractContextManager[Any]:
        """Held around a write's checks and the write (none by default)."""
        return contextlib.nullcontext()

    @abstractmethod
    def _meta(self, name: str) -> CollectionMeta:
        """The collection's metadata; raises :class:`NotFoundError` when it does not exist."""

    @abstractmethod
    def _ensure(self, name: str, meta: CollectionMeta) -> None:
        """Create the collection, or check that the existing one matches ``meta``."""

    @abstractmethod
    def _write(
        self, name: str, ids: list[str], matrix: npt.NDArray[np.float32], payloads: list[dict[str, Any]]
    ) -> None:
        """Upsert checked points (unit vectors, clean payloads); ``ids`` is not empty."""

    @abstractmethod
    def _remove(self, name: str, ids: list[str]) -> None:
        """Delete the points ``ids`` (canonical, not empty)."""

    @abstractmethod
    def _remove_where(self, name: str, where: CompiledFilter) -> int:
        """Delete the points matching ``where``; returns how many there were."""

    @abstractmethod
    def _nearest(
        self, name: str, query: npt.NDArray[np.float32], limit: int, where: CompiledFilter | None, with_payload: bool
    ) -> list[VectorHit]:
        """The ``limit`` (> 0) points nearest to the unit vector ``query``, best first (payloads
        read only ``with_payload``)."""

    @abstractmethod
    def _fetch(self, name: str, ids: list[str], with_vectors: bool) -> list[VectorPoint]:
        """The points among ``ids`` (canonical, not empty); see :func:`fetched_point`."""

    def _scores(self, name: str, query: npt.NDArray[np.float32], ids: list[str]) -> dict[str, float]:
        """Cosine of the unit vector ``query`` with the points among ``ids`` (canonical, not empty);
        by default from their vectors, read out (an engine that can score given points overrides it)."""
        return {p.id: float(np.dot(p.vector, query)) for p in self._fetch(name, ids, True)}

    @abstractmethod
    def _count(self, name: str, where: CompiledFilter | None) -> int:
        """How many points match ``where``."""

    @abstractmethod
    def _ids(self, name: str, where: CompiledFilter | None) -> list[str]:
        """The ids of the points matching ``where``."""
