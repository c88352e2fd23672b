"""Content writes: add, update, restore, consolidate, import — each one :func:`~hello_memory.core.unit.commit`.

All of them run under ``core.lock``; the embedding happened before, without it
(:mod:`hello_memory.core.prepare`). What a failure leaves is described in :mod:`hello_memory.core.unit`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hello_memory.core import MemoryCore, semantic, working
from hello_memory.core.prepare import Prepared, PreparedUpdate, embed, existing, prepare_update
from hello_memory.core.unit import by_user, commit, index_step, marker, put_back, unindex
from hello_memory.errors import NotFoundError, WriteConflictError
from hello_memory.models import HistoryEntry, MemoryItem, MemoryType
from hello_memory.stores.records.base import PendingOp, RecordWrite, StoredRecord


def snapshot(item: MemoryItem) -> dict[str, Any]:
    """What a history entry records of a memory's state."""
    return item.model_dump(mode="json", include={"content", "importance", "metadata", "memory_type"})


def insert(
    core: MemoryCore,
    prepared: Prepared,
    *,
    history: dict[str, tuple[HistoryEntry, ...]] | None = None,
    supersede: bool = True,
    what: str = "add",
    batch: str | None = None,
) -> tuple[list[MemoryItem], list[MemoryItem]]:
    """Store prepared items (the caller holds ``core.lock``); returns ``(every item as stored, the
    items this call inserted)`` — items stored by an earlier try come back as stored.

    ``history`` gives items their recorded history (an import) instead of an ``add`` entry;
    ``supersede`` marks older memories whose facts the new ones contradict; ``batch`` marks the
    records as one step of a batch written in steps (:mod:`hello_memory.core.batches`): they keep
    a ``BATCH`` marker until the batch is published, and working-memory limits wait for it too.
    """
    # under the lock: a retry may have committed meanwhile (an import may repeat forgotten memories too)
    known = existing(core, prepared.items, forgotten_ok=history is not None)
    items = [it for it in prepared.items if it.id not in known]
    if items:
        vectors, links = prepared.vectors, prepared.links
        commit(
            core,
            _inserts(core, Prepared(items, vectors, links), history, batch),
            index=index_step(core, items, vectors, links, supersede=supersede),
            undo=lambda: unindex(core, items),
            hold=True,
            what=what,
        )
        if history is None and batch is None:
            for uid in {it.user_id for it in items if it.memory_type == MemoryType.WORKING}:
                working.enforce_working_limits(core, uid)
    return [known.get(it.id, it) for it in prepared.items], items


def get(core: MemoryCore, user_id: str, memory_id: str, include_deleted: bool = False) -> MemoryItem:
    """One memory of the user; ``NotFoundError`` if absent, another user's, or an expired working one."""
    stored = core.records.read(user_id, [memory_id], include_deleted=include_deleted).get(memory_id)
    if stored is None or core.expired(stored.item):
        raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}", object_id=memory_id)
    return stored.item


def update_memory(
    core: MemoryCore,
    user_id: str,
    memory_id: str,
    content: Any,
    importance: Any,
    metadata: Any,
    fields: dict[str, Any] | None = None,
) -> MemoryItem:
    """validate → embed the new content (no lock) → lock → :func:`update` (prepared again if the
    memory's content changed while it embedded). ``fields``: see :func:`prepare_update`."""
    prep = prepare_update(core, get(core, user_id, memory_id), content, importance, metadata, fields)
    with core.lock:
        now = get(core, user_id, memory_id)
        if not prep.fits(now):
            prep = prepare_update(core, now, content, importance, metadata, fields)
        return update(core, prep, now)


def restore_memory(core: MemoryCore, user_id: str, memory_id: str) -> MemoryItem:
    """Embed a forgotten memory (no lock) → lock → :func:`restore`; a live one comes back as it is."""
    item = get(core, user_id, memory_id, include_deleted=True)
    if item.deleted_at is None:
        return item
    vectors = embed(core, [item])
    with core.lock:
        now = get(core, user_id, memory_id, include_deleted=True)
        if now.deleted_at is None:
            return now
        if now.content != item.content:
            vectors = embed(core, [now])
        return restore(core, now, vectors)


def _inserts(
    core: MemoryCore,
    prepared: Prepared,
    history: dict[str, tuple[HistoryEntry, ...]] | None,
    batch: str | None = None,
) -> list[RecordWrite]:
    """The record writes that insert ``prepared``: each with its history (an ``add`` entry unless
    ``history`` gives the recorded one), facts, vector and marker (``BATCH`` in a batch)."""
    vectors, links = prepared.vectors, prepared.links
    return [
        RecordWrite(
            it,
            history=history.get(it.id, ())
            if history is not None
            else (HistoryEntry(memory_id=it.id, event="add", new=snapshot(it), at=it.updated_at),),
            facts=semantic.facts_of(links[it.id]) if it.id in links else None,
            vector=vectors.get(it.id),
            pending=PendingOp.BATCH
            if batch is not None
            else marker(core, it, it.id in vectors, it.id in links, PendingOp.INDEX),
            batch=batch,
        )
        for it in prepared.items
    ]


def current(core: MemoryCore, item: MemoryItem, *, deleted: bool = False) -> StoredRecord:
    """The stored record of ``item`` with its version; ``NotFoundError`` if it is gone."""
    rec = core.records.read(item.user_id, [item.id], include_deleted=deleted).get(item.id)
    if rec is None:
        raise NotFoundError(f"no memory {item.id!r} for user {item.user_id!r}", object_id=item.id)
    return rec


def update(core: MemoryCore, prep: PreparedUpdate, item: MemoryItem) -> MemoryItem:
    """Apply an update everywhere the memory is stored; history records old and new.

    The update names the version it read: a concurrent change by another worker wins and this one
    raises :class:`~hello_memory.errors.WriteConflictError` (read again and re-apply).
    """
    rec = current(core, item)
    if not prep.fits(rec.item):  # changed by another worker since the caller read it
        raise WriteConflictError(
            f"memory {item.id!r} changed while this update was prepared; read it again and re-apply",
            memory_id=item.id,
            expected_version=rec.version,
        )
    new = prep.apply_to(core, rec.item)
    links = {new.id: prep.links} if prep.links is not None else {}
    before = core.dense.capture([rec.item]) if prep.vectors or links else None
    entry = HistoryEntry(
        memory_id=new.id, event="update", old=snapshot(rec.item), new=snapshot(new), at=new.updated_at
    )
    write = RecordWrite(
        new,
        expected_version=rec.version,
        history=(entry,),
        facts=semantic.facts_of(prep.links) if prep.links is not None else None,
        vector=prep.vectors.get(new.id),
        pending=marker(core, new, bool(prep.vectors), bool(links), PendingOp.INDEX),
    )
    stored = commit(
        core,
        [write],
        index=index_step(core, [new], prep.vectors, links, supersede=True),
        undo=(lambda: put_back(core, before)) if before is not None else None,
        hold=True,
        what="update",
    )
    return stored[0].item


def restore(core: MemoryCore, item: MemoryItem, vectors: dict[str, np.ndarray]) -> MemoryItem:
    """Bring a soft-deleted memory back into every index, all-or-nothing where the store allows."""
    rec = current(core, item, deleted=True)
    now = core.now()
    new = rec.item.model_copy(update={"deleted_at": None, "updated_at": now})
    links = {new.id: semantic.links_of(new)} if new.memory_type == MemoryType.SEMANTIC else {}
    write = RecordWrite(
        new,
        expected_version=rec.version,
        history=(HistoryEntry(memory_id=new.id, event="restore", at=now),),
        vector=vectors.get(new.id),
        pending=marker(core, new, new.id in vectors, bool(links), PendingOp.INDEX),
    )
    stored = commit(
        core,
        [write],
        index=index_step(core, [new], vectors, links, supersede=False),
        undo=lambda: unindex(core, [new]),
        hold=True,
        what="restore",
    )
    return stored[0].item


def consolidate(
    core: MemoryCore,
    sources: Sequence[MemoryItem],
    prepared: Prepared,
    merges: Sequence[tuple[MemoryItem, MemoryItem]],
) -> None:
    """Promote ``prepared`` items, merge sources into their twins and remove the sources, in one unit.

    The sources are marked first, so a process killed midway leaves them to recovery. Where the
    record store rolls back (embedded), a failure keeps the sources exactly as they were; where it
    cannot, a failure leaves promoted memories stored and some sources not yet removed, and running
    ``consolidate`` again merges those into their twins instead of promoting them twice.
    """
    new_items, vectors, links = prepared.items, prepared.vectors, prepared.links
    groups = by_user(list(sources))
    for uid, group in groups.items():
        core.records.mark(uid, [s.id for s in group], PendingOp.INDEX)
    before = core.dense.capture(sources)
    now = core.now()

    def index(stored: list[StoredRecord]) -> None:
        index_step(core, new_items, vectors, links, supersede=True)(stored)
        for src, twin in merges:
            _merge(core, src, twin, now)
        for uid, group in groups.items():
            core.records.delete(uid, [s.id for s in group], keep_pending=True)
        unindex(core, sources)

    commit(
        core,
        _inserts(core, prepared, None),
        index=index,
        undo=lambda: put_back(core, before, added=new_items),
        hold=True,
        what="consolidate",
        marked={uid: [s.id for s in group] for uid, group in groups.items()},
    )


def _merge(core: MemoryCore, src: MemoryItem, twin: MemoryItem, now: Any) -> None:
    """Merge ``src`` into ``twin``: the higher importance, and a history entry saying so."""
    rec = current(core, twin)
    new = rec.item
    if src.importance > new.importance:
        new = new.model_copy(update={"importance": src.importance})
    entry = HistoryEntry(memory_id=twin.id, event="merge", new={"merged_from": src.id}, at=now)
    core.records.apply([RecordWrite(new, expected_version=rec.version, history=(entry,))])
