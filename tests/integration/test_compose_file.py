"""docker/compose.yaml and .env.example, checked without Docker (unit tests: no marker, no network)."""

from __future__ import annotations

import json
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
    assert set(refs) == {"qdrant", "neo4j", "hello-memory", "hello-memory-replica", "memory-lb"}
    for ref in refs.values():
        repo, _, tag = ref.rpartition(":")
        assert repo and re.fullmatch(r"v?\d+\.\d+\.\d+(-[a-z0-9]+)*", tag), (
            f"{ref} is not pinned to a release"
        )
    assert sorted(images.values()) == sorted(set(refs.values()))


def test_every_service_has_a_healthcheck_named_volumes_and_configurable_ports(compose):
    declared = set(compose["volumes"])
    expected_ports = {
        "qdrant": {"${QDRANT_PORT:-6333}", "${QDRANT_GRPC_PORT:-6334}"},
        "neo4j": {"${NEO4J_HTTP_PORT:-7474}", "${NEO4J_BOLT_PORT:-7687}"},
        "hello-memory": {"${HELLO_MEMORY_PORT:-8765}"},
        "hello-memory-replica": set(),  # reached through the load balancer only
        "memory-lb": {"${HELLO_MEMORY_PORT:-8765}"},
    }
    for name, svc in compose["services"].items():
        check = svc["healthcheck"]
        assert check["test"][0] == "CMD-SHELL" and check["test"][1].strip()
        for volume in svc.get("volumes", []):
            assert volume.split(":", 1)[0] in declared, f"{name}: {volume} is not a named volume"
        published = {re.sub(r"^127\.0\.0\.1:|:\d+$", "", p) for p in svc.get("ports", [])}
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


# -- the hello-memory service -----------------------------------------------------------------
def _dockerfile() -> str:
    return (ROOT / "docker" / "Dockerfile").read_text(encoding="utf-8")


def test_the_service_is_built_from_the_dockerfile_and_tagged_with_the_version(compose):
    import tomllib

    svc = compose["services"]["hello-memory"]
    assert svc["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert svc["image"] == f"hello-memory:{version}"
    assert (ROOT / "docker" / svc["build"]["context"] / svc["build"]["dockerfile"]).resolve().is_file()


def test_the_service_uses_the_servers_and_waits_for_them(compose):
    svc = compose["services"]["hello-memory"]
    assert svc["depends_on"] == {"qdrant": {"condition": "service_healthy"},
                                 "neo4j": {"condition": "service_healthy"}}
    env = svc["environment"]
    assert env["QDRANT_URL"] == "http://qdrant:6333" and env["NEO4J_URI"] == "bolt://neo4j:7687"
    assert env["NEO4J_PASSWORD"].startswith("${NEO4J_PASSWORD:?")


def test_the_service_keys_come_from_the_environment_and_none_means_it_refuses_to_start(compose, monkeypatch):
    from apps.service.auth import KeyRing, check_bind
    from apps.service.settings import ServiceSettings
    from hello_memory.errors import InvalidInputError

    svc = compose["services"]["hello-memory"]
    env = svc["environment"]
    assert env["HELLO_MEMORY_SERVICE_ADMIN_KEY"] == "${HELLO_MEMORY_SERVICE_ADMIN_KEY:-}"
    assert env["HELLO_MEMORY_SERVICE_API_KEYS"] == "${HELLO_MEMORY_SERVICE_API_KEYS:-{}}"
    assert svc["profiles"] == ["service"]  # `up` alone still starts only the two servers
    # Compose's defaults when .env sets no key: the service refuses to listen on 0.0.0.0.
    monkeypatch.setenv("HELLO_MEMORY_SERVICE_ADMIN_KEY", "")
    monkeypatch.setenv("HELLO_MEMORY_SERVICE_API_KEYS", "{}")
    with pytest.raises(InvalidInputError, match="without API keys"):
        check_bind("0.0.0.0", KeyRing.from_settings(ServiceSettings()))


def test_the_service_keeps_its_data_in_a_volume_and_stops_gracefully(compose):
    svc = compose["services"]["hello-memory"]
    assert "hello_memory_data:/data" in svc["volumes"]
    assert "HELLO_MEMORY_HOME=/data" in _dockerfile()
    from apps.service.settings import ServiceSettings

    grace = int(svc["stop_grace_period"].rstrip("s"))
    assert grace > ServiceSettings().drain_timeout  # compose must not SIGKILL a draining service
    assert "/ready" in " ".join(svc["healthcheck"]["test"])


def test_the_dockerfile_is_pinned_non_root_and_serves_every_package():
    text = _dockerfile()
    base = re.search(r"^FROM (\S+)", text, re.MULTILINE)
    assert base and re.fullmatch(r"python:\d+\.\d+\.\d+-[a-z-]+", base.group(1))
    assert re.search(r"^USER (?!root)\S+", text, re.MULTILINE)
    assert "HEALTHCHECK" in text and "/ready" in text and "EXPOSE 8765" in text
    assert re.search(r"pip install '\.\[[^]]*service[^]]*\]'", text)
    assert '"serve", "--host", "0.0.0.0", "--port", "8765"' in text
    for package in ("hello_memory", "rag", "tools", "apps"):
        assert f"COPY {package} ./{package}" in text
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert {".env", "hello_memory_data", ".git"} <= set(ignored)


def test_the_example_keys_start_the_service_as_compose_runs_it(monkeypatch):
    from apps.service.auth import KeyRing, check_bind
    from apps.service.settings import ServiceSettings

    env = _env_example()
    for key in ("HELLO_MEMORY_SERVICE_ADMIN_KEY", "HELLO_MEMORY_SERVICE_API_KEYS"):
        monkeypatch.setenv(key, env[key].strip("'"))
    ring = KeyRing.from_settings(ServiceSettings())
    check_bind("0.0.0.0", ring)  # keys present: the container may listen beyond loopback
    user, key = next(iter(json.loads(env["HELLO_MEMORY_SERVICE_API_KEYS"].strip("'")).items()))[::-1]
    assert ring.authenticate(f"Bearer {key}").user_id == user
    assert ring.authenticate(f"Bearer {env['HELLO_MEMORY_SERVICE_ADMIN_KEY']}").admin


# -- scaled out: stateless replicas behind a load balancer ---------------------------------------
def test_the_scaled_profile_runs_two_stateless_replicas_behind_the_balancer(compose):
    services = compose["services"]
    replica, lb, single = services["hello-memory-replica"], services["memory-lb"], services["hello-memory"]
    assert replica["profiles"] == lb["profiles"] == ["scaled"]
    assert replica["deploy"]["replicas"] == 2
    assert "volumes" not in replica and "ports" not in replica  # server mode: nothing local, no own port
    assert replica["image"] == single["image"] and replica["build"] == single["build"]
    assert replica["environment"] == single["environment"]  # the same servers, the same keys
    assert replica["depends_on"] == single["depends_on"] and replica["stop_grace_period"] == single["stop_grace_period"]
    assert lb["depends_on"] == {"hello-memory-replica": {"condition": "service_healthy"}}
    assert "/ready" in " ".join(lb["healthcheck"]["test"]) and "/ready" in " ".join(replica["healthcheck"]["test"])
    (config,) = lb["configs"]
    conf = (ROOT / "docker" / compose["configs"][config["source"]]["file"]).read_text(encoding="utf-8")
    assert config["target"] == "/etc/nginx/conf.d/default.conf"
    assert re.search(r"server hello-memory-replica:8765\b", conf) and "listen 8765;" in conf
    assert "client_max_body_size 200m;" in conf  # the service's upload limit
    assert "non_idempotent" not in conf  # a write that reached a replica is never replayed on another
