"""BM25 (bm25s) over :func:`hello_memory.language.text.lexical_tokens`: stemmed English, jieba + bigrams."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.language.text import lexical_tokens


class BM25Index:
    """BM25 scores of one corpus for any query.

    Example:
        >>> idx = BM25Index(["the cat sat", "dogs bark loudly"])
        >>> int(idx.scores("barking dog").argmax())
        1
    """

    def __init__(self, texts: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        import bm25s

        self._n = len(texts)
        self._bm25: Any = bm25s.BM25(k1=k1, b=b)
        # bm25s cannot index an empty token list; a placeholder token keeps ids aligned.
        tokens = [lexical_tokens(t) or ["\x00"] for t in texts]
        if tokens:
            self._bm25.index(tokens, show_progress=False)

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        """One BM25 score per document (zeros when the query has no lexical tokens)."""
        tokens = lexical_tokens(query)
        if not tokens or not self._n:
            return np.zeros(self._n, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(tokens), dtype=np.float32)
