"""The one write sequence of the core, in both modes: gate → records with markers → index → settle.

Every change of a memory — add, update, restore, consolidate, import, forget — runs :func:`commit`:

1. :mod:`hello_memory.core.gate` checks every record about to be written (nothing stored yet);
2. the record store's write unit (:meth:`~hello_memory.stores.records.base.RecordStore.write`)
   applies the records with their pending markers — a marker is durable before the work it covers;
3. inside that unit, the work that follows in the other stores: the memories' vectors
   (:class:`~hello_memory.stores.dense.base.DenseIndex`), supersession of contradicted facts, graph links;
4. the markers are settled at the versions written.

What a failure in step 3 leaves is the record store's guarantee, not a branch here. Content writes
hold the records revocable (``hold=True``): the embedded SQLite store keeps its transaction open
through step 3 and rolls it back, :func:`commit` puts the index back and the caller gets a
``StoreError`` saying nothing was changed (a committed row whose vector is missing or stale would
be half-visible: found by its words, not by its meaning). A record store that commits each record
as it is written (Qdrant, where the vector is part of the record) keeps the write, and
:class:`~hello_memory.errors.IndexPendingError` says the graph lags. Deletions commit first in both
modes (``hold=False``): the record alone decides every read. Killed anywhere, the markers survive
and :mod:`hello_memory.core.recovery` completes them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn

import numpy as np

from hello_memory.core import MemoryCore, gate, semantic
from hello_memory.errors import DiskFullError, HelloMemoryError, IndexPendingError, StoreError
from hello_memory.models import MemoryItem, MemoryType
from hello_memory.stores.dense.base import VECTOR_TIERS, DenseState
from hello_memory.stores.records.base import FollowUpFailed, PendingOp, RecordWrite, StoredRecord

logger = logging.getLogger(__name__)
RECOVER_HINT = (
    "when the memory is next opened, by MemoryManager.recover() (every worker runs it when it starts), "
    "or by `hello-memory reindex --graph`"
)
Step = Callable[[list[StoredRecord]], None]


def by_user(items: Sequence[MemoryItem]) -> dict[str, list[MemoryItem]]:
    """``items`` grouped by their user, in order."""
    out: dict[str, list[MemoryItem]] = {}
    for it in items:
        out.setdefault(it.user_id, []).append(it)
    return out


def marker(core: MemoryCore, item: MemoryItem, vector: bool, linked: bool, op: PendingOp) -> PendingOp | None:
    """The pending marker a write of ``item`` needs: ``op`` when work must follow in another store.

    Graph links always follow the record; a vector follows it only where the record store does not
    keep vectors itself (``keeps_vectors``: the vector is then part of the same atomic write).
    """
    follows_vector = vector and item.memory_type in VECTOR_TIERS and not core.records.keeps_vectors
    return op if linked or follows_vector else None


def commit(
    core: MemoryCore,
    writes: Sequence[RecordWrite],
    *,
    index: Step,
    undo: Callable[[], None] | None,
    hold: bool,
    what: str,
    marked: Mapping[str, Sequence[str]] | None = None,
) -> list[StoredRecord]:
    """Run the write sequence (see the module docstring); returns the records as stored.

    Args:
        index: the work in other stores, given the stored records.
        undo: puts the other stores back as they were before ``index`` (after a rollback).
        hold: keep the records revocable until ``index`` returns (content writes).
        what: the operation, for messages ("add", "update", ...).
        marked: user id -> memory ids the caller marked itself beforehand; settled with the writes.
    """
    dimension = core.embedder.dimension if any(w.vector is not None for w in writes) else None
    for w in writes:
        gate.check_write(w, dimension)
    extra = {uid: list(ids) for uid, ids in (marked or {}).items()}
    try:
        stored = core.records.write(writes, index, hold=hold)
    except FollowUpFailed as e:
        if e.rolled_back:
            _rolled_back(core, writes, extra, undo, e.cause, what)
        raise pending([w.item.id for w in writes], e.cause, what, result=[s.item for s in e.stored]) from e.cause
    except HelloMemoryError as e:
        if type(e) is StoreError:
            raise StoreError(f"{what} failed, nothing was changed: {e}") from e
        raise
    # a batch's markers stay until the batch is published (hello_memory.core.batches)
    done = [s for s, w in zip(stored, writes, strict=True) if w.pending not in (None, PendingOp.BATCH)]
    settle(core, done, extra)
    return stored


def _rolled_back(
    core: MemoryCore,
    writes: Sequence[RecordWrite],
    extra: dict[str, list[str]],
    undo: Callable[[], None] | None,
    error: BaseException,
    what: str,
) -> NoReturn:
    """The records were rolled back: put the other stores back, clear the markers, say nothing changed."""
    if undo is not None:
        try:
            undo()
        except Exception as undo_error:  # the markers stay: recovery re-syncs the index with the records
            logger.error("%s failed and its index could not be put back: %s", what, undo_error)
            if isinstance(error, DiskFullError):
                raise error from undo_error
            raise StoreError(
                f"{what} failed, nothing was changed in the records ({error}); the index could not be put "
                f"back ({undo_error}) and is repaired {RECOVER_HINT}"
            ) from error
    for uid, group in by_user([w.item for w in writes if w.pending is not None]).items():
        extra.setdefault(uid, []).extend(it.id for it in group)
    settle(core, [], extra)
    if isinstance(error, HelloMemoryError) and type(error) is not StoreError:
        raise error  # a typed failure (a full disk, a dimension mismatch) keeps its type; nothing changed
    raise StoreError(f"{what} failed, nothing was changed: {error}") from error


def settle(core: MemoryCore, stored: Sequence[StoredRecord], extra: Mapping[str, Sequence[str]] | None = None) -> None:
    """Clear markers: of ``stored`` at the versions written, of ``extra`` whatever the version.

    A failure only costs recovery a look at them (logged).
    """
    versions: dict[str, dict[str, int]] = {}
    for rec in stored:
        versions.setdefault(rec.item.user_id, {})[rec.item.id] = rec.version
    try:
        for uid, vs in versions.items():
            core.records.settle(uid, list(vs), versions=vs)
        for uid, ids in (extra or {}).items():
            if ids:
                core.records.settle(uid, list(ids))
    except StoreError as e:
        logger.warning("could not clear pending markers (recovery re-checks them): %s", e)


def pending(ids: Sequence[str], error: BaseException, what: str, result: object = None) -> IndexPendingError:
    """"Committed, index pending": the markers stay for recovery."""
    logger.warning("%s committed; the index work of %d memories failed: %s", what, len(ids), error)
    return IndexPendingError(
        f"{what} is committed (every read sees it), but updating the vector index or the knowledge graph "
        f"failed ({error}); that is completed {RECOVER_HINT}",
        memory_ids=list(ids),
        result=result,
    )


# -- the work that follows in the other stores ----------------------------------------------------
def index_step(
    core: MemoryCore,
    items: Sequence[MemoryItem],
    vectors: Mapping[str, np.ndarray],
    links: Mapping[str, semantic.Links],
    *,
    supersede: bool,
) -> Step:
    """Write the items' vectors, supersede what their facts contradict, link them into the graph."""

    def run(stored: list[StoredRecord]) -> None:
        if vectors:
            core.dense.write(items, vectors, core.embedder.name)
        for it in items:
            if it.id in links:
                if supersede:
                    semantic.supersede(core.records, it, links[it.id])
                core.graph.link(it.user_id, it.id, *links[it.id])

    return run


def unindex(core: MemoryCore, items: Sequence[MemoryItem]) -> None:
    """Remove items' vectors and graph links (records untouched)."""
    core.dense.remove(items)
    for it in items:
        if it.memory_type == MemoryType.SEMANTIC:
            core.graph.unlink_memory(it.user_id, it.id)


def put_back(core: MemoryCore, before: DenseState, added: Sequence[MemoryItem] = ()) -> None:
    """Undo an index write: drop ``added``; ``before``'s live items get their vectors and links back."""
    for it in [*added, *(it for it in before.items if it.deleted_at is not None)]:
        if it.memory_type == MemoryType.SEMANTIC:
            core.graph.unlink_memory(it.user_id, it.id)
    core.dense.put_back(before, added)
    for it in before.items:
        if it.deleted_at is None and it.memory_type == MemoryType.SEMANTIC:
            core.graph.link(it.user_id, it.id, *semantic.links_of(it))
