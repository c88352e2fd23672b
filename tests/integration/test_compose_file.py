"""docker/compose.yaml and .env.example, checked without Docker (unit tests: no marker, no network)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hello_memory.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
yaml = pytest.importorskip("yaml")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text(encoding="utf-8"))


def _env_example() -> dict[str, str]:
    env = {}
    for line in (ROOT / ".env.example").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            env[key.strip()] = value.strip()
    return env


def test_images_are_pinned_and_are_the_ones_the_integration_tests_use(compose, images):
    refs = {name: svc["image"] for name, svc in compose["services"].items()}
    assert set(refs) == {"qdrant", "neo4j"}
    for ref in refs.values():
        repo, _, tag = ref.rpartition(":")
        assert repo and re.fullmatch(r"v?\d+\.\d+\.\d+(-[a-z0-9]+)*", tag), (
            f"{ref} is not pinned to a release"
        )
    assert sorted(images.values()) == sorted(refs.values())


def test_every_service_has_a_healthcheck_named_volumes_and_configurable_ports(compose):
    declared = set(compose["volumes"])
    expected_ports = {
        "qdrant": {"${QDRANT_PORT:-6333}", "${QDRANT_GRPC_PORT:-6334}"},
        "neo4j": {"${NEO4J_HTTP_PORT:-7474}", "${NEO4J_BOLT_PORT:-7687}"},
    }
    for name, svc in compose["services"].items():
        check = svc["healthcheck"]
        assert check["test"][0] == "CMD-SHELL" and check["test"][1].strip()
        for volume in svc["volumes"]:
            assert volume.split(":", 1)[0] in declared, f"{name}: {volume} is not a named volume"
        published = {re.sub(r"^127\.0\.0\.1:|:\d+$", "", p) for p in svc["ports"]}
        assert published == expected_ports[name]


def test_the_neo4j_password_comes_from_the_environment(compose):
    auth = compose["services"]["neo4j"]["environment"]["NEO4J_AUTH"]
    assert auth.startswith("neo4j/${NEO4J_PASSWORD:?")  # required: no default password


def test_env_example_configures_the_app_for_the_compose_servers(monkeypatch):
    env = _env_example()
    assert {"NEO4J_PASSWORD", "QDRANT_URL", "NEO4J_URI", "NEO4J_USERNAME"} <= set(env)
    assert len(env["NEO4J_PASSWORD"]) >= 8  # Neo4j refuses shorter ones
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    assert settings.qdrant_url == f"http://localhost:{env['QDRANT_PORT']}"
    assert settings.neo4j_uri == f"bolt://localhost:{env['NEO4J_BOLT_PORT']}"
    assert settings.neo4j_username == "neo4j"
    assert settings.neo4j_password is not None
    assert settings.neo4j_password.get_secret_value() == env["NEO4J_PASSWORD"]
