"""The Neo4j graph store's Cypher: fixed statements and the transaction functions that run them.

Data model — every node and relationship carries ``user_id``, so users never share anything::

    (:HMMemory {user_id, id})-[:HM_MENTIONS {user_id}]->(:HMEntity {user_id, id, name, norm_name, type})
    (:HMEntity)-[:HM_RELATION {user_id, memory_id, type}]->(:HMEntity)

Labels and relationship types are fixed (a relation's kind is its ``type`` property, not a dynamic
relationship type), so every statement below is a constant string and all user text travels as
query parameters: nothing a user writes can change a query. The ``HM`` prefixes keep our nodes
apart from other applications' ``Entity`` nodes in a shared database.

The driver retries a transaction function on transient errors, so they are pure: their only effects
are the statements they run.
"""

from __future__ import annotations

from typing import Any

from hello_memory.stores.graph.base import GraphNeighbour
from hello_memory.stores.graph.common import GENERIC_TYPE, expand

DELETE_BATCH = 10_000  # nodes per transaction when forgetting a user

#: Idempotent DDL, run once per driver before the first query.
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


def rows_tx(tx: Any, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Run ``query`` and return its rows as dicts."""
    rows: list[dict[str, Any]] = tx.run(query, params).data()
    return rows


def deleted_tx(tx: Any, query: str, params: dict[str, Any]) -> int:
    """Run a batch of a ``FORGET_USER`` statement; returns how many nodes it deleted."""
    return sum(int(r["deleted"]) for r in rows_tx(tx, query, params))


def link_tx(tx: Any, key: dict[str, str], rows: list[dict[str, str]], rels: list[dict[str, str]]) -> None:
    """Drop the memory's links, write the new ones, then drop entities nothing mentions any more."""
    rows_tx(tx, DELETE_RELATIONS, key)
    previous = [e for r in rows_tx(tx, DELETE_MEMORY, key) for e in r["previous"]]
    if rows:
        rows_tx(tx, LINK_ENTITIES, {**key, "entities": rows, "generic": GENERIC_TYPE})
    if rels:
        rows_tx(tx, LINK_RELATIONS, {**key, "relations": rels})
    if previous:
        rows_tx(tx, DELETE_ORPHANS, {"user_id": key["user_id"], "entity_ids": previous})


def layers_tx(tx: Any, user_id: str, starts: list[str], max_hops: int) -> list[GraphNeighbour]:
    """Breadth-first search, one query per hop: each entity once, at its smallest hop count."""

    def next_layer(frontier: list[str], seen: set[str]) -> dict[str, str]:
        rows = rows_tx(tx, NEXT_LAYER, {"user_id": user_id, "frontier": frontier})
        return {r["id"]: r["name"] for r in rows if r["id"] not in seen}

    first = rows_tx(tx, START_ENTITIES, {"user_id": user_id, "entity_ids": starts})
    return expand({r["id"]: r["name"] for r in first}, next_layer, max_hops)
