"""The input rules every vector index backend shares: collection names, ids, vectors, payloads.

Every :class:`~hello_memory.stores.vectors.base.VectorStore` backend validates with the same helpers, so a
bad vector, id or payload is refused with the same error whichever backend is configured (filters:
:mod:`hello_memory.stores.vectors.filters`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.errors import DimensionMismatchError, EmbedderMismatchError, InvalidInputError
from hello_memory.stores.vectors.base import VectorPoint

#: Payload keys that get a keyword index (the ones memory tiers filter on).
KEYWORD_INDEX_KEYS = (
    "user_id",
    "memory_type",
    "session_id",
    "namespace",
    "document_id",
    "chunk_id",
    "modality",
)
#: Payload keys that get a float (range) index.
FLOAT_INDEX_KEYS = ("created_ts",)

# Collection names become directory names (edge) and collection-name suffixes (server).
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")
#: Qdrant stores integers as 64-bit.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class CollectionMeta:
    """What a collection records about itself: vector length, the embedder that filled it, and (the
    embedded store) whether its indexed vectors are kept compact (int8 in memory, see
    :func:`hello_memory.stores.vectors.edge_engine.vector_params`)."""

    dimension: int
    embedder: str
    compact: bool = False

    def check(self, collection: str, dimension: int, embedder: str) -> None:
        """Raise if a caller's ``dimension``/``embedder`` differ from the recorded ones."""
        if dimension != self.dimension:
            raise DimensionMismatchError(collection, self.dimension, dimension, embedder=embedder)
        if embedder != self.embedder:
            raise EmbedderMismatchError(collection, self.embedder, embedder)

    def to_json(self) -> dict[str, Any]:
        """The JSON form stored next to (or on) the collection."""
        out: dict[str, Any] = {"dimension": self.dimension, "embedder": self.embedder}
        if self.compact:  # absent means mapped: files written before the option read the same
            out["compact"] = True
        return out


def check_collection_args(name: str, dimension: int, embedder: str) -> None:
    """Validate the arguments of ``ensure_collection``."""
    check_collection_name(name)
    if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
        raise InvalidInputError(f"dimension must be a positive int, got {dimension!r}", field="dimension")
    if not isinstance(embedder, str) or not embedder.strip():
        raise InvalidInputError("embedder name must be a non-empty string", field="embedder")


def check_collection_name(name: str) -> None:
    """Collection names: 1-64 of ``[A-Za-z0-9_-]``, starting with a letter or digit."""
    if not isinstance(name, str) or not _COLLECTION_NAME.match(name):
        raise InvalidInputError(
            f"invalid collection name {name!r}: use 1-64 letters, digits, '_' or '-'", field="collection"
        )


_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def is_canonical_uuid(value: object) -> bool:
    """True for a lowercase hyphenated 36-character UUID string, the only id form stored."""
    return isinstance(value, str) and _CANONICAL_UUID.fullmatch(value) is not None  # 4x uuid.UUID's parse


def existing_id_candidates(ids: Sequence[str]) -> list[str]:
    """The ids that could exist (canonical UUIDs), deduplicated in order; others are absent."""
    return list(dict.fromkeys(i for i in ids if is_canonical_uuid(i)))


def unit_vector(collection: str, vector: Any, dimension: int) -> npt.NDArray[np.float32]:
    """Validate one vector and return it L2-normalised as float32.

    Normalising here (in float64) rather than in the engine keeps the score an exact cosine for
    every non-zero vector: Qdrant skips normalisation for squared norms below f32 epsilon.

    Raises:
        DimensionMismatchError: wrong length.
        InvalidInputError: not a 1-D numeric array, non-finite, or zero.
    """
    try:
        arr = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"vector is not numeric: {e}", field="vector") from e
    if arr.ndim != 1:
        raise InvalidInputError(f"vector must be 1-D, got shape {arr.shape}", field="vector")
    if arr.shape[0] != dimension:
        raise DimensionMismatchError(collection, dimension, int(arr.shape[0]))
    if not np.isfinite(arr).all():
        raise InvalidInputError("vector contains NaN or infinity", field="vector")
    norm = float(np.linalg.norm(arr))
    if norm == 0.0 or not math.isfinite(norm):
        raise InvalidInputError("vector has zero norm; cosine similarity is undefined", field="vector")
    return (arr / norm).astype(np.float32)


def prepare_points(
    collection: str, points: Sequence[VectorPoint], dimension: int
) -> tuple[list[str], npt.NDArray[np.float32], list[dict[str, Any]]]:
    """Validate a whole upsert batch before anything is written.

    Returns:
        ids, an ``(n, dimension)`` matrix of unit vectors, and JSON-clean payload copies.
    """
    ids: list[str] = []
    matrix = np.empty((len(points), dimension), dtype=np.float32)
    payloads: list[dict[str, Any]] = []
    for row, point in enumerate(points):
        if not is_canonical_uuid(point.id):
            raise InvalidInputError(
                f"point id {point.id!r} is not a lowercase UUID string (use str(uuid.uuid4()))", field="id"
            )
        ids.append(point.id)
        matrix[row] = unit_vector(collection, point.vector, dimension)
        payloads.append(_clean_payload(point.payload))
    return ids, matrix, payloads


def _clean_payload(payload: Any) -> dict[str, Any]:
    """A deep, JSON-only copy of ``payload`` (no NaN, no numpy scalars, string keys)."""
    if not isinstance(payload, dict):
        raise InvalidInputError(f"payload must be a dict, got {type(payload).__name__}", field="payload")
    try:
        copy: dict[str, Any] = json.loads(json.dumps(payload, allow_nan=False))
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"payload is not plain JSON: {e}", field="payload") from e
    if len(copy) != len(payload):  # json.dumps coerces int/None keys to strings, which may collide
        raise InvalidInputError("payload keys must be unique strings", field="payload")
    _check_ints(copy)
    return copy


def _check_ints(value: Any) -> None:
    """Qdrant stores integers as 64-bit; refuse larger ones instead of failing mid-write."""
    if isinstance(value, dict):
        for v in value.values():
            _check_ints(v)
    elif isinstance(value, list):
        for v in value:
            _check_ints(v)
    elif isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        raise InvalidInputError(f"payload integer {value} does not fit in 64 bits", field="payload")


def check_limit(limit: int) -> int:
    """Validate a search limit (0 is allowed and returns nothing)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidInputError(f"limit must be a non-negative int, got {limit!r}", field="limit")
    return limit
