"""Reports on one user's memories: counts (:func:`stats`) and a readable summary (:func:`summary`)."""

from __future__ import annotations

import logging

from hello_memory.core import MemoryCore, upkeep
from hello_memory.errors import DiskFullError
from hello_memory.models import MemoryItem, MemoryStats
from hello_memory.render import fmt, memory_evidence
from hello_memory.stores.records.base import RecordOrder, RecordQuery

logger = logging.getLogger(__name__)
SUMMARY_CHARS = 200  # characters of each memory shown by summary()


def stats(core: MemoryCore, user_id: str) -> MemoryStats:
    """See :meth:`MemoryManager.stats` (no model is loaded for it)."""
    core.upkeep.expire(user_id)  # expired working memories: deleted now unless a writer holds the lock
    upkeep.after_read(core)
    counts = core.records.stats(user_id)
    by_type = {t.value: 0 for t in core.enabled}
    by_type.update(counts.live)
    try:
        graph = core.graph.counts(user_id)
    except DiskFullError as e:  # a graph file that cannot even be created: report the rest
        logger.warning("graph counts unavailable: %s", e)
        graph = {}
    return MemoryStats(
        user_id=user_id,
        total=sum(by_type.values()),
        by_type=by_type,
        deleted=sum(counts.deleted.values()),
        entities=graph.get("entities", 0),
        relations=graph.get("relations", 0),
        avg_importance=round(counts.avg_importance, 4),
        embedder=core.embedder.describe(),
        vector_backend=core.dense.backend,
    )


def summary(core: MemoryCore, limit: int, user_id: str) -> str:
    """See :meth:`MemoryManager.summary`: counts, then the top memories per tier as quoted evidence."""
    st = stats(core, user_id)
    head = fmt("Memory summary for {user}: {total} memories ", user=user_id, total=st.total) + ", ".join(
        f"{k} {v}" for k, v in st.by_type.items()
    )
    top: list[MemoryItem] = []
    for t in core.enabled:
        found = core.records.scan(user_id, RecordQuery(types=(t,), order=RecordOrder.IMPORTANT, limit=limit))
        top += [it for it in found if not core.expired(it)]
    return head + ("\n" + memory_evidence(top, max_chars=SUMMARY_CHARS) if top else "")
