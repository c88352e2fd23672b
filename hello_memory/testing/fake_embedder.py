"""Embedders for tests: a deterministic fake and one that fails on demand."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

import numpy as np

from hello_memory.embedders.base import BatchedEmbedder
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


class DeterministicFakeEmbedder(BatchedEmbedder):
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
        super().__init__()
        self._dimension = dimension
        self._lock = threading.Lock()
        self.calls: list[EmbedCall] = []

    @property
    def name(self) -> str:
        """``"fake-sha256:<dimension>"``."""
        return f"fake-sha256:{self._dimension}"

    def _prepare(self, items: list[str], kind: str) -> list[str]:
        """Record the call."""
        self._record(items, kind)
        return items

    def _record(self, items: list[str], kind: str) -> int:
        """Append the call to :attr:`calls`; return its number (1 for the first)."""
        with self._lock:
            self.calls.append(EmbedCall(tuple(items), kind))
            return len(self.calls)

    def _embed_batch(self, batch: list[str], kind: str) -> np.ndarray:
        out = np.empty((len(batch), self._dimension), dtype=np.float32)
        for i, text in enumerate(batch):
            out[i] = fake_vector(text, self._dimension)
        return out


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

    def _prepare(self, items: list[str], kind: str) -> list[str]:
        """Record the call, then fail as configured."""
        if self._should_fail(items, self._record(items, kind)):
            raise EmbeddingError(f"FailingEmbedder: {self._message}")
        return items

    def _should_fail(self, items: list[str], call_no: int) -> bool:
        if call_no <= self._succeed_calls:
            return False
        if self._fail_on is None:
            return True
        return any(self._fail_on in t for t in items)


class GatedEmbedder(DeterministicFakeEmbedder):
    """The fake embedder, whose calls holding a text that contains ``marker`` wait until :attr:`gate` opens.

    Tests decide when a slow operation ends, and know when it has begun (:attr:`waiting` is released
    once per call that reached the gate), so nothing in them is timed. Only passage calls wait,
    unless ``queries``.

    Example:
        >>> embedder = GatedEmbedder()
        >>> embedder.gate.set()                       # open: nothing waits
        >>> embedder.embed(["a SLOW text"], kind="passage").shape
        (1, 32)
    """

    def __init__(self, dimension: int = 32, *, marker: str = "SLOW", queries: bool = False,
                 timeout: float = 30.0) -> None:
        super().__init__(dimension)
        self.marker = marker
        self.queries = queries
        self.timeout = timeout
        self.gate = threading.Event()
        self.waiting = threading.Semaphore(0)

    def _embed_batch(self, batch: list[str], kind: str) -> np.ndarray:
        if (self.queries or kind != "query") and any(self.marker in t for t in batch):
            self.waiting.release()
            if not self.gate.wait(self.timeout):
                raise EmbeddingError(f"GatedEmbedder: the test never opened the gate ({self.timeout:g} s)")
        return super()._embed_batch(batch, kind)

    def reached(self, timeout: float | None = None) -> bool:
        """Wait until a call has reached the gate (one per call; ``timeout`` default the embedder's)."""
        return self.waiting.acquire(timeout=self.timeout if timeout is None else timeout)

    def passages_of(self, marker: str) -> int:
        """How many passage calls held a text containing ``marker``."""
        return sum(1 for c in self.calls if c.kind != "query" and any(marker in t for t in c.texts))
