"""Deletions: forget (soft), purge and remove (hard), forget_user — committed first in both modes.

The record alone decides every read (each vector or graph hit is checked against the live
records), so once the deletion of the record is committed the memory is gone for every caller.
The clean-up of the other stores follows under a pending marker; if it fails,
:class:`~hello_memory.errors.IndexPendingError` says "committed, index pending" and recovery
completes it. :func:`soft_delete`, :func:`purge` and :func:`remove` run under ``core.lock``
(the caller's); :func:`in_steps` and :func:`forget_user` take it themselves, a bounded step at a
time. A hard deletion marks every memory first, in one step, so a process killed between the
steps leaves markers that recovery completes: once started, it ends complete. A soft deletion
(restorable) forgets each step's memories in one unit.
"""

from __future__ import annotations

from collections.abc import Sequence

from hello_memory.core import MemoryCore, state, tombstones
from hello_memory.core.unit import by_user, commit, marker, pending, unindex
from hello_memory.models import HistoryEntry, MemoryItem, MemoryType
from hello_memory.stores.records.base import PendingOp, RecordWrite, StoredRecord


def soft_delete(core: MemoryCore, items: Sequence[MemoryItem], reason: str | Sequence[str]) -> None:
    """Mark items forgotten (restorable): out of every index, record and history kept.

    ``reason`` is one for all, or one per item. Memories another worker removed meanwhile are
    skipped: there is nothing left to forget.
    """
    if not items:
        return
    reasons = [reason] * len(items) if isinstance(reason, str) else list(reason)
    now = core.now()
    live = {uid: core.records.read(uid, [it.id for it in group]) for uid, group in by_user(items).items()}
    writes = []
    for it, why in zip(items, reasons, strict=True):
        rec = live[it.user_id].get(it.id)
        if rec is None:
            continue
        writes.append(
            RecordWrite(
                rec.item.model_copy(update={"deleted_at": now}),
                expected_version=rec.version,
                history=(HistoryEntry(memory_id=it.id, event="forget", new={"reason": why}, at=now),),
                pending=marker(core, it, True, it.memory_type == MemoryType.SEMANTIC, PendingOp.UNINDEX),
            )
        )

    def index(stored: list[StoredRecord]) -> None:
        unindex(core, [s.item for s in stored])

    commit(core, writes, index=index, undo=None, hold=False, what="forget")


def purge(core: MemoryCore, items: Sequence[MemoryItem]) -> None:
    """Hard-delete items from every store, history included; a conversation turn leaves a tombstone
    (:func:`hello_memory.core.conversations.bury`: no text, no id).

    The markers (``PURGE``) are set first, then the index is cleared, then the records are deleted.
    If clearing the index fails, the records are deleted all the same (the deletion is what the
    caller asked for, and no read returns the memories after it) and ``IndexPendingError`` says the
    clean-up is pending; the markers stay where the record store can keep them apart from the record.
    """
    if not items:
        return
    tombstones.bury(core, items)  # first: a re-sent conversation must not store them again
    groups = by_user(items)
    for uid, group in groups.items():
        core.records.mark(uid, [it.id for it in group], PendingOp.PURGE)
    failure: Exception | None = None
    try:
        unindex(core, items)
    except Exception as e:
        failure = e
    for uid, group in groups.items():
        core.records.delete(uid, [it.id for it in group], keep_pending=failure is not None)
    if failure is not None:
        raise pending([it.id for it in items], failure, "the deletion") from failure


def remove(core: MemoryCore, items: Sequence[MemoryItem]) -> None:
    """A user-requested hard deletion: :func:`purge`, then :func:`scrub` (even if the index lags)."""
    try:
        purge(core, items)
    finally:
        scrub(core)


def scrub(core: MemoryCore, *, vacuum: bool = False) -> None:
    """After a user-requested deletion: leave no deleted text in the embedded files (FTS segments, WAL).

    ``vacuum`` also rebuilds the files so that no deleted id survives as a b-tree divider key.
    Servers manage their own storage (the record store's ``scrub`` is a no-op there).
    """
    core.records.scrub(vacuum=vacuum)
    graph_scrub = getattr(core.graph, "scrub", None)  # only the file-backed graph has one
    if graph_scrub is not None:
        graph_scrub(vacuum=vacuum)


def in_steps(core: MemoryCore, user_id: str, ids: Sequence[str], *, hard: bool,
             reasons: Sequence[str] | str = "") -> None:
    """Delete the user's memories ``ids`` a step (:data:`~hello_memory.core.state.STEP`) at a time
    under ``core.lock``: purged (``hard``: marked first, in one step; then :func:`scrub` once) or
    forgotten with ``reasons``."""
    step = state.STEP
    if not ids:
        return
    why = [reasons] * len(ids) if isinstance(reasons, str) else list(reasons)
    if hard:  # a purge, once started, ends complete (recovery); a forget is restorable step by step
        with core.lock:
            core.records.mark(user_id, list(ids), PendingOp.PURGE)
    try:
        for start in range(0, len(ids), step):
            part = list(ids[start : start + step])
            with core.lock:
                found = core.records.read(user_id, part, include_deleted=True)
                items = [found[i].item for i in part if i in found]
                if hard:
                    purge(core, items)
                else:
                    soft_delete(core, items, [r for i, r in zip(part, why[start:], strict=False) if i in found])
    finally:
        if hard:
            with core.lock:
                scrub(core)


def forget_user(core: MemoryCore, user_id: str) -> dict[str, int]:
    """Delete every trace of ``user_id``: vectors, graph, records, history; returns counts per store.

    Marked first (a crash midway is completed by recovery); then one write step per store, each a
    single operation over the user's data; the records go even when another store fails, and
    ``IndexPendingError`` then says what is left to clean up.
    """
    ids = core.records.ids(user_id)
    with core.lock:
        core.records.mark(user_id, ids, PendingOp.PURGE)
    counts: dict[str, int] = {}
    failure: Exception | None = None
    try:
        with core.lock:
            counts.update({f"vectors:{k}": v for k, v in core.dense.forget_user(user_id).items()})
        with core.lock:
            counts.update({f"graph:{k}": v for k, v in core.graph.forget_user(user_id).items()})
    except Exception as e:
        failure = e
    with core.lock:
        records = core.records.forget_user(user_id, keep_pending=failure is not None)
    counts.update({f"records:{k}": v for k, v in records.items()})
    with core.lock:
        scrub(core, vacuum=True)
    if failure is not None:
        raise pending(ids, failure, "forget_user", result=counts) from failure
    return counts
