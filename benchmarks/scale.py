"""Search at scale (issue 25): the stage table by size, and many users on one store.

Usage::

    python -m benchmarks.scale --sizes 10000,100000 --tenants 1000x1000 --configs e5,tfidf \
        --embed-cache /tmp/e5-cache --json scale.json --markdown scale.md --plot scale.png \
        [--profile docs/benchmarks/]

Corpora are :func:`benchmarks.speed.synthetic_texts` (one seed per user). Building them is the slow
part, so the ``e5`` configuration builds with *template vectors*: a memory ``"<sentence> #<n>"``
gets the e5 passage vector of ``"<sentence>"`` (9,600 distinct sentences, embedded once and kept
in the ``--embed-cache``), so a million memories cost no more e5 time than ten thousand. Its
queries go through the product's own e5 embedder, as in :mod:`benchmarks.speed`. The ``tfidf``
configuration uses the hashed TF-IDF embedder throughout (what everything but e5 costs).

``--index`` also builds the vector index's HNSW graph after the corpus (the Edge store's
``optimize``; without it qdrant-edge searches its segments exactly, by brute force) and times it:
rows with ``+hnsw`` in their config.

``--tenants UxM`` builds ``U`` users with ``M`` memories each in one data directory and one user
with ``M`` memories in another, and times their searches interleaved (same run, same load).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import stages
from benchmarks.scale_corpus import (  # noqa: F401 - re-exported: the harness's corpus API
    TemplateEmbedder,
    ask,
    build,
    build_index,
    open_memory,
    user_name,
    user_texts,
)
from benchmarks.speed import dir_mb, machine, percentiles, synthetic_texts

QUERY_SEED = 99


@dataclass
class SizeStages:
    """One configuration at one size: latency, stages, build, disk and memory."""

    config: str
    size: int
    build_s: float
    search_ms: dict[str, float]
    stages: dict[str, dict[str, float]]
    disk_mb: float
    rss_mb: float
    mean_hits: float
    index_s: float | None = None
    load_avg: tuple[float, ...] = ()  # when its searches ended


@dataclass
class TenantResult:
    """Many users on one store against one user alone, searched interleaved."""

    config: str
    users: int
    per_user: int
    build_s: float | None  # None: a kept store was reused
    single_ms: dict[str, float]
    tenant_ms: dict[str, float]
    p95_ratio: float
    foreign_hits: int
    disk_mb: float
    load_avg: tuple[float, ...] = ()
    stages: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)


@dataclass
class ScaleReport:
    """Everything one run measured."""

    machine: dict[str, Any]
    sizes: list[SizeStages] = field(default_factory=list)
    tenants: list[TenantResult] = field(default_factory=list)


def _cpu() -> str:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    return names[0] if names else "unknown"


def _load() -> tuple[float, ...]:
    return tuple(round(x, 2) for x in os.getloadavg())


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def measure_size(
    config: str,
    size: int,
    queries: int,
    cache: Path | None,
    profile: Path | None = None,
    index: bool = False,
    keep: Path | None = None,
) -> Iterator[SizeStages]:
    """Build one user's ``size`` memories, then time ``queries`` searches stage by stage; with
    ``index``, build the HNSW graph and time them again (a second row, same corpus). Rows are
    yielded as they are measured. ``keep``: build in (or reuse the store already built in) this
    directory (a reused store reports build seconds 0)."""
    with contextlib.ExitStack() as stack:
        home = keep / f"{config}-1x{size}" if keep else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        built = _built(home, config, 1, size, cache) or 0.0
        mm = open_memory(home, config)
        try:
            row = _time_searches(mm, config, size, queries, profile)
            row.build_s, row.disk_mb = built, round(dir_mb(home), 1)
            yield row
            if index:
                indexed = round(build_index(mm), 1)
                row = _time_searches(mm, f"{config}+hnsw", size, queries, profile)
                row.build_s, row.index_s, row.disk_mb = built, indexed, round(dir_mb(home), 1)
                yield row
        finally:
            mm.close()


def _time_searches(mm: Any, label: str, size: int, queries: int, profile: Path | None) -> SizeStages:
    qs = synthetic_texts(queries, seed=QUERY_SEED)
    hits = 0
    with stages.clocked(mm) as clock:
        for q in qs:
            with clock.search():
                hits += len(ask(mm, q, user_name(0)))
    if profile is not None:
        prof = cProfile.Profile()
        prof.enable()
        for q in qs:
            ask(mm, q, user_name(0))
        prof.disable()
        prof.dump_stats(str(profile / f"scale-{label}-{size}.prof"))
    totals = [s["total"] for s in clock.searches]
    return SizeStages(
        label, size, 0.0, percentiles(totals), clock.summary(), 0.0, round(_rss_mb(), 1),
        round(hits / max(1, len(qs)), 2), load_avg=_load(),
    )


def measure_tenants(
    config: str,
    users: int,
    per_user: int,
    queries: int,
    cache: Path | None,
    keep: Path | None = None,
    index: bool = False,
) -> TenantResult:
    """``users`` × ``per_user`` in one store against one user with ``per_user``, searches interleaved
    and timed stage by stage. ``keep``: build in (or reuse the stores already built in) this directory.
    ``index``: search once each store's background HNSW build is done (else while it may run)."""
    qs = synthetic_texts(queries, seed=QUERY_SEED)
    with contextlib.ExitStack() as stack:
        root = keep or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        many, one = root / f"{config}-{users}x{per_user}", root / f"{config}-1x{per_user}"
        built = _built(many, config, users, per_user, cache)
        _built(one, config, 1, per_user, cache)
        mm_many = stack.enter_context(contextlib.closing(open_memory(many, config)))
        mm_one = stack.enter_context(contextlib.closing(open_memory(one, config)))
        if index:
            for mm in (mm_many, mm_one):
                build_index(mm)
        clock_many = stack.enter_context(stages.clocked(mm_many))
        clock_one = stack.enter_context(stages.clocked(mm_one))
        foreign = 0
        for i, q in enumerate(qs):
            user = user_name((i * 7919) % users)
            with clock_one.search():
                ask(mm_one, q, user_name(0))
            with clock_many.search():
                found = ask(mm_many, q, user)
            foreign += sum(1 for h in found if h.item.user_id != user)
        disk = dir_mb(many)
    s = percentiles([x["total"] for x in clock_one.searches])
    t = percentiles([x["total"] for x in clock_many.searches])
    return TenantResult(
        config, users, per_user, built, s, t, round(t["p95"] / s["p95"], 2), foreign, round(disk, 1),
        _load(), {"one user": clock_one.summary(), "tenants": clock_many.summary()},
    )


def _built(home: Path, config: str, users: int, per_user: int, cache: Path | None) -> float | None:
    """Build the store unless ``home`` already holds it; the seconds it took (``None``: reused)."""
    done = home / "BUILT"
    if done.exists():
        return None
    seconds = round(build(home, config, users, per_user, cache), 1)
    done.write_text(f"{seconds}\n", encoding="utf-8")
    return seconds


def to_markdown(report: ScaleReport) -> str:
    """The size table, the stage table per configuration, the tenant comparison."""
    lines = [
        "| config | memories | build s | HNSW build s | search p50 / p95 ms | disk MB | RSS MB | mean hits |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report.sizes:
        lines.append(
            f"| {r.config} | {r.size:,} | {r.build_s} | {'—' if r.index_s is None else r.index_s} | "
            f"{r.search_ms['p50']} / {r.search_ms['p95']} | "
            f"{r.disk_mb} | {r.rss_mb} | {r.mean_hits} |"
        )
    for config in dict.fromkeys(r.config for r in report.sizes):
        rows = {f"{r.size:,}": r.stages for r in report.sizes if r.config == config}
        lines += ["", f"Stages ({config}; exclusive time per search):", "", stages.to_markdown(rows)]
    if report.tenants:
        lines += [
            "",
            "| config | users × memories | build s | one user p50 / p95 ms | tenants p50 / p95 ms | "
            "p95 ratio | foreign hits | disk MB |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for t in report.tenants:
            lines.append(
                f"| {t.config} | {t.users:,} × {t.per_user:,} | {t.build_s} | {t.single_ms['p50']} / "
                f"{t.single_ms['p95']} | {t.tenant_ms['p50']} / {t.tenant_ms['p95']} | {t.p95_ratio}× | "
                f"{t.foreign_hits} | {t.disk_mb} |"
            )
        for t in report.tenants:
            rows = {f"{label} ({t.users:,} × {t.per_user:,})": v for label, v in t.stages.items()}
            lines += ["", f"Stages, many users on one store ({t.config}):", "", stages.to_markdown(rows)]
    return "\n".join(lines)


def plot(report: ScaleReport, out: Path) -> None:
    """Search p50 and p95 against size (log scale), per configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for config in dict.fromkeys(r.config for r in report.sizes):
        rs = [r for r in report.sizes if r.config == config]
        for pct, style in (("p50", "-"), ("p95", "--")):
            ax.plot([r.size for r in rs], [r.search_ms[pct] for r in rs], style, marker="o", label=f"{config} {pct}")
    ax.set_xscale("log")
    ax.set_xlabel("memories of one user")
    ax.set_ylabel("search latency (ms, log scale)")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def merged_sizes(paths: list[Path]) -> list[SizeStages]:
    """The size rows of several ``--json`` reports (runs of different sizes), by configuration and size;
    a later file's row replaces an earlier one of the same configuration and size."""
    rows: dict[tuple[str, int], SizeStages] = {}
    for path in paths:
        for r in json.loads(path.read_text(encoding="utf-8"))["sizes"]:
            row = SizeStages(**{**r, "load_avg": tuple(r.get("load_avg", ()))})
            rows[(row.config, row.size)] = row
    return [rows[k] for k in sorted(rows)]


def _tenants(spec: str) -> tuple[int, int]:
    users, _, per_user = spec.lower().partition("x")
    return int(users), int(per_user)


def main(argv: list[str] | None = None, progress: Callable[[str], None] | None = None) -> ScaleReport:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--configs", default="e5")
    ap.add_argument("--tenants", default="", help="UxM: U users with M memories each in one store")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embed-cache", type=Path, help="e5 embedding cache directory (template vectors)")
    ap.add_argument("--keep", type=Path, help="build the stores here, reuse them when already built")
    ap.add_argument("--index", action="store_true", help="also measure each size with the HNSW graph built")
    ap.add_argument("--profile", type=Path, help="directory for cProfile files of each size's searches")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--plot", type=Path)
    ap.add_argument("--merge", type=Path, nargs="+", help="measure nothing: join the size rows of these --json files")
    args = ap.parse_args(argv)
    say = progress or (lambda s: print(s, file=sys.stderr, flush=True))
    report = ScaleReport(machine={**machine(), "cpu": _cpu()})
    if args.merge:
        report.sizes = merged_sizes(args.merge)
        print(_write(report, args))
        return report
    configs = [c for c in args.configs.split(",") if c]
    for size in (int(s) for s in args.sizes.split(",") if s):
        for config in configs:
            for row in measure_size(
                config, size, args.queries, args.embed_cache, args.profile, args.index, args.keep
            ):
                report.sizes.append(row)
                say(f"{row.config} @ {size}: {row.search_ms} (load {row.load_avg})")
                _write(report, args)  # a long run leaves what it has measured so far
    if args.tenants:
        users, per_user = _tenants(args.tenants)
        for config in configs:
            report.tenants.append(
                measure_tenants(config, users, per_user, args.queries, args.embed_cache, args.keep, args.index)
            )
            say(f"{config} tenants {args.tenants}: {report.tenants[-1]}")
    print(_write(report, args))
    return report


def _write(report: ScaleReport, args: argparse.Namespace) -> str:
    report.machine["load_avg_end"] = _load()
    text = to_markdown(report)
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(asdict(report), indent=2, ensure_ascii=False), encoding="utf-8")
    if args.plot and report.sizes:
        plot(report, args.plot)
    return text


if __name__ == "__main__":
    main()
