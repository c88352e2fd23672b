"""Embedders for tests: a deterministic fake and one that fails on demand."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hello_memory.embedders.base import Vectors
from hello_memory.embedders.factory import check_texts, check_vectors, l2_normalize
from hello_memory.errors import EmbeddingError, InvalidInputError


@dataclass(frozen=True, slots=True)
class EmbedCall:
    """One recorded ``embed`` call."""

    texts: tuple[str, ...]
    kind: str


def fake_vector(text: str, dimension: int) -> np.ndarray:
    """A unit vector derived from SHA-256 of ``text`` alone.

    The bytes come from SHA-256 in counter mode (not from numpy's generators, whose streams may
    change between numpy versions), so a text maps to the same vector in every process.
    """
    data = text.encode("utf-8", "surrogatepass")
    need = 4 * dimension
    stream = b"".join(hashlib.sha256(i.to_bytes(4, "little") + data).digest() for i in range(-(-need // 32)))
    raw = np.frombuffer(stream[:need], dtype="<u4").astype(np.float64)
    vec = raw / 2.0**31 - 1.0  # uniform in [-1, 1)
    return (vec / np.linalg.norm(vec)).astype(np.float32)


class DeterministicFakeEmbedder:
    """Unit vectors seeded from SHA-256 of each text, for unit tests and the offline demo.

    Equal texts get equal vectors (in every process); different texts get unrelated ones, so
    only exact matches score near 1. ``kind`` has no effect, so a text found as a query matches
    the same text stored as a passage. Every call is recorded in :attr:`calls`.

    Example:
        >>> e = DeterministicFakeEmbedder(dimension=8)
        >>> a, b = e.embed(["hi", "hi"])
        >>> bool((a == b).all()), e.name
        (True, 'fake-sha256:8')
    """

    def __init__(self, dimension: int = 32) -> None:
        if dimension < 1:
            raise InvalidInputError("dimension must be >= 1", field="dimension")
        self._dimension = dimension
        self._lock = threading.Lock()
        self.calls: list[EmbedCall] = []

    @property
    def name(self) -> str:
        """``"fake-sha256:<dimension>"``."""
        return f"fake-sha256:{self._dimension}"

    @property
    def dimension(self) -> int:
        """Vector length."""
        return self._dimension

    def embed(self, texts: Sequence[str], *, kind: str = "passage") -> Vectors:
        """Embed ``texts`` deterministically and record the call."""
        items = check_texts(texts)
        with self._lock:
            self.calls.append(EmbedCall(tuple(items), kind))
        return self._vectors(items)

    def _vectors(self, items: list[str]) -> Vectors:
        out = np.empty((len(items), self._dimension), dtype=np.float32)
        for i, text in enumerate(items):
            out[i] = fake_vector(text, self._dimension)
        return l2_normalize(check_vectors(out, len(items), self._dimension, self.name))


class FailingEmbedder(DeterministicFakeEmbedder):
    """Raises :class:`EmbeddingError`, to test that a failed embed writes nothing.

    By default every call fails. With ``fail_on`` only calls holding a text that contains that
    substring fail; with ``succeed_calls=n`` the first ``n`` calls succeed (as the fake does)
    and later ones fail. Every call, failed or not, is recorded in :attr:`calls`.

    It has the fake's name, so the two can share a collection.

    Example:
        >>> FailingEmbedder(fail_on="poison").embed(["fine"]).shape
        (1, 32)
    """

    def __init__(
        self,
        dimension: int = 32,
        *,
        fail_on: str | None = None,
        succeed_calls: int = 0,
        message: str = "boom",
    ) -> None:
        super().__init__(dimension)
        self._fail_on = fail_on
        self._succeed_calls = succeed_calls
        self._message = message

    def embed(self, texts: Sequence[str], *, kind: str = "passage") -> Vectors:
        """Fail as configured, else embed like :class:`DeterministicFakeEmbedder`."""
        items = check_texts(texts)
        with self._lock:
            self.calls.append(EmbedCall(tuple(items), kind))
            call_no = len(self.calls)
        if self._should_fail(items, call_no):
            raise EmbeddingError(f"FailingEmbedder: {self._message}")
        return self._vectors(items)

    def _should_fail(self, items: list[str], call_no: int) -> bool:
        if call_no <= self._succeed_calls:
            return False
        if self._fail_on is None:
            return True
        return any(self._fail_on in t for t in items)
