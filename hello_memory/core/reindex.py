"""Rebuilding derived data from the records: the knowledge graph (``hello-memory reindex --graph``).

The record of every semantic memory holds its entities and relations, so the graph can always be
rebuilt from the records: per user, the user's graph is dropped and every live semantic memory is
linked again. That repairs whatever a crash, a failed graph write or a lost graph server left
behind — links missing for a memory whose record was written, links left for a memory whose
record is gone — in both modes (embedded SQLite graph, Neo4j, the Qdrant graph).

Pending markers are completed first (:func:`hello_memory.core.recovery.recover`). While a user's
graph is being rebuilt, searches of that user lose graph relevance for the moment; a memory another
worker deletes during the rebuild may keep a dangling link (never returned: graph hits are checked
against the records) until the next rebuild.

Example:
    >>> from hello_memory import MemoryManager, Settings
    >>> import tempfile
    >>> with MemoryManager(Settings(home=tempfile.mkdtemp(), embedder="tfidf"), user_id="u") as mm:
    ...     _ = mm.add("Alice lives in Paris", memory_type="semantic")
    ...     mm.reindex_graph().memories
    1
"""

from __future__ import annotations

from hello_memory.core import MemoryCore
from hello_memory.core.recovery import recover
from hello_memory.core.semantic import links_of
from hello_memory.models import MemoryType, ReindexReport
from hello_memory.stores.records.base import RecordQuery


def rebuild_graph(core: MemoryCore, user_id: str | None = None) -> ReindexReport:
    """Rebuild the graph of one user (or of every user with memories).

    Returns:
        users rebuilt, memories linked, pending operations completed first.
    """
    recovered = recover(core)
    users = [user_id] if user_id is not None else sorted(core.records.users())
    linked = 0
    for uid in users:
        with core.lock:
            items = core.records.scan(uid, RecordQuery(types=(MemoryType.SEMANTIC,)))
            core.graph.forget_user(uid)
            for item in items:
                core.graph.link(uid, item.id, *links_of(item))
        linked += len(items)
    return ReindexReport(users=len(users), memories=linked, recovered=recovered)
