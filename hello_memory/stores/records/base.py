"""Record store contract: the memory of record, its history, its lexical index and its pending work.

A :class:`RecordStore` holds every memory's full record, the history of its changes, a lexical
(BM25-style) index over its text, the facts it asserts, and a *pending* marker per memory for work
that must follow the record write in other stores (vectors, graph). Two backends: SQLite in the data
directory (:class:`~hello_memory.stores.records.sqlite.SQLiteRecordStore`, embedded default) and Qdrant
(:class:`~hello_memory.stores.records.qdrant.QdrantRecordStore`, server mode: each memory is one
point whose payload is the record, with its dense vector and a sparse lexical vector). Both pass
:class:`hello_memory.testing.record_store.RecordStoreContract`.

Semantics every backend keeps:

- **Scoping.** Every call that reads or changes memories takes the user id; a memory of another
  user is absent (never an error that reveals it). The exceptions are maintenance calls that span
  users by nature: :meth:`RecordStore.unsettled` (recovery) and :meth:`RecordStore.scrub`.
- **Unit of atomic write.** :meth:`RecordStore.apply` takes :class:`RecordWrite` s. Each write —
  the record, its lexical document, its history entries, its facts and its pending marker — is
  applied all or nothing, and a reader (any thread, process or worker on the same backend) sees it
  whole or not at all, as soon as ``apply`` returns. A batch is applied in order; SQLite applies the
  whole batch in one transaction, Qdrant memory by memory (a failure midway leaves a prefix applied,
  and retrying the batch is safe: see next point).
- **Idempotent by id, duplicate policy.** A write with ``expected_version=None`` inserts. Inserting
  an id that is already stored with the same user, tier and content is a no-op that returns the
  stored record (a retry after a timeout or crash stores nothing twice, history included); any
  other stored memory under that id raises :class:`~hello_memory.errors.IdConflictError` (the
  error ``MemoryManager.add`` raises for a taken ``memory_id``) without revealing anything about it.
- **Versions.** A record's ``version`` is 1 when inserted and grows by one with every change
  (access statistics excepted). An update names the version it read (``expected_version``); if the
  stored version differs — another worker changed the memory since — nothing is written and
  :class:`~hello_memory.errors.WriteConflictError` says so: **the first writer wins**, the second
  re-reads and re-applies. An update of an absent memory raises
  :class:`~hello_memory.errors.NotFoundError`. Access statistics (:meth:`RecordStore.record_access`)
  are counters, not changes: last writer wins, no version bump.
- **History** of a memory comes back in the order its writes were applied (a sequence number per
  memory, never the clock) and is deleted with the memory.
- **Pending work** replaces a write-ahead journal: the marker travels with the record write (or is
  set by :meth:`RecordStore.mark`), stays until :meth:`RecordStore.settle` (guarded by the version
  written, so a worker never clears the marker of another worker's newer write) or :meth:`RecordStore.delete`,
  and :meth:`RecordStore.unsettled` lists it after a crash so the owner can finish the work.
- **Vectors.** A store whose ``keeps_vectors`` is true stores ``RecordWrite.vector`` in the same
  atomic write (Qdrant: the memory's point). One whose ``keeps_vectors`` is false ignores it; the
  caller writes vectors to a :class:`~hello_memory.stores.vectors.base.VectorStore` under a pending marker.

- **The write unit.** :meth:`RecordStore.write` is the one sequence every change of the core runs,
  in both modes: the records are applied with their pending markers, then ``then`` writes what
  follows in other stores (vectors, graph links), then the caller settles the markers. A marker
  is durable before any of that work starts, so a process killed anywhere leaves a marker that
  recovery completes. What a failure of ``then`` leaves is the backend's guarantee, reported by
  :class:`FollowUpFailed`: SQLite holds the records' transaction open until ``then`` returns
  (``hold=True``) and rolls them back with it; Qdrant has committed each point when it was written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from hello_memory.models import HistoryEntry, MemoryItem, MemoryType


@dataclass(frozen=True, slots=True)
class ScoreRow:
    """What the tier formulas need of a memory, read without building the whole item."""

    id: str
    memory_type: MemoryType
    importance: float
    created_ts: float
    session_id: str | None
    valid_to_ts: float | None
    modality: str | None
    entity_ids: tuple[str, ...]
    participants: tuple[str, ...] = ()


Stored = list["StoredRecord"]
FollowUp = Callable[[Stored], None]
"""The work that follows a write unit in other stores, given the records as stored."""


class FollowUpFailed(Exception):
    """Raised by :meth:`RecordStore.write` when its ``then`` failed; the cause is chained.

    Attributes:
        rolled_back: True when the records of the unit were rolled back with it (nothing of the
            write is stored); False when they stay committed (the work that follows is pending).
        stored: the records as the unit applied them.
    """

    def __init__(self, cause: BaseException, *, rolled_back: bool, stored: Sequence[StoredRecord] = ()) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.rolled_back = rolled_back
        self.stored = list(stored)


class PendingOp(str, Enum):
    """Work that must follow a record write in the other stores."""

    INDEX = "index"  # write the memory's vectors / graph links
    UNINDEX = "unindex"  # remove them (soft delete)
    PURGE = "purge"  # remove them, then delete the record
    BATCH = "batch"  # part of a batch written in steps, not yet published: rolled back unless it is


@dataclass(frozen=True, slots=True)
class Fact:
    """A functional fact a semantic memory asserts: (subject, relation, object) entity ids."""

    subject_id: str
    relation: str
    object_id: str


@dataclass(frozen=True, slots=True)
class RecordWrite:
    """One memory's change, applied atomically by :meth:`RecordStore.apply`.

    Attributes:
        item: the memory's whole new state (``deleted_at`` set = soft-deleted: out of the lexical
            index and without vectors, record and history kept).
        expected_version: ``None`` inserts; an int updates if the stored version is that one.
        history: entries appended with the change, in order.
        facts: the memory's facts after the change (``None`` keeps the stored ones).
        vector: the dense vector, for stores that keep vectors (``None`` keeps the stored one;
            a soft-deleted item keeps none).
        pending: marker for work that must follow in other stores (``None`` leaves the stored one).
        batch: with ``pending=BATCH``, the batch the write belongs to (:meth:`RecordStore.publish`).
    """

    item: MemoryItem
    expected_version: int | None = None
    history: tuple[HistoryEntry, ...] = ()
    facts: tuple[Fact, ...] | None = None
    vector: npt.NDArray[np.float32] | None = None
    pending: PendingOp | None = None
    batch: str | None = None


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A memory as stored, with its version."""

    item: MemoryItem
    version: int


@dataclass(frozen=True, slots=True)
class Pending:
    """Unfinished work on one memory, as :meth:`RecordStore.unsettled` reports it.

    ``batch`` names the batch of a ``BATCH`` marker; ``at`` is when the marker was set (epoch seconds).
    """

    memory_id: str
    user_id: str
    op: PendingOp
    batch: str | None = None
    at: float = 0.0


class RecordOrder(str, Enum):
    """Orders of :meth:`RecordStore.scan` (ties: insertion order for SQLite, the id for Qdrant)."""

    NEWEST = "newest"  # created_at descending
    OLDEST = "oldest"  # created_at ascending
    IMPORTANT = "important"  # importance descending, then created_at descending


@dataclass(frozen=True, slots=True)
class RecordQuery:
    """Which of a user's memories :meth:`RecordStore.scan` returns.

    Attributes:
        types: tiers to include (``None`` = all).
        deleted: ``False`` live only, ``True`` soft-deleted only, ``None`` both.
        session_id: only this session.
        time_range: ``(from, to)`` epoch seconds on ``created_at``, inclusive; ``None`` = open.
        order: see :class:`RecordOrder`.
        limit: at most this many (``None`` = all).
    """

    types: tuple[MemoryType, ...] | None = None
    deleted: bool | None = False
    session_id: str | None = None
    time_range: tuple[float | None, float | None] | None = None
    order: RecordOrder = RecordOrder.NEWEST
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class RecordStats:
    """A user's memory counts per tier (live and soft-deleted) and mean importance of the live ones."""

    live: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    avg_importance: float = 0.0


@runtime_checkable
class RecordStore(Protocol):
    """The memory of record: records, history, lexical index, facts and pending work, per user.

    See the module docstring for the semantics (atomic unit, duplicate policy, versions, what a
    concurrent reader sees). Backend failures raise :class:`~hello_memory.errors.StoreError`.
    """

    @property
    def backend(self) -> str:
        """Short backend name, e.g. ``"sqlite"``."""
        ...

    @property
    def keeps_vectors(self) -> bool:
        """True when :attr:`RecordWrite.vector` is stored with the record (server mode)."""
        ...

    @property
    def exclusive(self) -> bool:
        """True when one process owns the store while it is open (a data directory's SQLite file):
        a marker it finds when it opens was left by a process that is gone. False when stateless
        workers share it (Qdrant): a marker may belong to a write still running elsewhere."""
        ...

    # -- writes -------------------------------------------------------------------------------
    def apply(self, writes: Sequence[RecordWrite]) -> list[StoredRecord]:
        """Apply inserts and updates in order; returns each memory as stored afterwards."""
        ...

    def write(self, writes: Sequence[RecordWrite], then: FollowUp | None = None, *, hold: bool = True) -> Stored:
        """The write unit: apply ``writes``, then run ``then(stored)`` (see the module docstring).

        Args:
            writes: as for :meth:`apply`; the pending markers they carry are durable before
                ``then`` runs (and before anything is applied, where the marker is a separate row).
            then: the work that follows in other stores; it may call this store again.
            hold: keep the records revocable until ``then`` returns, where the backend can (content
                writes); False commits them first (deletions: the record alone decides every read).

        Raises:
            FollowUpFailed: ``then`` raised; ``rolled_back`` says whether the records went with it.
            Anything :meth:`apply` raises: nothing of the batch is stored (a backend that applies
                memory by memory takes back the inserts that landed).
        """
        ...

    def publish(self, user_id: str, batch: str) -> None:
        """Make the ``BATCH`` markers of ``batch`` (the user's) ``INDEX`` markers, in one atomic step:
        from then on the batch is committed, and recovery completes its index work instead of
        rolling it back."""
        ...

    def mark(self, user_id: str, ids: Sequence[str], op: PendingOp) -> None:
        """Set the pending marker of the user's memories ``ids`` without changing them."""
        ...

    def settle(self, user_id: str, ids: Sequence[str], *, versions: Mapping[str, int] | None = None) -> None:
        """Clear the pending markers of the user's memories ``ids`` (their work is done).

        With ``versions`` (memory id → the version the caller wrote), a marker is cleared only while
        the memory is still at that version: a newer write's marker stays for that writer to settle.
        """
        ...

    def delete(self, user_id: str, ids: Sequence[str], *, keep_pending: bool = False) -> int:
        """Hard-delete the user's memories: record, lexical entry, history, facts, marker; returns how many.

        ``keep_pending`` keeps the markers where they outlive the record (SQLite: a row of its own),
        so that recovery finishes the clean-up of other stores; a backend that keeps the marker in
        the record loses it with the record (Qdrant: ``hello-memory reindex --graph`` repairs).
        """
        ...

    def record_access(self, user_id: str, ids: Sequence[str], at: datetime) -> None:
        """Count one access of each of the user's memories ``ids`` at ``at`` (no version bump)."""
        ...

    # -- reads --------------------------------------------------------------------------------
    def read(
        self, user_id: str, ids: Sequence[str], *, include_deleted: bool = False
    ) -> dict[str, StoredRecord]:
        """The user's memories among ``ids`` with their versions (absent ids are skipped)."""
        ...

    def scan(self, user_id: str, query: RecordQuery) -> list[MemoryItem]:
        """The user's memories matching ``query``, in its order."""
        ...

    def ids(self, user_id: str) -> list[str]:
        """Every memory id of the user, live and soft-deleted."""
        ...

    def users(self) -> list[str]:
        """Every user id with at least one memory (a maintenance call, like :meth:`unsettled`)."""
        ...

    def score_rows(self, ids: Sequence[str], user_id: str) -> dict[str, ScoreRow]:
        """What the tier formulas need, for the user's live memories among ``ids``."""
        ...

    def contents(self, ids: Sequence[str], user_id: str) -> dict[str, str]:
        """The text of the user's live memories among ``ids``."""
        ...

    def previous_in_session(self, ids: Sequence[str], user_id: str) -> dict[str, str]:
        """For each live episodic memory among ``ids``, the live episodic turn before it in its session."""
        ...

    def lexical_search(
        self,
        user_id: str,
        tokens: Sequence[str],
        *,
        types: Sequence[str] | None,
        limit: int,
        session_id: str | None = None,
        time_range: tuple[float | None, float | None] | None = None,
    ) -> dict[str, float]:
        """BM25-style scores (higher is better) of the user's live memories matching any token."""
        ...

    def lexical_evidence(self, user_id: str, tokens: Sequence[str], ids: Sequence[str]) -> dict[str, float]:
        """The idf-weighted share of the query's distinct terms each of the user's live memories among
        ``ids`` holds, in [0, 1] (the relevance floor's lexical evidence; formula in
        :meth:`hello_memory.stores.records.sqlite_lexical.ConversationLexicalIndex.lexical_evidence`)."""
        ...

    def history(self, memory_id: str, user_id: str) -> list[HistoryEntry]:
        """Every recorded change of one of the user's memories, in the order applied."""
        ...

    def conflicting_facts(self, user_id: str, subject_id: str, relation: str, object_id: str) -> list[str]:
        """Ids of the user's current (live, not superseded) memories asserting (subject, relation, another object)."""
        ...

    def stats(self, user_id: str) -> RecordStats:
        """Counts per tier and mean importance."""
        ...

    def unsettled(self) -> list[Pending]:
        """Pending work of every user (recovery after a crash)."""
        ...

    # -- deletion and lifecycle ----------------------------------------------------------------
    def forget_user(self, user_id: str, *, keep_pending: bool = False) -> dict[str, int]:
        """Delete everything of the user; returns deleted counts per kind — at least ``memories`` and
        ``history`` (``keep_pending``: as for :meth:`delete`)."""
        ...

    def residue(self, user_id: str) -> dict[str, int]:
        """What is left of the user per kind (0 everywhere after :meth:`forget_user`)."""
        ...

    def scrub(self, *, vacuum: bool = False) -> None:
        """Physically drop deleted data where the backend keeps it (embedded files); no-op elsewhere."""
        ...

    def close(self) -> None:
        """Release resources; idempotent."""
        ...
