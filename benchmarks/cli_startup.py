"""CLI start-up: wall and CPU time of ``hello-memory`` commands, each in a fresh process, as a user waits.

Usage::

    python -m benchmarks.cli_startup --runs 5 [--service] [--json cli.json] [--pythonpath /other/checkout]

``python -m benchmarks.speed --cli`` runs the same. Each command gets ``--home`` as a user types
it. Standalone (the default), the first ``add`` runs with an empty model cache (what the first
call after an install pays: the e5 engine builds its ONNX model and vocabulary tables and caches
them); every command then runs ``--runs`` times with the cache warm. ``--service`` first starts
``hello-memory serve`` on the data directory (same checkout), so the commands go through it and
time only the client: Python, the CLI's imports, one HTTP call. Each run reports the median and
the minimum of the wall time and of the child's CPU time (user + system, from ``getrusage``),
which a loaded machine inflates far less than the wall time, and the 1-minute load average at
the start and the end. ``--pythonpath`` times another checkout (e.g. the main branch) in the same
run, the checkouts taking turns in every round, so the two are comparable on a noisy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

COMMANDS: dict[str, list[str]] = {
    "stats": ["stats"],
    "add": ["add", "Zhang San finished the RAG chapter of Hello-Agents", "--type", "episodic"],
    "search": ["search", "what did Zhang San study?"],
    "export": ["export", "--output", "{tmp}/export.jsonl"],
    "forget": ["forget", "--strategy", "importance_based", "--threshold", "0.01"],
}


def _run(args: list[str], env: dict[str, str], tmp: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one command in a fresh process."""
    cmd = [sys.executable, "-m", "apps.cli", *(a.replace("{tmp}", str(tmp)) for a in args),
           "--home", env["HELLO_MEMORY_HOME"]]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # cwd: ``python -m`` puts the working directory first on sys.path; a checkout there would win
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=tmp)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:1])} failed ({out.returncode}): {out.stderr[-1000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@contextmanager
def _service(env: dict[str, str], tmp: Path, timeout: float = 300) -> Iterator[str]:
    """``hello-memory serve`` on the data directory (any free port) until the block ends; its URL."""
    home = Path(env["HELLO_MEMORY_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "apps.cli", "serve", "--home", str(home), "--port", "0"],
                            env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            url = _ready_url(home)
            if url is not None:
                yield url
                return
            time.sleep(0.2)
        raise RuntimeError(f"the service did not start within {timeout} s (exit code {proc.poll()})")
    finally:
        proc.terminate()
        proc.wait(timeout=120)


def _ready_url(home: Path) -> str | None:
    try:
        url = str(json.loads((home / "SERVICE").read_text(encoding="utf-8"))["url"])
        with urllib.request.urlopen(f"{url}/ready", timeout=1) as response:
            return url if response.status == 200 else None
    except (OSError, ValueError, KeyError):
        return None


def measure_cli(
    runs: int = 5, *, pythonpath: str | None = None, embedder: str | None = None, service: bool = False
) -> dict[str, Any]:
    """Wall and CPU times (s) of the CLI commands in fresh processes, for one checkout."""
    return measure_checkouts([pythonpath], runs, embedder=embedder, service=service)[0]


def measure_checkouts(
    pythonpaths: list[str | None], runs: int = 5, *, embedder: str | None = None, service: bool = False
) -> list[dict[str, Any]]:
    """Wall and CPU times (s) of the CLI commands, for each checkout (``None``: this process's path).

    Standalone, each checkout's cold first ``add``, then each command warm; with ``service``, each
    through its checkout's ``hello-memory serve``. The checkouts take turns in every round, so a load
    that changes during the run weighs on all of them alike.
    """
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="hm-cli-") as folder, ExitStack() as services:
        tmp = Path(folder)
        envs = [_env(tmp / f"checkout{i}", p, embedder, service) for i, p in enumerate(pythonpaths)]
        python = statistics.median(_time_python(envs[0], tmp) for _ in range(max(runs, 1)))
        for env in envs if service else []:
            services.enter_context(_service(env, tmp))
        cold = [None if service else _run(COMMANDS["add"], env, tmp)[0] for env in envs]
        times: list[dict[str, list[tuple[float, float]]]] = [{n: [] for n in COMMANDS} for _ in envs]
        for _ in range(runs):
            for env, measured in zip(envs, times, strict=True):
                for name, args in COMMANDS.items():
                    measured[name].append(_run(args, env, tmp))
    load = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    return [{
        "pythonpath": p or os.environ.get("PYTHONPATH", ""),
        "embedder": embedder or "default",
        "through_service": service,
        "runs": runs,
        "load_average": load,
        "python_startup_s": round(python, 3),
        "first_add_cold_cache_s": None if c is None else round(c, 3),
        "commands": {name: _summary(t) for name, t in measured.items()},
    } for p, c, measured in zip(pythonpaths, cold, times, strict=True)]


def _env(folder: Path, pythonpath: str | None, embedder: str | None, service: bool) -> dict[str, str]:
    folder.mkdir(parents=True)
    env = {**os.environ, "HELLO_MEMORY_HOME": str(folder / "data")}
    if not service:  # the service warms the model itself: its cache stays the user's
        (folder / "cache").mkdir()
        env["XDG_CACHE_HOME"] = str(folder / "cache")
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    if embedder is not None:
        env["HELLO_MEMORY_EMBEDDER"] = embedder
    return env


def _summary(times: list[tuple[float, float]]) -> dict[str, float]:
    wall, cpu = [w for w, _ in times], [c for _, c in times]
    return {"median_s": round(statistics.median(wall), 3), "min_s": round(min(wall), 3),
            "median_cpu_s": round(statistics.median(cpu), 3), "min_cpu_s": round(min(cpu), 3)}


def _time_python(env: dict[str, str], tmp: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True, timeout=60, cwd=tmp)
    return time.perf_counter() - started


def to_markdown(results: list[dict[str, Any]]) -> str:
    """One row per measured checkout: each command's median wall / median CPU (and minimum wall)."""
    names = list(COMMANDS)
    lines = ["| checkout | mode | load | python | first add (cold cache) | "
             + " | ".join(f"{n} wall / CPU median (min wall)" for n in names) + " |",
             "|---|---|---|---|---|" + "---|" * len(names)]
    for r in results:
        cells = [f"{c['median_s']} / {c['median_cpu_s']} ({c['min_s']})" for c in (r["commands"][n] for n in names)]
        mode = "through the service" if r.get("through_service") else "standalone"
        cold = r["first_add_cold_cache_s"] if r["first_add_cold_cache_s"] is not None else "—"
        load = "–".join(str(x) for x in r.get("load_average", []))
        lines.append(f"| {r['pythonpath'] or '(installed)'} | {mode} | {load} | {r['python_startup_s']} | {cold} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pythonpath", action="append", default=None, help="also time this checkout (repeatable)")
    ap.add_argument("--embedder", default=None, help="HELLO_MEMORY_EMBEDDER for the commands (default e5)")
    ap.add_argument("--service", action="store_true", help="time the commands through a running service")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    results = measure_checkouts([None, *(args.pythonpath or [])], args.runs, embedder=args.embedder,
                                service=args.service)
    print(to_markdown(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
