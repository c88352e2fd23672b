"""A search against its floor, with the lexical read beside the query embedding and after it (issue 25).

Usage::

    python -m benchmarks.overlap --size 10000 --queries 300 --embed-cache /tmp/e5-cache [--keep DIR]

One user's ``--size`` memories (:mod:`benchmarks.scale`'s corpus, template vectors), searched
``--queries`` times in each mode, the modes alternating query by query (same process, same load):

* ``beside`` — the product: the lexical read runs on a worker thread while the query is embedded
  (:mod:`hello_memory.core.beside`);
* ``after`` — the same search with that read run inline after the embedding, as before.

The *floor* of a search is its query embedding plus its vector search (dense ANN), the stages a
search cannot do without, measured in the same searches; the report gives each mode's p50 / p95
and its p50 against the floor's p50.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks import stages
from benchmarks.scale import QUERY_SEED, _built, _cpu, _load
from benchmarks.scale_corpus import ask, open_memory, user_name
from benchmarks.speed import percentiles, synthetic_texts

MODES = ("beside", "after")


@contextlib.contextmanager
def mode(name: str) -> Iterator[None]:
    """``after``: :func:`hello_memory.core.beside.start` runs its call inline, when the result is asked for."""
    from hello_memory.core import beside

    start = beside.start
    if name == "after":
        beside.start = lambda call: call
    try:
        yield
    finally:
        beside.start = start


def measure(mm: Any, queries: int) -> dict[str, Any]:
    """Per mode: search p50/p95, floor p50 (query embedding + dense ANN) and the ratio, the stage table."""
    qs = synthetic_texts(queries, seed=QUERY_SEED)
    clocks: dict[str, stages.StageClock] = {}
    with contextlib.ExitStack() as stack:
        for name in MODES:  # one clock per mode: each wraps the stores while it is entered
            clocks[name] = stages.StageClock()
        outer = stack.enter_context(stages.clocked(mm))
        for q in qs:
            for name in MODES:
                with mode(name), outer.search():
                    ask(mm, q, user_name(0))
                clocks[name].searches.append(outer.searches.pop())
    out: dict[str, Any] = {}
    for name, clock in clocks.items():
        summary = clock.summary()
        floor_p50 = summary["query embedding"]["p50_ms"] + summary["dense ANN"]["p50_ms"]
        search = percentiles([s["total"] for s in clock.searches])
        out[name] = {
            "search_ms": search,
            "floor_p50_ms": round(floor_p50, 2),
            "ratio_p50": round(search["p50"] / floor_p50, 2),
            "stages": summary,
        }
    return out


def main(argv: list[str] | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--config", default="e5", help="e5 (template vectors) or tfidf")
    ap.add_argument("--embed-cache", type=Path)
    ap.add_argument("--keep", type=Path, help="build the store here, reuse it when already built")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    say = progress or (lambda s: print(s, file=sys.stderr, flush=True))
    with contextlib.ExitStack() as stack:
        root = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        home = root / f"{args.config}-1x{args.size}"
        _built(home, args.config, 1, args.size, args.embed_cache)
        mm = stack.enter_context(contextlib.closing(open_memory(home, args.config)))
        if hasattr(mm.bundle.vectors, "wait_for_index"):
            mm.bundle.vectors.wait_for_index("memories")
        report = {"cpu": _cpu(), "size": args.size, "load_before": _load(), **measure(mm, args.queries)}
        report["load_after"] = _load()
    load = f"load {report['load_before']} → {report['load_after']}"
    rows = [f"{args.size:,} memories, {args.queries} queries per mode, {load}"]
    rows += ["| mode | search p50 / p95 ms | floor p50 ms | p50 ÷ floor |", "|---|---|---|---|"]
    for name in MODES:
        r = report[name]
        search = f"{r['search_ms']['p50']} / {r['search_ms']['p95']}"
        rows.append(f"| {name} | {search} | {r['floor_p50_ms']} | {r['ratio_p50']}× |")
    rows += ["", stages.to_markdown({name: report[name]["stages"] for name in MODES})]
    say("\n".join(rows))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
