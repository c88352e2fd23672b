"""Fixtures of the memory-service tests: one real service (uvicorn, loopback) per test module."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from service_runner import KEYS, RunningService, running_service


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    """A service without API keys (loopback only) on a fresh data directory, tf-idf embedder."""
    with running_service(tmp_path_factory.mktemp("svc") / "data") as running:
        yield running


@pytest.fixture(scope="module")
def keyed_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    """A service with keys for alice, bob (own namespaces) and an admin key."""
    root = tmp_path_factory.mktemp("keyed")
    keys = root / "keys.json"
    keys.write_text(json.dumps({"keys": [
        {"key": KEYS["alice"], "user_id": "alice"},
        {"key": KEYS["bob"], "user_id": "bob", "namespaces": ["bob", "team_bob"]},
        {"key": KEYS["admin"], "user_id": "ops", "admin": True},
    ]}), encoding="utf-8")
    with running_service(root / "data", args=("--keys-file", str(keys))) as running:
        yield running


@pytest.fixture
def fresh_user() -> str:
    """A user id no test has used."""
    return f"u-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def docs_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    return folder
