"""The embedder contract, the checks every embedder runs, and the shared adapter logic.

Backends subclass :class:`BatchedEmbedder` and import only from here, so the dependencies go one
way: ``factory`` → backends → ``base``.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from hello_memory.errors import EmbeddingError, InvalidInputError

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    Semantics every implementation keeps:
    - ``embed(texts)`` returns an array of shape ``(len(texts), dimension)``: one row per input,
      in order, never fewer rows, never a zero or non-finite row. A failure raises
      :class:`hello_memory.errors.EmbeddingError` for the whole call.
    - ``kind`` selects an asymmetric prefix where the model has one ("query" vs "passage").
    - ``name`` identifies model and settings; a collection records it and refuses another.
    """

    @property
    def name(self) -> str:
        """Stable identifier (model + variant), recorded on every collection it fills."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed(self, texts: Sequence[str], *, kind: str = "passage") -> Vectors:
        """Embed a batch; ``kind`` is ``"query"`` or ``"passage"``."""
        ...


class BatchedEmbedder(ABC):
    """Shared :meth:`embed` of the backends: check the texts, embed them in batches, check the output.

    A backend names itself (:attr:`name`), sets ``_dimension`` (or overrides :attr:`dimension`)
    and embeds one batch in :meth:`_embed_batch`. :meth:`embed` then guarantees the contract of
    :class:`Embedder`: a bare string is refused, an empty input gives a ``(0, dimension)`` array
    without calling the backend, and the rows are checked (:func:`check_vectors`) and, unless
    :attr:`normalize` is false, L2-normalised. A backend that holds a model creates it in
    :meth:`_create`, which :meth:`_load` calls once, on first use.

    Args:
        batch_size: texts per :meth:`_embed_batch` call; ``None`` embeds the whole input at once.

    Example:
        >>> class Ones(BatchedEmbedder):
        ...     name = "ones"
        ...     _dimension = 4
        ...     def _embed_batch(self, batch, kind):
        ...         return [[1.0] * 4 for _ in batch]
        >>> Ones(batch_size=1).embed(["a", "b"]).tolist()
        [[0.5, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5]]
    """

    normalize: ClassVar[bool] = True
    _dimension: int

    def __init__(self, *, batch_size: int | None = None) -> None:
        if batch_size is not None and batch_size < 1:
            raise InvalidInputError("batch_size must be >= 1", field="batch_size")
        self._batch_size = batch_size
        self._model: Any = None
        self._load_lock = threading.Lock()

    @property
    @abstractmethod
    def name(self) -> str:
        """Stable identifier (model + variant), recorded on every collection it fills."""

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        return self._dimension

    def embed(self, texts: Sequence[str], *, kind: str = "passage") -> Vectors:
        """Embed ``texts``; ``kind`` is ``"query"`` or ``"passage"`` (see each backend)."""
        items = self._prepare(check_texts(texts), kind)
        if not items:
            return np.empty((0, self.dimension), dtype=np.float32)
        step = self._batch_size or len(items)
        parts = [self._embed_batch(items[i : i + step], kind) for i in range(0, len(items), step)]
        out = check_vectors(parts[0] if len(parts) == 1 else np.concatenate(parts), len(items),
                            self.dimension, self.name)
        return l2_normalize(out) if self.normalize else out

    def _prepare(self, items: list[str], kind: str) -> list[str]:
        """Adjust or refuse the checked texts before any is embedded (default: as they are)."""
        return items

    @abstractmethod
    def _embed_batch(self, batch: list[str], kind: str) -> Any:
        """One row per text of ``batch`` (an array or nested sequence; checked by :meth:`embed`)."""

    def _load(self) -> Any:
        """The backend's model, created by :meth:`_create` on first use (double-checked under a lock)."""
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = self._create()
        return self._model

    def _create(self) -> Any:
        """Build the backend's model (backends that have one override this)."""
        raise NotImplementedError(f"{type(self).__name__} has no model to load")


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return ``texts`` as a list after checking that it is a sequence of strings.

    A bare ``str`` is rejected: it is a ``Sequence[str]`` too, and would be embedded one
    character per row.

    Raises:
        InvalidInputError: ``texts`` is a string or holds a non-string.
    """
    if isinstance(texts, str | bytes):
        raise InvalidInputError("embed() takes a sequence of texts, not a single string", field="texts")
    items = list(texts)
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise InvalidInputError(f"texts[{i}] is {type(t).__name__}, not str", field="texts")
    return items


def check_vectors(vectors: object, n: int, dim: int, name: str) -> Vectors:
    """Validate an embedder's output and return it as a C-contiguous float32 array.

    Args:
        vectors: what the backend produced (an array or nested sequence).
        n: the number of input texts; exactly one row per text is required.
        dim: the embedder's dimension.
        name: the embedder's name, for the error message.

    Returns:
        ``vectors`` as a ``(n, dim)`` float32 array.

    Raises:
        EmbeddingError: wrong shape, a non-finite value, or an all-zero row.

    Example:
        >>> check_vectors([[0.6, 0.8]], 1, 2, "demo").shape
        (1, 2)
    """
    try:
        arr = np.ascontiguousarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise EmbeddingError(f"embedder {name!r} returned a non-numeric or ragged result: {e}") from e
    if arr.shape != (n, dim):
        raise EmbeddingError(f"embedder {name!r} returned shape {arr.shape}, expected ({n}, {dim})")
    if n == 0:
        return arr
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        raise EmbeddingError(f"embedder {name!r} returned non-finite values in rows {_rows(bad)}")
    zero = ~arr.any(axis=1)
    if zero.any():
        raise EmbeddingError(f"embedder {name!r} returned all-zero vectors in rows {_rows(zero)}")
    return arr


def l2_normalize(vectors: Vectors) -> Vectors:
    """Scale each row to unit length (rows must be non-zero; see :func:`check_vectors`)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / norms).astype(np.float32, copy=False)


def _rows(mask: object) -> list[int]:
    """At most ten offending row indices, for an error message."""
    return [int(i) for i in np.flatnonzero(np.asarray(mask))[:10]]
