"""Recovery: make the index agree with the rows for every memory left in the journal.

A write killed midway (or whose index step failed) leaves ``pending`` entries in records.db (see
:mod:`hello_memory.core.journal`). On open, and on ``MemoryManager.recover()``, each entry is completed:
a live row is re-embedded and indexed, a missing or forgotten one is removed from the vector index
and the graph, and a ``purge`` also deletes what is left of its rows.

The journal is replayed in batches of ``embed_batch_size``, like ``add_many``: one embedder call,
one vector write and one journal transaction per batch (it used to be one of each per memory, and
5,000 journalled items took twice as long as writing them). A batch's entries are cleared as soon as
it is done, so an interrupted recovery resumes where it stopped. Progress goes to a tqdm bar on a
terminal and to the log (INFO, every tenth) otherwise.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hello_memory.core import index as memory_index
from hello_memory.core import semantic
from hello_memory.errors import DiskFullError
from hello_memory.models import MemoryItem, MemoryType
from hello_memory.stores.records.base import Pending, PendingOp

if TYPE_CHECKING:
    from hello_memory.manager import MemoryManager

logger = logging.getLogger(__name__)


def recover(mm: MemoryManager, *, opening: bool = False) -> int:
    """Complete every journalled index operation; returns how many were completed.

    ``opening``: called by the constructor. A full disk then postpones the work (logged) instead of
    failing the open: the rows decide every read, so a lagging index only hides a memory from the
    vector search until a later open or :meth:`MemoryManager.recover` completes it.
    """
    try:
        return _recover(mm)
    except DiskFullError as e:
        if not opening:
            raise
        logger.warning("recovery of the memory index postponed: %s", e)
        return 0


def _recover(mm: MemoryManager) -> int:
    bundle = mm.bundle
    if bundle.server:
        return _recover_markers(mm)
    with bundle.lock:
        pending = bundle.sqlite.pending()
        if not pending:
            return 0
        logger.warning("recovering %d interrupted index operation(s)", len(pending))
        size = mm.settings.embed_batch_size
        progress = _Progress(len(pending))
        try:
            for start in range(0, len(pending), size):
                batch = pending[start : start + size]
                _resync(mm, batch)
                bundle.sqlite.clear_pending([mid for mid, _, _ in batch])
                progress.advance(len(batch))
        finally:
            progress.close()
        return len(pending)


def _resync(mm: MemoryManager, batch: Sequence[tuple[str, str, str]]) -> None:
    """Make the index of one batch of journalled memories agree with their rows."""
    from hello_memory.core.writes import _delete_records

    found = mm.bundle.sqlite.fetch([mid for mid, _, _ in batch], None, include_deleted=True)
    live: list[MemoryItem] = []
    gone: dict[str, list[str]] = {}
    purge: list[str] = []
    for memory_id, user_id, op in batch:
        item = found.get(memory_id)
        if item is None or op in ("unindex", "purge") or item.deleted_at is not None:
            gone.setdefault(user_id, []).append(memory_id)
            if op == "purge":
                purge.append(memory_id)
        else:
            live.append(item)
    if gone:
        memory_index.unindex_everywhere(mm, gone)
    if purge:
        _delete_records(mm, purge)
    if live:
        vectors = memory_index.embed(mm, live)
        memory_index.ensure_collections(mm, live)
        links = {it.id: semantic.links_of(it) for it in live if it.memory_type == MemoryType.SEMANTIC}
        memory_index.write(mm, live, vectors, links)


def _recover_markers(mm: MemoryManager) -> int:
    """Server mode: finish the graph work of every pending marker (any worker's, crashed or not).

    ``INDEX`` re-links the record's graph links (and re-runs supersession, idempotent), ``UNINDEX``
    unlinks, ``PURGE`` unlinks and deletes. Markers are settled at the version read, so a newer
    write's marker stays for its writer. A marker of a write still in flight on another worker is
    completed twice, to the same result.
    """
    records = mm.bundle.records
    todo = records.unsettled()
    if not todo:
        return 0
    logger.warning("completing %d pending graph operation(s)", len(todo))
    with mm.bundle.lock:
        _complete(mm, todo)
    return len(todo)


def _complete(mm: MemoryManager, todo: Sequence[Pending]) -> None:
    from hello_memory.core import server_writes as record_writes

    records = mm.bundle.records
    by_user: dict[str, list[Pending]] = {}
    for p in todo:
        by_user.setdefault(p.user_id, []).append(p)
    for uid, group in by_user.items():
        found = records.read(uid, [p.memory_id for p in group], include_deleted=True)
        purge = [found[p.memory_id].item for p in group if p.op == PendingOp.PURGE and p.memory_id in found]
        rest = [found[p.memory_id] for p in group if p.op != PendingOp.PURGE and p.memory_id in found]
        for start in range(0, len(rest), mm.settings.embed_batch_size):
            record_writes.follow_up(mm, rest[start : start + mm.settings.embed_batch_size], "recovery")
        if purge:
            record_writes.purge(mm, purge)


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
