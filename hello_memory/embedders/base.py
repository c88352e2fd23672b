"""The embedder contract."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

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
