"""Writes that span stores: records + lexical (one SQLite transaction), vectors, graph.

How each write stays consistent (all-or-nothing for content, committed-first for deletions) is
described in :mod:`hello_memory.core.journal`. Every content write follows validate → embed → lock →
write: :func:`prepare`, :func:`prepare_update` and :func:`prepare_restore` embed and annotate
without ``bundle.lock`` (one 200,000-character memory embeds for seconds, and other threads'
searches must not wait for it); every other function here runs under the lock.

Client-supplied ids make retries idempotent: :func:`existing` finds the items of a batch that are
already stored (same id, same user, same content and type) so that they are returned, not stored
again; any other use of a taken id is an :class:`~hello_memory.errors.IdConflictError`.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hello_memory.core import index as memory_index
from hello_memory.core import journal, semantic
from hello_memory.core import server_writes as record_writes
from hello_memory.core.index import (  # noqa: F401 - re-exported
    MEMORY_COLLECTION,
    collection_for,
    collection_tiers,
    payload,
    unindex,
)
from hello_memory.core.items import build_item, infer_modality, media_hash  # noqa: F401 - re-exported
from hello_memory.errors import IdConflictError, InvalidInputError
from hello_memory.language.text import lexical_tokens
from hello_memory.models import HistoryEntry, MemoryItem, MemoryType
from hello_memory.stores.vectors.base import Filter
from hello_memory.validation import check_importance, check_metadata, check_text

if TYPE_CHECKING:
    from hello_memory.core.semantic import Links
    from hello_memory.manager import MemoryManager

logger = logging.getLogger(__name__)


@dataclass
class Prepared:
    """Validated items with their vectors and graph links, ready for :func:`insert`."""

    items: list[MemoryItem]
    vectors: dict[str, np.ndarray]
    links: dict[str, Links]


def prepare(mm: MemoryManager, items: Sequence[MemoryItem]) -> Prepared:
    """Embed and annotate new items (no lock needed; raises before anything is stored)."""
    vectors = memory_index.embed(mm, items)
    links = {it.id: semantic.annotate(mm, it) for it in items if it.memory_type == MemoryType.SEMANTIC}
    return Prepared(list(items), vectors, links)


def existing(mm: MemoryManager, items: Sequence[MemoryItem]) -> dict[str, MemoryItem]:
    """The stored memories of a retried batch, by id; raises if an id is taken by anything else."""
    if mm.bundle.server:
        return record_writes.existing(mm, items)
    stored = mm.bundle.sqlite.fetch([it.id for it in items], None, include_deleted=True)
    out: dict[str, MemoryItem] = {}
    for it in items:
        old = stored.get(it.id)
        if old is not None:
            _check_retry(it, old)
            out[it.id] = old
    return out


def _check_retry(new: MemoryItem, old: MemoryItem) -> None:
    """A retry must name the same memory: same user, same content and type, not forgotten."""
    if old.user_id != new.user_id:  # say nothing of the other memory, not even whose it is
        raise IdConflictError(f"memory_id {new.id} is already in use; use a new UUID", memory_id=new.id)
    if old.deleted_at is not None:
        raise IdConflictError(
            f"memory {new.id} exists but was forgotten; call restore() instead of adding it again",
            memory_id=new.id,
        )
    if old.content != new.content or old.memory_type != new.memory_type:
        raise IdConflictError(
            f"memory {new.id} already exists with different content or memory type; call update() to "
            "change it, or use a new UUID for a new memory",
            memory_id=new.id,
        )


def insert(mm: MemoryManager, prepared: Prepared) -> list[MemoryItem]:
    """Store prepared items (under ``bundle.lock``); items stored by an earlier try come back as stored."""
    if mm.bundle.server:
        return record_writes.insert(mm, prepared)
    from hello_memory.core import lifecycle

    known = existing(mm, prepared.items)  # again under the lock: a retry may have committed meanwhile
    items = [it for it in prepared.items if it.id not in known]
    if items:
        _insert_new(mm, items, prepared.vectors, prepared.links)
        for uid in {it.user_id for it in items if it.memory_type == MemoryType.WORKING}:
            lifecycle.enforce_working_limits(mm, uid)
    return [known.get(it.id, it) for it in prepared.items]


def _insert_new(
    mm: MemoryManager, items: list[MemoryItem], vectors: dict[str, np.ndarray], links: dict[str, Links]
) -> None:
    memory_index.ensure_collections(mm, items)

    def rows(conn: sqlite3.Connection) -> None:
        _insert_rows(mm, conn, items, links)

    journal.atomic(
        mm,
        [(it.id, it.user_id) for it in items if it.id in vectors or it.id in links],
        rows,
        index=lambda: memory_index.write(mm, items, vectors, links),
        undo=lambda: memory_index.unindex(mm, items),
        what="add",
    )


def _insert_rows(
    mm: MemoryManager, conn: sqlite3.Connection, items: list[MemoryItem], links: dict[str, Links]
) -> None:
    records = mm.bundle.sqlite
    records.insert_many(conn, [(it, lexical_tokens(it.content)) for it in items])
    for it in items:
        entry = HistoryEntry(memory_id=it.id, event="add", new=_snapshot(it), at=it.updated_at)
        records.add_history(conn, entry, it.user_id)
        if it.id in links:
            semantic.record_facts(mm, conn, it, links[it.id])


def _snapshot(item: MemoryItem) -> dict[str, Any]:
    return item.model_dump(mode="json", include={"content", "importance", "metadata", "memory_type"})


@dataclass
class PreparedUpdate:
    """A validated update of ``base`` with the vectors and links of its new content."""

    base: MemoryItem
    content: str | None  # None: the content does not change
    importance: float | None
    metadata: dict[str, Any] | None  # merged into the stored metadata when written
    vectors: dict[str, np.ndarray]
    links: Links | None

    def fits(self, current: MemoryItem) -> bool:
        """True when the memory's content did not change since this was prepared (the vectors hold)."""
        return current.content == self.base.content and current.deleted_at is None

    def apply_to(self, mm: MemoryManager, current: MemoryItem) -> MemoryItem:
        """The new version of ``current`` (the stored memory at write time)."""
        changes: dict[str, Any] = {"updated_at": mm._now()}
        if self.content is not None:
            changes["content"] = self.content
        if self.importance is not None:
            changes["importance"] = self.importance
        if self.metadata is not None:
            changes["metadata"] = {**current.metadata, **self.metadata}
        new = current.model_copy(update=changes)
        return semantic.with_links(new, self.links) if self.links is not None else new


def prepare_update(
    mm: MemoryManager, item: MemoryItem, content: Any, importance: Any, metadata: Any
) -> PreparedUpdate:
    """Validate an update and embed its new content (no lock needed)."""
    if content is None and importance is None and metadata is None:
        raise InvalidInputError("nothing to update: give content, importance or metadata")
    text = None if content is None else check_text(content, "content")
    level = None if importance is None else check_importance(importance)
    meta = None if metadata is None else check_metadata(metadata)
    if text is None or text == item.content:
        return PreparedUpdate(item, None, level, meta, {}, None)
    probe = item.model_copy(update={"content": text})
    vectors = memory_index.embed(mm, [probe])
    links = semantic.annotate(mm, probe) if item.memory_type == MemoryType.SEMANTIC else None
    return PreparedUpdate(item, text, level, meta, vectors, links)


def update(mm: MemoryManager, prep: PreparedUpdate, current: MemoryItem) -> MemoryItem:
    """Apply an update everywhere the memory is stored (under the lock); history records old and new.

    All-or-nothing (see :mod:`hello_memory.core.journal`): if the new vector or graph links cannot be
    written, the records are rolled back, the old vector and links are put back, and the caller
    gets a ``StoreError``; the memory stays exactly as it was, searchable, with no history entry.
    """
    if mm.bundle.server:
        return record_writes.update(mm, prep, current)
    new = prep.apply_to(mm, current)
    reindexed = bool(prep.vectors) or prep.links is not None
    before = memory_index.capture(mm, [current]) if reindexed else None
    records = mm.bundle.sqlite
    memory_index.ensure_collections(mm, [new] if reindexed else [])

    def rows(conn: sqlite3.Connection) -> None:
        records.replace(conn, new, lexical_tokens(new.content) if prep.content is not None else None)
        entry = HistoryEntry(
            memory_id=new.id, event="update", old=_snapshot(current), new=_snapshot(new), at=new.updated_at
        )
        records.add_history(conn, entry, new.user_id)
        if prep.links is not None:
            conn.execute("DELETE FROM facts WHERE memory_id=?", (new.id,))
            semantic.record_facts(mm, conn, new, prep.links)

    links = {new.id: prep.links} if prep.links is not None else {}
    journal.atomic(
        mm,
        [(new.id, new.user_id)] if reindexed else [],
        rows,
        index=lambda: memory_index.write(mm, [new], prep.vectors, links),
        undo=lambda: memory_index.put_back(mm, before) if before is not None else None,
        what="update",
    )
    return new


def prepare_restore(mm: MemoryManager, item: MemoryItem) -> dict[str, np.ndarray]:
    """The vectors a restore of ``item`` writes (no lock needed)."""
    return memory_index.embed(mm, [item])


def restore(mm: MemoryManager, item: MemoryItem, vectors: dict[str, np.ndarray]) -> MemoryItem:
    """Bring a soft-deleted item back into every index, all-or-nothing (it stays forgotten on failure)."""
    if mm.bundle.server:
        return record_writes.restore(mm, item, vectors)
    now = mm._now()
    new = item.model_copy(update={"deleted_at": None, "updated_at": now})
    links = {new.id: semantic.links_of(new)} if new.memory_type == MemoryType.SEMANTIC else {}
    records = mm.bundle.sqlite
    memory_index.ensure_collections(mm, [new])

    def rows(conn: sqlite3.Connection) -> None:
        records.replace(conn, new, None)
        records.reindex(conn, new, lexical_tokens(new.content))
        records.add_history(conn, HistoryEntry(memory_id=new.id, event="restore", at=now), new.user_id)

    journal.atomic(
        mm,
        [(new.id, new.user_id)] if vectors or links else [],
        rows,
        index=lambda: memory_index.write(mm, [new], vectors, links),
        undo=lambda: memory_index.unindex(mm, [new]),
        what="restore",
    )
    return new


def consolidate(
    mm: MemoryManager,
    sources: Sequence[MemoryItem],
    prepared: Prepared,
    merges: Sequence[tuple[MemoryItem, MemoryItem]],
) -> None:
    """Promote ``prepared`` items, merge into twins and remove the sources: one all-or-nothing write."""
    if mm.bundle.server:
        record_writes.consolidate(mm, sources, prepared, merges)
        return
    new_items = prepared.items
    memory_index.ensure_collections(mm, new_items)
    before = memory_index.capture(mm, sources)
    records = mm.bundle.sqlite
    now = mm._now()

    def rows(conn: sqlite3.Connection) -> None:
        if new_items:
            _insert_rows(mm, conn, new_items, prepared.links)
        for src, twin in merges:
            if src.importance > twin.importance:
                records.replace(conn, twin.model_copy(update={"importance": src.importance}), None)
            entry = HistoryEntry(memory_id=twin.id, event="merge", new={"merged_from": src.id}, at=now)
            records.add_history(conn, entry, twin.user_id)
        _delete_rows(mm, conn, [s.id for s in sources], keep_journal=True)

    def index() -> None:
        memory_index.write(mm, new_items, prepared.vectors, prepared.links)
        memory_index.unindex(mm, sources)

    indexed = [it for it in new_items if it.id in prepared.vectors or it.id in prepared.links]
    indexed += [s for s in sources if s.memory_type in memory_index.VECTOR_TIERS]
    journal.atomic(
        mm,
        [(it.id, it.user_id) for it in indexed],
        rows,
        index=index,
        undo=lambda: memory_index.put_back(mm, before, added=new_items),
        what="consolidate",
    )


# -- deletions: committed first, index clean-up after (IndexPendingError when it fails) --------------
def soft_delete(mm: MemoryManager, items: Sequence[MemoryItem], reason: str | Sequence[str]) -> None:
    """Mark items deleted (restorable): out of every index, record and history kept.

    ``reason`` is one for all, or one per item. Committed first; a failed index clean-up raises
    ``IndexPendingError`` (see :mod:`hello_memory.core.journal`).
    """
    if not items:
        return
    reasons = [reason] * len(items) if isinstance(reason, str) else list(reason)
    if mm.bundle.server:
        record_writes.soft_delete(mm, items, reasons)
        return
    records, now = mm.bundle.sqlite, mm._now()
    with records.transaction() as conn:  # the journal entry commits with the deletion
        for it, why in zip(items, reasons, strict=True):
            records.replace(conn, it.model_copy(update={"deleted_at": now}), None)
            records.unindex(conn, it.id)
            entry = HistoryEntry(memory_id=it.id, event="forget", old=None, new={"reason": why}, at=now)
            records.add_history(conn, entry, it.user_id)
            records.add_pending(conn, it.id, it.user_id, journal.SYNC, now.timestamp())
    try:
        memory_index.unindex(mm, items)
    except Exception as e:
        journal.index_pending(mm, [it.id for it in items], e, "forget")
    journal.clear(mm, [it.id for it in items])


def purge(mm: MemoryManager, items: Sequence[MemoryItem]) -> None:
    """Hard-delete items from every store, history included.

    The journal entry (``purge``) commits first, then the index is cleared, then the rows are
    deleted. If clearing the index fails, the rows are deleted all the same (the deletion is what
    the caller asked for, and no read returns the memories after it) and ``IndexPendingError`` says
    the index clean-up is pending.
    """
    if not items:
        return
    if mm.bundle.server:
        record_writes.purge(mm, items)
        return
    ids = [it.id for it in items]
    mm.bundle.sqlite.journal([(it.id, it.user_id) for it in items], "purge", mm._now().timestamp())
    failure: Exception | None = None
    try:
        memory_index.unindex(mm, items)
    except Exception as e:
        failure = e
    _delete_records(mm, ids, keep_journal=failure is not None)
    if failure is not None:
        journal.index_pending(mm, ids, failure, "the deletion")


def remove(mm: MemoryManager, items: Sequence[MemoryItem]) -> None:
    """A user-requested hard deletion: :func:`purge`, then :func:`scrub` (even if the index lags)."""
    try:
        purge(mm, items)
    finally:
        scrub(mm)


def scrub(mm: MemoryManager, *, vacuum: bool = False) -> None:
    """After a user-requested deletion: leave no deleted text in the SQLite files (FTS segments, WAL).

    ``vacuum`` also rebuilds the files so that no deleted id survives as a b-tree divider key.
    """
    mm.bundle.records.scrub(vacuum=vacuum)
    graph_scrub = getattr(mm.bundle.graph, "scrub", None)  # embedded backends only
    if graph_scrub is not None:
        graph_scrub(vacuum=vacuum)


def _delete_records(mm: MemoryManager, ids: Sequence[str], *, keep_journal: bool = False) -> None:
    """Delete rows, lexical tokens, facts, history (and journal entries) of ``ids`` in one transaction."""
    with mm.bundle.sqlite.transaction() as conn:
        _delete_rows(mm, conn, ids, keep_journal=keep_journal)


def _delete_rows(
    mm: MemoryManager, conn: sqlite3.Connection, ids: Sequence[str], *, keep_journal: bool
) -> None:
    mm.bundle.sqlite.delete_rows(conn, ids)
    conn.executemany("DELETE FROM history WHERE memory_id=?", [(i,) for i in ids])
    if not keep_journal:
        conn.executemany("DELETE FROM pending WHERE memory_id=?", [(i,) for i in ids])


def forget_user(mm: MemoryManager, user_id: str) -> dict[str, int]:
    """Delete every trace of ``user_id``: records, history, lexical, vectors, graph."""
    if mm.bundle.server:
        return record_writes.forget_user(mm, user_id)
    counts: dict[str, int] = {}
    records, now_ts = mm.bundle.sqlite, mm._now().timestamp()
    with records.transaction() as conn:  # journalled: a crash midway is completed on the next open
        ids = [r[0] for r in conn.execute("SELECT id FROM memories WHERE user_id=?", (user_id,))]
        for mid in ids:
            records.add_pending(conn, mid, user_id, "purge", now_ts)
    failure: Exception | None = None
    try:
        vectors = mm.bundle.vectors
        for name in vectors.collections():
            if name == MEMORY_COLLECTION or name.startswith("perceptual_"):
                counts[f"vectors:{name}"] = vectors.delete_where(name, Filter(equals={"user_id": user_id}))
        for k, v in mm.bundle.graph.forget_user(user_id).items():
            counts[f"graph:{k}"] = v
    except Exception as e:
        failure = e
    for k, v in records.forget_user(user_id, keep_journal=failure is not None).items():
        counts[f"sqlite:{k}"] = v
    scrub(mm, vacuum=True)
    if failure is not None:
        journal.index_pending(mm, ids, failure, "forget_user", result=counts)
    return counts
