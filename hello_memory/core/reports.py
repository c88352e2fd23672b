"""Reports on one user's memories: counts (:func:`stats`) and a readable summary (:func:`summary`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hello_memory.core import lifecycle
from hello_memory.errors import DiskFullError
from hello_memory.models import MemoryItem, MemoryStats
from hello_memory.stores.records.base import RecordOrder, RecordQuery

if TYPE_CHECKING:
    from hello_memory.manager import MemoryManager

logger = logging.getLogger(__name__)
SUMMARY_CHARS = 200  # characters of each memory shown by summary()


def stats(mm: MemoryManager, user_id: str) -> MemoryStats:
    """See :meth:`MemoryManager.stats`."""
    lifecycle.expire_working(mm, user_id)
    counts = mm.bundle.records.stats(user_id)
    by_type = {t.value: 0 for t in mm.enabled}
    by_type.update(counts.live)
    try:
        graph = mm.bundle.graph.counts(user_id)
    except DiskFullError as e:  # a graph file that cannot even be created: report the rest
        logger.warning("graph counts unavailable: %s", e)
        graph = {}
    embedder = mm._embedder.name if mm._embedder else mm.settings.resolved_embedder()
    return MemoryStats(
        user_id=user_id,
        total=sum(by_type.values()),
        by_type=by_type,
        deleted=sum(counts.deleted.values()),
        entities=graph.get("entities", 0),
        relations=graph.get("relations", 0),
        avg_importance=round(counts.avg_importance, 4),
        embedder=embedder,
        vector_backend=mm.bundle.vectors.backend,
    )


def summary(mm: MemoryManager, limit: int, user_id: str) -> str:
    """See :meth:`MemoryManager.summary`: counts, then the top memories per tier as quoted evidence."""
    from hello_memory.context import render_items

    st = stats(mm, user_id)
    head = f"Memory summary for {user_id}: {st.total} memories " + ", ".join(
        f"{k} {v}" for k, v in st.by_type.items()
    )
    top: list[MemoryItem] = []
    for t in mm.enabled:
        top += mm.bundle.records.scan(user_id, RecordQuery(types=(t,), order=RecordOrder.IMPORTANT, limit=limit))
    return head + ("\n" + render_items(top, max_chars=SUMMARY_CHARS) if top else "")
