"""Recovery cost: replaying N journalled memories at open, against the ``add_many`` that wrote them.

A child process ``add_many``s N episodic memories with the offline e5 and is killed (SIGKILL) after
the batch committed but before its journal was cleared: the state a writer killed at the worst
moment leaves, where the next open re-embeds all N. The parent then times that open. Both times
exclude building the embedder (warmed up before the clock starts).

    python -m benchmarks.recovery --sizes 1000,5000 [--runs 3] [--embedder e5|tfidf] [--json recovery.json]

``--embedder tfidf`` (hashed TF-IDF, near-free) isolates the stores' part of the cost.

Runs against whatever ``hello_memory`` is importable, so ``PYTHONPATH=<older checkout>`` measures
an older version the same way. Timings on a shared machine are noisy: compare medians, and the
recovery/write ratio measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

_CHILD = """
import os, signal, sys, time
from pathlib import Path
from hello_memory import MemoryManager, Settings
from hello_memory.embedders.factory import make_embedder

home, n = Path(sys.argv[1]), int(sys.argv[2])
settings = Settings(home=home, embedder=sys.argv[3])
emb = make_embedder(settings)
emb.embed(["warm up"], kind="passage")
mm = MemoryManager(settings, user_id="bench", embedder=emb)
specs = [{"content": f"memory {i}: on day {i % 365} the user talked about topic {i % 97} and "
                     f"mentioned item {i * 7919 % 10007}", "memory_type": "episodic"} for i in range(n)]
start = time.perf_counter()

def die(*_a, **_k):
    print(f"{time.perf_counter() - start:.3f}", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

mm.bundle.records.settle = die  # the write is done, its markers not yet settled
mm.add_many(specs)
"""


def _write_then_kill(home: Path, n: int, embedder: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(home), str(n), embedder],
        capture_output=True,
        text=True,
        check=False,
        env=os.environ.copy(),
    )
    if done.returncode != -signal.SIGKILL:
        raise SystemExit(
            f"the writer was not killed as planned (exit {done.returncode}): {done.stderr[-2000:]}"
        )
    return float(done.stdout.strip().splitlines()[-1])


def _time_recovery(home: Path, embedder: Literal["e5", "tfidf"]) -> tuple[float, int]:
    from hello_memory import MemoryManager, Settings
    from hello_memory.embedders.factory import make_embedder

    settings = Settings(home=home, embedder=embedder)
    emb = make_embedder(settings)
    emb.embed(["warm up"], kind="passage")
    start = time.perf_counter()
    mm = MemoryManager(settings, user_id="bench", embedder=emb)
    elapsed = time.perf_counter() - start
    try:
        left = len(mm.bundle.records.unsettled())
        hits = mm.search("memory 17: on day 17 the user talked about topic 17 and mentioned item", limit=3)
        assert any(h.item.content.startswith("memory 17:") for h in hits), "recovered memories not searchable"
    finally:
        mm.close()
    return elapsed, left


def main(argv: list[str] | None = None) -> None:
    """Run the measurement and print (and optionally save) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,5000")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--embedder", default="e5", choices=["e5", "tfidf"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        writes, recoveries = [], []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="hm-recovery-") as tmp:
                home = Path(tmp) / "data"
                writes.append(_write_then_kill(home, n, args.embedder))
                took, left = _time_recovery(home, args.embedder)
                if left:
                    raise SystemExit(f"{left} journal entries left after recovery")
                recoveries.append(took)
        row = {
            "n": n,
            "write_s": statistics.median(writes),
            "recovery_s": statistics.median(recoveries),
            "ratio": statistics.median(r / w for r, w in zip(recoveries, writes, strict=True)),
            "runs": args.runs,
        }
        rows.append(row)
        print(
            f"n={n} ({args.embedder}): add_many {row['write_s']:.1f} s, recovery at open {row['recovery_s']:.1f} s, "
            f"recovery/write {row['ratio']:.2f} (median of {args.runs})",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
