"""Shared fixtures: hermetic by default (no network outside `integration` tests)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(autouse=True)
def _block_network(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse outbound connections except to loopback, unless the test is marked integration."""
    if request.node.get_closest_marker("integration") or request.node.get_closest_marker("e2e"):
        return
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> None:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and (host.startswith("127.") or host in ("localhost", "::1")):
            return real_connect(self, address)  # type: ignore[arg-type]
        if self.family == socket.AF_UNIX:
            return real_connect(self, address)  # type: ignore[arg-type]
        raise RuntimeError(f"network access blocked in unit tests: {address!r}")

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ambient configuration leaks into tests (keys, servers)."""
    for name in (
        "DASHSCOPE_API_KEY",
        "QDRANT_URL",
        "QDRANT_API_KEY",
        "NEO4J_URI",
        "LLM_BASE_URL",
        "LLM_API_KEY",
        "LLM_MODEL",
        "HELLO_MEMORY_HOME",
        "HELLO_MEMORY_EMBEDDER",
    ):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(f"HELLO_MEMORY_{name}", raising=False)


@pytest.fixture
def shared_data() -> Path:
    """The read-only evaluation data folder (tests needing it skip when absent)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def fake_embedder():
    from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

    return DeterministicFakeEmbedder(dimension=32)


@pytest.fixture
def manager(tmp_path: Path, fake_embedder) -> Iterator:
    """A MemoryManager on a fresh data directory with the deterministic embedder, all tiers on."""
    from hello_memory import MemoryManager, Settings

    mm = MemoryManager(
        Settings(home=tmp_path / "data"), user_id="alice", enable_perceptual=True, embedder=fake_embedder
    )
    yield mm
    mm.close()
