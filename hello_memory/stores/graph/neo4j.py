"""Knowledge graph on a Neo4j server through the official ``neo4j`` driver.

The data model and the Cypher (constant statements; user text travels only as parameters) are in
:mod:`hello_memory.stores.graph.neo4j_cypher`.

Example (needs a server: ``docker compose -f docker/compose.yaml up -d --wait``):
    >>> from hello_memory.language.extraction import entity_id
    >>> a, b = entity_id("u1", "Alice"), entity_id("u1", "Paris")
    >>> with Neo4jGraphStore("bolt://localhost:7687", password="change-me-please") as store:  # doctest: +SKIP
    ...     store.link("u1", "m1", [(a, "Alice", "person"), (b, "Paris", "place")], [(a, b, "lives_in")])
    ...     print([(n.name, n.hops) for n in store.neighbours("u1", [a])])
    [('Alice', 0), ('Paris', 1)]
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hello_memory._lazy import require
from hello_memory.errors import HelloMemoryError, InvalidInputError, StoreError
from hello_memory.stores.graph import neo4j_cypher as cypher
from hello_memory.stores.graph.base import GraphNeighbour
from hello_memory.stores.graph.common import (
    COUNT_KEYS,
    EntityRow,
    GraphStoreAdapter,
    RelationRow,
    require_text,
)

logger = logging.getLogger(__name__)


class Neo4jGraphStore(GraphStoreAdapter):
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

    BACKEND = "neo4j"

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
        require_text(uri, "uri")
        require_text(database, "database")
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
    def uri(self) -> str:
        """The server URI."""
        return self._uri

    @property
    def database(self) -> str:
        """The database name."""
        return self._database

    def unlink_memory(self, user_id: str, memory_id: str) -> None:
        """Remove the memory's mentions, its relations and entities no memory mentions any more."""
        self._replace_links("unlink a memory", user_id, memory_id, [], [])

    def counts(self, user_id: str) -> dict[str, int]:
        """``{"entities": n, "relations": m, "mentions": k}`` for the user."""
        (row,) = self._read("count", cypher.COUNTS, user_id=user_id)
        return {k: int(row[k]) for k in COUNT_KEYS}

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete every node and relationship of the user; returns what there was, as ``counts()``.

        Deletes in batches of :data:`~hello_memory.stores.graph.neo4j_cypher.DELETE_BATCH` nodes per
        transaction, so a large user does not need one huge transaction; an interrupted call leaves a
        partial delete that a retry finishes.
        """
        deleted = self.counts(user_id)
        batch = cypher.DELETE_BATCH
        params = {"user_id": user_id, "batch": batch}
        with self._session("forget a user") as session:
            for query in cypher.FORGET_USER:
                while session.execute_write(cypher.deleted_tx, query, params) >= batch:
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

    # -- primitives -------------------------------------------------------------------------------

    def _link(self, user_id: str, memory_id: str, rows: list[EntityRow], rels: list[RelationRow]) -> None:
        self._replace_links("link a memory", user_id, memory_id, rows, rels)

    def _neighbours(self, user_id: str, starts: list[str], max_hops: int) -> list[GraphNeighbour]:
        """One query per hop, all in one read transaction."""
        with self._session("traverse the graph") as session:
            found: list[GraphNeighbour] = session.execute_read(cypher.layers_tx, user_id, starts, max_hops)
        return found

    def _mentions(self, user_id: str, entity_ids: list[str]) -> list[tuple[str, str]]:
        rows = self._read("read mentions", cypher.MENTIONS_OF, user_id=user_id, entity_ids=entity_ids)
        return [(r["memory_id"], r["entity_id"]) for r in rows]

    def _entities_named(self, user_id: str, keys: list[str]) -> list[tuple[str, str, str]]:
        rows = self._read("find entities", cypher.FIND_BY_NAME, user_id=user_id, keys=keys)
        return [(r["key"], r["id"], r["name"]) for r in rows]

    # -- internals ---------------------------------------------------------------------------

    def _replace_links(
        self, action: str, user_id: str, memory_id: str, rows: list[EntityRow], rels: list[RelationRow]
    ) -> None:
        """One write transaction (:func:`~hello_memory.stores.graph.neo4j_cypher.link_tx`)."""
        key = {"user_id": user_id, "memory_id": memory_id}
        entities = [dataclasses.asdict(r) for r in rows]
        relations = [dataclasses.asdict(r) for r in rels]
        with self._session(action) as session:
            session.execute_write(cypher.link_tx, key, entities, relations)

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
            for statement in cypher.SCHEMA:
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
            rows: list[dict[str, Any]] = session.execute_read(cypher.rows_tx, query, params)
            return rows


# -- errors -------------------------------------------------------------------------------------


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
