"""Chunk store contract: RAG documents and their chunks, per namespace, with lexical and dense search.

Why a protocol of its own rather than a generalised record store: a chunk shares a memory's
storage shape (a keyed record with text, a lexical document and dense vectors), but not its
write unit or reads. A document is written and replaced *whole* (all its chunks at once, re-adding
replaces them), has no versions or history, is scoped by namespace instead of user, and a chunk
has several dense vectors (its passages: a chunk's dense score is its best passage's cosine). One
generic store would type its records as dicts; two small role-shaped protocols keep them typed.

Backends, one per mode, chosen once by :func:`hello_memory.stores.chunks.open.open_chunk_store`:
:class:`~hello_memory.stores.chunks.sqlite.SQLiteChunkStore` (embedded: ``rag.db`` for the rows and
the lexical index, the data directory's vector index for the passages) and
:class:`~hello_memory.stores.chunks.qdrant.QdrantChunkStore` (server mode: each chunk one point with
its passages as a multivector, ``MAX_SIM``, and a sparse lexical vector). Both pass
:class:`hello_memory.testing.chunk_store.ChunkStoreContract`.

Semantics (the same in both modes):

- :meth:`ChunkStore.put_document` is the one write unit: it replaces the document, all its chunks
  and their passage vectors. When it raises :class:`~hello_memory.errors.StoreError` the earlier
  version is kept as it was (a new document leaves nothing); a reader never sees a chunk of a
  failed write (with Qdrant, for the moment between two operations, chunks of both versions).
  A process killed midway leaves a pending marker that :meth:`ChunkStore.recover` finishes or
  undoes when the store is next opened. Chunk ids are derived from (namespace, document, chunk)
  and name the chunk's content (``rag`` hashes its heading path and text into them), so re-putting
  the same document is idempotent and a chunk id both versions share holds the same passages.
- :meth:`ChunkStore.remove_document` removes the document, its chunks, its passages and its
  marker (marker first, so a crash midway is finished by :meth:`ChunkStore.recover`); ``residue``
  proves it.
- Dense scores are a chunk's best passage cosine (higher is better); lexical scores are BM25-style.
- Every call is scoped by namespace, except :meth:`ChunkStore.unsettled` and
  :meth:`ChunkStore.recover`, which span every namespace.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from hello_memory.errors import InvalidInputError, StoreError
from hello_memory.stores.records.base import PendingOp
from hello_memory.stores.vectors.rules import is_canonical_uuid

logger = logging.getLogger(__name__)
MAX_PASSAGES = 16  # passages of one chunk, at most (a longer chunk gets longer passages)


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """A document of a namespace, as stored."""

    namespace: str
    document_id: str
    source_path: str | None
    title: str | None
    format: str
    chunks: int
    tokens: int
    added_at: datetime
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One chunk of a document.

    Attributes:
        chunk_id: full UUID (derived from namespace, document and chunk by ``rag``).
        lexical: the text the lexical index holds (``rag``: heading path + text).
        passages: the dense vectors of the chunk's passages, ``(n, dim)`` with ``n <= MAX_PASSAGES``,
            when writing (``None`` in what reads return).
    """

    chunk_id: str
    namespace: str
    document_id: str
    index: int
    text: str
    start: int
    end: int
    heading_path: str
    language: str
    tokens: int
    lexical: str = ""
    passages: npt.NDArray[np.float32] | None = None


@dataclass(frozen=True, slots=True)
class PendingDocument:
    """Unfinished work on one document."""

    namespace: str
    document_id: str
    op: PendingOp


@runtime_checkable
class PassageEncoder(Protocol):
    """How a chunk becomes passage vectors: what a store needs to re-embed passages it lost.

    ``rag`` implements it (its passage splitter over an embedder); a store whose passages live
    with its chunks never calls :meth:`texts` or :meth:`embed`, only reads the identity.
    """

    @property
    def name(self) -> str:
        """The embedder's name (a collection records the embedder that filled it)."""
        ...

    @property
    def dimension(self) -> int:
        """Length of a passage vector."""
        ...

    def texts(self, chunk: ChunkRecord) -> list[str]:
        """The embedded texts of a chunk's passages, in passage order."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Passage vectors for ``texts``, ``(len(texts), dimension)``."""
        ...


@runtime_checkable
class ChunkStore(Protocol):
    """RAG documents and chunks per namespace (see the module docstring for the semantics)."""

    @property
    def backend(self) -> str:
        """Short backend name."""
        ...

    def put_document(self, document: DocumentRecord, chunks: Sequence[ChunkRecord]) -> None:
        """Store (or replace) a document, all its chunks and their passages, as one unit.

        Raises:
            InvalidInputError: a chunk of another document, a malformed id or passage matrix
                (nothing written).
            StoreError: the write failed; the earlier version is kept (see the module docstring).
        """
        ...

    def remove_document(self, namespace: str, document_id: str) -> int:
        """Delete a document, its chunks, passages and marker; returns the number of chunks deleted."""
        ...

    def recover(self) -> int:
        """Finish or undo the writes and deletions a killed process left; returns how many."""
        ...

    def list_documents(self, namespace: str) -> list[DocumentRecord]:
        """The namespace's documents, oldest first."""
        ...

    def has_document(self, namespace: str, document_id: str) -> bool:
        """True if the namespace holds the document (a finished write)."""
        ...

    def get_chunks(
        self, namespace: str, ids: Sequence[str] | None = None, *, document_id: str | None = None
    ) -> dict[str, ChunkRecord]:
        """Chunks by id (or all of one document / the namespace), in document and index order."""
        ...

    def lexical_search(self, namespace: str, tokens: Sequence[str], limit: int) -> dict[str, float]:
        """BM25-style scores (higher is better) of the namespace's chunks matching any token."""
        ...

    def dense_search(self, namespace: str, vector: npt.ArrayLike, limit: int) -> dict[str, float]:
        """Chunk id -> its best passage's cosine, for about ``limit`` chunks nearest to ``vector``."""
        ...

    def dense_scores(self, namespace: str, vector: npt.ArrayLike, ids: Sequence[str]) -> dict[str, float]:
        """Chunk id -> its best passage's cosine with ``vector``, for the chunks among ``ids``."""
        ...

    def unsettled(self) -> list[PendingDocument]:
        """Pending work of every namespace (what :meth:`recover` will finish)."""
        ...

    def residue(self, namespace: str, document_id: str | None = None) -> dict[str, int]:
        """What is left of a namespace (or one document) per kind: 0 everywhere after deleting it."""
        ...

    def scrub(self) -> None:
        """Physically drop deleted data where the backend keeps it (embedded files); no-op elsewhere."""
        ...

    def close(self) -> None:
        """Release what this store opened; idempotent."""
        ...


def check_chunks(document: DocumentRecord, chunks: Sequence[ChunkRecord]) -> None:
    """Every chunk belongs to ``document`` and has a canonical UUID (before anything is written)."""
    for c in chunks:
        if (c.namespace, c.document_id) != (document.namespace, document.document_id):
            raise InvalidInputError("every chunk must belong to the document", field="chunks")
        if not is_canonical_uuid(c.chunk_id):
            raise InvalidInputError(
                f"chunk id {c.chunk_id!r} is not a lowercase UUID string", field="chunk_id"
            )


def write_failed(document_id: str, replaced: bool, error: Exception) -> StoreError:
    """The error of a failed :meth:`ChunkStore.put_document`, saying what was kept."""
    kept = "its earlier version is kept" if replaced else "nothing of it was kept"
    return StoreError(f"indexing {document_id!r} failed; {kept}: {error}")


def log_recovery(pending: PendingDocument) -> None:
    """Say which interrupted write recovery finishes or undoes (a process died in the middle of it)."""
    logger.warning(
        "recovering interrupted %s of document %s in namespace %s",
        pending.op.value,
        pending.document_id,
        pending.namespace,
    )
