"""Large inserts in bounded write steps, still all or nothing (``add_many``, a conversation, an import).

A write holds ``core.lock`` for one step at a time — ``state.STEP`` memories: their records, vectors
and graph links, one write unit (:mod:`hello_memory.core.unit`) — so another user's write waits for
one step of a 10,000-memory ``add_many``, never for all of it (reads never wait at all). The batch
stays all or nothing:

1. every step's records carry a ``BATCH`` marker naming the batch, set before the step's records
   (:meth:`~hello_memory.stores.records.base.RecordStore.write`); a step that fails rolls back alone;
2. after the last step one short step *publishes* the batch: its markers become ``INDEX`` markers in
   one atomic write (:meth:`~hello_memory.stores.records.base.RecordStore.publish`);
3. then, step by step, what a committed batch still owes: semantic memories supersede the older
   facts they contradict, and the markers are settled. A process killed here leaves ``INDEX``
   markers, which recovery completes (:mod:`hello_memory.core.recovery`).

A failure before the batch is published takes back what the earlier steps stored, step by step
(records, vectors, graph links); a process killed there leaves ``BATCH`` markers, and recovery rolls
their memories back. Meanwhile a reader may see the steps already written: a batch is atomic (it
ends complete or absent), not isolated. A batch of at most ``STEP`` memories is one step and
one write unit, as any write.

Example:
    >>> list(map(len, chunks(list(range(600)), 256)))
    [256, 256, 88]
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import TypeVar

from hello_memory.core import MemoryCore, semantic, state, working
from hello_memory.core.deletes import purge
from hello_memory.core.prepare import Prepared
from hello_memory.core.unit import by_user, pending
from hello_memory.core.writes import insert
from hello_memory.errors import IndexPendingError, StoreError
from hello_memory.models import HistoryEntry, MemoryItem, MemoryType

logger = logging.getLogger(__name__)
T = TypeVar("T")


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """``items`` in consecutive pieces of at most ``size``."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def insert_in_steps(
    core: MemoryCore,
    prepared: Prepared,
    *,
    history: dict[str, tuple[HistoryEntry, ...]] | None = None,
    supersede: bool = True,
    what: str = "add",
) -> list[MemoryItem]:
    """Store ``prepared`` (the caller holds no lock); returns every item as stored, in order.

    Raises:
        StoreError, DiskFullError, ...: a step failed; what earlier steps stored was taken back.
    """
    if len(prepared.items) <= state.STEP:
        with core.lock:
            return insert(core, prepared, history=history, supersede=supersede, what=what)[0]
    batch = uuid.uuid4().hex
    added: list[MemoryItem] = []
    stored: dict[str, MemoryItem] = {}
    with core.batches.running(batch):
        try:
            for part in _parts(prepared):
                with core.lock:
                    every, new = insert(core, part, history=history, supersede=False, what=what, batch=batch)
                stored.update((it.id, it) for it in every)
                added += new
            with core.lock:
                for uid in by_user(added):
                    core.records.publish(uid, batch)
        except IndexPendingError as e:  # a step's records stayed (server mode): the batch is not stored
            landed = e.result if isinstance(e.result, list) else []
            _take_back(core, added + landed, what)
            raise StoreError(f"{what} failed, nothing was stored: {e}") from e
        except BaseException:
            _take_back(core, added, what)
            raise
    _settle(core, added, prepared, supersede)
    return [stored[it.id] for it in prepared.items]


def _parts(prepared: Prepared) -> list[Prepared]:
    return [
        Prepared(
            list(part),
            {it.id: prepared.vectors[it.id] for it in part if it.id in prepared.vectors},
            {it.id: prepared.links[it.id] for it in part if it.id in prepared.links},
        )
        for part in chunks(prepared.items, state.STEP)
    ]


def _take_back(core: MemoryCore, added: list[MemoryItem], what: str) -> None:
    """Delete what the committed steps of a failed batch stored, a step at a time (nothing was
    superseded yet). If that fails too, the ``BATCH`` markers stay and recovery rolls them back."""
    try:
        for part in chunks(added, state.STEP):
            with core.lock:
                purge(core, part)
    except Exception as e:  # the caller re-raises the batch's own error
        logger.error("%s failed and the %d memories its earlier steps stored are rolled back by recovery "
                     "(%s)", what, len(added), e)


def _settle(core: MemoryCore, added: list[MemoryItem], prepared: Prepared, supersede: bool) -> None:
    """What a published batch still owes, a step at a time: supersession, working limits, markers.

    A failure here leaves ``INDEX`` markers that recovery completes: the batch is committed, so
    the caller learns it through :class:`~hello_memory.errors.IndexPendingError`.
    """
    try:
        for part in chunks(added, state.STEP):
            with core.lock:
                if supersede:
                    for it in part:
                        if it.id in prepared.links:
                            semantic.supersede(core.records, it, prepared.links[it.id])
                for uid, group in by_user(part).items():
                    core.records.settle(uid, [it.id for it in group], versions=dict.fromkeys(
                        (it.id for it in group), 1))
        with core.lock:
            for uid in {it.user_id for it in added if it.memory_type == MemoryType.WORKING}:
                working.enforce_working_limits(core, uid)
    except Exception as e:
        raise pending([it.id for it in added], e, "the batch", result=added) from e
