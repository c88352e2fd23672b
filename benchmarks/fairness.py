"""One user's search latency while other users add 200,000-character memories back to back (issue 27 §1).

Same run, same data directory, default embedder (e5): alice's searches (p50/p95/max; one every
``pause`` seconds) first on a quiet memory, then while ``writers`` other users each add
200,000-character memories one after another, until every writer has finished one add (so the
searches cover a whole add: tokens, embedding, the write); in process (one ``MemoryManager``, a
thread per user) and through the service (``python -m apps.service`` in a subprocess, a
``RemoteMemory`` per user in threads). The goal: loaded p95 within 2× of the quiet p95. The
machine's CPUs and load average are recorded with every phase: on a shared machine only figures
of the same run compare.

``--hog N`` runs N CPU-bound processes (a busy loop each) beside the whole benchmark, quiet and
loaded phases alike: the machine is busy in both, and the ratio shows what the writers add.

Usage: ``python -m benchmarks.fairness [--chars 200000] [--writers 2] [--searches 100] [--pause 0.2] [--hog 1]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.speed import OBJECTS, synthetic_texts

QUERIES = [f"what did I say about {o}" for o in OBJECTS] + synthetic_texts(40, seed=11)
SEED_MEMORIES = 500


@dataclass
class Phase:
    """alice's searches in one phase, and what the writers did meanwhile."""

    searches: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    seconds: float
    load_before: float
    load_after: float
    adds_done: int = 0
    add_s: list[float] = field(default_factory=list)


def long_text(chars: int, seed: int) -> str:
    """A memory of ``chars`` characters: distinct synthetic sentences (so nothing is deduplicated)."""
    parts: list[str] = []
    size = 0
    for sentence in synthetic_texts(chars // 20 + 10, seed=seed):
        parts.append(sentence)
        size += len(sentence) + 1
        if size >= chars:
            break
    return " ".join(parts)[:chars]


def _percentile(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return round(s[min(len(s) - 1, int(q * len(s)))] * 1000, 1)


def _search_phase(search: Callable[[str], object], count: int, max_seconds: float, pause: float = 0.0,
                  until: Callable[[], bool] | None = None) -> tuple[list[float], float]:
    """``count`` searches at least, ``pause`` seconds apart, and on until ``until()`` (or ``max_seconds``)."""
    latencies: list[float] = []
    started = time.perf_counter()
    while len(latencies) < count or (until is not None and not until()):
        if time.perf_counter() - started > max_seconds:
            break
        t = time.perf_counter()
        search(QUERIES[len(latencies) % len(QUERIES)])
        latencies.append(time.perf_counter() - t)
        time.sleep(pause)
    return latencies, time.perf_counter() - started


def _phase(search: Callable[[str], object], args: argparse.Namespace,
           add: Callable[[str, str], object] | None = None) -> Phase:
    """alice's searches; with ``add``, while ``args.writers`` users add long memories back to back, until
    every writer has finished one (its whole cycle: tokens, embedding, then the write under the lock)."""
    writers, chars = (args.writers, args.chars) if add is not None else (0, 0)
    stop = threading.Event()
    add_s: list[float] = []
    started = threading.Barrier(writers + 1) if writers else None

    def write(k: int) -> None:
        assert started is not None and add is not None
        started.wait()
        n = 0
        while not stop.is_set():
            text = long_text(chars, seed=1000 * (k + 1) + n + int(time.time()))
            t = time.perf_counter()
            add(f"writer-{k}", text)
            add_s.append(round(time.perf_counter() - t, 1))
            n += 1

    threads = [threading.Thread(target=write, args=(k,), daemon=True) for k in range(writers)]
    for t in threads:
        t.start()
    if started is not None:
        started.wait()
        time.sleep(2.0)  # the writers' first adds are past tokenising and into the embedder
    load_before = os.getloadavg()[0]
    latencies, seconds = _search_phase(search, args.searches, args.max_seconds, args.pause,
                                       (lambda: len(add_s) >= writers) if writers else None)
    load_after = os.getloadavg()[0]
    stop.set()
    for t in threads:
        t.join()
    return Phase(len(latencies), _percentile(latencies, 0.5), _percentile(latencies, 0.95),
                 round(max(latencies) * 1000, 1), round(seconds, 1), round(load_before, 2), round(load_after, 2),
                 len(add_s), add_s)


def _fill(home: Path) -> None:
    from hello_memory import MemoryManager, Settings

    with MemoryManager(Settings(home=home), user_id="alice") as mm:
        mm.add_many([{"content": t, "memory_type": "episodic"} for t in synthetic_texts(SEED_MEMORIES)])


def in_process(home: Path, args: argparse.Namespace) -> dict[str, Phase]:
    """Quiet and loaded phases with every user in this process."""
    from hello_memory import MemoryManager, Settings

    with MemoryManager(Settings(home=home), user_id="alice") as mm:

        def search(q: str) -> object:
            return mm.search(q, limit=10, user_id="alice")

        def add(user: str, text: str) -> object:
            return mm.add(text, memory_type="episodic", user_id=user)

        _search_phase(search, 10, 60)  # warm up
        quiet = _phase(search, args)
        loaded = _phase(search, args, add)
    return {"quiet": quiet, "loaded": loaded}


def through_service(home: Path, args: argparse.Namespace) -> dict[str, Phase]:
    """Quiet and loaded phases through ``python -m apps.service`` on ``home``."""
    from hello_memory.client.remote import RemoteMemory

    env = {**os.environ, "HELLO_MEMORY_SERVICE_REQUEST_TIMEOUT": "1800"}
    proc = subprocess.Popen([sys.executable, "-m", "apps.service", "--home", str(home), "--port", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        url = _wait_for(home, proc)
        clients: dict[str, RemoteMemory] = {}

        def client(user: str) -> RemoteMemory:
            if user not in clients:
                clients[user] = RemoteMemory(url, user_id=user, timeout=1800)
            return clients[user]

        def search(q: str) -> object:
            return client("alice").search(q, limit=10)

        def add(user: str, text: str) -> object:
            return client(user).add(text, memory_type="episodic")

        _search_phase(search, 10, 60)
        quiet = _phase(search, args)
        for k in range(args.writers):
            client(f"writer-{k}")
        loaded = _phase(search, args, add)
        for c in clients.values():
            c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=600)
    return {"quiet": quiet, "loaded": loaded}


def _wait_for(home: Path, proc: subprocess.Popen[bytes]) -> str:
    from hello_memory.client.discovery import find_service

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        url = find_service(home)
        if url:
            return url
        time.sleep(0.2)
    raise SystemExit(f"the service did not start for {home}")


def machine() -> dict[str, Any]:
    """CPUs this process may use, their model, and the load average now."""
    model = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpus": cpus, "cpu": model, "load": [round(x, 2) for x in os.getloadavg()]}


def main(argv: list[str] | None = None) -> int:
    """Run both modes in one run; print JSON, then one Markdown row per mode."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.fairness", description=__doc__.splitlines()[0])
    ap.add_argument("--chars", type=int, default=200_000, help="characters per long memory")
    ap.add_argument("--writers", type=int, default=2, help="users adding long memories back to back")
    ap.add_argument("--searches", type=int, default=100, help="alice's searches per phase, at least")
    ap.add_argument("--pause", type=float, default=0.2, help="seconds between two of alice's searches")
    ap.add_argument("--max-seconds", type=float, default=300, help="a phase's searches stop after this long")
    ap.add_argument("--mode", choices=("both", "in-process", "service"), default="both")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    ap.add_argument("--hog", type=int, default=0, help="CPU-bound processes running beside the whole benchmark")
    args = ap.parse_args(argv)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hog)]
    try:
        return _run(args)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _run(args: argparse.Namespace) -> int:
    report: dict[str, Any] = {"machine_start": machine(), "args": vars(args) | {"out": str(args.out)}}
    with tempfile.TemporaryDirectory(prefix="hm-fairness-") as tmp:
        home = Path(tmp) / "data"
        _fill(home)
        if args.mode in ("both", "in-process"):
            report["in_process"] = {k: asdict(v) for k, v in in_process(home, args).items()}
        if args.mode in ("both", "service"):
            report["service"] = {k: asdict(v) for k, v in through_service(home, args).items()}
    report["machine_end"] = machine()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    for mode in ("in_process", "service"):
        if mode in report:
            q, lo = report[mode]["quiet"], report[mode]["loaded"]
            print(f"| {mode} | {q['p50_ms']} / {q['p95_ms']} ms (load {q['load_after']}) | {lo['p50_ms']} / "
                  f"{lo['p95_ms']} / {lo['max_ms']} ms (load {lo['load_after']}, {lo['searches']} searches) | "
                  f"{lo['p95_ms'] / q['p95_ms']:.1f}× | {lo['adds_done']} adds, {lo['add_s']} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
