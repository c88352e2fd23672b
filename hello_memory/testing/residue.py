"""Residue scans for deletion tests: what a store still holds of a user, read from the storage itself."""

from __future__ import annotations

import json
from typing import Any


def scan_qdrant(client: Any, needle: str) -> int:
    """Points of every collection of ``client`` whose payload mentions ``needle`` (a full scan, no filter).

    Example:
        >>> from qdrant_client import QdrantClient
        >>> scan_qdrant(QdrantClient(":memory:"), "alice")
        0
    """
    found = 0
    for coll in client.get_collections().collections:
        offset = None
        while True:
            points, offset = client.scroll(coll.name, limit=1024, offset=offset, with_payload=True)
            found += sum(needle in json.dumps(p.payload, ensure_ascii=False) for p in points)
            if offset is None:
                break
    return found
