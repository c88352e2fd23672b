"""Conversation ledger: what a record store keeps beside the memories so that a re-sent chat stays as the user left it.

``add(messages)`` matches a re-sent conversation against the session's stored turns
(:mod:`hello_memory.core.conversations`). Two things it needs are not memories, and both must be
shared by every worker of a deployment (so they live in the record store, never in a local file):

- **a random key**, created once per store: a conversation turn's id is an HMAC under it, so no
  one without the key can compute the id another user's message gets (and so neither test whether
  a text was said nor take the id first);
- **tombstones** of removed turns: when a turn is hard-deleted (``remove``, ``forget(purge=True)``,
  ``clear_all``, consolidation) the session keeps, per removed turn, a keyed mark of its id, a
  keyed digest of its message and its time — no text and no id — so that re-sending the
  conversation does not store it again.

Both :class:`~hello_memory.stores.records.sqlite.SQLiteRecordStore` (the ``meta`` table and a
``turn_tombstones`` table of ``records.db``) and :class:`~hello_memory.stores.records.qdrant.QdrantRecordStore`
(a ``<prefix>_turn_ledger`` collection: the key in its metadata, one payload-only point per tombstone)
implement it; ``forget_user`` deletes a user's tombstones with everything else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

#: Bytes of the random key.
KEY_BYTES = 32


@dataclass(frozen=True, slots=True)
class Tombstone:
    """What a session keeps of a removed conversation turn.

    Attributes:
        session_id: the turn's session.
        mark: HMAC (under the store's key) of the removed memory's id: a message carrying that id is
            recognised, and the id itself is not kept.
        digest: HMAC of the turn's message digest: a re-sent message is recognised, its text is not kept.
        at: the turn's ``created_at`` (epoch seconds): its place in the session.
    """

    session_id: str
    mark: str
    digest: str
    at: float


@runtime_checkable
class TurnLedger(Protocol):
    """The conversation ledger of a record store (see the module docstring)."""

    def turn_key(self) -> bytes:
        """The store's random key: created on first use, the same for every worker afterwards."""
        ...

    def tombstones(self, user_id: str, session_id: str) -> list[Tombstone]:
        """The tombstones of the user's session, oldest first."""
        ...

    def bury(self, user_id: str, tombstones: Sequence[Tombstone]) -> None:
        """Keep ``tombstones`` for the user: one per mark (a mark kept already is replaced)."""
        ...
