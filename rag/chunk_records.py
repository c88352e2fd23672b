"""The :class:`~hello_memory.stores.chunks.base.ChunkStore` protocol on the embedded ``rag.db``.

:class:`SQLiteChunkRecords` is :class:`~rag.store.SQLiteChunkStore` plus the protocol's calls, built
on its existing statements (which ``rag.indexer`` keeps calling until it moves onto the protocol).
``put_document`` is one transaction: the document row, its chunks, their FTS5 tokens and the
``index`` marker commit together; vectors go to the data directory's vector index, written by the
caller, which then settles the marker.

Example:
    >>> import tempfile, uuid
    >>> from datetime import datetime, timezone
    >>> from hello_memory.stores.chunks.base import ChunkRecord, DocumentRecord
    >>> store = SQLiteChunkRecords(tempfile.mkdtemp() + "/rag.db")
    >>> doc = DocumentRecord("docs", "guide", None, "Guide", "md", 1, 5, datetime.now(timezone.utc))
    >>> chunk = ChunkRecord(str(uuid.uuid4()), "docs", "guide", 0, "Install with pip.", 0, 17, "Guide", "en", 5)
    >>> store.put_document(doc, [chunk])
    >>> list(store.lexical_search("docs", ["instal"], limit=3)) == [chunk.chunk_id]
    True
    >>> store.close()
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone

from hello_memory.errors import InvalidInputError
from hello_memory.language.text import lexical_tokens
from hello_memory.stores.chunks.base import ChunkRecord, DocumentRecord, PendingDocument
from hello_memory.stores.records.base import PendingOp
from hello_memory.stores.vectors.rules import is_canonical_uuid
from rag.models import DocumentInfo
from rag.store import SQLiteChunkStore


class SQLiteChunkRecords(SQLiteChunkStore):
    """Documents and chunks in SQLite, through the chunk-store protocol."""

    @property
    def backend(self) -> str:
        """``"sqlite"``."""
        return "sqlite"

    @property
    def keeps_vectors(self) -> bool:
        """False: passages go to the data directory's vector index."""
        return False

    def put_document(self, document: DocumentRecord, chunks: Sequence[ChunkRecord]) -> None:
        """Replace the document and its chunks in one transaction, leaving an ``index`` marker."""
        for c in chunks:
            if (c.namespace, c.document_id) != (document.namespace, document.document_id):
                raise InvalidInputError("every chunk must belong to the document", field="chunks")
            if not is_canonical_uuid(c.chunk_id):
                raise InvalidInputError(
                    f"chunk id {c.chunk_id!r} is not a lowercase UUID string", field="chunk_id"
                )
        info = DocumentInfo(
            document_id=document.document_id,
            source_path=document.source_path,
            title=document.title,
            format=document.format,
            chunks=document.chunks,
            tokens=document.tokens,
            added_at=document.added_at,
        )
        ns, doc_id = document.namespace, document.document_id
        with self.transaction() as conn:
            self.delete_document_rows(conn, ns, doc_id)
            self.insert_document(conn, info, ns, document.metadata)
            for c in chunks:
                row = (
                    c.chunk_id,
                    ns,
                    doc_id,
                    c.index,
                    c.text,
                    c.start,
                    c.end,
                    c.heading_path,
                    c.language,
                    c.tokens,
                )
                self.insert_chunk(conn, row, lexical_tokens(c.lexical or c.text))
            self.set_pending(conn, ns, doc_id, PendingOp.INDEX.value)

    def remove_document(self, namespace: str, document_id: str) -> int:
        """Delete the document's rows, tokens and marker; returns the chunks deleted."""
        with self.transaction() as conn:
            n = self.delete_document_rows(conn, namespace, document_id)
            conn.execute("DELETE FROM pending WHERE namespace=? AND document_id=?", (namespace, document_id))
        return n

    def list_documents(self, namespace: str) -> list[DocumentRecord]:
        """The namespace's documents, oldest first."""
        rows = self.query(
            "SELECT document_id, source_path, title, format, chunks, tokens, added_at, metadata FROM documents "
            "WHERE namespace=? ORDER BY added_at, document_id",
            (namespace,),
        )
        return [
            DocumentRecord(
                namespace,
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                datetime.fromtimestamp(r[6], tz=timezone.utc),
                json.loads(r[7]),
            )
            for r in rows
        ]

    def get_chunks(
        self, namespace: str, ids: Sequence[str] | None = None, *, document_id: str | None = None
    ) -> dict[str, ChunkRecord]:
        """Chunks by id (or of one document / the namespace), in document and index order."""
        rows = self.chunks(
            namespace, None if ids is None else list(dict.fromkeys(ids)), document_id=document_id
        )
        return {cid: ChunkRecord(*row) for cid, row in rows.items()}

    def mark(self, namespace: str, document_id: str, op: PendingOp) -> None:
        """Set a document's pending marker."""
        with self.transaction() as conn:
            self.set_pending(conn, namespace, document_id, PendingOp(op).value)

    def settle(self, namespace: str, document_id: str) -> None:
        """Clear a document's pending marker."""
        self.clear_pending(namespace, document_id)

    def unsettled(self) -> list[PendingDocument]:
        """Pending work of every namespace."""
        return [PendingDocument(ns, doc, PendingOp(op)) for ns, doc, op in self.pending()]
