"""The concurrent core under load (issue 33): search throughput by threads, and stalls.

Two measurements, one run, one machine (its CPUs and load are printed with every phase):

* ``throughput``: users each holding ``--memories`` memories (default e5 embedder); T threads, each
  searching as its own user back to back for ``--seconds``: searches per second for T = 1, 2, 4, 8,
  and the CPU time one search costs (process CPU over searches, T = 1) — what the design gives on
  more cores is argued from it.
* ``stalls``: alice searches back to back while bob runs one whole-store operation at a time —
  ``add_many`` of ``--big`` memories, ``add`` of a conversation of ``--big`` messages,
  ``consolidate`` of ``--consolidate`` working memories, ``clear_all`` of ``--big``, ``forget_user``
  of ``--big``, an import of ``--big`` lines; alice's p50 / p95 / max during each, against her quiet
  figures; in process (one ``MemoryManager``, two threads) and through ``hello-memory serve``
  (a ``RemoteMemory`` each).

Usage: ``python -m benchmarks.concurrency [throughput|stalls|all] [--embedder tfidf] [--big 10000]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.fairness import _wait_for, machine
from benchmarks.speed import synthetic_texts

QUERIES = [f"what did I say about {w}" for w in ("coffee", "tea", "Berlin", "running", "the book", "dinner")]


def _ms(samples: list[float]) -> dict[str, float]:
    s = sorted(samples) or [0.0]
    pick = lambda q: round(s[min(len(s) - 1, int(q * len(s)))] * 1000, 1)  # noqa: E731
    return {"n": len(samples), "p50": pick(0.5), "p95": pick(0.95), "max": round(s[-1] * 1000, 1)}


def _settings(home: Path, embedder: str) -> Any:
    from hello_memory import Settings

    return Settings.model_validate({"home": home, "embedder": embedder})


# -- throughput ------------------------------------------------------------------------------------
def throughput(home: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Searches per second with 1, 2, 4, 8 threads of different users (see the module docstring)."""
    from hello_memory import MemoryManager

    users = [f"user-{k}" for k in range(8)]
    out: dict[str, Any] = {"machine": machine()}
    with MemoryManager(_settings(home, args.embedder), user_id=users[0]) as mm:
        for k, user in enumerate(users):
            texts = synthetic_texts(args.memories, seed=100 + k)
            mm.add_many([{"content": t, "memory_type": "episodic", "user_id": user} for t in texts])
        for q in QUERIES:  # warm: models, caches, connections
            mm.search(q, user_id=users[0])
        for threads in (1, 2, 4, 8):
            out[f"threads_{threads}"] = _searching(mm, users[:threads], args.seconds)
    one = out["threads_1"]
    out["cpu_ms_per_search"] = one["cpu_ms_per_search"]
    return out


def _searching(mm: Any, users: list[str], seconds: float) -> dict[str, Any]:
    done: list[float] = []
    stop = threading.Event()
    lock = threading.Lock()

    def loop(user: str) -> None:
        k = 0
        while not stop.is_set():
            t = time.perf_counter()
            mm.search(QUERIES[k % len(QUERIES)], user_id=user)
            with lock:
                done.append(time.perf_counter() - t)
            k += 1

    cpu0, wall0 = time.process_time(), time.perf_counter()
    threads = [threading.Thread(target=loop, args=(u,)) for u in users]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {"searches_per_s": round(len(done) / wall, 1), "latency_ms": _ms(done),
            "cpu_ms_per_search": round(1000 * cpu / max(1, len(done)), 2), "load": machine()["load"]}


# -- stalls ----------------------------------------------------------------------------------------
def _operations(big: int, consolidate: int) -> list[tuple[str, Callable[[Any, Any], Any]]]:
    """(name, run(memory, admin)) for every whole-store operation, each on a fresh bob."""
    texts = synthetic_texts(big, seed=3)
    items = [{"content": t, "memory_type": "episodic"} for t in texts]
    messages = [{"role": "user" if i % 2 else "assistant", "content": t} for i, t in enumerate(texts)]

    def fill(mem: Any) -> Any:
        return mem.add_many([dict(it) for it in items])

    def consolidating(mem: Any, admin: Any) -> Any:
        mem.add_many([{"content": t, "memory_type": "working", "importance": 0.9} for t in texts[:consolidate]])
        return mem.consolidate("working", "episodic", 0.5)

    def clearing(mem: Any, admin: Any) -> Any:
        fill(mem)
        return mem.clear_all()

    def forgetting(mem: Any, admin: Any) -> Any:
        fill(mem)
        return mem.forget_user("bob")

    def importing(mem: Any, admin: Any) -> Any:
        fill(mem)
        lines = list(admin.export_lines(users=["bob"]))
        mem.clear_all()
        return admin.import_lines(lines)

    return [
        ("add_many", lambda mem, admin: fill(mem)),
        ("add_messages", lambda mem, admin: mem.add(messages, session_id="s1")),
        ("consolidate", consolidating),
        ("clear_all", clearing),
        ("forget_user", forgetting),
        ("import", importing),
    ]


def _during(search: Callable[[str], object], work: Callable[[], object]) -> tuple[dict[str, float], float]:
    """alice's search latencies while ``work`` runs (its own seconds too)."""
    samples: list[float] = []
    finished = threading.Event()
    took: list[float] = []

    def run() -> None:
        t = time.perf_counter()
        try:
            work()
        finally:
            took.append(time.perf_counter() - t)
            finished.set()

    worker = threading.Thread(target=run)
    worker.start()
    k = 0
    while not finished.is_set():
        t = time.perf_counter()
        search(QUERIES[k % len(QUERIES)])
        samples.append(time.perf_counter() - t)
        k += 1
    worker.join()
    return _ms(samples), round(took[0], 1)


def _stall_phases(alice: Any, bob: Any, admin: Any, args: argparse.Namespace) -> dict[str, Any]:
    def search(q: str) -> object:
        return alice.search(q, limit=10)

    for q in QUERIES:
        search(q)
    samples = []
    for k in range(args.quiet):
        t = time.perf_counter()
        search(QUERIES[k % len(QUERIES)])
        samples.append(time.perf_counter() - t)
    out: dict[str, Any] = {"quiet": _ms(samples), "load": machine()["load"]}
    for name, op in _operations(args.big, args.consolidate):
        bob.clear_all()
        figures, seconds = _during(search, lambda op=op: op(bob, admin))  # type: ignore[misc]
        out[name] = {**figures, "op_seconds": seconds, "load": machine()["load"]}
        print(name, out[name], file=sys.stderr, flush=True)
    return out


def stalls_in_process(home: Path, args: argparse.Namespace) -> dict[str, Any]:
    """alice's search during each of bob's whole-store operations, one MemoryManager."""
    from hello_memory import MemoryManager

    settings = _settings(home, args.embedder)
    with MemoryManager(settings, user_id="alice") as alice, MemoryManager(settings, user_id="bob") as bob:
        alice.add_many([{"content": t, "memory_type": "episodic"} for t in synthetic_texts(args.memories)])
        return _stall_phases(alice, bob, bob, args)


def stalls_service(home: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The same through ``python -m apps.service`` (a RemoteMemory per user, the admin client)."""
    from hello_memory.client.remote import RemoteMemory

    env = {"HELLO_MEMORY_SERVICE_REQUEST_TIMEOUT": "3600", "HELLO_MEMORY_EMBEDDER": args.embedder}
    cmd = [sys.executable, "-m", "apps.service", "--home", str(home), "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**__import__("os").environ, **env})
    try:
        url = _wait_for(home, proc)
        alice, bob = RemoteMemory(url, user_id="alice", timeout=3600), RemoteMemory(url, user_id="bob", timeout=3600)
        alice.add_many([{"content": t, "memory_type": "episodic"} for t in synthetic_texts(args.memories)])
        try:
            return _stall_phases(alice, bob, bob, args)  # a RemoteMemory is its own admin client
        finally:
            alice.close()
            bob.close()
    finally:
        proc.terminate()
        proc.wait(timeout=600)


def main(argv: list[str] | None = None) -> int:
    """Run the chosen parts; print JSON (and write it with ``--out``)."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.concurrency", description=__doc__.splitlines()[0])
    ap.add_argument("part", nargs="?", choices=("throughput", "stalls", "all"), default="all")
    ap.add_argument("--embedder", default="e5", help="e5 (default) or tfidf")
    ap.add_argument("--memories", type=int, default=1000, help="memories per searching user")
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds per throughput phase")
    ap.add_argument("--big", type=int, default=10_000, help="memories of bob's whole-store operations")
    ap.add_argument("--consolidate", type=int, default=3_000, help="working memories bob consolidates")
    ap.add_argument("--quiet", type=int, default=100, help="alice's quiet searches")
    ap.add_argument("--mode", choices=("both", "in-process", "service"), default="both")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    report: dict[str, Any] = {"machine": machine(), "args": {k: str(v) for k, v in vars(args).items()}}
    with tempfile.TemporaryDirectory(prefix="hm-concurrency-") as tmp:
        if args.part in ("throughput", "all"):
            report["throughput"] = throughput(Path(tmp) / "t", args)
        if args.part in ("stalls", "all"):
            if args.mode in ("both", "in-process"):
                report["stalls_in_process"] = stalls_in_process(Path(tmp) / "s", args)
            if args.mode in ("both", "service"):
                report["stalls_service"] = stalls_service(Path(tmp) / "v", args)
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
