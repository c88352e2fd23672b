"""Pending markers of the Qdrant record store: set, settled, published — payload updates by filter."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from hello_memory.stores.qdrant_connection import models
from hello_memory.stores.records import qdrant_codec as codec
from hello_memory.stores.records.base import PendingOp
from hello_memory.stores.records.qdrant_reads import RECORDS
from hello_memory.stores.records.qdrant_writes import RecordWrites
from hello_memory.stores.vectors.rules import existing_id_candidates


class RecordMarkers(RecordWrites):
    """The marker half of :class:`~hello_memory.stores.records.qdrant.QdrantRecordStore`."""

    @property
    def exclusive(self) -> bool:
        """False: stateless workers share the collections; a marker may be another worker's, in flight."""
        return False

    def publish(self, user_id: str, batch: str) -> None:
        """The batch's ``BATCH`` markers become ``INDEX`` markers: one payload update by filter."""
        self._ensure()
        qfilter = models().Filter(
            must=[codec.match("user_id", user_id), codec.match("pending_batch", batch),
                  codec.match("pending", PendingOp.BATCH.value)]
        )
        marker = {"pending": PendingOp.INDEX.value, "pending_batch": None}
        self._conn.call("publish a batch", "set_payload", self._conn.full(RECORDS), marker, points=qfilter, wait=True)

    def mark(self, user_id: str, ids: Sequence[str], op: PendingOp) -> None:
        """Set the pending marker of the user's memories ``ids``."""
        marker = {"pending": PendingOp(op).value, "pending_ts": time.time(), "pending_batch": None}
        self._set_where(user_id, ids, marker)

    def settle(self, user_id: str, ids: Sequence[str], *, versions: Mapping[str, int] | None = None) -> None:
        """Clear the pending markers of the user's memories ``ids`` (with ``versions``: at those versions)."""
        cleared = {"pending": None, "pending_ts": None, "pending_batch": None}
        if versions is None:
            self._set_where(user_id, ids, cleared)
            return
        self._ensure()
        m = models()
        ops = [
            m.SetPayloadOperation(
                set_payload=m.SetPayload(
                    payload=cleared,
                    filter=m.Filter(
                        must=[
                            codec.has_ids([i]),
                            codec.match("user_id", user_id),
                            codec.match("version", versions[i]),
                        ]
                    ),
                )
            )
            for i in existing_id_candidates(ids)
            if i in versions
        ]
        if ops:
            self._conn.call("settle", "batch_update_points", self._conn.full(RECORDS), ops, wait=True)

    def _set_where(self, user_id: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        candidates = existing_id_candidates(ids)
        if not candidates:
            return
        self._ensure()
        qfilter = models().Filter(must=[codec.has_ids(candidates), codec.match("user_id", user_id)])
        self._conn.call(
            "set a marker", "set_payload", self._conn.full(RECORDS), payload, points=qfilter, wait=True
        )
