"""Hashed TF-IDF-style vectors: no model, no fitting, the same vector in every process."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

import numpy as np

from hello_memory.embedders.base import BatchedEmbedder
from hello_memory.errors import InvalidInputError
from hello_memory.language.text import lexical_tokens

# Feature-name prefixes keep the three feature families apart in the hash space.
_CHAR_PREFIX = "\x01c:"
_EMPTY_FEATURE = "\x00empty"


class HashingTfidfEmbedder(BatchedEmbedder):
    """Feature-hashed bag of lexical tokens: a lexical fallback when no neural model is wanted.

    Recipe, fixed so that a vector never changes between processes or machines:

    - tokens from :func:`hello_memory.language.text.lexical_tokens` (stemmed Latin words; jieba words plus
      character bigrams for Chinese);
    - each token hashed with BLAKE2b (not Python's per-process salted ``hash``) to a bucket and a
      sign (signed hashing, so collisions cancel out on average instead of piling up);
    - sublinear term frequency ``1 + log(tf)``; no idf (there is no corpus to fit on);
    - rows L2-normalised.

    Every input gets a non-zero row. Text with no lexical token (``"!!!"``, emoji) is hashed
    from its non-space characters instead; empty or whitespace-only text gets one fixed
    "empty" feature; and the rare row whose signed features cancel out exactly gets that feature
    too. ``kind`` is ignored (queries and passages are embedded alike).

    Args:
        dimension: number of hash buckets (vector length).

    Example:
        >>> e = HashingTfidfEmbedder(dimension=256)
        >>> v = e.embed(["向量数据库", "vector database", "!!!"])
        >>> v.shape, e.name
        ((3, 256), 'hashing-tfidf-v1:256')
    """

    def __init__(self, dimension: int = 1024) -> None:
        if dimension < 2:
            raise InvalidInputError("dimension must be >= 2", field="dimension")
        super().__init__()
        self._dimension = dimension

    @property
    def name(self) -> str:
        """``"hashing-tfidf-v1:<dimension>"``; the version changes whenever the recipe does."""
        return f"hashing-tfidf-v1:{self._dimension}"

    def _embed_batch(self, batch: list[str], kind: str) -> np.ndarray:
        out = np.zeros((len(batch), self._dimension), dtype=np.float32)
        for row, text in enumerate(batch):
            self._fill(out[row], text)
        return out

    def _fill(self, row: np.ndarray, text: str) -> None:
        features = lexical_tokens(text) or [_CHAR_PREFIX + c for c in text if not c.isspace()]
        _add(row, Counter(features or [_EMPTY_FEATURE]).items(), self._dimension)
        if not row.any():  # every feature cancelled out: fall back to the fixed feature
            _add(row, [(_EMPTY_FEATURE, 1)], self._dimension)


def _add(row: np.ndarray, counts: Iterable[tuple[str, int]], dimension: int) -> None:
    """Add ``sign * (1 + log tf)`` of each feature into its bucket."""
    for feature, tf in counts:
        bucket, sign = _bucket(feature, dimension)
        row[bucket] += sign * (1.0 + math.log(tf))


@lru_cache(maxsize=65536)
def _bucket(feature: str, dimension: int) -> tuple[int, float]:
    """Stable (bucket, ±1) for a feature: 64 bits of BLAKE2b, low bit for the sign."""
    digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    h = int.from_bytes(digest, "little")
    return (h >> 1) % dimension, (1.0 if h & 1 else -1.0)
