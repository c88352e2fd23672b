"""The mem0 OSS peer: skip path without mem0, and the adapter on a tiny corpus with a fake encoder."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from benchmarks.datasets.base import Doc, Query
from benchmarks.systems import SystemUnavailableError, build_system
from benchmarks.systems import mem0 as mem0_peer

_COMMON = np.ones(384, dtype=np.float32) / np.sqrt(384)


class HashEncoder:
    """Deterministic unit vectors from SHA-256; the same text gives the same query and passage vector.

    A shared component keeps unrelated texts at cosine ~0.6 (as e5 does): mem0 drops hits below 0.1.
    """

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.passages_seen: list[str] = []

    @staticmethod
    def _vec(text: str) -> npt.NDArray[np.float32]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
        v = 0.6 * v / np.linalg.norm(v) + 0.8 * _COMMON
        return v / np.linalg.norm(v)

    def passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.passages_seen.extend(texts)
        return np.stack([self._vec(t) for t in texts])

    def query(self, text: str) -> npt.NDArray[np.float32]:
        self.queries.append(text)
        return self._vec(text)


class ScriptedLLM:
    """Records every call; with ``infer=False`` the script is empty."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def generate_response(self, messages: Any, **kwargs: Any) -> str:
        self.calls.append(messages)
        return "{}"


@pytest.fixture
def without_mem0(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(sys.modules, "mem0", None)
    mem0_peer.load_mem0.cache_clear()
    yield
    mem0_peer.load_mem0.cache_clear()


def test_missing_mem0_is_unavailable_with_install_hint(without_mem0: None) -> None:
    with pytest.raises(SystemUnavailableError, match=r"pip install --no-deps mem0ai==2\.2\.1"):
        build_system("mem0")


# ---------------------------------------------------------------- with mem0 installed


@pytest.fixture
def mem0_installed() -> None:
    """Skip unless mem0 2.x imports (on first use, not at collection)."""
    try:
        mem0_peer.load_mem0()
    except SystemUnavailableError as e:
        pytest.skip(str(e))


def _docs(prefix: str, n: int) -> list[Doc]:
    start = datetime(2023, 5, 1, tzinfo=timezone.utc)
    return [
        Doc(f"D{i}", f"{prefix} turn number {i}", start + timedelta(days=i), f"session {i % 2}", "Caroline")
        for i in range(n)
    ]


@pytest.mark.usefixtures("mem0_installed")
def test_adapter_maps_hits_back_to_doc_ids_per_corpus_without_an_llm() -> None:
    encoder, llm = HashEncoder(), ScriptedLLM()
    system = mem0_peer.Mem0System(encoder=encoder, llm=llm)
    try:
        system.index("conv a", _docs("alpha", 12))  # whitespace in ids: mem0 rejects it in user/run ids
        system.index("conv b", _docs("beta", 3))
        top = system.search("conv a", Query("q1", "alpha turn number 7", "conv a", frozenset({"D7"})), 5)
        assert top[0] == "D7" and len(top) == 5 and len(set(top)) == 5
        other = system.search("conv b", Query("q2", "alpha turn number 7", "conv b", frozenset()), 10)
        assert set(other) == {"D0", "D1", "D2"}
        assert system.search("conv b", Query("q3", "  ", "conv b", frozenset()), 10) == []
        assert encoder.queries == ["alpha turn number 7"] * 2  # queries embedded as queries
        assert (
            len(encoder.passages_seen) == 15
        )  # each doc embedded once, as a passage, in one batch per corpus
        assert llm.calls == [] and system.llm_calls == 0
        assert system.config()["mem0"].startswith("2.") and system.config()["telemetry"] is False
    finally:
        system.close()
        system.close()


@pytest.mark.usefixtures("mem0_installed")
def test_registry_builds_mem0_on_the_shared_encoder_with_telemetry_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import mem0.memory.telemetry

    monkeypatch.setattr(mem0_peer, "default_encoder", lambda cache_dir: HashEncoder())
    system = build_system("mem0")
    try:
        system.index("c", _docs("gamma", 4))
        assert system.search("c", Query("q", "gamma turn number 2", "c", frozenset()), 2)[0] == "D2"
        assert isinstance(system, mem0_peer.Mem0System) and system.llm_calls == 0
    finally:
        system.close()
    assert mem0.memory.telemetry.MEM0_TELEMETRY is False
