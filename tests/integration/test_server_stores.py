"""The store contracts on real servers: QdrantVectorStore on Qdrant, Neo4jGraphStore on Neo4j."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hello_memory.errors import StoreError
from hello_memory.language.extraction import entity_id
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.graph.neo4j import Neo4jGraphStore
from hello_memory.stores.graph.neo4j_cypher import SCHEMA
from hello_memory.stores.vectors.base import VectorStore
from hello_memory.stores.vectors.qdrant import QdrantVectorStore
from hello_memory.stores.vectors.rules import FLOAT_INDEX_KEYS, KEYWORD_INDEX_KEYS
from hello_memory.testing.graph_store import ALICE, GraphStoreContract, link_names
from hello_memory.testing.vector_store import DIM, VectorStoreContract

# The first test also pulls and starts the containers (session fixtures): allow for the download.
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("docker_engine"), pytest.mark.timeout(900)]


class TestQdrantVectorStoreOnServer(VectorStoreContract):
    persistent = True

    @pytest.fixture
    def store(self, qdrant_url: str, qdrant_prefix: str) -> Iterator[QdrantVectorStore]:
        self.url, self.prefix = qdrant_url, qdrant_prefix
        s = QdrantVectorStore(url=qdrant_url, prefix=qdrant_prefix)
        yield s
        s.close()

    def reopen(self, store: VectorStore) -> VectorStore:
        store.close()
        return QdrantVectorStore(url=self.url, prefix=self.prefix)


class TestNeo4jGraphStoreOnServer(GraphStoreContract):
    persistent = True

    @pytest.fixture
    def graph_store(self, empty_neo4j):
        self.server = empty_neo4j
        s = empty_neo4j.store()
        yield s
        s.close()

    def reopen(self, graph_store: GraphStore) -> GraphStore:
        graph_store.close()
        return self.server.store()

    def stored_rows(self, graph_store: GraphStore, user_id: str) -> int:
        nodes = self.server.query("MATCH (n {user_id: $u}) RETURN count(n) AS total", u=user_id)
        edges = self.server.query("MATCH ()-[r {user_id: $u}]->() RETURN count(r) AS total", u=user_id)
        return int(nodes[0]["total"]) + int(edges[0]["total"])


# -- server specifics -----------------------------------------------------------------------------


def test_qdrant_server_collections_get_payload_indexes(qdrant_url, qdrant_prefix):
    with QdrantVectorStore(url=qdrant_url, prefix=qdrant_prefix) as store:
        store.ensure_collection("memories", DIM, embedder="fake")
    from qdrant_client import QdrantClient

    client = QdrantClient(url=qdrant_url)
    try:
        schema = client.get_collection(f"{qdrant_prefix}_memories").payload_schema
    finally:
        client.close()
    assert set(KEYWORD_INDEX_KEYS) | set(FLOAT_INDEX_KEYS) <= set(schema)


def test_neo4j_schema_exists_once_whatever_the_number_of_stores(empty_neo4j):
    for _ in range(2):
        with empty_neo4j.store() as store:
            assert store.counts(ALICE) == {"entities": 0, "relations": 0, "mentions": 0}
    names = {r["name"] for r in empty_neo4j.query("SHOW CONSTRAINTS YIELD name RETURN name")}
    names |= {r["name"] for r in empty_neo4j.query("SHOW INDEXES YIELD name RETURN name")}
    wanted = {s.split()[2] for s in SCHEMA}  # "CREATE CONSTRAINT <name> IF NOT EXISTS ..."
    assert wanted <= names


def test_neo4j_stores_every_node_and_edge_with_its_user(empty_neo4j):
    with empty_neo4j.store() as store:
        link_names(store, ALICE, "m1", ["a", "b"], [("a", "b", "likes")])
    unowned = empty_neo4j.query(
        "MATCH (n) WHERE n.user_id IS NULL RETURN count(n) AS total "
        "UNION ALL MATCH ()-[r]->() WHERE r.user_id IS NULL RETURN count(r) AS total"
    )
    assert [r["total"] for r in unowned] == [0, 0]


def test_neo4j_user_text_is_stored_verbatim(empty_neo4j):
    user, memory = "u'\"`}) MATCH (n) DETACH DELETE n //", "m`}) RETURN 1 //"
    name, kind = "O'Brien \"`})-[:X]->(y)", "likes`]->(z) SET z.pwned = true //"
    a, b = entity_id(user, name), entity_id(user, "Paris")
    with empty_neo4j.store() as store:
        store.link(user, memory, [(a, name, "person"), (b, "Paris", "place")], [(a, b, kind)])
        assert store.find_entities(user, [name]) == [(a, name)]
        assert store.memories_mentioning(user, [a]) == {memory: [a]}
    rows = empty_neo4j.query("MATCH ()-[r:HM_RELATION]->() RETURN r.type AS type, r.user_id AS user")
    assert rows == [{"type": kind, "user": user}]


def test_wrong_neo4j_credentials_are_a_store_error_naming_the_settings(neo4j_server):
    # An unknown user, so the failed login does not count towards locking out "neo4j".
    store = Neo4jGraphStore(neo4j_server.uri, username="hello-memory-nobody", password="not-the-password")
    with store, pytest.raises(StoreError, match="NEO4J_PASSWORD"):
        store.counts(ALICE)
