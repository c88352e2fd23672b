"""Build the configured embedder, and the output check every embedder runs before returning.

Backends are imported inside :func:`make_embedder` so that choosing one never imports another
(or its optional dependency).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hello_memory.embedders.base import Embedder, Vectors
from hello_memory.errors import EmbeddingError, InvalidInputError

if TYPE_CHECKING:
    from hello_memory.settings import Settings

logger = logging.getLogger(__name__)


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


def make_embedder(settings: Settings) -> Embedder:
    """Build the embedder that ``settings.resolved_embedder()`` names.

    Nothing is loaded or connected here; models load on the first ``embed`` call.

    Example:
        >>> from hello_memory.settings import Settings
        >>> make_embedder(Settings(embedder="tfidf")).name
        'hashing-tfidf-v1:1024'
    """
    kind = settings.resolved_embedder()
    logger.debug("building embedder %s", kind)
    if kind == "e5":
        from hello_memory.embedders.e5 import E5Embedder

        return E5Embedder(engine=settings.e5_engine)
    if kind == "sentence-transformers":
        from hello_memory.embedders.sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(settings.embedder_model, batch_size=settings.embed_batch_size)
    if kind == "dashscope":
        from hello_memory.embedders.dashscope import DashScopeEmbedder

        if settings.dashscope_api_key is None:
            raise InvalidInputError(
                "embedder 'dashscope' needs DASHSCOPE_API_KEY to be set", field="dashscope_api_key"
            )
        return DashScopeEmbedder(
            settings.dashscope_api_key.get_secret_value(),
            model=settings.dashscope_embedding_model,
            base_url=settings.dashscope_base_url,
        )
    from hello_memory.embedders.hashing import HashingTfidfEmbedder

    return HashingTfidfEmbedder()
