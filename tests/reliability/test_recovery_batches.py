"""Recovery replays the journal in embedding batches and shows progress (issue 17 §2).

Recovering 5,000 journalled items took twice the original write: one embedding call, one vector
write and one journal transaction per item. It now embeds ``embed_batch_size`` items per call, as
``add_many`` does.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest
from rel_scan import memory_problems

from hello_memory import MemoryManager, Settings
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder


class Killed(BaseException):
    """Stands for SIGKILL at one exact point (no ``except Exception`` handler runs)."""


def _die(*_args: object, **_kwargs: object) -> None:
    raise Killed


def _journalled(home: Path, n: int, batch: int) -> list[str]:
    """A data directory whose last ``add_many`` of ``n`` items committed but never settled its markers."""
    settings = Settings(home=home, embed_batch_size=batch)
    mm = MemoryManager(settings, user_id="alice", embedder=DeterministicFakeEmbedder(32))
    specs = [{"content": f"memory {i}: Alice visited Paris", "memory_type": "semantic" if i % 5 == 0
              else "episodic"} for i in range(n)]
    mm.bundle.records.settle = _die  # type: ignore[method-assign]
    with pytest.raises(Killed):
        mm.add_many(specs)
    del mm.bundle.records.settle
    assert len(mm.bundle.records.pending()) == n
    ids = [it.id for it in mm.get_all(limit=10**6)]
    mm.close()
    return ids


def test_recovery_embeds_in_batches(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    home, n, batch = tmp_path / "data", 150, 16
    ids = _journalled(home, n, batch)
    emb = DeterministicFakeEmbedder(32)
    with caplog.at_level(logging.INFO, logger="hello_memory"):
        mm = MemoryManager(Settings(home=home, embed_batch_size=batch), user_id="alice", embedder=emb)
    try:
        passages = [c for c in emb.calls if c.kind == "passage"]
        assert sum(len(c.texts) for c in passages) == n  # each journalled item re-embedded once
        assert len(passages) == math.ceil(n / batch)  # (was: one call per item)
        assert max(len(c.texts) for c in passages) == batch
        assert mm.bundle.records.pending() == []
        assert memory_problems(home, mm.bundle.vectors) == []
        for mid in ids[:: n // 10]:
            item = mm.get(mid)
            assert mm.search(item.content, limit=3)[0].item.id == mid
        progress = [r.getMessage() for r in caplog.records if "recover" in r.getMessage()]
        assert any(f"{n}/{n}" in m for m in progress), progress  # progress is logged when not on a TTY
    finally:
        mm.close()


def test_recovery_interrupted_halfway_resumes_where_it_stopped(tmp_path: Path) -> None:
    home, n, batch = tmp_path / "data", 64, 16
    _journalled(home, n, batch)
    from hello_memory.core import recovery

    real = recovery._complete
    calls = {"n": 0}

    def die_on_third(*args: object, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise Killed
        real(*args, **kwargs)  # type: ignore[arg-type]

    recovery._complete = die_on_third  # type: ignore[assignment]
    try:
        with pytest.raises(Killed):
            MemoryManager(Settings(home=home, embed_batch_size=batch), user_id="alice",
                          embedder=DeterministicFakeEmbedder(32))
    finally:
        recovery._complete = real  # type: ignore[assignment]
    emb = DeterministicFakeEmbedder(32)
    with MemoryManager(Settings(home=home, embed_batch_size=batch), user_id="alice", embedder=emb) as mm:
        replayed = sum(len(c.texts) for c in emb.calls if c.kind == "passage")
        assert replayed == n - 2 * batch  # the two finished batches were cleared from the journal
        assert mm.bundle.records.pending() == [] and memory_problems(home, mm.bundle.vectors) == []
