"""Raw-store scans for the reliability suite: read the SQLite files and vector points directly.

Every function returns a list of human-readable problems (empty = consistent) or raw counts, so a
failing assertion names exactly what is half-written or left behind.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path
from typing import Any

from hello_memory.stores.chunks.passage_index import COLLECTION as RAG_COLLECTION
from hello_memory.stores.chunks.passage_index import passage_id
from hello_memory.stores.records.sqlite_lexical import scope_token
from hello_memory.stores.vectors.base import Filter, VectorStore
from rag.passages import passages

VECTOR_TYPES = ("episodic", "semantic", "perceptual")
MEMORY_TABLES = ("memories", "history", "pending", "facts")
GRAPH_TABLES = ("entities", "mentions", "relations")
RAG_TABLES = ("documents", "chunks", "pending")


def rows(db: Path, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
    """Run one read query on a SQLite file with a fresh connection (no library code involved)."""
    if not db.exists():
        return []
    with closing(sqlite3.connect(db, timeout=30)) as conn:
        return [tuple(r) for r in conn.execute(sql, tuple(params))]


def tables(db: Path) -> list[str]:
    """Every table of a SQLite file, FTS5 shadow tables included."""
    return [r[0] for r in rows(db, "SELECT name FROM sqlite_master WHERE type='table'")]


def memory_collections(vectors: VectorStore) -> list[str]:
    """The vector collections that hold memories."""
    return [c for c in vectors.collections() if c == "memories" or c.startswith("perceptual_")]


def memory_problems(home: Path, vectors: VectorStore) -> list[str]:
    """Half-written memory state: records, vectors, FTS rows, history, facts and graph must agree."""
    rec = home / "records.db"
    mem = rows(rec, "SELECT id, rowid, memory_type, deleted_at FROM memories")
    ids = {r[0] for r in mem}
    live_vec = {r[0] for r in mem if r[3] is None and r[2] in VECTOR_TYPES}
    live_rowids = {r[1] for r in mem if r[3] is None}
    placed: dict[str, list[str]] = {}
    for c in memory_collections(vectors):
        for pid in vectors.ids(c):
            placed.setdefault(pid, []).append(c)
    out = [f"memory without vector: {i}" for i in sorted(live_vec - set(placed))]
    out += [f"vector without live record: {i} in {placed[i]}" for i in sorted(set(placed) - live_vec)]
    out += [f"vector in several collections: {i} {c}" for i, c in placed.items() if len(c) > 1]
    fts = {r[0] for r in rows(rec, "SELECT rowid FROM memories_fts")}
    out += [f"FTS row without live record: rowid {r}" for r in sorted(fts - live_rowids)]
    out += [f"live record without FTS row: rowid {r}" for r in sorted(live_rowids - fts)]
    for table in ("history", "facts"):
        orphans = {r[0] for r in rows(rec, f"SELECT memory_id FROM {table}")} - ids
        out += [f"{table} row without record: {i}" for i in sorted(orphans)]
    out += [f"pending journal entry left: {r}" for r in rows(rec, "SELECT * FROM pending")]
    out += graph_problems(home, {r[0] for r in mem if r[3] is None and r[2] == "semantic"})
    return out


def graph_problems(home: Path, live_semantic: set[str]) -> list[str]:
    """Graph mentions/relations only for live semantic memories; no entity nobody mentions."""
    db = home / "graph.db"
    out = []
    for table in ("mentions", "relations"):
        orphans = {r[0] for r in rows(db, f"SELECT memory_id FROM {table}")} - live_semantic
        out += [f"graph {table} of a missing memory: {i}" for i in sorted(orphans)]
    lonely = rows(
        db,
        "SELECT user_id, id FROM entities e WHERE NOT EXISTS "
        "(SELECT 1 FROM mentions m WHERE m.user_id=e.user_id AND m.entity_id=e.id)",
    )
    out += [f"graph entity nobody mentions: {r}" for r in lonely]
    return out


def rag_problems(home: Path, vectors: VectorStore) -> list[str]:
    """Half-written RAG state: documents, chunks, FTS rows and chunk vectors must agree."""
    db = home / "rag.db"
    docs = {(r[0], r[1]): r[2] for r in rows(db, "SELECT namespace, document_id, chunks FROM documents")}
    chunks = rows(db, "SELECT chunk_id, rowid, namespace, document_id, text FROM chunks")
    per_doc: dict[tuple[str, str], int] = {}
    for _, _, ns, doc, _ in chunks:
        per_doc[(ns, doc)] = per_doc.get((ns, doc), 0) + 1
    out = [f"chunks of a missing document: {k}" for k in sorted(set(per_doc) - set(docs))]
    out += [f"document {k} has {per_doc.get(k, 0)} chunks, expected {n}" for k, n in docs.items()
            if per_doc.get(k, 0) != n]
    fts = {r[0] for r in rows(db, "SELECT rowid FROM chunks_fts")}
    rowids = {r[1] for r in chunks}
    out += [f"chunk FTS row without chunk: rowid {r}" for r in sorted(fts - rowids)]
    out += [f"chunk without FTS row: rowid {r}" for r in sorted(rowids - fts)]
    exists = RAG_COLLECTION in vectors.collections()
    points = {p.id: p.payload for p in vectors.get(RAG_COLLECTION, vectors.ids(RAG_COLLECTION))} if exists else {}
    expected = {passage_id(r[0], i): r[0] for r in chunks for i in range(len(passages(r[4])))}
    out += [f"passage without vector: {i} (chunk {c})" for i, c in sorted(expected.items()) if i not in points]
    out += [f"orphan passage vector: {i}" for i in sorted(set(points) - set(expected))]
    out += [f"passage vector names another chunk: {i}" for i, c in sorted(expected.items())
            if i in points and points[i].get("chunk_id") != c]
    out += [f"RAG pending journal entry left: {r}" for r in rows(db, "SELECT * FROM pending")]
    return out


def user_residue(home: Path, vectors: VectorStore, user_id: str) -> dict[str, int]:
    """Rows and points of ``user_id`` left in every raw store (all zero after forget_user)."""
    rec, graph = home / "records.db", home / "graph.db"
    out = {f"sqlite:{t}": rows(rec, f"SELECT COUNT(*) FROM {t} WHERE user_id=?", [user_id])[0][0]
           for t in MEMORY_TABLES}
    out["sqlite:memories_fts"] = rows(
        rec, "SELECT COUNT(*) FROM memories_fts WHERE scope=?", [scope_token(user_id)]
    )[0][0]
    for t in GRAPH_TABLES:
        found = rows(graph, f"SELECT COUNT(*) FROM {t} WHERE user_id=?", [user_id])
        out[f"graph:{t}"] = found[0][0] if found else 0
    for c in memory_collections(vectors):
        out[f"vectors:{c}"] = len(vectors.ids(c, Filter(equals={"user_id": user_id})))
    return out


def namespace_residue(home: Path, vectors: VectorStore, namespace: str, document_id: str | None = None
                      ) -> dict[str, int]:
    """Rows and points of a RAG namespace (or one of its documents) left in the raw stores."""
    db = home / "rag.db"
    where, params = "namespace=?", [namespace]
    if document_id is not None:
        where, params = where + " AND document_id=?", [namespace, document_id]
    out = {f"rag:{t}": rows(db, f"SELECT COUNT(*) FROM {t} WHERE {where}", params)[0][0] for t in RAG_TABLES}
    if document_id is None:
        out["rag:chunks_fts"] = rows(
            db, "SELECT COUNT(*) FROM chunks_fts WHERE scope=?", [scope_token(namespace)]
        )[0][0]
    equals: dict[str, Any] = {"namespace": namespace}
    if document_id is not None:
        equals["document_id"] = document_id
    exists = RAG_COLLECTION in vectors.collections()
    out[f"vectors:{RAG_COLLECTION}"] = len(vectors.ids(RAG_COLLECTION, Filter(equals=equals))) if exists else 0
    return out


def rows_containing(db: Path, needle: str) -> list[str]:
    """``table: row`` for every row of every table (shadow tables too) whose text holds ``needle``."""
    hits = []
    for t in tables(db):
        for r in rows(db, f'SELECT * FROM "{t}"'):
            text = " ".join(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in r)
            if needle in text:
                hits.append(f"{db.name}:{t}: {text[:120]}")
    return hits


def payloads_mentioning(vectors: VectorStore, needles: Iterable[str]) -> list[str]:
    """``collection: id`` of every point whose payload mentions one of ``needles`` (full scan)."""
    found = []
    wanted = list(needles)
    for c in vectors.collections():
        ids = vectors.ids(c)
        for start in range(0, len(ids), 512):
            for p in vectors.get(c, ids[start : start + 512]):
                text = repr(p.payload)
                if any(n in text for n in wanted):
                    found.append(f"{c}: {p.id} {text[:120]}")
    return found


def files_containing(root: Path, needles: Iterable[bytes]) -> dict[bytes, list[str]]:
    """needle -> every file under ``root`` whose raw bytes contain it (one read per file)."""
    wanted = list(needles)
    hits: dict[bytes, list[str]] = {n: [] for n in wanted}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        data = path.read_bytes()
        for n in wanted:
            if data.find(n) != -1:
                hits[n].append(str(path.relative_to(root)))
    return hits
