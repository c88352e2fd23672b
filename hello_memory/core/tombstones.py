"""Tombstones of removed conversation turns: keyed digests, no text, no id (:mod:`.conversations`).

A hard-deleted turn leaves a tombstone in the record store's ledger so that a chat sent again does
not store it again. Kept apart from :mod:`.conversations` so that deletions need nothing of the
write path.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hello_memory.core import MemoryCore
from hello_memory.core.items import is_turn, turn_digest
from hello_memory.core.unit import by_user
from hello_memory.models import MemoryItem
from hello_memory.stores.records.ledger import Tombstone, TurnLedger

logger = logging.getLogger(__name__)


def bury(core: MemoryCore, items: Sequence[MemoryItem]) -> None:
    """Keep a tombstone of every conversation turn among ``items`` before they are hard-deleted."""
    turns = [it for it in items if is_turn(it)]
    if not turns:
        return
    if not isinstance(core.records, TurnLedger):  # the deletion goes on; a re-send may store them again
        logger.warning("%s keeps no conversation ledger: %d removed turns leave no tombstone",
                       type(core.records).__name__, len(turns))
        return
    book = core.records
    secret = book.turn_key()
    for uid, group in by_user(turns).items():
        stones = []
        for it in group:
            keys = Keys(secret, uid, str(it.session_id))
            stones.append(Tombstone(keys.session, keys.mark(it.id), keys.mac(signature(it)), it.created_at.timestamp()))
        book.bury(uid, stones)


def signature(item: MemoryItem) -> str:
    """The digest a stored turn is matched by: its message's, or (stored before digests) its speaker and content."""
    if item.message_digest is not None:
        return item.message_digest
    return turn_digest(item.participants[0] if item.participants else "", item.content)


@dataclass(frozen=True, slots=True)
class Keys:
    """The keyed derivations of one user's session (HMAC-SHA-256 under the store's key)."""

    secret: bytes
    user: str
    session: str

    def _hmac(self, *parts: Any) -> bytes:
        message = json.dumps([self.user, self.session, *parts], ensure_ascii=False).encode("utf-8")
        return hmac.new(self.secret, message, hashlib.sha256).digest()

    def mac(self, digest: str) -> str:
        """A tombstone's digest: keyed, so a removed text cannot be recovered by guessing it."""
        return self._hmac("digest", digest).hex()

    def mark(self, memory_id: str) -> str:
        """A tombstone's mark of the removed memory's id (the id itself is not kept)."""
        return self._hmac("mark", memory_id).hex()

    def message_id(self, own_id: str) -> str:
        """The memory id of a message that carries its own ``id``."""
        return str(uuid.UUID(bytes=self._hmac("message", own_id)[:16], version=4))

    def turn_id(self, digest: str, after: str) -> str:
        """The memory id of a new message without an id: its digest and the element it follows."""
        return str(uuid.UUID(bytes=self._hmac("turn", digest, after)[:16], version=4))


Element = MemoryItem | Tombstone  # what a session holds: a turn, or the tombstone of a removed one
