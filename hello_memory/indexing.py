"""Writes that span stores: records + lexical (one SQLite transaction), vectors, graph.

Order of every write (crash-safe, DESIGN §6 / issue 7): embed first (a failure stores nothing);
then one SQLite transaction writes the record, its lexical tokens, its history and a ``pending``
journal entry; then the vector index and the graph; then the journal entry is cleared. A process
killed in between leaves a journal entry that :func:`recover` completes on the next open.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mimetypes
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hello_memory.errors import InvalidInputError, StoreError
from hello_memory.models import HistoryEntry, MemoryItem, MemoryType, Modality
from hello_memory.stores.base import Filter, VectorPoint
from hello_memory.text import lexical_tokens
from hello_memory.validation import (
    MAX_METADATA_BYTES,
    check_datetime,
    check_id,
    check_importance,
    check_memory_type,
    check_metadata,
    check_text,
)

if TYPE_CHECKING:
    from hello_memory.manager import MemoryManager

logger = logging.getLogger(__name__)

MEMORY_COLLECTION = "memories"
_VECTOR_TIERS = (MemoryType.EPISODIC, MemoryType.SEMANTIC, MemoryType.PERCEPTUAL)
_TYPED_FIELDS = {
    "event_type",
    "context",
    "outcome",
    "participants",
    "tags",
    "modality",
    "source_path",
    "agent_id",
    "valid_from",
}
_EXT_MODALITY = {
    "image": Modality.IMAGE,
    "audio": Modality.AUDIO,
    "video": Modality.VIDEO,
    "text": Modality.TEXT,
}


def collection_for(item: MemoryItem) -> str:
    """Vector collection of a memory: one for episodic+semantic, one per perceptual modality."""
    if item.memory_type == MemoryType.PERCEPTUAL:
        return f"perceptual_{(item.modality or Modality.OTHER).value}"
    return MEMORY_COLLECTION


def collection_tiers(name: str) -> frozenset[MemoryType]:
    """The tiers whose memories :func:`collection_for` puts in collection ``name``."""
    if name == MEMORY_COLLECTION:
        return frozenset({MemoryType.EPISODIC, MemoryType.SEMANTIC})
    return frozenset({MemoryType.PERCEPTUAL})


def infer_modality(path: str | None) -> Modality:
    """Modality from a file extension (``photo.jpg`` → image); ``text`` without a path."""
    if not path:
        return Modality.TEXT
    mime, _ = mimetypes.guess_type(path)
    return _EXT_MODALITY.get((mime or "").split("/")[0], Modality.OTHER)


def build_item(
    mm: MemoryManager,
    *,
    content: Any,
    memory_type: Any,
    importance: Any,
    user_id: str,
    session_id: Any,
    created_at: Any,
    metadata: Any,
    fields: dict[str, Any],
) -> MemoryItem:
    """Validate the arguments of ``add`` and build the item (nothing is stored here)."""
    content = check_text(content, "content")
    mt = check_memory_type(memory_type, mm.enabled)
    unknown = set(fields) - _TYPED_FIELDS
    if unknown:
        raise InvalidInputError(f"unknown field(s) {sorted(unknown)}; put free-form data in metadata")
    meta = check_metadata(metadata)
    kwargs: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
    now = mm._now()
    if mt == MemoryType.PERCEPTUAL:
        src = kwargs.get("source_path") or meta.get("file_path") or meta.get("source_path")
        if src is not None and not isinstance(src, str):
            raise InvalidInputError("source_path must be a string", field="source_path")
        kwargs["source_path"] = src
        kwargs.setdefault("modality", infer_modality(src))
        if src and Path(src).is_file():
            kwargs["media_hash"] = media_hash(Path(src))
        meta.setdefault("encoder", "text-proxy")  # the caption/description is what is embedded
    if kwargs.get("agent_id") is not None:
        check_id(kwargs["agent_id"], "agent_id")
    if "participants" in kwargs:
        kwargs["participants"] = _check_participants(kwargs["participants"])
    if "valid_from" in kwargs:
        kwargs["valid_from"] = check_datetime(kwargs["valid_from"], "valid_from")
    try:
        item = MemoryItem(
            user_id=user_id,
            memory_type=mt,
            content=content,
            importance=check_importance(importance),
            session_id=None if session_id is None else check_id(session_id, "session_id"),
            created_at=now if created_at is None else check_datetime(created_at, "created_at"),
            updated_at=now,
            metadata=meta,
            **kwargs,
        )
    except ValueError as e:  # pydantic validation of typed fields
        raise InvalidInputError(f"invalid memory fields: {e}") from e
    _check_storable(item)
    return item


def _check_participants(value: Any) -> list[str]:
    """Participants are names (search prefers memories whose participant a query names)."""
    if not isinstance(value, list | tuple):
        raise InvalidInputError("participants must be a list of names", field="participants")
    names = [v.strip() if isinstance(v, str) else v for v in value]
    if not all(isinstance(v, str) and v for v in names):
        raise InvalidInputError("participants must be non-empty names (strings)", field="participants")
    return list(dict.fromkeys(names))


def _check_storable(item: MemoryItem) -> None:
    """Typed fields must be storable text (no lone surrogates) and as bounded as metadata."""
    try:
        encoded = json.dumps(item.model_dump(mode="json", include=_TYPED_FIELDS), ensure_ascii=False)
        size = len(encoded.encode("utf-8"))
    except UnicodeEncodeError as e:
        raise InvalidInputError(f"typed memory fields are not valid Unicode text ({e.reason})") from e
    if size > MAX_METADATA_BYTES:
        raise InvalidInputError(f"typed memory fields are larger than {MAX_METADATA_BYTES} bytes")


MAX_HASH_BYTES = 512 * 1024 * 1024


def media_hash(path: Path) -> str | None:
    """SHA-256 of a media file, streamed; ``None`` for files over ``MAX_HASH_BYTES`` or unreadable."""
    try:
        if path.stat().st_size > MAX_HASH_BYTES:
            return None
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None


def payload(item: MemoryItem) -> dict[str, Any]:
    """Vector payload: the filter keys only (the record in SQLite is the source of truth)."""
    return {
        "user_id": item.user_id,
        "memory_type": item.memory_type.value,
        "session_id": item.session_id,
        "created_ts": item.created_at.timestamp(),
    }


def embed_items(mm: MemoryManager, items: Sequence[MemoryItem]) -> dict[str, np.ndarray]:
    """Vectors for the items of vector-backed tiers, in batches (raises before anything is stored)."""
    todo = [it for it in items if it.memory_type in _VECTOR_TIERS]
    out: dict[str, np.ndarray] = {}
    size = mm.settings.embed_batch_size
    for start in range(0, len(todo), size):
        part = todo[start : start + size]
        vecs = mm.embedder.embed([it.content for it in part], kind="passage")
        out.update({it.id: vecs[i] for i, it in enumerate(part)})
    for it in todo:
        mm.bundle.vectors.ensure_collection(
            collection_for(it), mm.embedder.dimension, embedder=mm.embedder.name
        )
    return out


def insert(mm: MemoryManager, items: list[MemoryItem]) -> list[MemoryItem]:
    """Store validated items in every store they belong to."""
    from hello_memory import lifecycle, semantic

    vectors = embed_items(mm, items)
    graph_links = {it.id: semantic.annotate(mm, it) for it in items if it.memory_type == MemoryType.SEMANTIC}
    records = mm.bundle.records
    now_ts = mm._now().timestamp()
    with records.transaction() as conn:
        records.insert_many(conn, [(it, lexical_tokens(it.content)) for it in items])
        for it in items:
            records.add_history(
                conn,
                HistoryEntry(memory_id=it.id, event="add", new=_snapshot(it), at=it.updated_at),
                it.user_id,
            )
            if it.id in vectors or it.id in graph_links:
                records.add_pending(conn, it.id, it.user_id, "index", now_ts)
            if it.id in graph_links:
                semantic.record_facts(mm, conn, it, graph_links[it.id])
    try:
        _write_indexes(mm, items, vectors, graph_links)
    except Exception as e:
        purge(mm, items)
        raise StoreError(f"indexing failed, nothing was stored: {e}") from e
    records.clear_pending([it.id for it in items if it.id in vectors or it.id in graph_links])
    for uid in {it.user_id for it in items if it.memory_type == MemoryType.WORKING}:
        lifecycle.enforce_working_limits(mm, uid)
    return items


def _write_indexes(
    mm: MemoryManager, items: Sequence[MemoryItem], vectors: dict[str, np.ndarray], links: dict[str, Any]
) -> None:
    by_collection: dict[str, list[VectorPoint]] = {}
    for it in items:
        if it.id in vectors:
            by_collection.setdefault(collection_for(it), []).append(
                VectorPoint(id=it.id, vector=vectors[it.id], payload=payload(it))
            )
    for name, points in by_collection.items():
        for start in range(0, len(points), 256):
            mm.bundle.vectors.upsert(name, points[start : start + 256])
    for it in items:
        if it.id in links:
            ents, rels = links[it.id]
            mm.bundle.graph.link(it.user_id, it.id, ents, rels)


def _snapshot(item: MemoryItem) -> dict[str, Any]:
    return item.model_dump(mode="json", include={"content", "importance", "metadata", "memory_type"})


def update(mm: MemoryManager, item: MemoryItem, content: Any, importance: Any, metadata: Any) -> MemoryItem:
    """Apply an update everywhere the memory is stored; history records old and new."""
    if content is None and importance is None and metadata is None:
        raise InvalidInputError("nothing to update: give content, importance or metadata")
    changes: dict[str, Any] = {"updated_at": mm._now()}
    if content is not None:
        changes["content"] = check_text(content, "content")
    if importance is not None:
        changes["importance"] = check_importance(importance)
    if metadata is not None:
        changes["metadata"] = {**item.metadata, **check_metadata(metadata)}
    new = item.model_copy(update=changes)
    reembed = content is not None and new.content != item.content
    vectors = embed_items(mm, [new]) if reembed else {}
    from hello_memory import semantic

    links = semantic.annotate(mm, new) if reembed and new.memory_type == MemoryType.SEMANTIC else None
    if links is not None:
        new = new.model_copy(update={"entities": item.entities, "relations": item.relations})
        new = semantic.with_links(new, links)
    records = mm.bundle.records
    with records.transaction() as conn:
        records.replace(conn, new, lexical_tokens(new.content) if reembed else None)
        records.add_history(
            conn,
            HistoryEntry(
                memory_id=new.id, event="update", old=_snapshot(item), new=_snapshot(new), at=new.updated_at
            ),
            new.user_id,
        )
        if vectors or links is not None:
            records.add_pending(conn, new.id, new.user_id, "index", new.updated_at.timestamp())
        if links is not None:
            conn.execute("DELETE FROM facts WHERE memory_id=?", (new.id,))
            semantic.record_facts(mm, conn, new, links)
    if vectors or links is not None:
        _write_indexes(mm, [new], vectors, {new.id: links} if links is not None else {})
        records.clear_pending([new.id])
    return new


def unindex(mm: MemoryManager, items: Sequence[MemoryItem]) -> None:
    """Remove items from the vector index and the graph (records untouched)."""
    by_collection: dict[str, list[str]] = {}
    for it in items:
        if it.memory_type in _VECTOR_TIERS:
            by_collection.setdefault(collection_for(it), []).append(it.id)
    for name, ids in by_collection.items():
        if name in mm.bundle.vectors.collections():
            mm.bundle.vectors.delete(name, ids)
    for it in items:
        if it.memory_type == MemoryType.SEMANTIC:
            mm.bundle.graph.unlink_memory(it.user_id, it.id)


def purge(mm: MemoryManager, items: Sequence[MemoryItem]) -> None:
    """Hard-delete items from every store, history included."""
    if not items:
        return
    records = mm.bundle.records
    now_ts = mm._now().timestamp()
    with records.transaction() as conn:
        for it in items:  # "purge", not "unindex": recovery must finish deleting the rows too
            records.add_pending(conn, it.id, it.user_id, "purge", now_ts)
    unindex(mm, items)
    _delete_records(mm, [it.id for it in items])


def scrub(mm: MemoryManager, *, vacuum: bool = False) -> None:
    """After a user-requested deletion: leave no deleted text in the SQLite files (FTS segments, WAL).

    ``vacuum`` also rebuilds the files so that no deleted id survives as a b-tree divider key.
    """
    mm.bundle.records.scrub(vacuum=vacuum)
    graph_scrub = getattr(mm.bundle.graph, "scrub", None)  # embedded backends only
    if graph_scrub is not None:
        graph_scrub(vacuum=vacuum)


def _delete_records(mm: MemoryManager, ids: Sequence[str]) -> None:
    """Delete rows, lexical tokens, facts, history and journal entries of ``ids`` in one transaction."""
    with mm.bundle.records.transaction() as conn:
        mm.bundle.records.delete_rows(conn, ids)
        conn.executemany("DELETE FROM history WHERE memory_id=?", [(i,) for i in ids])
        conn.executemany("DELETE FROM pending WHERE memory_id=?", [(i,) for i in ids])


def soft_delete(mm: MemoryManager, items: Sequence[MemoryItem], reason: str) -> None:
    """Mark items deleted (restorable): out of every index, record and history kept."""
    records = mm.bundle.records
    now = mm._now()
    with records.transaction() as conn:
        for it in items:
            records.replace(conn, it.model_copy(update={"deleted_at": now}), None)
            records.unindex(conn, it.id)
            records.add_history(
                conn,
                HistoryEntry(memory_id=it.id, event="forget", old=None, new={"reason": reason}, at=now),
                it.user_id,
            )
            records.add_pending(conn, it.id, it.user_id, "unindex", now.timestamp())
    unindex(mm, items)
    records.clear_pending([it.id for it in items])


def restore(mm: MemoryManager, item: MemoryItem) -> MemoryItem:
    """Bring a soft-deleted item back into every index."""
    from hello_memory import semantic

    now = mm._now()
    new = item.model_copy(update={"deleted_at": None, "updated_at": now})
    vectors = embed_items(mm, [new])
    links = semantic.links_of(new) if new.memory_type == MemoryType.SEMANTIC else None
    records = mm.bundle.records
    with records.transaction() as conn:
        records.replace(conn, new, None)
        records.reindex(conn, new, lexical_tokens(new.content))
        records.add_history(conn, HistoryEntry(memory_id=new.id, event="restore", at=now), new.user_id)
        records.add_pending(conn, new.id, new.user_id, "index", now.timestamp())
    _write_indexes(mm, [new], vectors, {new.id: links} if links is not None else {})
    records.clear_pending([new.id])
    return new


def forget_user(mm: MemoryManager, user_id: str) -> dict[str, int]:
    """Delete every trace of ``user_id``: records, history, lexical, vectors, graph."""
    counts: dict[str, int] = {}
    records, now_ts = mm.bundle.records, mm._now().timestamp()
    with records.transaction() as conn:  # journalled: a crash midway is completed on the next open
        ids = [r[0] for r in conn.execute("SELECT id FROM memories WHERE user_id=?", (user_id,))]
        for mid in ids:
            records.add_pending(conn, mid, user_id, "purge", now_ts)
    vectors = mm.bundle.vectors
    for name in vectors.collections():
        if name == MEMORY_COLLECTION or name.startswith("perceptual_"):
            counts[f"vectors:{name}"] = vectors.delete_where(name, Filter(equals={"user_id": user_id}))
    for k, v in mm.bundle.graph.forget_user(user_id).items():
        counts[f"graph:{k}"] = v
    for k, v in mm.bundle.records.forget_user(user_id).items():
        counts[f"sqlite:{k}"] = v
    scrub(mm, vacuum=True)
    return counts


def recover(mm: MemoryManager) -> None:
    """Complete vector/graph operations a killed process left in the journal (runs on open)."""
    bundle = mm.bundle
    with bundle.lock:
        pending = bundle.records.pending()
        if not pending:
            return
        logger.warning("recovering %d interrupted index operation(s)", len(pending))
        done = []
        for memory_id, user_id, op in pending:
            item = bundle.records.fetch([memory_id], user_id, include_deleted=True).get(memory_id)
            if item is None or op in ("unindex", "purge") or item.deleted_at is not None:
                ghost = item or MemoryItem(
                    id=memory_id, user_id=user_id, memory_type=MemoryType.EPISODIC, content="-"
                )
                _unindex_everywhere(mm, ghost)
                if op == "purge":
                    _delete_records(mm, [memory_id])
            else:
                _reindex(mm, item)
            done.append(memory_id)
        bundle.records.clear_pending(done)


def _unindex_everywhere(mm: MemoryManager, item: MemoryItem) -> None:
    vectors = mm.bundle.vectors
    for name in vectors.collections():
        vectors.delete(name, [item.id])
    mm.bundle.graph.unlink_memory(item.user_id, item.id)


def _reindex(mm: MemoryManager, item: MemoryItem) -> None:
    from hello_memory import semantic

    vectors = embed_items(mm, [item])
    links = semantic.links_of(item) if item.memory_type == MemoryType.SEMANTIC else None
    _write_indexes(mm, [item], vectors, {item.id: links} if links is not None else {})
