"""Server-mode writes, on the :class:`~hello_memory.stores.records.base.RecordStore` protocol.

In server mode a memory's record, its dense vector, its lexical vector, facts, history and pending
marker are one point, written by one :meth:`~hello_memory.stores.records.base.RecordStore.apply`: that
upsert *is* the write, atomic and visible to every worker as soon as it returns. The graph is
derived data and follows, **ordered after the record**:

1. ``apply`` the record (``pending=INDEX`` when graph links must follow, ``UNINDEX`` when they
   must go); an update or soft delete names the version it read, so a concurrent change of the
   same memory by another worker raises :class:`~hello_memory.errors.WriteConflictError` (the
   first writer wins; re-read and re-apply);
2. write (or remove) the graph links;
3. ``settle`` the marker at the version written (a newer write's marker stays for its writer).

If step 2 fails the write stays committed — searchable by meaning and by words, only its graph
relevance lags — and :class:`~hello_memory.errors.IndexPendingError` says so; the marker stays
and :meth:`MemoryManager.recover` (run by every worker when it starts) or ``hello-memory reindex
--graph`` completes it. A crash between the steps leaves the same state. Deletions mark first
(``PURGE``), remove the graph links, then delete the points.

:mod:`hello_memory.core.writes` dispatches here when the bundle is in server mode; the embedded
path (one SQLite transaction around the index writes) is unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from hello_memory.errors import IndexPendingError, NotFoundError, StoreError, WriteConflictError
from hello_memory.models import HistoryEntry, MemoryItem, MemoryType
from hello_memory.stores.records.base import Fact, PendingOp, RecordWrite, StoredRecord

if TYPE_CHECKING:
    from hello_memory.core.semantic import Links
    from hello_memory.core.writes import Prepared, PreparedUpdate
    from hello_memory.manager import MemoryManager

logger = logging.getLogger(__name__)
RECOVER_HINT = (
    "by MemoryManager.recover() (every worker runs it when it starts) or `hello-memory reindex --graph`"
)
_RETRIES = 3  # supersession re-reads after losing a race to another worker


def _by_user(items: Sequence[MemoryItem]) -> dict[str, list[MemoryItem]]:
    out: dict[str, list[MemoryItem]] = {}
    for it in items:
        out.setdefault(it.user_id, []).append(it)
    return out


def _snapshot(item: MemoryItem) -> dict[str, Any]:
    return item.model_dump(mode="json", include={"content", "importance", "metadata", "memory_type"})


def facts_of(links: Links) -> tuple[Fact, ...]:
    """The functional facts a semantic memory's links assert."""
    from hello_memory.language.extraction import FUNCTIONAL_RELATIONS

    return tuple(Fact(s, rel, o) for s, o, rel in links[1] if rel in FUNCTIONAL_RELATIONS)


# -- inserts -------------------------------------------------------------------------------------
def existing(mm: MemoryManager, items: Sequence[MemoryItem]) -> dict[str, MemoryItem]:
    """The stored memories of a retried batch, by id (another user's id is refused by the insert)."""
    from hello_memory.core.writes import _check_retry

    out: dict[str, MemoryItem] = {}
    for uid, group in _by_user(items).items():
        stored = mm.bundle.records.read(uid, [it.id for it in group], include_deleted=True)
        for it in group:
            if it.id in stored:
                _check_retry(it, stored[it.id].item)
                out[it.id] = stored[it.id].item
    return out


def insert(mm: MemoryManager, prepared: Prepared) -> list[MemoryItem]:
    """Store prepared items; items stored by an earlier try come back as stored."""
    from hello_memory.core import lifecycle

    known = existing(mm, prepared.items)
    items = [it for it in prepared.items if it.id not in known]
    if items:
        _insert_new(mm, items, prepared.vectors, prepared.links)
        for uid in {it.user_id for it in items if it.memory_type == MemoryType.WORKING}:
            lifecycle.enforce_working_limits(mm, uid)
    return [known.get(it.id, it) for it in prepared.items]


def _insert_new(
    mm: MemoryManager,
    items: Sequence[MemoryItem],
    vectors: Mapping[str, np.ndarray],
    links: Mapping[str, Links],
    *,
    what: str = "add",
) -> None:
    writes = [
        RecordWrite(
            it,
            history=(HistoryEntry(memory_id=it.id, event="add", new=_snapshot(it), at=it.updated_at),),
            facts=facts_of(links[it.id]) if it.id in links else None,
            vector=vectors.get(it.id),
            pending=PendingOp.INDEX if it.id in links else None,
        )
        for it in items
    ]
    try:
        stored = mm.bundle.records.apply(writes)
    except (StoreError, OSError) as e:  # applied memory by memory: take back the prefix that landed
        _undo_inserts(mm, items, e, what)
    follow_up(mm, [s for s in stored if s.item.id in links], what)


def _undo_inserts(mm: MemoryManager, items: Sequence[MemoryItem], error: Exception, what: str) -> NoReturn:
    """A batch insert failed midway: delete what it stored, so the batch is all or nothing."""
    try:
        for uid, group in _by_user(items).items():
            mm.bundle.records.delete(uid, [it.id for it in group])
    except (StoreError, OSError) as undo_error:
        raise StoreError(
            f"{what} failed midway ({error}), and what it stored could not be taken back ({undo_error}): "
            "retry with the same memory_id values (stored ones are returned, not stored twice)"
        ) from error
    if isinstance(error, StoreError) and type(error) is not StoreError:
        raise error  # a typed failure (disk full on the server, a mismatch) keeps its type
    raise StoreError(f"{what} failed, nothing was stored: {error}") from error


def follow_up(mm: MemoryManager, stored: Sequence[StoredRecord], what: str, *, facts: bool = True) -> None:
    """After the record: supersession (``facts``), graph links, then settle (see the module docstring)."""
    from hello_memory.core.semantic import links_of

    if not stored:
        return
    try:
        for rec in stored:
            item = rec.item
            if item.deleted_at is None and item.memory_type == MemoryType.SEMANTIC:
                if facts:
                    supersede(mm, item, links_of(item))
                mm.bundle.graph.link(item.user_id, item.id, *links_of(item))
            else:
                mm.bundle.graph.unlink_memory(item.user_id, item.id)
    except (StoreError, OSError) as e:
        pending(mm, [r.item.id for r in stored], e, what, result=[r.item for r in stored])
    settle(mm, stored)


def settle(mm: MemoryManager, stored: Sequence[StoredRecord]) -> None:
    """Clear the markers at the versions written; a failure only costs a re-check by recovery."""
    versions: dict[str, dict[str, int]] = {}
    for rec in stored:
        versions.setdefault(rec.item.user_id, {})[rec.item.id] = rec.version
    try:
        for uid, vs in versions.items():
            mm.bundle.records.settle(uid, list(vs), versions=vs)
    except StoreError as e:
        logger.warning("could not clear %d pending markers (recovery re-checks them): %s", len(stored), e)


def pending(
    mm: MemoryManager, ids: Sequence[str], error: Exception, what: str, result: object = None
) -> None:
    """Raise "committed, graph pending" (the markers stay for recovery)."""
    logger.warning("%s committed; the graph write of %d memories failed: %s", what, len(ids), error)
    raise IndexPendingError(
        f"{what} is committed (every read sees it), but updating the knowledge graph failed ({error}); "
        f"that is completed {RECOVER_HINT}",
        memory_ids=list(ids),
        result=result,
    ) from error


def supersede(mm: MemoryManager, item: MemoryItem, links: Links) -> None:
    """Mark the user's current memories that contradict ``item``'s functional facts as superseded.

    One versioned write per superseded memory; idempotent (a superseded memory no longer conflicts),
    so recovery may run it again after a crash.
    """
    records = mm.bundle.records
    for fact in facts_of(links):
        args = (item.user_id, fact.subject_id, fact.relation, fact.object_id)
        for old_id in records.conflicting_facts(*args):
            if old_id == item.id:
                continue
            for attempt in range(_RETRIES):
                rec = records.read(item.user_id, [old_id]).get(old_id)
                if rec is None or rec.item.valid_to is not None:
                    break
                newer = rec.item.model_copy(update={"valid_to": item.created_at, "superseded_by": item.id})
                entry = HistoryEntry(
                    memory_id=old_id,
                    event="supersede",
                    new={"superseded_by": item.id, "relation": fact.relation},
                    at=item.created_at,
                )
                try:
                    records.apply([RecordWrite(newer, expected_version=rec.version, history=(entry,))])
                    break
                except WriteConflictError:
                    if attempt == _RETRIES - 1:
                        raise


# -- changes -------------------------------------------------------------------------------------
def _current(mm: MemoryManager, item: MemoryItem, *, deleted: bool = False) -> StoredRecord:
    rec = mm.bundle.records.read(item.user_id, [item.id], include_deleted=deleted).get(item.id)
    if rec is None:
        raise NotFoundError(f"no memory {item.id!r} for user {item.user_id!r}", object_id=item.id)
    return rec


def update(mm: MemoryManager, prep: PreparedUpdate, current: MemoryItem) -> MemoryItem:
    """A versioned update of the memory read under the lock; WriteConflictError if another worker won."""
    rec = _current(mm, current)
    if not prep.fits(rec.item):  # changed by another worker since the caller read it
        raise WriteConflictError(
            f"memory {current.id!r} changed while this update was prepared; read it again and re-apply",
            memory_id=current.id,
            expected_version=rec.version,
        )
    new = prep.apply_to(mm, rec.item)
    entry = HistoryEntry(
        memory_id=new.id, event="update", old=_snapshot(rec.item), new=_snapshot(new), at=new.updated_at
    )
    write = RecordWrite(
        new,
        expected_version=rec.version,
        history=(entry,),
        facts=facts_of(prep.links) if prep.links is not None else None,
        vector=prep.vectors.get(new.id),
        pending=PendingOp.INDEX if prep.links is not None else None,
    )
    stored = mm.bundle.records.apply([write])
    follow_up(mm, stored if prep.links is not None else [], "update")
    return stored[0].item


def restore(mm: MemoryManager, item: MemoryItem, vectors: Mapping[str, np.ndarray]) -> MemoryItem:
    """Bring a soft-deleted memory back: its vector with the record, then its graph links."""
    rec = _current(mm, item, deleted=True)
    now = mm._now()
    new = rec.item.model_copy(update={"deleted_at": None, "updated_at": now})
    semantic_tier = new.memory_type == MemoryType.SEMANTIC
    write = RecordWrite(
        new,
        expected_version=rec.version,
        history=(HistoryEntry(memory_id=new.id, event="restore", at=now),),
        vector=vectors.get(new.id),
        pending=PendingOp.INDEX if semantic_tier else None,
    )
    stored = mm.bundle.records.apply([write])
    follow_up(mm, stored if semantic_tier else [], "restore", facts=False)
    return stored[0].item


def soft_delete(mm: MemoryManager, items: Sequence[MemoryItem], reasons: Sequence[str]) -> None:
    """Mark memories forgotten (their points keep no vectors and leave the lexical index), then unlink."""
    now, writes = mm._now(), []
    live = {
        uid: mm.bundle.records.read(uid, [it.id for it in group]) for uid, group in _by_user(items).items()
    }
    for it, why in zip(items, reasons, strict=True):
        rec = live[it.user_id].get(it.id)
        if rec is None:  # forgotten or removed by another worker meanwhile: nothing left to do
            continue
        writes.append(
            RecordWrite(
                rec.item.model_copy(update={"deleted_at": now}),
                expected_version=rec.version,
                history=(HistoryEntry(memory_id=it.id, event="forget", new={"reason": why}, at=now),),
                pending=PendingOp.UNINDEX if it.memory_type == MemoryType.SEMANTIC else None,
            )
        )
    stored = mm.bundle.records.apply(writes)
    follow_up(mm, [s for s in stored if s.item.memory_type == MemoryType.SEMANTIC], "forget", facts=False)


def purge(mm: MemoryManager, items: Sequence[MemoryItem]) -> None:
    """Hard-delete: mark PURGE, unlink the graph, delete the points (history first).

    If the graph cannot be unlinked the points are deleted all the same (that is what the caller
    asked for; graph hits are checked against the records, so nothing returns them) and
    IndexPendingError asks for ``hello-memory reindex --graph``, which unlinks memories with no record.
    """
    records, failure = mm.bundle.records, None
    groups = _by_user(items)
    for uid, group in groups.items():
        records.mark(uid, [it.id for it in group], PendingOp.PURGE)
    try:
        for it in items:
            if it.memory_type == MemoryType.SEMANTIC:
                mm.bundle.graph.unlink_memory(it.user_id, it.id)
    except (StoreError, OSError) as e:
        failure = e
    for uid, group in groups.items():
        records.delete(uid, [it.id for it in group])
    if failure is not None:
        pending(mm, [it.id for it in items], failure, "the deletion")


def consolidate(
    mm: MemoryManager,
    sources: Sequence[MemoryItem],
    prepared: Prepared,
    merges: Sequence[tuple[MemoryItem, MemoryItem]],
) -> None:
    """Promote, merge into twins, then remove the sources: each step one versioned write.

    Not one transaction as in embedded mode: a crash midway leaves the promoted memories stored
    and some sources not yet removed; running ``consolidate`` again merges them into their twins
    (the promoted copies) instead of promoting them twice.
    """
    _insert_new(mm, prepared.items, prepared.vectors, prepared.links, what="consolidate")
    now = mm._now()
    for src, twin in merges:
        rec = _current(mm, twin)
        new = rec.item
        if src.importance > new.importance:
            new = new.model_copy(update={"importance": src.importance})
        entry = HistoryEntry(memory_id=twin.id, event="merge", new={"merged_from": src.id}, at=now)
        mm.bundle.records.apply([RecordWrite(new, expected_version=rec.version, history=(entry,))])
    purge(mm, sources)


def forget_user(mm: MemoryManager, user_id: str) -> dict[str, int]:
    """Delete every trace of the user: graph first, then history and records.

    The records go even when the graph fails (the deletion is what was asked for, and graph hits
    are checked against the records); IndexPendingError then asks for ``hello-memory reindex --graph``.
    """
    counts: dict[str, int] = {}
    failure: Exception | None = None
    try:
        counts.update({f"graph:{k}": v for k, v in mm.bundle.graph.forget_user(user_id).items()})
    except (StoreError, OSError) as e:
        failure = e
    ids = mm.bundle.records.ids(user_id)
    counts.update({f"records:{k}": v for k, v in mm.bundle.records.forget_user(user_id).items()})
    if failure is not None:
        pending(mm, ids, failure, "forget_user", result=counts)
    return counts
