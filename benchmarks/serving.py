"""The memory of a process serving a large store, and its searches under a memory limit (issue 25 §5).

Usage::

    python -m benchmarks.serving --home /tmp/scale/keep/e5-1x1000000 --users 1 --queries 300 \
        [--memory-limit 2G] [--json out.json]

Opens a store :mod:`benchmarks.scale` built and kept (``--keep``) in this fresh process, as a
service would, and searches it: ``--users`` > 1 asks a different user each query
(``user00000``, ``user00001``, …; the 1,000 × 1,000 store), 1 asks its one user. It reports
``/proc/self/status`` after opening and after the searches: RSS, and RSS split into anonymous memory
(the process's own: e5, SQLite caches, Python) and file-backed pages (the vector segments
qdrant-edge memory-maps: page cache the kernel can drop and read again).

``--memory-limit`` first moves the process into a new memory cgroup of that size (v1 or v2; root
only), which counts its anonymous memory *and* the page cache it touches: the figure then says how
the search behaves when the whole process is held to the limit. A limit below what the process
needs ends it (the kernel's OOM killer), so a run that completes stayed within it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.scale import QUERY_SEED, _cpu, _load
from benchmarks.scale_corpus import ask, open_memory, user_name
from benchmarks.speed import percentiles, synthetic_texts

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def memory_status() -> dict[str, float]:
    """RSS and its anonymous / file-backed parts, and the peak (VmHWM), in MB."""
    keys = {"VmRSS": "rss_mb", "RssAnon": "anon_mb", "RssFile": "file_mb", "VmHWM": "peak_rss_mb"}
    out: dict[str, float] = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in keys:
                out[keys[name]] = round(int(value.split()[0]) / 1024, 1)
    return out


def parse_size(text: str) -> int:
    """``"2G"`` → bytes."""
    text = text.strip().upper()
    unit = _UNITS.get(text[-1:], 1)
    return int(float(text[:-1] if text[-1:] in _UNITS else text) * unit)


def limit_memory(limit: int) -> Path:
    """Move this process into a new memory cgroup holding it (and the page cache it touches) to ``limit`` bytes."""
    name = f"hello-memory-bench-{os.getpid()}"
    v2 = Path("/sys/fs/cgroup/cgroup.controllers")
    group = Path("/sys/fs/cgroup") / name if v2.exists() else Path("/sys/fs/cgroup/memory") / name
    try:
        group.mkdir()
        if v2.exists():
            (group / "memory.max").write_text(str(limit))
            (group / "memory.swap.max").write_text("0")
        else:
            (group / "memory.limit_in_bytes").write_text(str(limit))
        (group / "cgroup.procs").write_text(str(os.getpid()))
    except OSError as e:
        raise SystemExit(f"--memory-limit needs a writable memory cgroup (root): {e}") from None
    return group


def release(group: Path) -> None:
    """Move this process back to the root group and remove ``group`` (best effort)."""
    try:
        (group.parent / "cgroup.procs").write_text(str(os.getpid()))
        group.rmdir()
    except OSError:
        pass


def cgroup_usage(group: Path) -> dict[str, float]:
    """The cgroup's charged memory now and at its peak, in MB (what the limit is held against)."""
    names = (("memory.current", "memory.peak") if (group / "memory.current").exists()
             else ("memory.usage_in_bytes", "memory.max_usage_in_bytes"))  # fmt: skip
    out = {}
    for label, name in zip(("usage_mb", "peak_usage_mb"), names, strict=True):
        with open(group / name, encoding="ascii") as f:
            out[label] = round(int(f.read()) / (1 << 20), 1)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, required=True, help="a store benchmarks.scale built with --keep")
    ap.add_argument("--users", type=int, default=1, help="users in the store (each query asks the next)")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--config", default="e5")
    ap.add_argument("--memory-limit", help="e.g. 2G: hold the process and its page cache to this")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    group = limit_memory(parse_size(args.memory_limit)) if args.memory_limit else None
    report: dict[str, Any] = {"cpu": _cpu(), "home": str(args.home), "memory_limit": args.memory_limit}
    t0 = time.perf_counter()
    mm = open_memory(args.home, args.config)
    report["open_s"] = round(time.perf_counter() - t0, 2)
    report["after_open"] = memory_status()
    try:
        vectors = mm.bundle.vectors
        report["graph_building"] = bool(getattr(vectors, "_builds", {}))
        times = []
        for i, q in enumerate(synthetic_texts(args.queries, seed=QUERY_SEED)):
            user = user_name((i * 7919) % args.users) if args.users > 1 else user_name(0)
            t = time.perf_counter()
            ask(mm, q, user)
            times.append(time.perf_counter() - t)
        report["search_ms"] = percentiles(times)
        half = len(times) // 2
        report["search_ms_second_half"] = percentiles(times[half:])
        report["after_searches"] = memory_status()
        if group is not None:
            report["cgroup"] = cgroup_usage(group)
        report["load_avg"] = _load()
    finally:
        mm.close()
        if group is not None:
            release(group)
    print(json.dumps(report, indent=2), file=sys.stdout)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
