"""The embedded chunk store: ``rag.db`` (documents, chunks, an FTS5 BM25 index, a ``pending`` journal)
plus the passages in the data directory's vector index (:mod:`hello_memory.stores.chunks.passage_index`).

Write order of :meth:`SQLiteChunkStore.put_document`, so that a failure at any step loses nothing:
journal the document (``pending``), upsert the new version's passages next to the old ones (their
ids hash the chunk's text, so two versions coexist), replace the document's rows in one SQLite
transaction, then delete the old version's passages and clear the journal. A vector or SQLite
failure before the swap deletes only what was added: a re-added document keeps its earlier
version, searchable as before; a new one leaves nothing behind. A process killed anywhere in
between is reconciled by :meth:`SQLiteChunkStore.recover`: the rows are the truth, passages they
do not have are dropped, missing ones embedded.

Example:
    >>> import tempfile
    >>> from hello_memory.stores.vectors.memory import InMemoryVectorStore
    >>> from hello_memory.testing.chunk_store import FakePassages, document
    >>> store = SQLiteChunkStore(tempfile.mkdtemp() + "/rag.db", vectors=InMemoryVectorStore(), passages=FakePassages())
    >>> doc, chunks = document("docs", "guide", ["Install with pip."])
    >>> store.put_document(doc, chunks)
    >>> list(store.lexical_search("docs", ["instal"], limit=3)) == [chunks[0].chunk_id]
    True
    >>> store.close()
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy.typing as npt

from hello_memory.errors import StoreError
from hello_memory.language.text import lexical_tokens
from hello_memory.stores.chunks.base import (
    ChunkRecord,
    DocumentRecord,
    PassageEncoder,
    PendingDocument,
    check_chunks,
    log_recovery,
    write_failed,
)
from hello_memory.stores.chunks.passage_index import PassageIndex
from hello_memory.stores.records.base import PendingOp
from hello_memory.stores.records.sqlite_lexical import fts_tokens, scope_token
from hello_memory.stores.sqlite_base import SQLiteDatabase
from hello_memory.stores.vectors.base import VectorStore

logger = logging.getLogger(__name__)
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    namespace TEXT NOT NULL, document_id TEXT NOT NULL, source_path TEXT, title TEXT, format TEXT NOT NULL,
    chunks INTEGER NOT NULL, tokens INTEGER NOT NULL, added_at REAL NOT NULL, metadata TEXT NOT NULL,
    PRIMARY KEY (namespace, document_id)
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY, namespace TEXT NOT NULL, document_id TEXT NOT NULL, idx INTEGER NOT NULL,
    text TEXT NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL, heading_path TEXT NOT NULL,
    language TEXT NOT NULL, tokens INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_chunks_doc ON chunks(namespace, document_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(scope, tokens, tokenize='unicode61');
CREATE TABLE IF NOT EXISTS pending (
    namespace TEXT NOT NULL, document_id TEXT NOT NULL, op TEXT NOT NULL, PRIMARY KEY (namespace, document_id)
);
"""
# in ChunkRecord's field order
_CHUNK_COLUMNS = 'chunk_id,namespace,document_id,idx,text,start,"end",heading_path,language,tokens'
_DOCUMENT_COLUMNS = "namespace,document_id,source_path,title,format,chunks,tokens,added_at,metadata"


class SQLiteChunkStore(SQLiteDatabase):
    """Documents and chunks of every namespace in one SQLite file, passages in a vector store.

    Args:
        path: the SQLite file (``":memory:"`` for a private in-memory one).
        vectors: the vector index the passages go to (not closed by this store); with ``passages``,
            or neither for a store without dense search.
        passages: what re-embeds passages a killed write lost, and the embedder the collection records.
    """

    schema = _SCHEMA
    schema_version = SCHEMA_VERSION

    def __init__(
        self, path: str | Path, *, vectors: VectorStore | None = None, passages: PassageEncoder | None = None
    ) -> None:
        super().__init__(path)
        self._passages = PassageIndex(vectors, passages)

    @property
    def backend(self) -> str:
        """``"sqlite"``."""
        return "sqlite"

    # -- writes -------------------------------------------------------------------------------
    def put_document(self, document: DocumentRecord, chunks: Sequence[ChunkRecord]) -> None:
        """Write the new version beside the old one, swap the rows, drop the old passages (see module)."""
        check_chunks(document, chunks)
        points = self._passages.points(chunks)
        ns, doc_id = document.namespace, document.document_id
        replaced = self.has_document(ns, doc_id)
        if points:
            self._passages.ensure()
        before = self._passages.ids(ns, doc_id)
        added = [p.id for p in points if p.id not in before]
        self._mark(ns, doc_id, PendingOp.INDEX)
        try:
            self._write_passages(points)
            with self.transaction() as conn:
                self._delete_rows(conn, ns, doc_id)
                self._insert_document(conn, document)
                for c in chunks:
                    self._insert_chunk(conn, c)
        except Exception as e:
            self._settle(ns, doc_id, added)
            raise write_failed(doc_id, replaced, e) from e
        self._settle(ns, doc_id, sorted(before - {p.id for p in points}))

    def _write_passages(self, points: Sequence[Any]) -> None:
        self._passages.write(points)

    def _settle(self, namespace: str, document_id: str, extra: Sequence[str]) -> None:
        """Delete passages the rows do not have and clear the journal; else leave it to :meth:`recover`."""
        try:
            self._passages.delete(extra)
            with self.transaction() as conn:
                self._clear(conn, namespace, document_id)
        except Exception:  # the rows are consistent; the journal finishes the cleanup on the next open
            logger.warning(
                "could not remove %d stale passage(s) of document %s now; they are removed when "
                "the data directory is next opened",
                len(extra),
                document_id,
                exc_info=True,
            )

    def remove_document(self, namespace: str, document_id: str) -> int:
        """Delete a document's passages, then its rows and tokens (journalled)."""
        self._mark(namespace, document_id, PendingOp.UNINDEX)
        return self._remove(namespace, document_id)

    def _remove(self, namespace: str, document_id: str) -> int:
        self._passages.delete_document(namespace, document_id)
        with self.transaction() as conn:
            n = self._delete_rows(conn, namespace, document_id)
            self._clear(conn, namespace, document_id)
        return n

    def recover(self) -> int:
        """Finish or undo document writes a killed process left in the journal; upgrade a legacy index."""
        pending = self.unsettled()
        for p in pending:
            log_recovery(p)
            if p.op == PendingOp.INDEX and self.has_document(p.namespace, p.document_id):
                # The rows are the truth (the old version, or the new one once swapped): never drop them.
                self._passages.reconcile(p.namespace, p.document_id, self._rows(p.namespace, p.document_id))
                with self.transaction() as conn:
                    self._clear(conn, p.namespace, p.document_id)
            else:
                self._remove(p.namespace, p.document_id)
        self._migrate_legacy()
        return len(pending)

    def _migrate_legacy(self) -> None:
        """Re-embed documents indexed one vector per chunk (before passages), then drop that collection.

        Idempotent: killed midway, the legacy collection is still there and the next open starts over.
        """
        if not self._passages.has_legacy():
            return
        docs = self.query("SELECT namespace, document_id FROM documents ORDER BY namespace, document_id")
        logger.warning(
            "re-embedding %d document(s) as passages (one-time upgrade of the RAG index)", len(docs)
        )
        for ns, document_id in docs:
            self._passages.reconcile(ns, document_id, self._rows(ns, document_id))
        self._passages.drop_legacy()

    # -- rows -----------------------------------------------------------------------------------
    def _mark(self, namespace: str, document_id: str, op: PendingOp) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO pending VALUES (?,?,?)", (namespace, document_id, op.value))

    @staticmethod
    def _clear(conn: sqlite3.Connection, namespace: str, document_id: str) -> None:
        conn.execute("DELETE FROM pending WHERE namespace=? AND document_id=?", (namespace, document_id))

    @staticmethod
    def _delete_rows(conn: sqlite3.Connection, namespace: str, document_id: str) -> int:
        """Delete a document's row, chunks and tokens; returns the number of chunks deleted."""
        where = (namespace, document_id)
        rows = conn.execute("SELECT rowid FROM chunks WHERE namespace=? AND document_id=?", where).fetchall()
        conn.executemany("DELETE FROM chunks_fts WHERE rowid=?", rows)
        n = conn.execute("DELETE FROM chunks WHERE namespace=? AND document_id=?", where).rowcount
        conn.execute("DELETE FROM documents WHERE namespace=? AND document_id=?", where)
        return int(n)

    @staticmethod
    def _insert_document(conn: sqlite3.Connection, d: DocumentRecord) -> None:
        values = (d.namespace, d.document_id, d.source_path, d.title, d.format, d.chunks, d.tokens)
        metadata = json.dumps(d.metadata, ensure_ascii=False)
        conn.execute(
            f"INSERT INTO documents ({_DOCUMENT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
            (*values, d.added_at.timestamp(), metadata),
        )

    @staticmethod
    def _insert_chunk(conn: sqlite3.Connection, c: ChunkRecord) -> None:
        row = (c.chunk_id, c.namespace, c.document_id, c.index, c.text, c.start, c.end)
        cur = conn.execute(
            f"INSERT INTO chunks ({_CHUNK_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (*row, c.heading_path, c.language, c.tokens),
        )
        tokens = " ".join(fts_tokens(lexical_tokens(c.lexical or c.text)))
        conn.execute(
            "INSERT INTO chunks_fts(rowid, scope, tokens) VALUES (?,?,?)",
            (cur.lastrowid, scope_token(c.namespace), tokens),
        )

    # -- reads ----------------------------------------------------------------------------------
    def _rows(self, namespace: str, document_id: str) -> list[ChunkRecord]:
        return list(self.get_chunks(namespace, document_id=document_id).values())

    def get_chunks(
        self, namespace: str, ids: Sequence[str] | None = None, *, document_id: str | None = None
    ) -> dict[str, ChunkRecord]:
        """Chunks by id (or of one document / the namespace), in document and index order."""
        # "+namespace" when ids are given: look chunks up by primary key, not by scanning the namespace
        sql = f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE {'+' if ids else ''}namespace=?"
        params: list[Any] = [namespace]
        if document_id is not None:
            sql += " AND document_id=?"
            params.append(document_id)
        if ids is not None:
            wanted = list(dict.fromkeys(ids))
            if not wanted:
                return {}
            sql += f" AND chunk_id IN ({','.join('?' * len(wanted))})"
            params.extend(wanted)
        return {r[0]: ChunkRecord(*r) for r in self.query(sql + " ORDER BY document_id, idx", params)}

    def lexical_search(self, namespace: str, tokens: Sequence[str], limit: int) -> dict[str, float]:
        """BM25 of the namespace's chunks matching any token (higher is better)."""
        terms = list(dict.fromkeys(fts_tokens(tokens)))
        if not terms:
            return {}
        match = f'scope:"{scope_token(namespace)}" AND tokens:(' + " OR ".join(f'"{t}"' for t in terms) + ")"
        rows = self.query(
            "SELECT c.chunk_id, bm25(chunks_fts, 0.0, 1.0) AS s FROM chunks_fts JOIN chunks c "
            "ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ? AND c.namespace=? ORDER BY s LIMIT ?",
            (match, namespace, int(limit)),
        )
        return {r[0]: -float(r[1]) for r in rows}

    def dense_search(self, namespace: str, vector: npt.ArrayLike, limit: int) -> dict[str, float]:
        """Chunk id -> its best passage's cosine, for about ``limit`` chunks of the namespace."""
        return self._passages.search(namespace, vector, limit)

    def dense_scores(self, namespace: str, vector: npt.ArrayLike, ids: Sequence[str]) -> dict[str, float]:
        """Chunk id -> its best passage's cosine with ``vector``, for the chunks among ``ids``."""
        return self._passages.scores(namespace, vector, ids)

    def list_documents(self, namespace: str) -> list[DocumentRecord]:
        """The namespace's documents, oldest first."""
        rows = self.query(
            f"SELECT {_DOCUMENT_COLUMNS} FROM documents WHERE namespace=? ORDER BY added_at, document_id",
            (namespace,),
        )
        return [_document(r) for r in rows]

    def has_document(self, namespace: str, document_id: str) -> bool:
        """True if the namespace holds ``document_id``."""
        sql = "SELECT 1 FROM documents WHERE namespace=? AND document_id=?"
        return bool(self.query(sql, (namespace, document_id)))

    def unsettled(self) -> list[PendingDocument]:
        """Unfinished document writes and deletions, of every namespace."""
        rows = self.query("SELECT namespace, document_id, op FROM pending")
        return [PendingDocument(r[0], r[1], PendingOp(r[2])) for r in rows]

    def scrub(self) -> None:
        """Remove deleted chunks from the file itself: rebuild the FTS5 index, truncate the WAL.

        See :meth:`hello_memory.stores.records.sqlite.SQLiteRecordStore.scrub`.
        """
        with self._lock:
            try:
                self.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('rebuild')")
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.DatabaseError as e:
                raise StoreError(f"SQLite scrub failed: {e}") from e

    def residue(self, namespace: str, document_id: str | None = None) -> dict[str, int]:
        """Rows and passages left for a namespace (or one document): 0 everywhere after a delete."""
        doc = "" if document_id is None else " AND document_id=?"
        params: list[Any] = [namespace] + ([] if document_id is None else [document_id])
        out = {
            t: int(self.query(f"SELECT COUNT(*) FROM {t} WHERE namespace=?{doc}", params)[0][0])
            for t in ("documents", "chunks", "pending")
        }
        if document_id is None:
            sql = "SELECT COUNT(*) FROM chunks_fts WHERE scope=?"
            out["lexical"] = int(self.query(sql, (scope_token(namespace),))[0][0])
        equals = {"namespace": namespace} | ({} if document_id is None else {"document_id": document_id})
        out["passages"] = self._passages.count(equals)
        return out


def _document(row: Sequence[Any]) -> DocumentRecord:
    ns, doc, source, title, fmt, chunks, tokens, added, metadata = row
    added_at = datetime.fromtimestamp(added, tz=timezone.utc)
    return DocumentRecord(ns, doc, source, title, fmt, chunks, tokens, added_at, json.loads(metadata))
