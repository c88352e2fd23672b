"""The service benchmark runs end to end on a tiny size (tf-idf embedder), so it never rots."""

from __future__ import annotations

import pytest

pytest.importorskip("uvicorn")

from benchmarks import service_speed


def test_service_speed_harness_tiny(monkeypatch):
    monkeypatch.setenv("HELLO_MEMORY_EMBEDDER", "tfidf")  # the service subprocess inherits it
    result = service_speed.measure_service(30, queries=5, per_client=3, cli_runs=1)
    assert result.size == 30
    for figures in (result.in_process_ms, result.remote_ms, result.service_side_ms, result.operation_ms,
                    result.in_process_again_ms):
        assert figures["p50"] > 0
    assert result.remote_ms["p50"] >= result.service_side_ms["p50"] >= result.operation_ms["p50"]
    assert result.added_ms["p50"] >= result.http_overhead_ms["p50"]
    assert result.throughput["searches_per_s"] > 0 and result.throughput["adds_per_s"] > 0
    assert result.cli_search_s["through_service"] > 0 and result.cli_search_s["standalone"] > 0
    text = service_speed.to_markdown(result)
    assert "through the service" in text and "searches/s" in text
