"""Fixtures for the server tests: a Docker probe, then Qdrant and Neo4j containers (testcontainers).

Every server test here is marked ``integration`` and starts from the session-scoped ``docker_engine``
probe. Without a Docker engine (or without testcontainers, or when a container cannot start) the
tests skip with the reason; with ``HELLO_MEMORY_REQUIRE_SERVICES=1`` (CI with services) they fail
instead. The images are the ones pinned in ``docker/compose.yaml``, read from that file.

Run them with ``HELLO_MEMORY_REQUIRE_SERVICES=1 pytest -m integration``.
"""

from __future__ import annotations

import importlib
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from hello_memory.stores.graph.neo4j import Neo4jGraphStore
from hello_memory.stores.vectors.qdrant import QdrantVectorStore
from hello_memory.testing.services import service_unavailable

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "docker" / "compose.yaml"
QDRANT_IMAGE, NEO4J_IMAGE = "qdrant/qdrant", "neo4j"
NEO4J_PASSWORD = "hello-memory-tests"  # Neo4j 5 wants 8+ characters
PROBE_TIMEOUT = 5  # seconds


def compose_images(path: Path = COMPOSE_FILE) -> dict[str, str]:
    """Image repository -> pinned image reference, from the compose file's ``image:`` lines."""
    found = re.findall(r"^\s+image:\s*[\"']?([^\s\"'#]+)", path.read_text(encoding="utf-8"), re.MULTILINE)
    return {ref.rsplit(":", 1)[0]: ref for ref in found}


def services_unavailable(reason: str) -> NoReturn:
    """Skip, or fail when the run requires services: the one helper every server skip goes through."""
    service_unavailable(reason)


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """Probe the Docker engine once per session, with a short timeout."""
    problem = None
    try:
        # By name: the repository's docker/ folder would otherwise shadow the package for type checkers.
        docker = importlib.import_module("docker")
        if not hasattr(docker, "from_env"):  # only that folder (a namespace package) was found
            raise ImportError("the docker package is not installed: pip install -e '.[dev]'")
        client = docker.from_env(timeout=PROBE_TIMEOUT)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as e:  # DockerException, ConnectionError, ImportError, ...
        problem = f"{type(e).__name__}: {e}"
    if problem is not None:  # outside the except block: the reason alone, not a chain of tracebacks
        services_unavailable(f"no Docker engine: {problem}")


@pytest.fixture(scope="session")
def images() -> dict[str, str]:
    """The pinned images of docker/compose.yaml."""
    found = compose_images()
    missing = {QDRANT_IMAGE, NEO4J_IMAGE} - set(found)
    assert not missing, f"{COMPOSE_FILE} has no image for {sorted(missing)}"
    return found


def _container_class(module: str, name: str) -> Any:
    """A testcontainers module class: ``testcontainers.community.X`` (newer) or ``testcontainers.X``."""
    for path in (f"testcontainers.community.{module}", f"testcontainers.{module}"):
        try:
            return getattr(importlib.import_module(path), name)
        except ImportError:
            continue
    services_unavailable(f"testcontainers[{module}] is not installed: pip install -e '.[dev]'")


@contextmanager
def _running(container: Any, image: str) -> Iterator[Any]:
    problem = None
    try:
        container.start()
    except Exception as e:
        problem = f"{type(e).__name__}: {e}"
        with suppress(Exception):  # a half-started container
            container.stop()
    if problem is not None:
        services_unavailable(f"could not start {image}: {problem}")
    try:
        yield container
    finally:
        container.stop()


@pytest.fixture(scope="session")
def qdrant_url(docker_engine: None, images: dict[str, str]) -> Iterator[str]:
    """REST URL of a Qdrant container (one per session)."""
    container = _container_class("qdrant", "QdrantContainer")(images[QDRANT_IMAGE])
    with _running(container, images[QDRANT_IMAGE]) as qdrant:
        yield f"http://{qdrant.get_container_host_ip()}:{qdrant.get_exposed_port(6333)}"


@dataclass(frozen=True)
class Neo4jServer:
    """Where the Neo4j container listens, and how to reach it."""

    uri: str
    username: str
    password: str

    def store(self, **kwargs: Any) -> Neo4jGraphStore:
        """A new graph store on this server."""
        return Neo4jGraphStore(self.uri, username=self.username, password=self.password, **kwargs)

    def query(self, cypher: str, **params: Any) -> list[dict[str, Any]]:
        """Run one statement on a separate connection (to look at what is stored)."""
        import neo4j

        with neo4j.GraphDatabase.driver(self.uri, auth=(self.username, self.password)) as driver:
            records, _, _ = driver.execute_query(cypher, params, database_="neo4j")
            return [r.data() for r in records]


@pytest.fixture(scope="session")
def neo4j_server(docker_engine: None, images: dict[str, str]) -> Iterator[Neo4jServer]:
    """A Neo4j container (one per session)."""
    container = _container_class("neo4j", "Neo4jContainer")(images[NEO4J_IMAGE], password=NEO4J_PASSWORD)
    container.with_env("NEO4J_server_memory_heap_max__size", "1g")  # small CI machines
    with _running(container, images[NEO4J_IMAGE]) as neo4j_container:
        yield Neo4jServer(neo4j_container.get_connection_url(), "neo4j", NEO4J_PASSWORD)


@pytest.fixture
def empty_neo4j(neo4j_server: Neo4jServer) -> Neo4jServer:
    """The Neo4j server with no data (constraints and indexes stay: they are idempotent)."""
    neo4j_server.query("MATCH (n) DETACH DELETE n")
    return neo4j_server


@pytest.fixture
def qdrant_prefix(qdrant_url: str) -> Iterator[str]:
    """A collection prefix of this test alone; its collections are dropped afterwards."""
    prefix = f"t{uuid.uuid4().hex[:12]}"
    yield prefix
    with QdrantVectorStore(url=qdrant_url, prefix=prefix) as store:
        for name in store.collections():
            store.drop_collection(name)
