"""Bookkeeping that reads owe the store, written without making a read wait for a writer.

A read never takes the write lock, but two things it finds are writes:
the accesses it counts (``access_count``, ``last_accessed_at``) and the working memories it finds
past their TTL (which are deleted). They are queued here instead. Right after the read, if no
writer holds the lock, the read writes them itself (a few milliseconds); otherwise the next read
that finds the lock free does, or closing the memory. The read's own answer never depends on them:
expired working memories are left out of every read whether or not they were deleted yet.

The queue is bounded (:data:`~hello_memory.core.state.MAX_QUEUED` accesses): under a writer that
holds the lock step after step for minutes, the oldest access counts are dropped — they are
statistics, best effort by contract (a warning says how many).

The queue itself is :class:`hello_memory.core.state.Upkeep`.
"""

from __future__ import annotations

import logging

from hello_memory.core import MemoryCore, working
from hello_memory.errors import StoreError

logger = logging.getLogger(__name__)


def run(core: MemoryCore) -> None:
    """Write what reads queued; the caller holds ``core.lock`` (a bounded step: one transaction per
    user and time, and one expiry scan per user)."""
    accesses, expire, dropped = core.upkeep.take()
    if dropped:
        logger.warning("%d access counts were not recorded (the write lock was busy for long)", dropped)
    for user_id, ids, at in accesses:
        try:
            core.records.record_access(user_id, ids, at)
        except StoreError as e:  # a full disk, a server that refuses the write: statistics only
            logger.warning("access counts not updated: %s", e)
    for user_id in expire:
        working.expire_working(core, user_id)


def after_read(core: MemoryCore) -> None:
    """Write what reads queued if no writer holds the lock now; otherwise leave it queued."""
    if not core.lock.acquire(blocking=False):
        return
    try:
        run(core)
    finally:
        core.lock.release()
