"""Server mode: every durable byte in Qdrant (and Neo4j), no data directory, no lock, no SQLite.

Selected by ``QDRANT_URL`` (``Settings.qdrant_url``): records, history, the lexical index, facts
and pending markers go to :class:`~hello_memory.stores.records.qdrant.QdrantRecordStore` (each
memory one point with its dense and sparse vectors), the knowledge graph to Neo4j when
``NEO4J_URI`` is set and otherwise to :class:`~hello_memory.stores.graph.qdrant.QdrantGraphStore`
in the same Qdrant. Any number of workers pointed at the same servers share one memory.

``QDRANT_URL`` is a server URL (``http://qdrant:6333``), or qdrant-client's local mode for tests
and single-process use: ``:memory:`` or a path starting with ``/`` or ``.`` (local mode locks its
path to one process, so it does not scale out; figures from it are not server figures).

Why the graph does not fall back to the embedded SQLite graph without Neo4j: that file would be
local state, so two workers would each hold half of the graph and ``forget_user`` from one could
not reach the other's. Refusing to start without Neo4j would make Qdrant-only deployments lose the
graph's relevance for nothing; the Qdrant graph keeps it (a breadth-first search of filtered
scrolls, one per hop: fine for a memory's few hops, slower than Cypher on a large graph).
"""

from __future__ import annotations

from typing import Any

from hello_memory.settings import Settings
from hello_memory.stores.bundle import StoreBundle
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.records.base import RecordStore
from hello_memory.stores.vectors.base import VectorStore


def wanted(settings: Settings, records: RecordStore | None = None) -> bool:
    """True when the stores are servers: ``QDRANT_URL`` set, or an injected store keeping vectors."""
    if records is not None:
        return bool(records.keeps_vectors)
    return bool(settings.qdrant_url)


def registry_key(settings: Settings) -> str:
    """What identifies one server deployment in this process (its bundle is shared)."""
    return f"qdrant:{settings.qdrant_url}#{settings.collection_prefix}"


def qdrant_target(settings: Settings) -> dict[str, Any]:
    """The qdrant-client location arguments for ``settings.qdrant_url``."""
    url = str(settings.qdrant_url)
    if url == ":memory:":
        return {"location": url}
    if url.startswith(("/", ".")):
        return {"path": url}
    key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
    return {"url": url, "api_key": key, "timeout": settings.qdrant_timeout}


def open_neo4j(settings: Settings) -> GraphStore:
    """The Neo4j graph store of ``settings.neo4j_uri``."""
    from hello_memory.stores.graph.neo4j import Neo4jGraphStore

    password = settings.neo4j_password.get_secret_value() if settings.neo4j_password else None
    graph: GraphStore = Neo4jGraphStore(
        str(settings.neo4j_uri),
        username=settings.neo4j_username,
        password=password,
        database=settings.neo4j_database,
    )
    return graph


def open_bundle(
    settings: Settings,
    *,
    records: RecordStore | None = None,
    vectors: VectorStore | None = None,
    graph: GraphStore | None = None,
) -> StoreBundle:
    """The server-mode :class:`~hello_memory.stores.bundle.StoreBundle` (``home=None``, no lock).

    Stores not injected are built on one qdrant-client client (nothing connects before first use
    for a server; local mode opens its engine now).
    """
    from hello_memory.stores.graph.qdrant import QdrantGraphStore
    from hello_memory.stores.records.qdrant import QdrantRecordStore
    from hello_memory.stores.vectors.qdrant import QdrantVectorStore

    built: list[Any] = []
    try:
        if records is None:
            records = QdrantRecordStore(
                **qdrant_target(settings),
                prefix=settings.collection_prefix,
                context_window=settings.lexical_context_window,
            )
            built.append(records)
        client = records.client() if hasattr(records, "client") else None
        if graph is None:
            if settings.neo4j_uri:
                graph = open_neo4j(settings)
            else:
                graph = QdrantGraphStore(client=client, prefix=settings.collection_prefix)
            built.append(graph)
        if vectors is None:  # RAG vectors (memory vectors live in the record points)
            vectors = QdrantVectorStore(client=client, prefix=settings.collection_prefix)
        return StoreBundle(home=None, records=records, vectors=vectors, graph=graph)
    except BaseException:
        for store in reversed(built):
            store.close()
        raise
