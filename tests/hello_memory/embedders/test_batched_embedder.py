"""BatchedEmbedder, the shared embed() of the backends: input check, sub-batches, output check."""

from __future__ import annotations

import numpy as np
import pytest

from hello_memory.embedders.base import BatchedEmbedder, Embedder
from hello_memory.errors import EmbeddingError, InvalidInputError


class Counting(BatchedEmbedder):
    """A text becomes (len(text), 1, 0); records the batches it is given."""

    name = "counting"
    _dimension = 3

    def __init__(self, batch_size: int | None = None, rows: list[list[float]] | None = None) -> None:
        super().__init__(batch_size=batch_size)
        self.batches: list[list[str]] = []
        self._rows = rows

    def _embed_batch(self, batch: list[str], kind: str) -> list[list[float]]:
        self.batches.append(batch)
        return self._rows if self._rows is not None else [[len(t), 1.0, 0.0] for t in batch]


class Raw(Counting):
    normalize = False


def test_sub_batches_in_order_then_one_checked_normalised_array():
    e = Counting(batch_size=2)
    out = e.embed(["a", "bb", "ccc", "dddd", "e"])
    assert isinstance(e, Embedder)
    assert e.batches == [["a", "bb"], ["ccc", "dddd"], ["e"]]
    assert out.shape == (5, 3) and out.dtype == np.float32 and out.flags.c_contiguous
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    assert Counting().embed(["a", "bb", "ccc"]).tolist() == out[:3].tolist()  # None: one batch
    assert Raw().embed(["ccc"]).tolist() == [[3.0, 1.0, 0.0]]  # normalize = False: as the backend gave it


def test_empty_input_never_reaches_the_backend_and_bad_input_is_refused():
    e = Counting(batch_size=2)
    assert e.embed([]).shape == (0, 3) and e.batches == []
    with pytest.raises(InvalidInputError):
        e.embed("a string")
    with pytest.raises(InvalidInputError):
        e.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="batch_size"):
        Counting(batch_size=0)


@pytest.mark.parametrize("rows", [[[0.0, 0.0, 0.0]], [[float("nan"), 1.0, 0.0]], [[1.0, 0.0]], []])
def test_invalid_backend_output_raises(rows):
    with pytest.raises(EmbeddingError, match="counting"):
        Counting(rows=rows).embed(["x"])


def test_the_model_is_created_once_on_first_use():
    class Lazy(Counting):
        created = 0

        def _create(self) -> object:
            Lazy.created += 1
            return object()

    e = Lazy()
    assert Lazy.created == 0
    assert e._load() is e._load() and Lazy.created == 1
    with pytest.raises(NotImplementedError):
        Counting()._load()
