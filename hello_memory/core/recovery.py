"""Recovery: complete the work every pending marker names, in both modes.

A write killed midway (or whose follow-up failed) leaves markers in the record store (see
:mod:`hello_memory.core.unit`). On open, and on ``MemoryManager.recover()``, each is completed:
a live memory gets its vector and graph links again (and supersedes what its facts contradict:
idempotent), a missing or forgotten one is removed from the vector index and the graph, and a
``purge`` also deletes what is left of its record. Markers are settled at the versions read, so a
newer write's marker stays for its writer; a marker of a write still in flight on another worker
is completed twice, to the same result.

Markers are completed in batches of ``embed_batch_size``, like ``add_many``: one embedder call,
one vector write and one settle per batch, each one write step under ``core.lock``, so an
interrupted recovery resumes where it stopped and other writes go on between its steps. A
``batch`` marker (a batch written in steps that was never published, :mod:`.batches`) rolls its
memory back like a ``purge``, unless that batch may still be running.
Progress goes to a tqdm bar on a terminal and to the log (INFO, every tenth) otherwise.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hello_memory.core import MemoryCore, semantic
from hello_memory.core.prepare import embed
from hello_memory.errors import DiskFullError
from hello_memory.models import MemoryType
from hello_memory.stores.records.base import Pending, PendingOp

logger = logging.getLogger(__name__)
# A batch written in steps by another worker of a shared store is taken for dead (and rolled back)
# once none of its steps was written for this long; a step takes well under a second.
BATCH_LEASE_S = 15 * 60


def recover(core: MemoryCore, *, opening: bool = False) -> int:
    """Complete every pending marker; returns how many were completed.

    ``opening``: called when the memory is opened. A full disk then postpones the work (logged)
    instead of failing the open: the records decide every read, so a lagging index only hides a
    memory from the vector search until a later open or :meth:`MemoryManager.recover` completes it.
    """
    try:
        return _recover(core)
    except DiskFullError as e:
        if not opening:
            raise
        logger.warning("recovery of the memory index postponed: %s", e)
        return 0


def _recover(core: MemoryCore) -> int:
    todo = _due(core, core.records.unsettled())
    if not todo:
        return 0
    logger.warning("completing %d interrupted index operation(s)", len(todo))
    size = core.settings.embed_batch_size
    progress = _Progress(len(todo))
    try:
        for start in range(0, len(todo), size):  # one bounded write step per batch of markers
            batch = todo[start : start + size]
            with core.lock:
                _complete(core, batch)
            progress.advance(len(batch))
    finally:
        progress.close()
    return len(todo)


def _due(core: MemoryCore, markers: Sequence[Pending]) -> list[Pending]:
    """The markers to complete now; a ``BATCH`` marker becomes a ``PURGE`` (its batch is rolled back)
    unless its batch may still be running: in this process, or — where workers share the store — in
    another worker that wrote one of its steps within :data:`BATCH_LEASE_S`."""
    newest: dict[str, float] = {}
    for p in markers:
        if p.op == PendingOp.BATCH and p.batch is not None:
            newest[p.batch] = max(newest.get(p.batch, 0.0), p.at)
    now = time.time()

    def running(batch: str | None) -> bool:
        if batch is None:
            return False
        return batch in core.batches or (not core.records.exclusive and now - newest[batch] < BATCH_LEASE_S)

    return [
        replace(p, op=PendingOp.PURGE) if p.op == PendingOp.BATCH else p
        for p in markers
        if p.op != PendingOp.BATCH or not running(p.batch)
    ]


def _complete(core: MemoryCore, batch: Sequence[Pending]) -> None:
    """Make the vectors and graph of one batch of marked memories agree with their records."""
    by_user: dict[str, list[Pending]] = {}
    for p in batch:
        by_user.setdefault(p.user_id, []).append(p)
    for uid, group in by_user.items():
        found = core.records.read(uid, [p.memory_id for p in group], include_deleted=True)
        live = [
            found[p.memory_id]
            for p in group
            if p.op == PendingOp.INDEX and p.memory_id in found and found[p.memory_id].item.deleted_at is None
        ]
        kept = {rec.item.id for rec in live}
        gone = [p.memory_id for p in group if p.memory_id not in kept]
        if gone:
            core.dense.remove_ids(gone)
            for mid in gone:
                core.graph.unlink_memory(uid, mid)
            purged = [p.memory_id for p in group if p.op == PendingOp.PURGE and p.memory_id in found]
            if purged:
                core.records.delete(uid, purged)
            # at the version read: a marker a newer write set meanwhile stays for its writer
            forgotten = {m: found[m].version for m in gone if m in found and m not in purged}
            core.records.settle(uid, list(forgotten), versions=forgotten)
            core.records.settle(uid, [m for m in gone if m not in found or m in purged])
        if live:
            items = [rec.item for rec in live]
            core.dense.restore(items, lambda todo: embed(core, todo), core.embedder.name)
            for it in items:
                if it.memory_type == MemoryType.SEMANTIC:
                    links = semantic.links_of(it)
                    semantic.supersede(core.records, it, links)
                    core.graph.link(uid, it.id, *links)
            core.records.settle(uid, list(kept), versions={rec.item.id: rec.version for rec in live})


class _Progress:
    """A tqdm bar on a terminal, a log line per tenth of the work otherwise."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self._logged = total, 0, 0
        self._bar: Any = None
        if sys.stderr is not None and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc="recovering the memory index", unit="memory", leave=False)

    def advance(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        tenth = self.done * 10 // self.total
        if tenth > self._logged or self.done == self.total:
            self._logged = tenth
            logger.info("recovering the memory index: %d/%d", self.done, self.total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
