"""CLI start-up: wall time of ``hello-memory`` commands, each in a fresh process, as a user waits.

Usage::

    python -m benchmarks.cli_startup --runs 5 [--json cli.json] [--pythonpath /path/to/other/checkout]

``python -m benchmarks.speed --cli`` runs the same. The first ``add`` runs with an empty model cache
(what the first call after an install pays: the e5 engine builds its ONNX model and vocabulary
tables and caches them); every command then runs ``--runs`` times with the cache warm, reporting
the median and the minimum. ``--pythonpath`` times another checkout (e.g. the main branch) in the
same run, so the two are comparable on a noisy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

COMMANDS: dict[str, list[str]] = {
    "stats": ["stats"],
    "add": ["add", "Zhang San finished the RAG chapter of Hello-Agents", "--type", "episodic"],
    "search": ["search", "what did Zhang San study?"],
    "export": ["export", "--output", "{tmp}/export.jsonl"],
    "forget": ["forget", "--strategy", "importance_based", "--threshold", "0.01"],
}


def _run(args: list[str], env: dict[str, str], tmp: Path) -> float:
    cmd = [sys.executable, "-m", "apps.cli", *(a.replace("{tmp}", str(tmp)) for a in args)]
    started = time.perf_counter()
    # cwd: ``python -m`` puts the working directory first on sys.path; a checkout there would win
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=tmp)
    seconds = time.perf_counter() - started
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:1])} failed ({out.returncode}): {out.stderr[-1000:]}")
    return seconds


def measure_cli(runs: int = 5, *, pythonpath: str | None = None, embedder: str | None = None) -> dict[str, Any]:
    """Wall times (s) of the CLI commands in fresh processes: the cold first ``add``, then each warm."""
    with tempfile.TemporaryDirectory(prefix="hm-cli-") as folder:
        tmp = Path(folder)
        (tmp / "cache").mkdir()
        env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache"), "HELLO_MEMORY_HOME": str(tmp / "data")}
        if pythonpath is not None:
            env["PYTHONPATH"] = pythonpath
        if embedder is not None:
            env["HELLO_MEMORY_EMBEDDER"] = embedder
        python = statistics.median(_time_python(env) for _ in range(max(runs, 1)))
        cold = _run(COMMANDS["add"], env, tmp)
        warm = {name: [_run(args, env, tmp) for _ in range(runs)] for name, args in COMMANDS.items()}
    return {
        "pythonpath": pythonpath or os.environ.get("PYTHONPATH", ""),
        "embedder": embedder or "default",
        "runs": runs,
        "python_startup_s": round(python, 3),
        "first_add_cold_cache_s": round(cold, 3),
        "commands": {name: {"median_s": round(statistics.median(t), 3), "min_s": round(min(t), 3)}
                     for name, t in warm.items()},
    }


def _time_python(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True, timeout=60, cwd=env["XDG_CACHE_HOME"])
    return time.perf_counter() - started


def to_markdown(results: list[dict[str, Any]]) -> str:
    """One row per measured checkout."""
    names = list(COMMANDS)
    lines = ["| checkout | python | first add (cold cache) | " + " | ".join(f"{n} median / min" for n in names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    for r in results:
        cells = [f"{r['commands'][n]['median_s']} / {r['commands'][n]['min_s']}" for n in names]
        lines.append(f"| {r['pythonpath'] or '(installed)'} | {r['python_startup_s']} | "
                     f"{r['first_add_cold_cache_s']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pythonpath", action="append", default=None, help="also time this checkout (repeatable)")
    ap.add_argument("--embedder", default=None, help="HELLO_MEMORY_EMBEDDER for the commands (default e5)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    results = [measure_cli(args.runs, embedder=args.embedder)]
    results += [measure_cli(args.runs, pythonpath=p, embedder=args.embedder) for p in args.pythonpath or []]
    print(to_markdown(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
