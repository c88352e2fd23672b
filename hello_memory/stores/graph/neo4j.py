"""Knowledge graph on a Neo4j server through the official ``neo4j`` driver.

Data model — every node and relationship carries ``user_id``, so users never share anything::

    (:HMMemory {user_id, id})-[:HM_MENTIONS {user_id}]->(:HMEntity {user_id, id, name, norm_name, type})
    (:HMEntity)-[:HM_RELATION {user_id, memory_id, type}]->(:HMEntity)

Labels and relationship types are fixed (a relation's kind is its ``type`` property, not a dynamic
relationship type), so every statement below is a constant string and all user text travels as
query parameters: nothing a user writes can change a query. The ``HM`` prefixes keep our nodes
apart from other applications' ``Entity`` nodes in a shared database.

Example (needs a server: ``docker compose -f docker/compose.yaml up -d --wait``):
    >>> from hello_memory.language.extraction import entity_id
    >>> a, b = entity_id("u1", "Alice"), entity_id("u1", "Paris")
    >>> with Neo4jGraphStore("bolt://localhost:7687", password="change-me-please") as store:  # doctest: +SKIP
    ...     store.link("u1", "m1", [(a, "Alice", "person"), (b, "Paris", "place")], [(a, b, "lives_in")])
    ...     print([(n.name, n.hops) for n in store.neighbours("u1", [a])])
    [('Alice', 0), ('Paris', 1)]
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from hello_memory._lazy import require
from hello_memory.errors import HelloMemoryError, InvalidInputError, StoreError
from hello_memory.language.extraction import normalise_name
from hello_memory.stores.graph.base import GraphNeighbour

logger = logging.getLogger(__name__)

COUNT_KEYS = ("entities", "relations", "mentions")
GENERIC_TYPE = "concept"  # a more specific entity type replaces it, as in SQLiteGraphStore
DELETE_BATCH = 10_000  # nodes per transaction when forgetting a user

# Idempotent DDL, run once per driver before the first query.
SCHEMA = (
    "CREATE CONSTRAINT hm_entity_key IF NOT EXISTS FOR (e:HMEntity) REQUIRE (e.user_id, e.id) IS UNIQUE",
    "CREATE CONSTRAINT hm_memory_key IF NOT EXISTS FOR (m:HMMemory) REQUIRE (m.user_id, m.id) IS UNIQUE",
    "CREATE INDEX hm_entity_user IF NOT EXISTS FOR (e:HMEntity) ON (e.user_id)",
    "CREATE INDEX hm_entity_name IF NOT EXISTS FOR (e:HMEntity) ON (e.user_id, e.norm_name)",
    "CREATE INDEX hm_memory_user IF NOT EXISTS FOR (m:HMMemory) ON (m.user_id)",
    "CREATE INDEX hm_relation_memory IF NOT EXISTS FOR ()-[r:HM_RELATION]-() ON (r.user_id, r.memory_id)",
)
DELETE_RELATIONS = """
MATCH ()-[r:HM_RELATION {user_id: $user_id, memory_id: $memory_id}]->()
DELETE r
"""
# Returns the entities the memory mentioned (zero rows when it was never linked).
DELETE_MEMORY = """
MATCH (m:HMMemory {user_id: $user_id, id: $memory_id})
OPTIONAL MATCH (m)-[:HM_MENTIONS]->(e:HMEntity)
WITH m, collect(e.id) AS previous
DETACH DELETE m
RETURN previous
"""
LINK_ENTITIES = """
MERGE (m:HMMemory {user_id: $user_id, id: $memory_id})
WITH m
UNWIND $entities AS row
MERGE (e:HMEntity {user_id: $user_id, id: row.id})
  ON CREATE SET e.name = row.name, e.norm_name = row.norm_name, e.type = row.type
  ON MATCH SET e.type = CASE WHEN e.type = $generic AND row.type <> $generic THEN row.type ELSE e.type END
MERGE (m)-[:HM_MENTIONS {user_id: $user_id}]->(e)
"""
LINK_RELATIONS = """
UNWIND $relations AS rel
MATCH (a:HMEntity {user_id: $user_id, id: rel.source})
MATCH (b:HMEntity {user_id: $user_id, id: rel.target})
MERGE (a)-[:HM_RELATION {user_id: $user_id, memory_id: $memory_id, type: rel.type}]->(b)
"""
DELETE_ORPHANS = """
UNWIND $entity_ids AS entity_id
MATCH (e:HMEntity {user_id: $user_id, id: entity_id})
WHERE NOT EXISTS { (e)<-[:HM_MENTIONS]-(:HMMemory) }
DETACH DELETE e
"""
START_ENTITIES = """
UNWIND $entity_ids AS entity_id
MATCH (e:HMEntity {user_id: $user_id, id: entity_id})
RETURN e.id AS id, e.name AS name
"""
# One breadth-first layer, edges in both directions (the variable-length bound cannot be a parameter).
NEXT_LAYER = """
UNWIND $frontier AS entity_id
MATCH (:HMEntity {user_id: $user_id, id: entity_id})-[:HM_RELATION {user_id: $user_id}]-(n:HMEntity)
WHERE n.user_id = $user_id
RETURN DISTINCT n.id AS id, n.name AS name
"""
MENTIONS_OF = """
UNWIND $entity_ids AS entity_id
MATCH (m:HMMemory {user_id: $user_id})-[:HM_MENTIONS]->(e:HMEntity {user_id: $user_id, id: entity_id})
RETURN DISTINCT m.id AS memory_id, e.id AS entity_id
"""
FIND_BY_NAME = """
UNWIND $keys AS key
MATCH (e:HMEntity {user_id: $user_id, norm_name: key})
RETURN key, e.id AS id, e.name AS name
"""
COUNTS = """
RETURN COUNT { MATCH (:HMEntity {user_id: $user_id}) } AS entities,
       COUNT { MATCH ()-[:HM_RELATION {user_id: $user_id}]->() } AS relations,
       COUNT { MATCH (:HMMemory {user_id: $user_id})-[:HM_MENTIONS]->() } AS mentions
"""
# Memories first (their mentions go with them), then entities (their relations go with them).
FORGET_USER = (
    """
MATCH (m:HMMemory {user_id: $user_id})
WITH m LIMIT $batch
DETACH DELETE m
RETURN count(*) AS deleted
""",
    """
MATCH (e:HMEntity {user_id: $user_id})
WITH e LIMIT $batch
DETACH DELETE e
RETURN count(*) AS deleted
""",
)


class Neo4jGraphStore:
    """A :class:`~hello_memory.stores.graph.base.GraphStore` on a Neo4j 5.x (or 2025+) server.

    Same semantics as :class:`~hello_memory.stores.graph.sqlite.SQLiteGraphStore`: links are
    validated before anything is written (every relation endpoint must be one of the entities of
    the same ``link`` call), each ``link``/``unlink_memory`` is one transaction, and a memory's
    relations, mentions and orphaned entities go when it is unlinked. The driver is built on first
    use, which also creates the constraints and indexes (idempotently); the store is thread-safe
    (one session per call) and a context manager. Driver errors become
    :class:`~hello_memory.errors.StoreError`.

    Args:
        uri: server URI, e.g. ``"bolt://localhost:7687"`` or ``"neo4j+s://host"``.
        username: user name.
        password: password; ``None`` connects without authentication.
        database: database name (Community Edition has only ``"neo4j"``).
        driver: a pre-built ``neo4j.Driver``; ``close()`` leaves it open.
        timeout: seconds to establish a connection, and to keep retrying a transient failure.
    """

    def __init__(
        self,
        uri: str,
        *,
        username: str = "neo4j",
        password: str | None = None,
        database: str = "neo4j",
        driver: Any = None,
        timeout: float = 30.0,
    ) -> None:
        if not isinstance(uri, str) or not uri:
            raise InvalidInputError("uri must be a non-empty string", field="uri")
        if not isinstance(database, str) or not database:
            raise InvalidInputError("database must be a non-empty string", field="database")
        if timeout <= 0:
            raise InvalidInputError("timeout must be > 0 seconds", field="timeout")
        self._uri = uri
        self._username = username
        self._password = password
        self._database = database
        self._timeout = float(timeout)
        self._driver: Any = driver
        self._owns_driver = driver is None
        self._schema_ready = False
        self._closed = False
        self._lock = threading.Lock()

    @property
    def backend(self) -> str:
        """``"neo4j"``."""
        return "neo4j"

    @property
    def uri(self) -> str:
        """The server URI."""
        return self._uri

    @property
    def database(self) -> str:
        """The database name."""
        return self._database

    def __enter__(self) -> Neo4jGraphStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def link(
        self,
        user_id: str,
        memory_id: str,
        entities: Sequence[tuple[str, str, str]],
        relations: Sequence[tuple[str, str, str]],
    ) -> None:
        """Replace the memory's links with ``entities`` (id, name, type) and ``relations`` (src, dst, type).

        Raises:
            InvalidInputError: an empty id or name, or a relation endpoint not among ``entities``.
        """
        _require(user_id, "user_id")
        _require(memory_id, "memory_id")
        rows = _entity_rows(entities)
        rels = _relation_rows({r["id"] for r in rows}, relations)
        with self._session("link a memory") as session:
            session.execute_write(_link_tx, {"user_id": user_id, "memory_id": memory_id}, rows, rels)
        logger.debug(
            "linked memory %s of user %s: %s entities, %s relations", memory_id, user_id, len(rows), len(rels)
        )

    def unlink_memory(self, user_id: str, memory_id: str) -> None:
        """Remove the memory's mentions, its relations and entities no memory mentions any more."""
        with self._session("unlink a memory") as session:
            session.execute_write(_link_tx, {"user_id": user_id, "memory_id": memory_id}, [], [])

    def neighbours(
        self, user_id: str, entity_ids: Sequence[str], *, max_hops: int = 2
    ) -> list[GraphNeighbour]:
        """Entities within ``max_hops`` of any start (edges in both directions), nearest first.

        Unknown start ids are ignored; each entity appears once with its smallest hop count.
        One query per hop, all in one read transaction.
        """
        if isinstance(max_hops, bool) or not isinstance(max_hops, int) or max_hops < 0:
            raise InvalidInputError("max_hops must be an int >= 0", field="max_hops")
        starts = list(dict.fromkeys(entity_ids))
        if not starts:
            return []
        with self._session("traverse the graph") as session:
            found: list[GraphNeighbour] = session.execute_read(_layers_tx, user_id, starts, max_hops)
        return sorted(found, key=lambda n: (n.hops, n.name, n.entity_id))

    def memories_mentioning(self, user_id: str, entity_ids: Sequence[str]) -> dict[str, list[str]]:
        """memory id -> the given entity ids it mentions (in the order given), memories sorted by id."""
        order = {e: i for i, e in enumerate(dict.fromkeys(entity_ids))}
        if not order:
            return {}
        rows = self._read("read mentions", MENTIONS_OF, user_id=user_id, entity_ids=list(order))
        found: dict[str, list[str]] = {}
        for memory_id, eid in sorted({(r["memory_id"], r["entity_id"]) for r in rows}):
            found.setdefault(memory_id, []).append(eid)
        return {m: sorted(ids, key=order.__getitem__) for m, ids in found.items()}

    def find_entities(self, user_id: str, names: Sequence[str]) -> list[tuple[str, str]]:
        """(id, name) of the user's entities whose normalised name equals a normalised ``names`` entry."""
        keys = list(dict.fromkeys(k for k in map(normalise_name, names) if k))
        if not keys:
            return []
        rows = self._read("find entities", FIND_BY_NAME, user_id=user_id, keys=keys)
        rank = {k: i for i, k in enumerate(keys)}
        return [(r["id"], r["name"]) for r in sorted(rows, key=lambda r: (rank[r["key"]], r["id"]))]

    def counts(self, user_id: str) -> dict[str, int]:
        """``{"entities": n, "relations": m, "mentions": k}`` for the user."""
        (row,) = self._read("count", COUNTS, user_id=user_id)
        return {k: int(row[k]) for k in COUNT_KEYS}

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete every node and relationship of the user; returns what there was, as ``counts()``.

        Deletes in batches of :data:`DELETE_BATCH` nodes per transaction, so a large user does not
        need one huge transaction; an interrupted call leaves a partial delete that a retry finishes.
        """
        deleted = self.counts(user_id)
        params = {"user_id": user_id, "batch": DELETE_BATCH}
        with self._session("forget a user") as session:
            for query in FORGET_USER:
                while session.execute_write(_deleted_tx, query, params) >= DELETE_BATCH:
                    pass
        logger.info("forgot graph of user %s: %s", user_id, deleted)
        return deleted

    def close(self) -> None:
        """Close the driver if this store built it; idempotent. The store cannot be used again."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            driver, self._driver = self._driver, None
        if driver is not None and self._owns_driver:
            with _wrapped("close the driver", self._uri, self._username):
                driver.close()

    # -- internals ---------------------------------------------------------------------------

    def _connect(self) -> Any:
        """The driver, built (and the schema created) on first use."""
        with self._lock:
            if self._closed:
                raise StoreError(f"graph store {self._uri} is closed")
            if self._driver is None:
                neo4j = require("neo4j", "neo4j")
                auth = None if self._password is None else (self._username, self._password)
                with _wrapped("connect", self._uri, self._username):
                    self._driver = neo4j.GraphDatabase.driver(
                        self._uri,
                        auth=auth,
                        connection_timeout=self._timeout,
                        max_transaction_retry_time=self._timeout,
                    )
            if not self._schema_ready:
                self._create_schema(self._driver)
                self._schema_ready = True
            return self._driver

    def _create_schema(self, driver: Any) -> None:
        with (
            _wrapped("create constraints and indexes", self._uri, self._username),
            driver.session(database=self._database) as session,
        ):
            for statement in SCHEMA:
                try:
                    session.run(statement).consume()
                except Exception as e:  # a concurrent creator won the race: the rule exists
                    if not str(getattr(e, "code", "")).endswith("AlreadyExists"):
                        raise
        logger.info("neo4j schema ready in database %s at %s", self._database, self._uri)

    @contextmanager
    def _session(self, action: str) -> Iterator[Any]:
        driver = self._connect()
        with _wrapped(action, self._uri, self._username), driver.session(database=self._database) as session:
            yield session

    def _read(self, action: str, query: str, **params: Any) -> list[dict[str, Any]]:
        with self._session(action) as session:
            rows: list[dict[str, Any]] = session.execute_read(_rows_tx, query, params)
            return rows


# -- transaction functions (the driver retries them on transient errors: keep them pure) -------


def _rows_tx(tx: Any, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = tx.run(query, params).data()
    return rows


def _deleted_tx(tx: Any, query: str, params: dict[str, Any]) -> int:
    return sum(int(r["deleted"]) for r in _rows_tx(tx, query, params))


def _link_tx(tx: Any, key: dict[str, str], rows: list[dict[str, str]], rels: list[dict[str, str]]) -> None:
    """Drop the memory's links, write the new ones, then drop entities nothing mentions any more."""
    _rows_tx(tx, DELETE_RELATIONS, key)
    previous = [e for r in _rows_tx(tx, DELETE_MEMORY, key) for e in r["previous"]]
    if rows:
        _rows_tx(tx, LINK_ENTITIES, {**key, "entities": rows, "generic": GENERIC_TYPE})
    if rels:
        _rows_tx(tx, LINK_RELATIONS, {**key, "relations": rels})
    if previous:
        _rows_tx(tx, DELETE_ORPHANS, {"user_id": key["user_id"], "entity_ids": previous})


def _layers_tx(tx: Any, user_id: str, starts: list[str], max_hops: int) -> list[GraphNeighbour]:
    """Breadth-first search: each entity once, at its smallest hop count."""
    layer = {
        r["id"]: r["name"] for r in _rows_tx(tx, START_ENTITIES, {"user_id": user_id, "entity_ids": starts})
    }
    found = [GraphNeighbour(eid, name, 0) for eid, name in layer.items()]
    seen = set(layer)
    for hop in range(1, max_hops + 1):
        if not layer:
            break
        params = {"user_id": user_id, "frontier": list(layer)}
        layer = {}
        for r in _rows_tx(tx, NEXT_LAYER, params):
            if r["id"] not in seen:
                layer.setdefault(r["id"], r["name"])
        seen.update(layer)
        found.extend(GraphNeighbour(eid, name, hop) for eid, name in layer.items())
    return found


# -- validation and errors ----------------------------------------------------------------------


def _require(value: str, field: str) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{field} must be a non-empty string", field=field)


def _entity_rows(entities: Sequence[tuple[str, str, str]]) -> list[dict[str, str]]:
    rows: dict[str, dict[str, str]] = {}
    for eid, name, kind in entities:
        _require(eid, "entities")
        norm = normalise_name(name) if isinstance(name, str) else ""
        if not norm:
            raise InvalidInputError(f"entity {eid!r} has an empty name", field="entities")
        rows.setdefault(
            eid, {"id": eid, "name": name.strip(), "norm_name": norm, "type": kind or GENERIC_TYPE}
        )
    return list(rows.values())


def _relation_rows(known: set[str], relations: Sequence[tuple[str, str, str]]) -> list[dict[str, str]]:
    rows: dict[tuple[str, str, str], dict[str, str]] = {}
    for source, target, kind in relations:
        if source not in known or target not in known:
            raise InvalidInputError(
                f"relation {source!r} -[{kind}]-> {target!r} names an entity not linked by this memory",
                field="relations",
            )
        _require(kind, "relations")
        rows.setdefault((source, kind, target), {"source": source, "target": target, "type": kind})
    return list(rows.values())


def _is_driver_error(error: BaseException) -> bool:
    """True for the neo4j package's own exceptions (no import: without neo4j there are none)."""
    exceptions = sys.modules.get("neo4j.exceptions")
    if exceptions is None:
        return False
    return isinstance(error, (exceptions.Neo4jError, exceptions.DriverError))


def _message(action: str, uri: str, username: str, error: BaseException) -> str:
    exceptions = sys.modules["neo4j.exceptions"]
    if isinstance(error, exceptions.AuthError):
        return f"Neo4j at {uri} refused user {username!r}: {error}; check NEO4J_USERNAME and NEO4J_PASSWORD"
    if isinstance(error, exceptions.ServiceUnavailable):
        return (
            f"cannot reach Neo4j at {uri} to {action}: {error}; start it "
            "(docker compose -f docker/compose.yaml up -d --wait) or fix NEO4J_URI"
        )
    return f"neo4j failed to {action} at {uri}: {error}"


@contextmanager
def _wrapped(action: str, uri: str, username: str) -> Iterator[None]:
    """Wrap driver and server errors in StoreError (our own errors pass through)."""
    try:
        yield
    except HelloMemoryError:
        raise
    except Exception as e:
        if not _is_driver_error(e):
            raise
        raise StoreError(_message(action, uri, username, e)) from e
