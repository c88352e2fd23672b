"""The memory service's cost and throughput, against the same data directory in process (same run).

At ``size`` synthetic memories (default embedder, e5): search latency in process, then through the
service (``RemoteMemory`` over loopback HTTP) with the service's own time per request read from
its ``Server-Timing`` header, so the HTTP share (client − service) is measured on the very same
calls; throughput of 4 concurrent client processes (searches/s, adds/s); and the wall time of
``hello-memory search`` through the service vs standalone (which loads the embedder every time).

Usage: ``python -m benchmarks.speed --service --sizes 10000`` (or ``python -m benchmarks.service_speed``).
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.speed import OBJECTS, percentiles, synthetic_texts

CLIENTS = 4
CLI_RUNS = 5


@dataclass
class ServiceResult:
    """Figures of one service run."""

    size: int
    in_process_ms: dict[str, float]
    remote_ms: dict[str, float]
    service_side_ms: dict[str, float]
    http_overhead_ms: dict[str, float]
    operation_ms: dict[str, float] = field(default_factory=dict)
    added_ms: dict[str, float] = field(default_factory=dict)
    throughput: dict[str, float] = field(default_factory=dict)
    cli_search_s: dict[str, float] = field(default_factory=dict)
    in_process_again_ms: dict[str, float] = field(default_factory=dict)


def _fill(home: Path, size: int) -> None:
    from hello_memory import MemoryManager, Settings

    now = datetime.now(timezone.utc)
    items = [{"content": t, "memory_type": "episodic", "session_id": f"s{i % 50}",
              "created_at": now - timedelta(hours=i % 5000)} for i, t in enumerate(synthetic_texts(size))]
    with MemoryManager(Settings(home=home), user_id="bench") as mm:
        for start in range(0, size, 1000):
            mm.add_many(items[start : start + 1000])


def _in_process(home: Path, queries: list[str]) -> dict[str, float]:
    from hello_memory import MemoryManager, Settings

    with MemoryManager(Settings(home=home), user_id="bench") as mm:
        for q in queries[:20]:
            mm.search(q, limit=10, memory_types=["episodic"])
        lat = []
        for q in queries:
            t = time.perf_counter()
            mm.search(q, limit=10, memory_types=["episodic"])
            lat.append(time.perf_counter() - t)
    return percentiles(lat)


def _start(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    from hello_memory.client.discovery import find_service

    proc = subprocess.Popen([sys.executable, "-m", "apps.service", "--home", str(home), "--port", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        url = find_service(home)
        if url:
            return proc, url
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"the service did not start for {home}")


def _remote(url: str, queries: list[str]) -> dict[str, dict[str, float]]:
    """Per search: client latency, the service's time and its library call's (Server-Timing), differences."""
    import httpx

    from hello_memory.client.remote import RemoteMemory

    seen: list[float] = []
    ops: list[float] = []

    def timing(response: httpx.Response) -> None:
        metrics = dict(part.strip().split(";dur=") for part in response.headers["server-timing"].split(","))
        seen.append(float(metrics["app"]) / 1000)
        ops.append(float(metrics["op"]) / 1000)

    client = httpx.Client(base_url=url, timeout=60, event_hooks={"response": [timing]})
    with RemoteMemory(url, user_id="bench", client=client) as mm:
        for q in queries[:20]:
            mm.search(q, limit=10, memory_types=["episodic"])
        seen.clear()
        ops.clear()
        lat = []
        for q in queries:
            t = time.perf_counter()
            mm.search(q, limit=10, memory_types=["episodic"])
            lat.append(time.perf_counter() - t)
    return {
        "client": percentiles(lat), "service": percentiles(seen), "operation": percentiles(ops),
        "http": percentiles([c - s for c, s in zip(lat, seen, strict=True)]),
        "added": percentiles([c - o for c, o in zip(lat, ops, strict=True)]),
    }


def _client(url: str, kind: str, n: int, seed: int, out: Any) -> None:
    from hello_memory.client.remote import RemoteMemory

    queries = synthetic_texts(n, seed=seed)
    with RemoteMemory(url, user_id=f"bench-{seed}") as mm:
        out.wait()  # all clients start together
        for i, q in enumerate(queries):
            if kind == "search":
                mm.search(q, limit=10, memory_types=["episodic"], user_id="bench")
            else:
                mm.add(f"client {seed} add {i} about {OBJECTS[i % len(OBJECTS)]}", memory_type="episodic")


def _throughput(url: str, kind: str, per_client: int) -> float:
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(CLIENTS + 1)
    procs = [ctx.Process(target=_client, args=(url, kind, per_client, 1000 + k, barrier)) for k in range(CLIENTS)]
    for p in procs:
        p.start()
    barrier.wait()
    t0 = time.perf_counter()
    for p in procs:
        p.join()
    return round(CLIENTS * per_client / (time.perf_counter() - t0), 1)


def _cli_search(home: Path, query: str, runs_wanted: int = CLI_RUNS) -> float:
    """Median wall time of ``hello-memory search QUERY --home HOME`` over ``runs_wanted`` runs."""
    runs = []
    for _ in range(runs_wanted):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "from apps.cli import main; main()", "search", query, "--home",
                        str(home), "--user", "bench"], check=True, capture_output=True, timeout=300)
        runs.append(time.perf_counter() - t)
    return round(statistics.median(runs), 2)


def measure_service(
    size: int = 10_000, queries: int = 200, per_client: int = 100, cli_runs: int = CLI_RUNS
) -> ServiceResult:
    """All figures of the module docstring at ``size`` memories, in one run."""
    qs = synthetic_texts(queries, seed=99)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "data"
        _fill(home, size)
        local = _in_process(home, qs)
        proc, url = _start(home)
        try:
            timing = _remote(url, qs)
            result = ServiceResult(size, local, timing["client"], timing["service"], timing["http"],
                                   timing["operation"], timing["added"])
            result.throughput["searches_per_s"] = _throughput(url, "search", per_client)
            result.throughput["adds_per_s"] = _throughput(url, "add", per_client)
            result.cli_search_s["through_service"] = _cli_search(home, qs[0], cli_runs)
        finally:
            proc.terminate()
            proc.wait(timeout=120)
        result.cli_search_s["standalone"] = _cli_search(home, qs[0], cli_runs)
        result.in_process_again_ms = _in_process(home, qs)
    return result


def to_markdown(r: ServiceResult) -> str:
    """The figures as a small table plus lines."""
    def row(name: str, ms: dict[str, float]) -> str:
        return f"| {name} | {ms['p50']} | {ms['p95']} |"

    return "\n".join([
        f"Service at {r.size} memories (search limit 10, episodic; {CLIENTS} concurrent client processes):",
        "", "| search | p50 ms | p95 ms |", "|---|---|---|",
        row("in process", r.in_process_ms), row("in process (after the service)", r.in_process_again_ms),
        row("through the service (client)", r.remote_ms), row("service's time (Server-Timing app)",
                                                               r.service_side_ms),
        row("its library call (Server-Timing op)", r.operation_ms),
        row("added by the service per call (client − op)", r.added_ms),
        row("of which HTTP, outside the app (client − app)", r.http_overhead_ms), "",
        f"Throughput, {CLIENTS} clients: {r.throughput.get('searches_per_s')} searches/s, "
        f"{r.throughput.get('adds_per_s')} adds/s.",
        f"`hello-memory search` wall time (median of {CLI_RUNS}): {r.cli_search_s.get('through_service')} s "
        f"through the service vs {r.cli_search_s.get('standalone')} s standalone.",
    ])


def main(argv: list[str] | None = None) -> ServiceResult:
    """``python -m benchmarks.service_speed [SIZE]``."""
    args = argv if argv is not None else sys.argv[1:]
    result = measure_service(int(args[0]) if args else 10_000)
    print(to_markdown(result))
    print(json.dumps(asdict(result), indent=2), file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
