"""SQLite store of RAG documents and chunks, with an FTS5 BM25 index and a pending journal.

Same write discipline as the memory records: the chunk rows, their lexical tokens and a ``pending``
entry commit in one transaction; the vector write follows; the entry is cleared when it returned.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from hello_memory.errors import StoreError
from hello_memory.stores.records.sqlite_lexical import fts_tokens, scope_token
from hello_memory.stores.sqlite_base import SQLiteDatabase
from rag.models import DocumentInfo

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
CHUNK_COLUMNS = (
    "chunk_id",
    "namespace",
    "document_id",
    "idx",
    "text",
    "start",
    '"end"',
    "heading_path",
    "language",
    "tokens",
)


class SQLiteChunkStore(SQLiteDatabase):
    """Documents and chunks of every namespace in one SQLite file."""

    schema = _SCHEMA
    schema_version = SCHEMA_VERSION

    # -- writes -----------------------------------------------------------------------------
    def delete_document_rows(self, conn: sqlite3.Connection, namespace: str, document_id: str) -> int:
        """Delete a document's row, chunks and tokens; returns the number of chunks deleted."""
        rows = conn.execute(
            "SELECT rowid FROM chunks WHERE namespace=? AND document_id=?", (namespace, document_id)
        ).fetchall()
        conn.executemany("DELETE FROM chunks_fts WHERE rowid=?", rows)
        n = conn.execute(
            "DELETE FROM chunks WHERE namespace=? AND document_id=?", (namespace, document_id)
        ).rowcount
        conn.execute("DELETE FROM documents WHERE namespace=? AND document_id=?", (namespace, document_id))
        return n

    def insert_document(
        self, conn: sqlite3.Connection, info: DocumentInfo, namespace: str, metadata: dict[str, Any]
    ) -> None:
        """Insert a document row."""
        conn.execute(
            "INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?)",
            (
                namespace,
                info.document_id,
                info.source_path,
                info.title,
                info.format,
                info.chunks,
                info.tokens,
                info.added_at.timestamp(),
                json.dumps(metadata, ensure_ascii=False),
            ),
        )

    def insert_chunk(self, conn: sqlite3.Connection, row: tuple[Any, ...], tokens: Sequence[str]) -> None:
        """Insert one chunk row (``CHUNK_COLUMNS`` order) and its lexical tokens."""
        cur = conn.execute(
            f"INSERT INTO chunks ({','.join(CHUNK_COLUMNS)}) VALUES ({','.join('?' * len(row))})", row
        )
        conn.execute(
            "INSERT INTO chunks_fts(rowid, scope, tokens) VALUES (?,?,?)",
            (cur.lastrowid, scope_token(row[1]), " ".join(fts_tokens(tokens))),
        )

    def set_pending(self, conn: sqlite3.Connection, namespace: str, document_id: str, op: str) -> None:
        """Journal a vector operation (``index``/``unindex``) for a document."""
        conn.execute("INSERT OR REPLACE INTO pending VALUES (?,?,?)", (namespace, document_id, op))

    def clear_pending(self, namespace: str, document_id: str) -> None:
        """Clear a journal entry once its vector operation completed."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM pending WHERE namespace=? AND document_id=?", (namespace, document_id))

    def pending(self) -> list[tuple[str, str, str]]:
        """Unfinished vector operations as (namespace, document_id, op)."""
        return [(r[0], r[1], r[2]) for r in self.query("SELECT namespace, document_id, op FROM pending")]

    # -- reads ------------------------------------------------------------------------------
    def chunks(
        self, namespace: str, ids: Sequence[str] | None = None, *, document_id: str | None = None
    ) -> dict[str, tuple[Any, ...]]:
        """Chunk rows by id (``CHUNK_COLUMNS`` order), in one namespace."""
        # "+namespace" when ids are given: look chunks up by primary key, not by scanning the namespace
        sql = f"SELECT {','.join(CHUNK_COLUMNS)} FROM chunks WHERE {'+' if ids else ''}namespace=?"
        params: list[Any] = [namespace]
        if document_id is not None:
            sql += " AND document_id=?"
            params.append(document_id)
        if ids is not None:
            if not ids:
                return {}
            sql += f" AND chunk_id IN ({','.join('?' * len(ids))})"
            params.extend(ids)
        return {r[0]: tuple(r) for r in self.query(sql + " ORDER BY document_id, idx", params)}

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

    def documents(self, namespace: str) -> list[DocumentInfo]:
        """The namespace's documents, oldest first."""
        rows = self.query(
            "SELECT document_id, source_path, title, format, chunks, tokens, added_at FROM documents "
            "WHERE namespace=? ORDER BY added_at",
            (namespace,),
        )
        return [
            DocumentInfo(
                document_id=r[0],
                source_path=r[1],
                title=r[2],
                format=r[3],
                chunks=r[4],
                tokens=r[5],
                added_at=datetime.fromtimestamp(r[6], tz=timezone.utc),
            )
            for r in rows
        ]

    def has_document(self, namespace: str, document_id: str) -> bool:
        """True if the namespace holds ``document_id``."""
        return bool(
            self.query(
                "SELECT 1 FROM documents WHERE namespace=? AND document_id=?", (namespace, document_id)
            )
        )

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
        """Rows left for a namespace (or one document): 0 everywhere after a delete."""
        doc = "" if document_id is None else " AND document_id=?"
        params: list[Any] = [namespace] + ([] if document_id is None else [document_id])
        out = {
            t: self.query(f"SELECT COUNT(*) FROM {t} WHERE namespace=?{doc}", params)[0][0]
            for t in ("documents", "chunks", "pending")
        }
        if document_id is None:
            out["lexical"] = self.query(
                "SELECT COUNT(*) FROM chunks_fts WHERE scope=?", (scope_token(namespace),)
            )[0][0]
        return out
