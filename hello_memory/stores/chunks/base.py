"""Chunk store contract: RAG documents and their chunks, per namespace, with a lexical index.

Why a protocol of its own rather than a generalised record store: a chunk shares a memory's
storage shape (a keyed record with text, a lexical document and dense vectors), but not its
write unit or reads. A document is written and replaced *whole* (all its chunks at once, re-adding
replaces them), has no versions or history, is scoped by namespace instead of user, and a chunk
has several dense vectors (its passages: a chunk's dense score is its best passage's cosine). One
generic store would type its records as dicts; two small role-shaped protocols keep them typed.
The storage contracts live here, below ``rag``, like the other stores; ``rag`` maps its
``DocumentInfo`` onto :class:`DocumentRecord`.

Backends: :class:`rag.chunk_records.SQLiteChunkRecords` (the embedded ``rag.db``) and
:class:`~hello_memory.stores.chunks.qdrant.QdrantChunkStore` (server mode: each chunk one point
with its passages as a multivector, ``MAX_SIM``, and a sparse lexical vector). Both pass
:class:`hello_memory.testing.chunk_store.ChunkStoreContract`.

Semantics:

- ``put_document`` replaces the document and all its chunks. A reader sees the old version or the
  new one — with Qdrant, for the moment between two operations, chunks of both — never a chunk
  of a write that failed. The document stays *pending* (``index``) until :meth:`ChunkStore.settle`,
  so a crash before the vectors are written is found by :meth:`ChunkStore.unsettled`. Re-putting
  the same document is idempotent (chunk ids are derived from namespace, document and index).
- ``delete_document`` removes the document, its chunks and its marker; ``residue`` proves it.
- Every call is scoped by namespace, except :meth:`ChunkStore.unsettled` (recovery).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from hello_memory.stores.records.base import PendingOp


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
        chunk_id: full UUID (derived from namespace, document and index by ``rag``).
        lexical: the text the lexical index holds (``rag``: heading path + text).
        passages: the dense vectors of the chunk's passages, ``(n, dim)``, for stores that keep
            vectors (``None`` otherwise, and in what reads return).
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
class ChunkStore(Protocol):
    """RAG documents and chunks per namespace (see the module docstring for the semantics)."""

    @property
    def backend(self) -> str:
        """Short backend name."""
        ...

    @property
    def keeps_vectors(self) -> bool:
        """True when :attr:`ChunkRecord.passages` are stored with the chunks."""
        ...

    def put_document(self, document: DocumentRecord, chunks: Sequence[ChunkRecord]) -> None:
        """Store (or replace) a document and all its chunks; it stays pending until :meth:`settle`."""
        ...

    def remove_document(self, namespace: str, document_id: str) -> int:
        """Delete a document, its chunks and its marker; returns the number of chunks deleted."""
        ...

    def list_documents(self, namespace: str) -> list[DocumentRecord]:
        """The namespace's documents, oldest first."""
        ...

    def has_document(self, namespace: str, document_id: str) -> bool:
        """True if the namespace holds the document."""
        ...

    def get_chunks(
        self, namespace: str, ids: Sequence[str] | None = None, *, document_id: str | None = None
    ) -> dict[str, ChunkRecord]:
        """Chunks by id (or all of one document / the namespace), in document and index order."""
        ...

    def lexical_search(self, namespace: str, tokens: Sequence[str], limit: int) -> dict[str, float]:
        """BM25-style scores (higher is better) of the namespace's chunks matching any token."""
        ...

    def mark(self, namespace: str, document_id: str, op: PendingOp) -> None:
        """Set a document's pending marker (e.g. ``unindex`` before deleting its vectors)."""
        ...

    def settle(self, namespace: str, document_id: str) -> None:
        """Clear a document's pending marker."""
        ...

    def unsettled(self) -> list[PendingDocument]:
        """Pending work of every namespace (recovery after a crash)."""
        ...

    def residue(self, namespace: str, document_id: str | None = None) -> dict[str, int]:
        """What is left of a namespace (or one document) per kind: 0 everywhere after deleting it."""
        ...

    def scrub(self) -> None:
        """Physically drop deleted data where the backend keeps it (embedded files); no-op elsewhere."""
        ...

    def close(self) -> None:
        """Release resources; idempotent."""
        ...
