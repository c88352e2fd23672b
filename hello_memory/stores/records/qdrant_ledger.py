"""The conversation ledger of the Qdrant record store (:mod:`hello_memory.stores.records.ledger`).

One payload-only collection, ``<prefix>_turn_ledger``: the key is part of its collection metadata,
written by the worker that creates it (a worker that loses the race to create it reads the
winner's, :meth:`~hello_memory.stores.qdrant_connection.QdrantConnection.ensure_collection`), so every
worker uses one key; each tombstone is one point (id: ``uuid5`` of user, session and mark, so
burying twice writes once).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence
from typing import Any

from hello_memory.errors import StoreError
from hello_memory.stores.qdrant_connection import QdrantConnection, kind_check, models
from hello_memory.stores.records import qdrant_codec as codec
from hello_memory.stores.records.ledger import KEY_BYTES, Tombstone

LEDGER = "turn_ledger"
_SCHEMA = 1
_NAMESPACE = uuid.UUID("0b6f2d1e-8a4c-4f7e-b3d9-5c1a7e2f9d40")
_FIELDS = ["session_id", "mark", "digest", "at"]


class QdrantTurnLedger:
    """The ledger half of :class:`~hello_memory.stores.records.qdrant.QdrantRecordStore`."""

    _conn: QdrantConnection
    _turn_key: bytes | None = None

    def turn_key(self) -> bytes:
        """The key in the ledger collection's metadata (created with the collection)."""
        if self._turn_key is None:
            meta = {"kind": LEDGER, "schema": _SCHEMA, "key": secrets.token_hex(KEY_BYTES)}
            stored = self._conn.ensure_collection(LEDGER, meta, kind_check(LEDGER, _SCHEMA), vectors_config={})
            try:
                key = bytes.fromhex(str(stored["key"]))
            except (KeyError, ValueError) as e:
                raise StoreError(f"collection {self._conn.full(LEDGER)!r} holds no valid key") from e
            self._conn.ensure_indexes(LEDGER, keywords=("user_id", "session_id"), tenant="user_id")
            self._turn_key = key
        return self._turn_key

    def tombstones(self, user_id: str, session_id: str) -> list[Tombstone]:
        """The tombstones of the user's session, oldest first."""
        self.turn_key()
        where = models().Filter(must=[codec.match("user_id", user_id), codec.match("session_id", session_id)])
        points = self._conn.scroll_all(LEDGER, where, with_payload=_FIELDS, with_vectors=False)
        found = [Tombstone(p.payload["session_id"], p.payload["mark"], p.payload["digest"], float(p.payload["at"]))
                 for p in points]
        return sorted(found, key=lambda t: t.at)

    def bury(self, user_id: str, tombstones: Sequence[Tombstone]) -> None:
        """Keep ``tombstones`` for the user (one point per mark)."""
        if not tombstones:
            return
        self.turn_key()
        m = models()
        points = [
            m.PointStruct(id=str(uuid.uuid5(_NAMESPACE, f"{user_id}/{t.session_id}/{t.mark}")), vector={},
                          payload=_payload(user_id, t))
            for t in tombstones
        ]
        self._conn.call("keep tombstones", "upsert", self._conn.full(LEDGER), points=points, wait=True)

    def forget_tombstones(self, user_id: str) -> int:
        """Delete the user's tombstones; returns how many."""
        if not self._conn.exists(LEDGER):
            return 0
        m = models()
        where = m.Filter(must=[codec.match("user_id", user_id)])
        count = self._conn.count(LEDGER, where)
        if count:
            self._conn.call("forget tombstones", "delete", self._conn.full(LEDGER),
                            points_selector=m.FilterSelector(filter=where), wait=True)
        return count

    def count_tombstones(self, user_id: str) -> int:
        """How many tombstones the user has."""
        if not self._conn.exists(LEDGER):
            return 0
        return self._conn.count(LEDGER, models().Filter(must=[codec.match("user_id", user_id)]))


def _payload(user_id: str, t: Tombstone) -> dict[str, Any]:
    return {"user_id": user_id, "session_id": t.session_id, "mark": t.mark, "digest": t.digest, "at": t.at}
