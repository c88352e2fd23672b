"""Writes across SQLite, the vector index and the graph: all-or-nothing, or committed with the index pending.

The ``pending`` journal in records.db names memories whose vector/graph index may disagree with
their row; :mod:`hello_memory.core.recovery` makes them agree (re-embed a live row, unindex a missing or
forgotten one) when the data directory is next opened, or on ``MemoryManager.recover()``.

**Content writes** (add, update, restore, consolidate) run through :func:`atomic` and are
all-or-nothing:

1. a journal entry for every memory whose index changes is committed on its own;
2. one SQLite transaction writes the rows (record, lexical tokens, history, facts) and stays open
   while the vectors and graph links are written; it commits only after them;
3. the journal entries are cleared.

If an index write fails, the transaction rolls back and ``undo`` puts the index back as it was (old
vectors are read before they are overwritten): the caller gets a ``StoreError`` saying nothing was
changed, and every read, search included, sees the old state. If the undo fails too, the journal
entries stay and recovery re-embeds the old rows. Killed at any point, the journal entries survive
and recovery makes the index agree with whichever rows committed.

Why roll back instead of reporting "committed, index pending" for these: a committed row whose
vector is missing or stale is half-visible (found by its words, not by its meaning, or found
through the old text's vector), and the caller could not tell which.

**Deletions** (forget, remove, clear_all, forget_user, working-memory eviction) are committed
first: the row alone decides every read (each vector or graph hit is checked against the live
rows), so once it is committed the memory is gone for every caller. The index clean-up follows;
if it fails, :func:`index_pending` raises :class:`~hello_memory.errors.IndexPendingError`:
"committed, index pending", completed by recovery.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

from hello_memory.errors import DiskFullError, IndexPendingError, StoreError

if TYPE_CHECKING:
    from hello_memory.manager import MemoryManager

logger = logging.getLogger(__name__)

#: Journal operation: "make the index agree with the row" (the only one written since issue 17).
SYNC = "index"
RECOVER_HINT = "when the data directory is next opened, or by MemoryManager.recover()"


def atomic(
    mm: MemoryManager,
    journal: Sequence[tuple[str, str]],
    rows: Callable[[sqlite3.Connection], None],
    index: Callable[[], None],
    undo: Callable[[], None],
    *,
    what: str,
) -> None:
    """Write ``rows`` (inside one transaction) and ``index`` together, or neither (see the module docstring).

    Args:
        journal: ``(memory_id, user_id)`` of every memory whose index ``index`` changes.
        rows: the SQLite writes, given the open transaction's connection.
        index: the vector and graph writes.
        undo: puts the index back as it was before ``index`` (after the transaction rolled back).
        what: the operation, for the error message ("update", "add", ...).
    """
    records = mm.bundle.sqlite
    ids = [mid for mid, _ in journal]
    if journal:
        records.journal(journal, SYNC, mm._now().timestamp())
    indexing = False
    try:
        with records.transaction() as conn:
            rows(conn)
            indexing = True
            index()
    except Exception as e:
        _failed(mm, ids, undo if indexing else None, e, what)
    clear(mm, ids)


def clear(mm: MemoryManager, ids: Sequence[str]) -> None:
    """Clear journal entries of completed work; a failure only costs a re-sync on the next open."""
    try:
        mm.bundle.sqlite.clear_pending(ids)
    except StoreError as e:  # e.g. a full disk: the write itself is done and durable
        logger.warning("could not clear %d journal entries (recovery will re-check them): %s", len(ids), e)


def _failed(
    mm: MemoryManager, ids: Sequence[str], undo: Callable[[], None] | None, error: Exception, what: str
) -> NoReturn:
    if undo is not None:
        try:
            undo()
        except Exception as undo_error:
            logger.error("%s failed and its index could not be put back: %s", what, undo_error)
            if isinstance(error, DiskFullError):  # nothing more can be written: recovery re-syncs later
                raise error from undo_error
            raise StoreError(
                f"{what} failed, nothing was changed in the records ({error}); the index could not be put "
                f"back ({undo_error}) and is repaired {RECOVER_HINT}"
            ) from error
    clear(mm, ids)
    if isinstance(error, DiskFullError):
        raise error
    raise StoreError(f"{what} failed, nothing was changed: {error}") from error


def index_pending(
    mm: MemoryManager, ids: Sequence[str], error: Exception, what: str, result: object = None
) -> NoReturn:
    """Raise "committed, index pending" for a deletion whose index clean-up failed (journal kept)."""
    logger.warning("%s committed; the index clean-up of %d memories failed: %s", what, len(ids), error)
    raise IndexPendingError(
        f"{what} is committed (no read returns these memories any more), but removing them from the "
        f"vector index or graph failed ({error}); that is completed {RECOVER_HINT}",
        memory_ids=list(ids),
        result=result,
    ) from error
