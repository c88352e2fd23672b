"""``benchmarks.cli_startup`` reports each command's CPU time (user + system of the child), not only
its wall time, and can time the commands through a running service (issue 27 §5)."""

from __future__ import annotations

from pathlib import Path


def test_cli_startup_reports_cpu_time_through_a_service(tmp_path: Path):
    from benchmarks import cli_startup

    (r,) = cli_startup.main(["--runs", "1", "--embedder", "tfidf", "--service", "--json", str(tmp_path / "c.json")])
    assert r["through_service"] and r["first_add_cold_cache_s"] is None and len(r["load_average"]) == 2
    for c in r["commands"].values():
        assert 0 < c["median_cpu_s"] <= c["median_s"] * 2 and c["min_cpu_s"] > 0  # 2 cores: CPU may pass wall
    assert "| through the service |" in cli_startup.to_markdown([r])
