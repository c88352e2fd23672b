"""Child process of the full-disk tests: writes until the disk is full, or reads a store on a full disk.

Run as ``python disk_worker.py MODE HOME``; prints one JSON object per line (``{"op": ..., "ok": ...,
"error": ..., "message": ...}``) so that the test can check every outcome, and a killing signal
(SIGBUS, exit -7) shows as the return code.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hello_memory import MemoryManager, Settings
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder

TIERS = ("working", "episodic", "semantic", "perceptual")


def report(op: str, call: Callable[[], Any]) -> bool:
    """Run ``call`` and print its outcome; True when it succeeded."""
    try:
        result = call()
    except Exception as e:  # the test checks the type
        print(json.dumps({"op": op, "ok": False, "error": type(e).__name__, "message": str(e)}), flush=True)
        return False
    print(json.dumps({"op": op, "ok": True, "result": _short(result)}), flush=True)
    return True


def _short(result: Any) -> Any:
    if isinstance(result, list):
        return len(result)
    if isinstance(result, int | str | None):
        return result if not isinstance(result, str) else len(result)
    return type(result).__name__


def open_manager(home: str) -> MemoryManager:
    settings = Settings(home=Path(home), working_capacity=1_000_000, working_token_budget=10**9)
    return MemoryManager(settings, user_id="u", enable_perceptual=True, embedder=DeterministicFakeEmbedder(64))


def reads(mm: MemoryManager) -> None:
    report("search", lambda: mm.search("memory number 3 about Alice in Paris", limit=5))
    report("get_all", lambda: mm.get_all(limit=20))
    report("stats", lambda: mm.stats().total)
    report("summary", lambda: mm.summary(limit=3))
    report("context", lambda: mm.build_context("Alice in Paris").text)


def fill(mm: MemoryManager, rounds: int) -> None:
    """Add memories of every tier (and batches) until every tier failed, or ``rounds`` ran."""
    failed: set[str] = set()
    for n in range(rounds):
        for tier in TIERS:
            if tier in failed:
                continue
            extra = {"source_path": f"/m/{n}.jpg"} if tier == "perceptual" else {}
            text = f"memory number {n} about Alice in Paris ({tier}) " + "lorem ipsum dolor " * 3000
            if not report(f"add:{tier}", lambda t=tier, x=text, e=extra: mm.add(x, memory_type=t, **e).id):
                failed.add(tier)
        if len(failed) == len(TIERS):
            return


def main(mode: str, home: str) -> None:
    opened: list[MemoryManager] = []
    if not report("open", lambda: opened.append(open_manager(home))):
        return
    mm = opened[0]
    if mode == "seed":
        for tier in TIERS:
            extra = {"source_path": "/m/seed.jpg"} if tier == "perceptual" else {}
            mm.add(f"memory number 3 about Alice in Paris ({tier})", memory_type=tier, **extra)
        mm.close()  # and load every shard once: on tmpfs a first load fills sparse files (see space.py)
        with open_manager(home) as again:
            again.search("memory number 3", limit=5)
        print(json.dumps({"op": "seed", "ok": True}), flush=True)
        return
    if mode == "fill":
        fill(mm, rounds=100_000)
    reads(mm)
    if mode == "read":
        for tier in TIERS:
            extra = {"source_path": "/m/late.jpg"} if tier == "perceptual" else {}
            report(f"add:{tier}", lambda t=tier, e=extra: mm.add("one more " + t, memory_type=t, **e).id)
        reads(mm)
    report("close", mm.close)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
