"""MemoryManager and RAGPipeline end to end on Qdrant and Neo4j, configured only through Settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from hello_memory import MemoryManager, Settings
from hello_memory.embedders.hashing import HashingTfidfEmbedder
from hello_memory.indexing import MEMORY_COLLECTION
from hello_memory.stores.base import Filter
from rag import RAGPipeline
from rag.pipeline import COLLECTION as RAG_COLLECTION

# The first test also pulls and starts the containers (session fixtures): allow for the download.
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("docker_engine"), pytest.mark.timeout(900)]

GUIDE = (Path(__file__).resolve().parents[1] / "data" / "guide_en.md").read_text(encoding="utf-8")


@pytest.fixture
def server_settings(tmp_path, qdrant_url, qdrant_prefix, empty_neo4j):
    """Settings as an app would build them from QDRANT_URL / NEO4J_URI / NEO4J_PASSWORD."""
    return Settings(
        home=tmp_path / "data",
        qdrant_url=qdrant_url,
        collection_prefix=qdrant_prefix,
        neo4j_uri=empty_neo4j.uri,
        neo4j_username=empty_neo4j.username,
        neo4j_password=SecretStr(empty_neo4j.password),
        chunk_tokens=60,
        overlap_tokens=10,
    )


@pytest.fixture
def embedder() -> HashingTfidfEmbedder:
    return HashingTfidfEmbedder(dimension=512)


def test_memory_manager_runs_on_the_servers(server_settings, embedder, empty_neo4j):
    with MemoryManager(server_settings, user_id="alice", embedder=embedder) as mm:
        assert (mm.bundle.vectors.backend, mm.bundle.graph.backend) == ("qdrant", "neo4j")
        acme = mm.add("Alice works at Acme Corp", memory_type="semantic")
        paris = mm.add("Alice lives in Paris", memory_type="semantic")
        mm.add("Met Carol at the Berlin conference", memory_type="episodic", importance=0.8)
        secret = mm.add("Bob keeps a secret diary", memory_type="episodic", user_id="bob")

        top = next(h for h in mm.search("Acme Corp", memory_types=["semantic"]) if h.item.id == acme.id)
        assert top.breakdown["graph"] > 0  # reached through Neo4j
        assert all(h.item.user_id == "alice" for h in mm.search("secret diary"))
        stats = mm.stats()
        assert stats.vector_backend == "qdrant" and stats.entities > 0

        with empty_neo4j.store() as graph:  # a second connection sees what the manager wrote
            assert graph.counts("alice")["entities"] == stats.entities
            paris_ids = [eid for eid, _ in graph.find_entities("alice", ["Paris"])]
            assert paris.id in graph.memories_mentioning("alice", paris_ids)
            mm.remove(paris.id)
            assert paris.id not in graph.memories_mentioning("alice", paris_ids)

    with MemoryManager(server_settings, user_id="alice", embedder=embedder) as mm:  # reopened
        assert acme.id in {h.item.id for h in mm.search("Acme Corp", memory_types=["semantic"])}
        alice = Filter(equals={"user_id": "alice"})
        before = mm.bundle.vectors.count(MEMORY_COLLECTION, alice)
        counts = mm.forget_user("alice")
        assert counts["graph:entities"] > 0 and counts[f"vectors:{MEMORY_COLLECTION}"] == before >= 2
        assert mm.bundle.vectors.count(MEMORY_COLLECTION, alice) == 0
        assert mm.bundle.graph.counts("alice") == {"entities": 0, "relations": 0, "mentions": 0}
        left = empty_neo4j.query("MATCH (n {user_id: $u}) RETURN count(n) AS total", u="alice")
        assert left == [{"total": 0}]
        assert mm.get(secret.id, user_id="bob").content == "Bob keeps a secret diary"
        assert mm.bundle.vectors.count(MEMORY_COLLECTION, Filter(equals={"user_id": "bob"})) == 1


def test_rag_pipeline_runs_on_qdrant_beside_the_memory_manager(server_settings, embedder):
    with (
        MemoryManager(server_settings, user_id="alice", embedder=embedder) as mm,
        RAGPipeline(server_settings, namespace="kb", embedder=embedder) as rag,
    ):
        assert rag.bundle is mm.bundle  # one set of server connections per data directory
        report = rag.add_text(GUIDE, document_id="guide")
        assert report.chunks >= 1 and rag.stats().vector_backend == "qdrant"
        hits = rag.search("password reset email").hits
        assert hits and hits[0].document_id == "guide" and "password reset" in hits[0].text
        answer = rag.ask("How is the password reset link sent?")
        assert answer.mode == "extractive" and answer.grounded
        assert "email within five minutes" in answer.answer
        kb = Filter(equals={"namespace": "kb"})
        assert rag.bundle.vectors.count(RAG_COLLECTION, kb) >= report.chunks  # a long chunk has passages
        assert rag.delete_document("guide") == report.chunks
        assert rag.bundle.vectors.count(RAG_COLLECTION, kb) == 0
