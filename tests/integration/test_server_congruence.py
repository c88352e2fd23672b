"""Congruence: the same random workload on the embedded store and the server store gives the same
answers — QdrantEdgeVectorStore vs QdrantVectorStore (top-k ids) and SQLiteGraphStore vs
Neo4jGraphStore (neighbours, mentions, lookups, counts)."""

from __future__ import annotations

import random
import uuid

import numpy as np
import pytest

from hello_memory.language.extraction import RELATION_TYPES, entity_id
from hello_memory.stores.graph.base import GraphStore
from hello_memory.stores.graph.sqlite import SQLiteGraphStore
from hello_memory.stores.vectors.base import Filter, Range, VectorHit, VectorPoint, VectorStore
from hello_memory.stores.vectors.edge import QdrantEdgeVectorStore
from hello_memory.stores.vectors.qdrant import QdrantVectorStore

# The first test also pulls and starts the containers (session fixtures): allow for the download.
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("docker_engine"), pytest.mark.timeout(900)]

# -- vectors ---------------------------------------------------------------------------------------

USERS = ["u0", "u1", "u2", "u3"]
TYPES = ["working", "episodic", "semantic"]
DIM = 32


def _payload(rng: np.random.Generator) -> dict:
    payload = {
        "user_id": USERS[rng.integers(len(USERS))],
        "memory_type": TYPES[rng.integers(len(TYPES))],
        "created_ts": float(rng.uniform(0, 1000)),
        "importance": int(rng.integers(0, 5)),
        "tags": [t for t in ("a", "b", "c") if rng.random() < 0.4],
    }
    if rng.random() < 0.5:
        payload["flag"] = bool(rng.random() < 0.5)
    return payload


def _filter(rng: np.random.Generator) -> Filter | None:
    lo = float(rng.uniform(0, 800))
    return [
        None,
        Filter(equals={"user_id": USERS[rng.integers(len(USERS))]}),
        Filter(equals={"user_id": ["u1", "u3"], "memory_type": "episodic"}),
        Filter(ranges={"created_ts": Range(gte=lo, lte=lo + 200)}, exclude={"user_id": "u0"}),
        Filter(equals={"flag": True, "tags": ["a", "c"]}),
        Filter(equals={"importance": [3, 4]}, exclude={"tags": None}),
    ][int(rng.integers(6))]


def _assert_same_top_k(reference: list[VectorHit], got: list[VectorHit], tol: float = 1e-5) -> None:
    """Same ids and scores, allowing different ids only among ties at the k-th score."""
    assert len(got) == len(reference)
    np.testing.assert_allclose([h.score for h in got], [h.score for h in reference], atol=tol)
    if not reference:
        return
    boundary = reference[-1].score
    ref_ids, got_ids = {h.id for h in reference}, {h.id for h in got}
    assert all(h.id in ref_ids or abs(h.score - boundary) <= tol for h in got)
    assert all(h.id in got_ids or abs(h.score - boundary) <= tol for h in reference)


def test_embedded_and_server_vector_stores_agree(tmp_path, qdrant_url, qdrant_prefix):
    rng = np.random.default_rng(2025)
    points = [
        VectorPoint(str(uuid.uuid4()), rng.standard_normal(DIM).astype(np.float32), _payload(rng))
        for _ in range(1500)
    ]
    stores: list[VectorStore] = [
        QdrantEdgeVectorStore(tmp_path / "edge"),
        QdrantVectorStore(url=qdrant_url, prefix=qdrant_prefix),
    ]
    try:
        for store in stores:
            store.ensure_collection("congruence", DIM, embedder="random")
            for start in range(0, len(points), 500):
                store.upsert("congruence", points[start : start + 500])
            store.delete("congruence", [p.id for p in points[:50]])
        embedded, server = stores
        assert sorted(server.ids("congruence")) == sorted(embedded.ids("congruence"))
        for _ in range(40):
            query = rng.standard_normal(DIM).astype(np.float32)
            where = _filter(rng)
            expected = embedded.search("congruence", query, limit=10, where=where)
            _assert_same_top_k(expected, server.search("congruence", query, limit=10, where=where))
            assert server.count("congruence", where) == embedded.count("congruence", where)
    finally:
        for store in stores:
            store.close()


# -- graph -----------------------------------------------------------------------------------------

NAMES = [f"entity {i}" for i in range(24)] + ["Alice", "ALICE ", "北京", "Ｐａｒｉｓ", "paris"]
GRAPH_USERS = ["alice", "bob", "carol"]


def _random_link(
    rng: random.Random, user: str
) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    names = rng.sample(NAMES, rng.randint(1, 5))
    kinds = ["concept", "person", "place"]
    entities = [(entity_id(user, n), n, rng.choice(kinds)) for n in names]
    ids = [e[0] for e in entities]
    relations = [
        (rng.choice(ids), rng.choice(ids), rng.choice(RELATION_TYPES)) for _ in range(rng.randint(0, 4))
    ]
    return entities, relations


def _apply_workload(stores: list[GraphStore], seed: int = 7, steps: int = 150) -> None:
    """Links, relinks and unlinks of a few users' memories, the same on every store."""
    rng = random.Random(seed)
    memories: dict[str, list[str]] = {u: [] for u in GRAPH_USERS}
    for step in range(steps):
        user = rng.choice(GRAPH_USERS)
        known = memories[user]
        if known and rng.random() < 0.15:
            memory = known.pop(rng.randrange(len(known)))
            for store in stores:
                store.unlink_memory(user, memory)
            continue
        memory = rng.choice(known) if known and rng.random() < 0.3 else f"m{step}"
        if memory not in known:
            known.append(memory)
        entities, relations = _random_link(rng, user)
        for store in stores:
            store.link(user, memory, entities, relations)


def test_embedded_and_server_graph_stores_agree(empty_neo4j):
    embedded, server = SQLiteGraphStore(":memory:"), empty_neo4j.store()
    try:
        _apply_workload([embedded, server])
        rng = random.Random(11)
        for user in GRAPH_USERS:
            assert server.counts(user) == embedded.counts(user)
            for _ in range(25):
                starts = [entity_id(user, n) for n in rng.sample(NAMES, rng.randint(1, 3))]
                hops = rng.randint(0, 3)
                assert server.neighbours(user, starts, max_hops=hops) == embedded.neighbours(
                    user, starts, max_hops=hops
                )
                assert server.memories_mentioning(user, starts) == embedded.memories_mentioning(user, starts)
                names = [*rng.sample(NAMES, 4), "nobody"]
                assert server.find_entities(user, names) == embedded.find_entities(user, names)
        assert server.forget_user("bob") == embedded.forget_user("bob")
        for user in GRAPH_USERS:
            assert server.counts(user) == embedded.counts(user)
    finally:
        embedded.close()
        server.close()
