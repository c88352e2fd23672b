"""The speed harness runs end to end on a tiny size (seconds), so it never rots."""

from pathlib import Path

import pytest

from benchmarks import speed


def test_speed_harness_tiny(tmp_path: Path):
    out = tmp_path / "speed.json"
    report = speed.main(["--sizes", "30", "--configs", "tfidf", "--queries", "5", "--json", str(out)])
    r = report.results[0]
    assert r.size == 30 and r.add_many_per_s > 0 and r.search_ms["p95"] > 0
    assert out.exists() and "| tfidf | 30 |" in speed.to_markdown(report)


def test_synthetic_texts_are_deterministic():
    assert speed.synthetic_texts(5) == speed.synthetic_texts(5)
    assert len(set(speed.synthetic_texts(100))) == 100


def test_unknown_speed_config_is_a_clear_error(tmp_path: Path):
    with pytest.raises(SystemExit, match="unknown speed config"):
        speed.main(["--sizes", "30", "--configs", "tfidf,nope", "--json", str(tmp_path / "s.json")])


def test_cli_startup_harness_times_every_command(tmp_path: Path):
    from benchmarks import cli_startup

    out = cli_startup.main(["--runs", "1", "--embedder", "tfidf", "--json", str(tmp_path / "cli.json")])
    (r,) = out
    assert r["first_add_cold_cache_s"] > 0 and set(r["commands"]) == set(cli_startup.COMMANDS)
    assert all(c["median_s"] >= c["min_s"] > 0 for c in r["commands"].values())
    assert "| first add (cold cache) |" in cli_startup.to_markdown(out)
