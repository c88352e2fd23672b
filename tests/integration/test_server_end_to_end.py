"""MemoryManager and RAGPipeline end to end on Qdrant and Neo4j, configured only through Settings."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pydantic import SecretStr

from hello_memory import MemoryManager, Settings
from hello_memory.embedders.hashing import HashingTfidfEmbedder
from hello_memory.stores.graph.qdrant import QdrantGraphStore
from hello_memory.stores.records.qdrant import QdrantRecordStore
from rag import RAGPipeline

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


def test_memory_manager_runs_on_the_servers_with_no_data_directory(server_settings, embedder, empty_neo4j):
    with MemoryManager(server_settings, user_id="alice", embedder=embedder) as mm:
        assert mm.bundle.home is None
        assert (mm.bundle.records.backend, mm.bundle.graph.backend) == ("qdrant", "neo4j")
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

    with MemoryManager(server_settings, user_id="alice", embedder=embedder) as mm:  # another worker
        assert acme.id in {h.item.id for h in mm.search("Acme Corp", memory_types=["semantic"])}
        counts = mm.forget_user("alice")
        assert counts["graph:entities"] > 0 and counts["records:memories"] == 2
        assert mm.bundle.records.residue("alice") == {"records": 0, "history": 0}
        assert mm.bundle.graph.counts("alice") == {"entities": 0, "relations": 0, "mentions": 0}
        left = empty_neo4j.query("MATCH (n {user_id: $u}) RETURN count(n) AS total", u="alice")
        assert left == [{"total": 0}]
        assert mm.get(secret.id, user_id="bob").content == "Bob keeps a secret diary"
    assert not server_settings.home.exists()


def test_rag_pipeline_runs_on_qdrant_beside_the_memory_manager(server_settings, embedder):
    with (
        MemoryManager(server_settings, user_id="alice", embedder=embedder) as mm,
        RAGPipeline(server_settings, namespace="kb", embedder=embedder) as rag,
    ):
        assert rag.bundle is mm.bundle  # one set of server connections per deployment
        report = rag.add_text(GUIDE, document_id="guide")
        assert report.chunks >= 1 and rag.stats().vector_backend == "qdrant"
        hits = rag.search("password reset email").hits
        assert hits and hits[0].document_id == "guide" and "password reset" in hits[0].text
        answer = rag.ask("How is the password reset link sent?")
        assert answer.mode == "extractive" and answer.grounded
        assert "email within five minutes" in answer.answer
        assert rag.store.residue("kb")["chunks"] == report.chunks
        assert rag.delete_document("guide") == report.chunks
        assert rag.store.residue("kb") == {"documents": 0, "chunks": 0}
    assert not server_settings.home.exists()


def test_two_workers_with_their_own_connections_share_one_memory(qdrant_url, qdrant_prefix, embedder, tmp_path):
    def worker() -> MemoryManager:
        return MemoryManager(
            Settings(home=tmp_path / "never"),
            user_id="alice",
            embedder=embedder,
            record_store=QdrantRecordStore(url=qdrant_url, prefix=qdrant_prefix),
            graph_store=QdrantGraphStore(url=qdrant_url, prefix=qdrant_prefix),
        )

    with worker() as a, worker() as b:
        fact = a.add("Alice lives in Paris", memory_type="semantic")
        assert b.get(fact.id).content == "Alice lives in Paris"
        b.update(fact.id, content="Alice lives in Rome")
        assert a.get(fact.id).content == "Alice lives in Rome" and b.stats().entities > 0
        mid = str(uuid.uuid4())
        assert a.add("retry me", memory_type="episodic", memory_id=mid) == b.add(
            "retry me", memory_type="episodic", memory_id=mid
        )
        b.forget_user("alice")
        assert a.get_all() == [] and a.bundle.records.residue("alice") == {"records": 0, "history": 0}
        assert a.bundle.graph.residue("alice") == {"graph_mentions": 0, "graph_relations": 0}
    assert not (tmp_path / "never").exists()
