"""The hello-agents 0.2.9 peer: adapter, speed config, and the skip path when it is not installed."""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from benchmarks import peers, speed
from benchmarks.datasets.base import Doc, Query
from benchmarks.systems import SystemUnavailableError, build_system
from benchmarks.systems.hello_agents import HelloAgentsSystem


class HashEncoder:
    """Deterministic unit vectors from SHA-256; the same text gives the same query and passage vector."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    @staticmethod
    def _vec(text: str) -> npt.NDArray[np.float32]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
        return v / np.linalg.norm(v)

    def passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._vec(t) for t in texts])

    def query(self, text: str) -> npt.NDArray[np.float32]:
        self.queries.append(text)
        return self._vec(text)


@pytest.fixture
def without_hello_agents(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(sys.modules, "hello_agents", None)
    peers.load_hello_agents.cache_clear()
    yield
    peers.load_hello_agents.cache_clear()


def test_missing_hello_agents_is_unavailable_with_install_hint(without_hello_agents: None) -> None:
    with pytest.raises(SystemUnavailableError, match=r"pip install --no-deps hello-agents==0\.2\.9"):
        build_system("hello_agents")


def test_speed_skips_hello_agents_when_missing(
    without_hello_agents: None, capsys: pytest.CaptureFixture
) -> None:
    report = speed.main(["--sizes", "10", "--configs", "tfidf,hello-agents", "--queries", "2"])
    assert [r.config for r in report.results] == ["tfidf"]
    assert "skipping hello-agents: hello-agents is not importable" in capsys.readouterr().err


# ---------------------------------------------------------------- with hello-agents installed


@pytest.fixture
def hello_agents() -> None:
    """Skip unless hello-agents 0.2.9 loads (imported on first use, not at collection)."""
    if (reason := peers.unavailable_reason()) is not None:
        pytest.skip(reason)


def _docs(prefix: str, n: int) -> list[Doc]:
    start = datetime(2023, 5, 1, tzinfo=timezone.utc)
    return [
        Doc(f"D{i}", f"{prefix} turn number {i}", start + timedelta(days=i), f"s{i % 2}") for i in range(n)
    ]


@pytest.mark.usefixtures("hello_agents")
def test_adapter_maps_hits_back_to_doc_ids_per_corpus(capsys: pytest.CaptureFixture) -> None:
    encoder = HashEncoder()
    system = HelloAgentsSystem(encoder=encoder)
    try:
        system.index("a", _docs("alpha", 12))
        system.index("b", _docs("beta", 3))
        top = system.search("a", Query("q1", "alpha turn number 7", "a", frozenset({"D7"})), 5)
        assert top[0] == "D7" and len(top) == 5 and len(set(top)) == 5
        assert set(system.search("b", Query("q2", "alpha turn number 7", "b", frozenset()), 10)) == {
            "D0",
            "D1",
            "D2",
        }
        assert encoder.queries == ["alpha turn number 7"] * 2  # queries embedded as queries, docs as passages
        assert system.config()["hello_agents"] == "0.2.9"
        assert build_system("hello_agents:importance=0.5").config()["importance"] == 0.5
    finally:
        system.close()
        system.close()
    assert "[OK]" not in capsys.readouterr().out  # its SQLite banner kept off stdout


@pytest.mark.usefixtures("hello_agents")
def test_fresh_import_leaves_the_root_logger_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", logging.WARNING)
    for name in [m for m in sys.modules if m == "hello_agents" or m.startswith("hello_agents.")]:
        monkeypatch.delitem(sys.modules, name)
    peers.load_hello_agents.cache_clear()
    try:
        peers.load_hello_agents()  # hello_agents.memory.types.semantic calls logging.basicConfig(INFO)
        assert root.level == logging.WARNING and root.handlers == []
    finally:
        peers.load_hello_agents.cache_clear()


@pytest.mark.usefixtures("hello_agents")
def test_episodic_facade_filters_and_counts(tmp_path: Path) -> None:
    memory = peers.HelloAgentsEpisodic(tmp_path, user_id="u", encoder=HashEncoder())
    try:
        now = datetime.now(timezone.utc)
        memory.add_many(
            [
                {
                    "content": f"memory {i}",
                    "memory_type": "episodic",
                    "session_id": f"s{i % 2}",
                    "created_at": now - timedelta(days=10 * i),
                }
                for i in range(6)
            ]
        )
        memory.add("a single add")
        assert memory.count() == 7
        assert memory.search("memory 3", limit=1)[0].content == "memory 3"
        assert memory.search("memory 3", memory_types=["semantic"]) == []
        in_session = memory.search("memory", limit=10, session_id="s1")
        assert in_session and {m.metadata["session_id"] for m in in_session} == {"s1"}
        recent = memory.search("memory", limit=10, time_range=(now - timedelta(days=25), None))
        assert {m.content for m in recent} <= {"memory 0", "memory 1", "memory 2", "a single add"}
    finally:
        memory.close()


@pytest.mark.usefixtures("hello_agents")
def test_speed_runs_hello_agents_next_to_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peers, "default_encoder", lambda cache_dir=None: HashEncoder())
    report = speed.main(["--sizes", "20", "--configs", "tfidf,hello-agents", "--queries", "3"])
    peer = report.results[1]
    assert peer.config == "hello-agents" and peer.add_mode == peers.ADD_MODE and peer.search_ms["p95"] > 0
    assert "hello-agents vs tfidf @ 20: search p50" in speed.to_markdown(report)
