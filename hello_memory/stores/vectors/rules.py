"""Vector index: the backend factory and the input rules every backend shares.

Every :class:`~hello_memory.stores.vectors.base.VectorStore` backend validates with the same helpers, so a
bad vector, id or filter is refused with the same error whichever backend is configured, and
filters mean the same thing everywhere (:func:`compile_filter` fixes the semantics once; each
adapter only maps the compiled clauses to its own filter classes).
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from hello_memory.errors import DimensionMismatchError, EmbedderMismatchError, InvalidInputError
from hello_memory.stores.vectors.base import Filter, VectorPoint

if TYPE_CHECKING:
    from hello_memory.settings import Settings
    from hello_memory.stores.vectors.base import VectorStore

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
# Filter keys are top-level payload fields: word characters and '-' only. '.' and '[' would be read
# as paths by Qdrant, and its JSON-path parser rejects spaces and punctuation such as ':' outright.
_FILTER_KEY = re.compile(r"^[\w-]+\Z")  # \Z: "$" would also match before a trailing newline
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def open_vector_store(settings: Settings) -> VectorStore:
    """Build the vector index the settings ask for.

    A Qdrant server when ``settings.qdrant_url`` is set, else the embedded Qdrant Edge store in
    ``settings.home / "vectors"``. Nothing is opened or connected until first use.

    Example:
        >>> from hello_memory.settings import Settings
        >>> import tempfile
        >>> open_vector_store(Settings(home=tempfile.mkdtemp())).backend
        'qdrant-edge'
    """
    if settings.qdrant_url:
        from hello_memory.stores.vectors.qdrant import QdrantVectorStore

        key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        return QdrantVectorStore(
            url=settings.qdrant_url,
            api_key=key,
            timeout=settings.qdrant_timeout,
            prefix=settings.collection_prefix,
        )
    from hello_memory.stores.vectors.edge import QdrantEdgeVectorStore

    return QdrantEdgeVectorStore(settings.home / "vectors")


@dataclass(frozen=True, slots=True)
class CollectionMeta:
    """What a collection records about itself: vector length and the embedder that filled it."""

    dimension: int
    embedder: str

    def check(self, collection: str, dimension: int, embedder: str) -> None:
        """Raise if a caller's ``dimension``/``embedder`` differ from the recorded ones."""
        if dimension != self.dimension:
            raise DimensionMismatchError(collection, self.dimension, dimension, embedder=embedder)
        if embedder != self.embedder:
            raise EmbedderMismatchError(collection, self.embedder, embedder)

    def to_json(self) -> dict[str, Any]:
        """The JSON form stored next to (or on) the collection."""
        return {"dimension": self.dimension, "embedder": self.embedder}


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


def is_canonical_uuid(value: object) -> bool:
    """True for a lowercase hyphenated 36-character UUID string, the only id form stored."""
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


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
    elif isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _INT64_MAX:
        raise InvalidInputError(f"payload integer {value} does not fit in 64 bits", field="payload")


@dataclass(frozen=True, slots=True)
class Clause:
    """A test on one payload field that holds when any alternative holds (none: never holds).

    Array fields hold when any element matches, as in Qdrant. ``empty`` matches a missing field,
    ``null`` or ``[]``. ``ints`` never match floats or booleans; ``ranges`` match ints and floats
    but not booleans.
    """

    key: str
    strings: tuple[str, ...] = ()
    ints: tuple[int, ...] = ()
    bools: tuple[bool, ...] = ()
    ranges: tuple[tuple[float | None, float | None], ...] = ()
    empty: bool = False

    def matches(self, payload: dict[str, Any]) -> bool:
        """Evaluate the clause on a payload (the reference semantics)."""
        value = payload.get(self.key)
        if value is None or value == []:
            return self.empty
        values = value if isinstance(value, list) else [value]
        return any(self._matches_scalar(v) for v in values)

    def _matches_scalar(self, v: Any) -> bool:
        if isinstance(v, bool):
            return v in self.bools
        if isinstance(v, str):
            return v in self.strings
        if isinstance(v, int) and v in self.ints:
            return True
        if isinstance(v, (int, float)):
            return any((lo is None or v >= lo) and (hi is None or v <= hi) for lo, hi in self.ranges)
        return False


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    """A :class:`Filter` reduced to clauses: all of ``must`` hold and none of ``must_not``."""

    must: tuple[Clause, ...]
    must_not: tuple[Clause, ...]

    def matches(self, payload: dict[str, Any]) -> bool:
        """Evaluate on a payload (the reference semantics)."""
        return all(c.matches(payload) for c in self.must) and not any(
            c.matches(payload) for c in self.must_not
        )


def compile_filter(where: Filter | None) -> CompiledFilter | None:
    """Reduce a :class:`Filter` to clauses, validating it; ``None`` when it has no conditions.

    ``equals``/``exclude`` values: ``None`` tests for a missing/null/empty field, a float tests
    numeric equality (so ``3.0`` also matches ``3``), a list/tuple is "any of".
    """
    if where is None:
        return None
    must = [_value_clause(k, v) for k, v in where.equals.items()]
    must += [_range_clause(k, r.gte, r.lte) for k, r in where.ranges.items()]
    must_not = [_value_clause(k, v) for k, v in where.exclude.items()]
    if not must and not must_not:
        return None
    return CompiledFilter(tuple(must), tuple(must_not))


def compile_delete_filter(where: Filter) -> CompiledFilter:
    """Like :func:`compile_filter`, but refuse a filter without conditions (it would match all)."""
    compiled = compile_filter(where)
    if compiled is None:
        raise InvalidInputError(
            "delete_where needs at least one condition; use drop_collection to delete everything",
            field="where",
        )
    return compiled


def check_limit(limit: int) -> int:
    """Validate a search limit (0 is allowed and returns nothing)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidInputError(f"limit must be a non-negative int, got {limit!r}", field="limit")
    return limit


def _check_key(key: object) -> str:
    if not isinstance(key, str) or not _FILTER_KEY.match(key):
        raise InvalidInputError(
            f"invalid filter key {key!r}: use a top-level payload field name", field="where"
        )
    return key


def _range_clause(key: str, gte: float | None, lte: float | None) -> Clause:
    for bound in (gte, lte):
        ok = bound is None or (
            isinstance(bound, (int, float)) and not isinstance(bound, bool) and math.isfinite(bound)
        )
        if not ok:
            raise InvalidInputError(f"range bound {bound!r} on {key!r} is not a finite number", field="where")
    return Clause(_check_key(key), ranges=((gte, lte),))


def _value_clause(key: str, value: Any) -> Clause:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    strings: list[str] = []
    ints: list[int] = []
    bools: list[bool] = []
    ranges: list[tuple[float | None, float | None]] = []
    empty = False
    for v in values:
        if v is None:
            empty = True
        elif isinstance(v, bool):
            bools.append(v)
        elif isinstance(v, str):
            strings.append(v)
        elif isinstance(v, int) and _INT64_MIN <= v <= _INT64_MAX:
            ints.append(v)
        elif isinstance(v, float) and math.isfinite(v):
            ranges.append((v, v))
        else:
            raise InvalidInputError(f"unsupported filter value {v!r} for {key!r}", field="where")
    return Clause(
        _check_key(key),
        tuple(dict.fromkeys(strings)),
        tuple(dict.fromkeys(ints)),
        tuple(dict.fromkeys(bools)),
        tuple(ranges),
        empty,
    )
