"""The passages of the embedded chunk store, in the data directory's vector index (``rag_passages``).

One point per passage of a chunk: id :func:`passage_id` ``(chunk, i)``, the passage's vector, and
a payload of filter keys and the chunk's offsets (:func:`payload`). A chunk's dense score is its
best passage's cosine.

Example:
    >>> import uuid
    >>> from hello_memory.stores.vectors.memory import InMemoryVectorStore
    >>> from hello_memory.testing.chunk_store import FakePassages, document
    >>> index = PassageIndex(InMemoryVectorStore(), FakePassages())
    >>> doc, chunks = document("docs", "guide", ["Install with pip."])
    >>> index.ensure()
    >>> index.write(index.points(chunks))
    >>> index.ids("docs", "guide") == {passage_id(chunks[0].chunk_id, 0)}
    True
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hello_memory.errors import InvalidInputError
from hello_memory.stores.chunks.base import MAX_PASSAGES, ChunkRecord, PassageEncoder
from hello_memory.stores.vectors.base import Filter, VectorHit, VectorPoint, VectorStore, as_float32

COLLECTION = "rag_passages"
LEGACY_COLLECTION = "rag_chunks"  # one vector per chunk (before passages); migrated on open
PASSAGE_POOL = 4  # passages fetched per wanted chunk in a dense search
_BATCH = 256
_PASSAGE_NAMESPACE = uuid.UUID("0b8f7d2e-3c41-4d6a-9e85-7a2c61f4b0d3")


def passage_id(chunk_id: str, index: int) -> str:
    """Idempotent id of a chunk's ``index``-th passage in the vector index."""
    return str(uuid.uuid5(_PASSAGE_NAMESPACE, f"{chunk_id}\x1f{index}"))


def payload(chunk: ChunkRecord) -> dict[str, Any]:
    """Vector payload of a chunk's passages: filter keys and the chunk's offsets, never its text.

    SQLite is the source of truth for the text (headings and file paths included); keeping it out
    of the vector index means a deleted document's words cannot linger in vector segments or their
    write-ahead log.
    """
    return {
        "namespace": chunk.namespace,
        "document_id": chunk.document_id,
        "chunk_id": chunk.chunk_id,
        "start": chunk.start,
        "end": chunk.end,
        "language": chunk.language,
    }


def _of_document(namespace: str, document_id: str) -> Filter:
    return Filter(equals={"namespace": namespace, "document_id": document_id})


def best_by_chunk(hits: Iterable[VectorHit]) -> dict[str, float]:
    """Chunk id -> the best score among its passages' hits."""
    best: dict[str, float] = {}
    for h in hits:
        chunk = h.payload.get("chunk_id")
        if isinstance(chunk, str) and h.score > best.get(chunk, -2.0):
            best[chunk] = h.score
    return best


class PassageIndex:
    """Passage vectors of chunks in a :class:`~hello_memory.stores.vectors.base.VectorStore`.

    Without a vector store (``vectors=None``) there are no passages: writes of chunks carrying
    passages are refused and searches find nothing.
    """

    def __init__(self, vectors: VectorStore | None, encoder: PassageEncoder | None) -> None:
        if (vectors is None) != (encoder is None):
            raise InvalidInputError(
                "give both a vector store and a passage encoder, or neither", field="vectors"
            )
        self._vs, self._encoder = vectors, encoder

    def _holding(self, name: str = COLLECTION) -> VectorStore | None:
        """The vector store, when it has the collection ``name``."""
        vs = self._vs
        return vs if vs is not None and name in vs.collections() else None

    def ensure(self) -> None:
        """Create the collection (or check it holds this embedder's vectors)."""
        if self._vs is not None and self._encoder is not None:
            self._vs.ensure_collection(COLLECTION, self._encoder.dimension, embedder=self._encoder.name)

    def points(self, chunks: Sequence[ChunkRecord]) -> list[VectorPoint]:
        """The passage points of ``chunks`` (those carrying passages), in passage order."""
        points = []
        for c in chunks:
            if c.passages is None:
                continue
            if self._vs is None:
                raise InvalidInputError("this chunk store keeps no passage vectors", field="passages")
            rows = np.asarray(c.passages)
            if rows.ndim != 2 or not 0 < len(rows) <= MAX_PASSAGES:
                raise InvalidInputError(
                    f"passages must be an (n, dimension) array with 1 <= n <= {MAX_PASSAGES}",
                    field="passages",
                )
            data = payload(c)
            points += [
                VectorPoint(id=passage_id(c.chunk_id, i), vector=v, payload=data) for i, v in enumerate(rows)
            ]
        return points

    def ids(self, namespace: str, document_id: str) -> set[str]:
        """The ids of a document's passages."""
        vs = self._holding()
        return set(vs.ids(COLLECTION, _of_document(namespace, document_id))) if vs else set()

    def write(self, points: Sequence[VectorPoint]) -> None:
        """Upsert passage points (beside any earlier version's)."""
        for start in range(0, len(points), _BATCH):
            assert self._vs is not None  # points() refuses passages without a vector store
            self._vs.upsert(COLLECTION, points[start : start + _BATCH])

    def delete(self, ids: Sequence[str]) -> None:
        """Delete passages by id."""
        if ids and self._vs is not None:
            self._vs.delete(COLLECTION, list(ids))

    def delete_document(self, namespace: str, document_id: str) -> None:
        """Delete every passage of a document."""
        vs = self._holding()
        if vs is not None:
            vs.delete_where(COLLECTION, _of_document(namespace, document_id))

    def count(self, equals: dict[str, Any]) -> int:
        """Passages matching ``equals``."""
        vs = self._holding()
        return len(vs.ids(COLLECTION, Filter(equals=equals))) if vs else 0

    def search(self, namespace: str, vector: npt.ArrayLike, limit: int) -> dict[str, float]:
        """Chunk id -> its best passage's cosine, for about ``limit`` chunks of the namespace."""
        if self._encoder is None:
            raise InvalidInputError("this chunk store has no passage vectors (no embedder configured)")
        vs = self._holding()
        if vs is None or int(limit) <= 0:
            return {}
        where = Filter(equals={"namespace": namespace})
        return best_by_chunk(
            vs.search(COLLECTION, as_float32(vector), limit=int(limit) * PASSAGE_POOL, where=where)
        )

    def scores(self, namespace: str, vector: npt.ArrayLike, ids: Sequence[str]) -> dict[str, float]:
        """Chunk id -> its best passage's cosine with ``vector``, for the chunks among ``ids``."""
        wanted, vs = list(dict.fromkeys(ids)), self._holding()
        if not wanted or vs is None:
            return {}
        where = Filter(equals={"namespace": namespace, "chunk_id": wanted})
        # every passage of the wanted chunks: none has more than MAX_PASSAGES
        limit = len(wanted) * MAX_PASSAGES
        return best_by_chunk(vs.search(COLLECTION, as_float32(vector), limit=limit, where=where))

    def reconcile(self, namespace: str, document_id: str, chunks: Iterable[ChunkRecord]) -> None:
        """Make a document's passages those of ``chunks`` (its committed rows): drop others, embed missing."""
        if self._vs is None or self._encoder is None:
            return
        expected = {}
        for c in chunks:
            for i, text in enumerate(self._encoder.texts(c)):
                expected[passage_id(c.chunk_id, i)] = (text, payload(c))
        self.ensure()
        present = self.ids(namespace, document_id)
        self.delete(sorted(present - set(expected)))
        missing = [(pid, *expected[pid]) for pid in expected if pid not in present]
        if missing:
            vectors = self._encoder.embed([text for _, text, _ in missing])
            self.write(
                [VectorPoint(id=pid, vector=vectors[i], payload=p) for i, (pid, _, p) in enumerate(missing)]
            )

    def has_legacy(self) -> bool:
        """True while a one-vector-per-chunk collection of an earlier version is left to migrate."""
        return self._holding(LEGACY_COLLECTION) is not None

    def drop_legacy(self) -> None:
        """Drop the legacy collection once every document's passages are written."""
        if self._vs is not None:
            self._vs.drop_collection(LEGACY_COLLECTION)
